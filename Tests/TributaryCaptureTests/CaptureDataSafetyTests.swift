import Foundation
import Testing
import TributaryFormats
import TributaryInterchange
import TributaryWire

@testable import TributaryCapture

/// Issue 8 ("tools that never destroy data"): each test reproduces what an auditor found.
@Suite struct CaptureDataSafetyTests {
    func bytes(_ path: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }
    func write(_ bytes: [UInt8], _ path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// A signal of `channels` × `samples` float64 with names "c0", "c1"...
    func signal(channels: Int = 3, samples: Int = 200_000) -> ImportedSignal {
        var v = [Double](repeating: 0, count: channels * samples)
        for i in v.indices { v[i] = Double((i * 7919) % 4001 - 2000) / 1024 }
        return ImportedSignal(
            samples: .float64(v), channelCount: channels, sampleCount: samples, channelNames: (0..<channels).map { "c\($0)" })
    }

    // MARK: Item 9: existing outputs and crashed recordings

    @Test func aWriterNeverTruncatesAnExistingPartial() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/x.tcap"
        let crashed = [UInt8](repeating: 0xAB, count: 10_000)
        try write(crashed, path + ".partial")
        #expect(throws: CaptureError.self) { try CaptureWriter(path: path) }
        do { _ = try CaptureWriter(path: path) } catch {
            #expect(error.kind == .usage)
            #expect(error.detail.contains("tributary repair \(path).partial"), "\(error)")
        }
        #expect(try bytes(path + ".partial") == crashed)
        #expect(!exists(path))
    }

    @Test func aDestinationIsCheckedBeforeAnyWork() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let old = dir + "/old.tcap"
        try write([1, 2, 3], old)
        #expect(throws: CaptureError.self) { try CaptureDestination(path: old, replace: false) }
        let replacing = try CaptureDestination(path: old, replace: true)
        #expect(replacing.existed)
        // A directory is refused even with replace, and so is a path in a missing directory.
        #expect(throws: CaptureError.self) { try CaptureDestination(path: dir, replace: true) }
        #expect(throws: CaptureError.self) { try CaptureDestination(path: dir + "/missing/x.tcap", replace: true) }
        #expect(throws: CaptureError.self) { try CaptureDestination(path: "/dev/null", replace: true) }
        // An existing .partial is never an output, even with replace (repair X.partial --out X.partial --force).
        try write([4, 5], dir + "/y.tcap.partial")
        do {
            _ = try CaptureRecovery.repair(input: dir + "/y.tcap.partial", output: dir + "/y.tcap.partial", replace: true)
            Issue.record("replaced a .partial")
        } catch {
            #expect(error.kind == .usage && error.detail.contains("never replaced"), "\(error)")
        }
        #expect(try bytes(dir + "/y.tcap.partial") == [4, 5])
        let fresh = try CaptureDestination(path: dir + "/new.tcap", replace: false)
        #expect(!fresh.existed)
        #expect(try bytes(old) == [1, 2, 3])
    }

    @Test func anUnpublishedCloseLeavesTheOldCaptureUntouched() throws {
        let (dir, path) = try recordedSyntheticCapture(50, named: "good.tcap")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let good = try bytes(path)
        let writer = try CaptureWriter(destination: CaptureDestination(path: path, replace: true))
        for frame in syntheticFrames(5) { try writer.append(frame) }
        let summary = try writer.close(publish: false)
        #expect(summary.path == path + ".partial")
        #expect(try bytes(path) == good)
        let kept = try CaptureReader(path: path + ".partial")
        #expect(kept.hasFooter && kept.damage.isEmpty)
    }

    @Test func aDestinationWithoutReplaceDoesNotReplaceAFileThatAppearedMeanwhile() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/x.tcap"
        let writer = try CaptureWriter(destination: CaptureDestination(path: path, replace: false))
        for frame in syntheticFrames(5) { try writer.append(frame) }
        try write([9, 9], path)
        #expect(throws: CaptureError.self) { try writer.close() }
        #expect(try bytes(path) == [9, 9])
        #expect(try CaptureReader(path: path + ".partial").hasFooter)
    }

    @Test func importRefusesExistingOutputsAndReplacesOnlyWhenComplete() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/x.tcap"
        try CaptureImport.write(signal(samples: 1000), rate: 1000, to: path)
        let first = try bytes(path)
        #expect(throws: CaptureError.self) {
            try CaptureImport.write(signal(samples: 1000), rate: 1000, to: CaptureDestination(path: path, replace: false))
        }
        // With replace, a failing import (no samples) leaves the old capture and no .partial.
        #expect(throws: CaptureError.self) {
            try CaptureImport.write(signal(samples: 0), rate: 1000, to: CaptureDestination(path: path, replace: true))
        }
        #expect(try bytes(path) == first)
        #expect(!exists(path + ".partial"))
        try CaptureImport.write(signal(channels: 2, samples: 10), rate: 1000, to: CaptureDestination(path: path, replace: true))
        #expect(try CaptureReader(path: path).configuration(source: 1)?.channels.count == 2)
    }

    @Test func repairRefusesAnExistingOutputUnlessReplacing() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/x.tcap", other = dir + "/other.tcap"
        try record(syntheticFrames(60), to: path)
        try write([7], other)
        #expect(throws: CaptureError.self) { try CaptureRecovery.repair(input: path, output: other) }
        #expect(throws: CaptureError.self) { try CaptureRecovery.repair(input: path, output: path) }
        #expect(try bytes(other) == [7])
        let report = try CaptureRecovery.repair(input: path, output: other, replace: true)
        #expect(report.damage.isEmpty && report.inputHadFooter)
        #expect(framesBySource(try CaptureReader(path: other)) == framesBySource(try CaptureReader(path: path)))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["other.tcap", "x.tcap"])
    }

    // MARK: Item 11: repair copies every intact record, whatever the footer says

    @Test func repairKeepsSwappedRecordsThatTheFooterMisplaces() throws {
        let (dir, path) = try recordedSyntheticCapture(200, named: "x.tcap")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clean = try CaptureReader(path: path)
        let chunks = clean.index.filter { $0.envelope.type == .chunk }
        #expect(chunks.count > 6)
        var all: [[UInt8]] = [], got: [[UInt8]] = []
        clean.forEachFrame { all.append($0.encodedBytes) }
        // Two neighbouring records of different lengths swap places; every CRC stays intact, so does the footer.
        let pair = try #require(
            zip(clean.index, clean.index.dropFirst()).first {
                $0.0.envelope.type == .chunk && $0.1.envelope.type == .chunk && $0.0.envelope.recordLength != $0.1.envelope.recordLength
            })
        var b = try bytes(path)
        let a = Array(b[pair.0.offset..<(pair.0.offset + pair.0.envelope.recordLength)])
        let c = Array(b[pair.1.offset..<(pair.1.offset + pair.1.envelope.recordLength)])
        b.replaceSubrange(pair.0.offset..<(pair.1.offset + pair.1.envelope.recordLength), with: c + a)
        try write(b, path)
        #expect(try CaptureReader(path: path).hasFooter)
        let report = try CaptureRecovery.repair(input: path, output: dir + "/repaired.tcap")
        let repaired = try CaptureReader(path: dir + "/repaired.tcap")
        #expect(repaired.index.filter { $0.envelope.type == .chunk }.count == chunks.count)
        #expect(report.recordsKept == clean.index.count)
        repaired.forEachFrame { got.append($0.encodedBytes) }
        #expect(Set(all) == Set(got) && all.count == got.count)
    }

    // MARK: Item 10: duplicates, damage, configurations

    @Test func aDuplicatedChunkRecordIsReadOnceAndReported() throws {
        let (dir, path, frames) = try recordSynthetic(120, name: "x.tcap")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clean = try CaptureReader(path: path)
        let victim = clean.index.filter { $0.envelope.type == .chunk }[2]
        var b = try bytes(path)
        let copy = Array(b[victim.offset..<(victim.offset + victim.envelope.recordLength)])
        b.insert(contentsOf: copy, at: victim.offset + victim.envelope.recordLength)
        for footer in [true, false] {
            // With the footer (now misplaced, so the file is scanned) and without (a crashed writer).
            let damaged = footer ? b : Array(b[..<(b.count - 16)])
            try write(damaged, path)
            let reader = try CaptureReader(path: path)
            #expect(framesBySource(reader) == bySource(frames))
            let duplicates = reader.damage.filter { $0.reason.contains("duplicate") }
            #expect(duplicates.map(\.offset) == [victim.offset + victim.envelope.recordLength], "\(reader.damage)")
            let output = dir + "/r\(footer).tcap"
            let report = try CaptureRecovery.repair(input: path, output: output)
            #expect(report.damage.contains { $0.reason.contains("duplicate") })
            #expect(framesBySource(try CaptureReader(path: output)) == bySource(frames))
        }
    }

    /// The auditor's case: the first chunk of an imported source (the one with its configuration) damaged.
    func importedCaptureWithDamagedFirstChunk(in dir: String) throws -> (path: String, signal: ImportedSignal) {
        let path = dir + "/x.tcap"
        let s = signal()
        try CaptureImport.write(s, rate: 1000, to: path)
        let reader = try CaptureReader(path: path)
        let first = try #require(reader.index.first { $0.envelope.type == .chunk })
        #expect(reader.index.filter { $0.envelope.type == .chunk }.count > 2)
        var b = try bytes(path)
        b[first.offset + 88 + Int(first.envelope.storedLength) / 2] ^= 0x04
        try write(b, path)
        return (path, s)
    }

    @Test func aSourceConfigurationSurvivesTheLossOfItsChunk() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, _) = try importedCaptureWithDamagedFirstChunk(in: dir)
        let reader = try CaptureReader(path: path)
        #expect(reader.index.contains { $0.envelope.type == .configuration && $0.envelope.sourceID == 1 })
        let configuration = try #require(reader.configuration(source: 1))
        #expect(configuration.channels.map(\.description) == ["c0", "c1", "c2"])
        #expect(configuration.channels.allSatisfy { $0.samplingRate == 1000 })
        // The copy is not a frame of the stream: the frames read are only those of the chunks.
        var configurationFrames = 0
        reader.forEachFrame { if $0.header.kind == .configuration { configurationFrames += 1 } }
        #expect(configurationFrames == 0)
    }

    @Test func exportingADamagedSourceIsAnErrorUnlessDamageIsAllowed() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, s) = try importedCaptureWithDamagedFirstChunk(in: dir)
        let damaged = try CaptureReader(path: path)
        #expect(throws: CaptureError.self) { try SourceSeries(reader: damaged, source: 1) }
        do { _ = try SourceSeries(reader: try CaptureReader(path: path), source: 1) } catch {
            #expect(error.kind == .damagedRecord && error.offset == damaged.index.first { $0.envelope.type == .chunk }?.offset)
        }
        let partial = try SourceSeries(reader: try CaptureReader(path: path), source: 1, allowDamage: true)
        #expect(partial.damage.count == 1)
        #expect(partial.sampleCount > 0 && partial.sampleCount < s.sampleCount)
        #expect(partial.channelNames == ["c0", "c1", "c2"])
    }

    /// Many chunks: the two-reader gather must give exactly the sequential result (rows selected and
    /// reordered, int16 counts with their scales, blocks), and damage in the second half must still be
    /// an error, or with allowDamage the intact samples.
    @Test func exportGathersManyChunksExactlyAndStillReportsLateDamage() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let options = CaptureWriterOptions(minChunkBytes: 0, maxChunkBytes: 64 << 10, fsync: .none)
        let s = signal(channels: 3, samples: 60_000)
        let path = dir + "/f.tcap"
        try CaptureImport.write(s, rate: 1000, samplesPerFrame: 1000, to: path, options: options)
        let reader = try CaptureReader(path: path)
        let chunks = reader.index.filter { $0.envelope.type == .chunk }
        #expect(chunks.count >= 8)
        guard case .float64(let v) = s.samples else { Issue.record("not float64"); return }
        let all = try SourceSeries(reader: reader, source: 1)
        #expect(all.sampleCount == 60_000 && all.channelNames == ["c0", "c1", "c2"])
        if case .float64(let got) = all.samples { #expect(got == v) } else { Issue.record("not float64") }
        #expect(
            all.blocks.count == 60
                && all.blocks.enumerated().allSatisfy { $0.element.start == $0.offset * 1000 && $0.element.count == 1000 })
        let picked = try SourceSeries(reader: try CaptureReader(path: path), source: 1, channels: [2, 0])
        if case .float64(let got) = picked.samples {
            #expect(got == Array(v[120_000..<180_000] + v[0..<60_000]))
        } else {
            Issue.record("not float64")
        }
        #expect(throws: CaptureError.self) { try SourceSeries(reader: try CaptureReader(path: path), source: 1, channels: [7]) }

        let counts = (0..<(2 * 50_000)).map { Int16(truncatingIfNeeded: $0 * 37 % 60_001 - 30_000) }
        let c = ImportedSignal(samples: .int16(counts: counts, scale: [0.5, 0.25], offset: [0, 1]), channelCount: 2, sampleCount: 50_000)
        let cpath = dir + "/c.tcap"
        try CaptureImport.write(c, rate: 1000, samplesPerFrame: 1000, to: cpath, options: options)
        let series = try SourceSeries(reader: try CaptureReader(path: cpath), source: 1)
        if case .int16(let got) = series.samples { #expect(got == counts) } else { Issue.record("not int16") }
        #expect(series.scale == [0.5, 0.25] && series.offset == [0, 1])

        // Damage the last chunk (the window read then gives way to the frame-by-frame gather).
        let last = try #require(chunks.last)
        var b = try bytes(path)
        b[last.offset + 88 + Int(last.envelope.storedLength) / 2] ^= 0x04
        try write(b, path)
        #expect(throws: CaptureError.self) { try SourceSeries(reader: try CaptureReader(path: path), source: 1) }
        let partial = try SourceSeries(reader: try CaptureReader(path: path), source: 1, allowDamage: true)
        #expect(partial.damage.count == 1 && partial.damage[0].offset == last.offset)
        let kept = 60_000 - Int(last.envelope.sampleCount)
        #expect(partial.sampleCount == kept)
        if case .float64(let got) = partial.samples {
            #expect(got == Array(v[0..<kept] + v[60_000..<(60_000 + kept)] + v[120_000..<(120_000 + kept)]))
        }
    }

    @Test func exportingATruncatedCaptureIsAnError() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/x.tcap"
        try CaptureImport.write(signal(), rate: 1000, to: path)
        let b = try bytes(path)
        try write(Array(b[..<(b.count * 2 / 3)]), path)
        let reader = try CaptureReader(path: path)
        #expect(!reader.hasFooter)
        #expect(throws: CaptureError.self) { try SourceSeries(reader: reader, source: 1) }
        let partial = try SourceSeries(reader: try CaptureReader(path: path), source: 1, allowDamage: true)
        #expect(partial.damage.contains { $0.reason.contains("torn tail") })
    }

    @Test func theWriterRepeatsConfigurationsAtCheckpointsAndOnClose() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/x.tcap"
        let writer = try CaptureWriter(path: path, options: checkpointingEveryRecord(maxChunkDuration: 0.05))
        let frames = syntheticFrames(120)
        for frame in frames { try writer.append(frame) }
        writer.abandon()
        // A crashed writer: the index comes from the checkpoints, which list configuration copies too.
        let reader = try CaptureReader(path: path + ".partial")
        #expect(reader.indexSource == .checkpoints)
        let copies = reader.index.filter { $0.envelope.type == .configuration }
        #expect(!copies.isEmpty)
        for copy in copies { #expect(reader.configurationFrame(copy)?.header.kind == .configuration) }
        #expect(reader.damage.isEmpty)
        #expect(isPrefixBySource(framesBySource(reader), of: bySource(frames)))
    }

    func isPrefixBySource(_ got: [UInt32: [[UInt8]]], of all: [UInt32: [[UInt8]]]) -> Bool {
        got.allSatisfy { source, frames in all[source].map { Array($0.prefix(frames.count)) == frames } ?? false }
    }

    // MARK: Item 14: import bounds

    @Test func importRefusesWhatACaptureCannotHold() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/x.tcap"
        let tooWide = ImportedSignal(samples: .float64([Double](repeating: 1, count: 70_000)), channelCount: 70_000, sampleCount: 1)
        do { try tooWide.validate(file: "wide.npy", shape: "NPY shape (70000, 1)"); Issue.record("accepted 70000 channels") } catch {
            #expect(error.description.contains("70000 channels") && error.description.contains("65535"), "\(error)")
        }
        #expect(throws: CaptureError.self) { try CaptureImport.write(tooWide, rate: 1, to: path) }
        let empty = ImportedSignal(samples: .float64([]), channelCount: 2, sampleCount: 0)
        #expect(throws: CaptureError.self) { try empty.validate(file: "empty.npy") }
        #expect(throws: CaptureError.self) { try CaptureImport.write(empty, rate: 1, to: path) }
        #expect(throws: CaptureError.self) { try CaptureImport.write(signal(channels: 1, samples: 100), rate: 1e-12, to: path) }
        #expect(!exists(path) && !exists(path + ".partial"))
        // The widest signal a capture holds still reads back with every channel.
        let widest = ImportedSignal(
            samples: .int16(
                counts: [Int16](repeating: 3, count: 65_535), scale: [Double](repeating: 1, count: 65_535),
                offset: [Double](repeating: 0, count: 65_535)), channelCount: 65_535, sampleCount: 1)
        try CaptureImport.write(widest, rate: 1, to: path)
        let back = try SourceSeries(reader: try CaptureReader(path: path), source: 1)
        #expect(back.channelIndexes.count == 65_535 && back.sampleCount == 1)
    }
}
