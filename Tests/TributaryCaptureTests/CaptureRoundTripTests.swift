import Foundation
import Synchronization
import Testing
import TributaryTestSupport
import TributaryWire

@testable import TributaryCapture

@Suite struct CaptureRoundTripTests {
    /// One-channel float64 frames of `samples` noise-like values each (arbitrary bits: the fast path
    /// leaves them near their size), `bytes` of samples in all.
    private func noiseFrames(bytes: Int, samples: Int, seed: UInt64) -> [Frame] {
        var rng = SplitMix64(seed: seed)
        return (0..<bytes / (samples * 8)).map { index in
            let values = (0..<samples).map { _ in Double(bitPattern: rng.next() >> 2) }
            return Frame(
                encoding: .analog(AnalogData(channels: [values], firstSample: UInt64(index * samples))),
                sequence: UInt64(index), sourceID: 1)
        }
    }

    @Test(arguments: [1, 2])
    func everyFrameKindRoundTripsBitExactly(threads: Int) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let frames = syntheticFrames(300)
        let summary = try CaptureWriter(
            path: path,
            options: CaptureWriterOptions(maxChunkBytes: 64 << 10, compressionThreads: threads, fsync: .everyChunk, checkpointInterval: 0))
        for f in frames { try summary.append(f) }
        let written = try summary.close()
        #expect(written.frames == frames.count)
        #expect(!FileManager.default.fileExists(atPath: path + ".partial"))
        let reader = try CaptureReader(path: path)
        #expect(reader.hasFooter && !reader.wasRecovered && reader.damage.isEmpty)
        #expect(framesBySource(reader) == bySource(frames))
        // Every lost position was announced by a gap frame, which became a gap record.
        let announced = frames.filter { $0.header.kind == .gap }.count
        #expect(reader.gaps.count == announced && announced > 0)
        #expect(reader.gaps.allSatisfy { $0.cause == .announced && $0.missingCount == 1 })
        #expect(reader.configuration(source: 1) == SyntheticStream(channels: 2, samplesPerFrame: 64, rate: 1000).configuration)
    }

    /// With an fsync policy the writer starts the writeback of every `writebackBytes` written (so that
    /// its fdatasyncs wait for less); without one it leaves writeback to the kernel. Either way the
    /// capture reads back bit for bit.
    @Test(arguments: [FsyncPolicy.interval(seconds: 60), .none])
    func writebackStartsEveryFewMegabytesWithAnFsyncPolicy(fsync: FsyncPolicy) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        // 3 x writebackBytes of noise-like float64 (the fast path leaves it near its size).
        let frames = noiseFrames(bytes: 3 * CaptureWriter.writebackBytes, samples: 4_096, seed: 5)
        let writer = try writeCapture(frames, to: path, options: CaptureWriterOptions(chunk: .fast, fsync: fsync, checkpointInterval: 0))
        if fsync == .none {
            #expect(writer.writebacksStarted == 0)
        } else {
            #expect(
                writer.writebacksStarted >= 2,
                "\(writer.writebacksStarted) writeback requests for \(3 * CaptureWriter.writebackBytes) bytes")
        }
        let reader = try CaptureReader(path: path)
        #expect(reader.hasFooter && reader.damage.isEmpty)
        #expect(framesBySource(reader) == bySource(frames))
    }

    /// With an interval policy, a background thread syncs every `durableBytes` written: records are
    /// reported durable before the interval (60 s here) comes, each once and in file order, and the
    /// close reports the rest.
    @Test func backgroundSyncsReportRecordsDurableInOrderBeforeTheInterval() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let frames = noiseFrames(bytes: 3 * CaptureWriter.durableBytes, samples: 16_384, seed: 8)
        let writer = try CaptureWriter(
            path: path, options: CaptureWriterOptions(chunk: .fast, fsync: .interval(seconds: 60), checkpointInterval: 0))
        let durable = Mutex<[Int]>([])
        writer.onDurable = { entry in durable.withLock { $0.append(entry.offset) } }
        for f in frames { try writer.append(f) }
        // Nothing waits for the syncer: it is seen at work before the close.
        #expect(waitUntil(.seconds(20)) { writer.backgroundSyncs >= 1 }, "no background sync")
        #expect(waitUntil(.seconds(20)) { !durable.withLock { $0.isEmpty } })
        let beforeClose = durable.withLock { $0.count }
        _ = try writer.close()
        let offsets = durable.withLock { $0 }
        let reader = try CaptureReader(path: path)
        #expect(reader.hasFooter && reader.damage.isEmpty)
        #expect(offsets == reader.index.map(\.offset), "\(offsets.count) reported durable, \(reader.index.count) indexed")
        #expect(beforeClose > 0 && beforeClose < offsets.count)
        #expect(framesBySource(reader) == bySource(frames))
    }

    @Test func sequenceJumpsAreRecordedAsGaps() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let frames = [0, 1, 5, 6].map { Frame(encoding: .message(Message("m\($0)")), sequence: UInt64($0), sourceID: 2) }
        try record(frames, to: path)
        let reader = try CaptureReader(path: path)
        #expect(reader.gaps.map { [$0.firstMissingSequence, $0.missingCount] } == [[2, 3]])
        #expect(reader.gaps.first?.cause == .sequenceJump)
    }

    @Test func seekByTimeAndSequence() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let frames = syntheticFrames(400)
        try record(frames, to: path, chunkDuration: 0.5)
        let reader = try CaptureReader(path: path)
        let target = frames[250].header
        let bySequence = try #require(reader.seek(sequence: target.sequence, source: 1))
        var first: Frame?
        reader.forEachFrame(sources: [1], from: bySequence) { if first == nil, $0.header.sequence >= target.sequence { first = $0 } }
        #expect(first?.header.sequence == target.sequence)
        let byTime = try #require(reader.seek(timeNs: target.timestampNs, source: 1))
        #expect(reader.index[byTime].envelope.firstTimeNs <= target.timestampNs)
        #expect(reader.index[byTime].envelope.lastTimeNs >= target.timestampNs)
        #expect(reader.seek(timeNs: Int64.max) == nil)
    }

    @Test func analogBlocksComeInOrderWithTheirFormat() throws {
        let (dir, path, frames) = try recordSynthetic(100)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let reader = try CaptureReader(path: path)
        var firsts: [UInt64] = []
        reader.forEachAnalogBlock(source: 1) { _, view in firsts.append(view.firstSample) }
        let expected = frames.filter { $0.header.kind == .analog }.map { try! $0.analog().firstSample }
        #expect(firsts == expected)
    }

    @Test func adcFloat64ChunksCompressLikeTheCodec() throws {
        // Frames with headers still get most of the quantise+delta+bit-shuffle gain (tolerance: ratio > 3.1).
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let stream = SyntheticStream(channels: 8, samplesPerFrame: 1000, rate: 51_200, gapEvery: 0)
        let frames = (1..<60).map { Frame(encoding: .analog(stream.analog($0, format: .float64)), sequence: UInt64($0), sourceID: 1) }
        try record(frames, to: path, maxChunkBytes: 2 << 20, chunkDuration: 10)
        let reader = try CaptureReader(path: path)
        let s = try #require(reader.sources.first)
        #expect(Double(s.frameBytes) / Double(s.storedBytes) > 3.1)
        #expect(framesBySource(reader) == bySource(frames))
    }

    @Test func headerAndEnvelopeEncodingsAreExact() throws {
        let header = CaptureFileHeader(createdNs: 1_764_489_600_000_000_000, writer: "tributary test")
        let bytes = header.encoded()
        #expect(bytes.count % 8 == 0 && bytes.prefix(8).elementsEqual(CaptureFormat.fileMagic))
        guard case .valid(let parsed, let length) = try bytes.withUnsafeBytes({ try CaptureFileHeader.parse($0, file: "x") }) else {
            Issue.record("header did not parse")
            return
        }
        #expect(parsed == header && length == bytes.count)
        let envelope = RecordEnvelope(
            type: .chunk, codec: .zstd, sourceID: 7, firstSequence: 1, lastSequence: 9, firstTimeNs: -5,
            lastTimeNs: 6, sampleCount: 1000, frameCount: 3, kindMask: 8, storedLength: 77, contentLength: 99, payloadCRC: 0xDEAD_BEEF)
        let encoded = envelope.encoded()
        #expect(try encoded.withUnsafeBytes { try RecordEnvelope.parse($0) } == envelope)
        #expect(envelope.recordLength == 88 + 80)
    }

    /// Frames whose header and payload lie apart (as a subscriber receives them, or after `withHeader`)
    /// are stored exactly as their contiguous encoding would be: same records, same frames read back.
    @Test func framesWithTheirHeaderApartAreStoredAsTheirContiguousEncoding() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var frames = syntheticFrames(200)
        frames.append(Frame(encoding: .message(Message("no samples here")), sequence: 500, timestampNs: 1))
        frames.append(Frame(encoding: .start, sequence: 501, timestampNs: 2))
        let apart = frames.map { $0.withHeader($0.header) }
        #expect(apart.allSatisfy { !$0.isContiguous })
        try record(frames, to: dir + "/whole.tcap", threads: 1)
        try record(apart, to: dir + "/apart.tcap", threads: 1)
        var whole: [[UInt8]] = [], split: [[UInt8]] = []
        try CaptureReader(path: dir + "/whole.tcap").forEachFrame { whole.append($0.encodedBytes) }
        try CaptureReader(path: dir + "/apart.tcap").forEachFrame { split.append($0.encodedBytes) }
        #expect(whole.count == frames.count)
        #expect(split == whole)
        // (Chunks are per source: the source-0 frames come back after source 1's, so compare as sets.)
        let byBytes: ([UInt8], [UInt8]) -> Bool = { $0.lexicographicallyPrecedes($1) }
        #expect(whole.sorted(by: byBytes) == frames.map(\.encodedBytes).sorted(by: byBytes))
        // Apart and whole frames mixed in the same chunks (the chunk reads held and copied rows).
        let mixed = frames.enumerated().map { $0.offset % 3 == 0 ? $0.element : apart[$0.offset] }
        try record(mixed, to: dir + "/mixed.tcap", threads: 2)
        var both: [[UInt8]] = []
        try CaptureReader(path: dir + "/mixed.tcap").forEachFrame { both.append($0.encodedBytes) }
        #expect(both == whole)
    }

    /// The samples of frames whose header lies apart are not copied into the chunk: the chunk keeps
    /// the frame's buffer until it has regrouped them, then lets it go (nothing is kept after close).
    @Test func heldFrameBuffersAreReleasedOnceTheirChunkIsWritten() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try CaptureWriter(
            path: dir + "/a.tcap",
            options: CaptureWriterOptions(
                maxChunkBytes: 64 << 10, compressionThreads: 2,
                fsync: .none, checkpointInterval: 0))
        weak var firstBuffer: FrameBuffer?
        var expected: [[UInt8]] = []
        do {
            let apart = syntheticFrames(120).map { $0.withHeader($0.header) }
            firstBuffer = apart[0].buffer
            expected = apart.map(\.encodedBytes)
            for f in apart { try writer.append(f) }
            try writer.flush()
        }
        // Every chunk is written: no builder holds a received buffer any longer.
        #expect(firstBuffer == nil)
        _ = try writer.close()
        var read: [[UInt8]] = []
        try CaptureReader(path: dir + "/a.tcap").forEachFrame { read.append($0.encodedBytes) }
        let byBytes: ([UInt8], [UInt8]) -> Bool = { $0.lexicographicallyPrecedes($1) }
        #expect(read.sorted(by: byBytes) == expected.sorted(by: byBytes))
    }
}
