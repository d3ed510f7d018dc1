import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

@Suite struct CaptureDamageTests {
    /// Is `got` (per source) a prefix of `all`?
    func isPrefix(_ got: [UInt32: [[UInt8]]], of all: [UInt32: [[UInt8]]]) -> Bool {
        got.allSatisfy { source, frames in
            guard let expected = all[source], frames.count <= expected.count else { return false }
            return Array(expected.prefix(frames.count)) == frames
        }
    }

    @Test func truncationAtEveryOffsetYieldsAnExactPrefix() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let frames = syntheticFrames(40, stream: SyntheticStream(channels: 2, samplesPerFrame: 16, rate: 100, gapEvery: 13))
        try record(frames, to: path, chunkDuration: 0.4)
        let all = bySource(frames)
        let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let fd = open(path, O_RDWR)
        defer { close(fd) }
        var previous = Int.max
        var notCaptures = 0
        for length in stride(from: size, through: 0, by: -1) {
            #expect(ftruncate(fd, off_t(length)) == 0)
            let reader: CaptureReader
            do { reader = try CaptureReader(path: path) } catch {
                // Only a file too short to hold the magic is not a capture.
                #expect(length < 8, "length \(length): \(error)")
                notCaptures += 1
                continue
            }
            let got = framesBySource(reader)
            #expect(isPrefix(got, of: all), "length \(length)")
            let count = got.values.reduce(0) { $0 + $1.count }
            #expect(count <= previous, "length \(length)")
            previous = count
            if length < size { #expect(!reader.hasFooter || length == size) }
        }
        #expect(notCaptures == 8)
    }

    @Test func aFlippedBitDamagesOnlyItsChunk() throws {
        let (dir, path, _) = try recordSynthetic(200)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clean = try CaptureReader(path: path)
        let chunks = clean.index.filter { $0.envelope.type == .chunk }
        #expect(chunks.count > 4)
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for (n, victim) in chunks.enumerated() where n % 2 == 1 {
            for partial in [false, true] {
                var bytes = original
                // A payload bit in the middle of the victim chunk; in the .partial case the footer is cut off too.
                let at = victim.offset + 88 + Int(victim.envelope.storedLength) / 2
                bytes[at] ^= 0x10
                if partial { bytes.removeLast(bytes.count - (chunks.last!.offset + chunks.last!.envelope.recordLength)) }
                let damaged = dir + "/damaged.tcap"
                try Data(bytes).write(to: URL(fileURLWithPath: damaged))
                let reader = try CaptureReader(path: damaged)
                #expect(reader.hasFooter == !partial)
                var expected: [UInt32: [[UInt8]]] = [:]
                for chunk in chunks where chunk.offset != victim.offset {
                    for f in try clean.frames(of: chunk) { expected[f.header.sourceID, default: []].append(f.encodedBytes) }
                }
                #expect(framesBySource(reader) == expected)
                #expect(reader.damage.map(\.offset) == [victim.offset], "\(reader.damage)")
                // Decoding ahead on threads yields the same frames in the same order, and the same damage.
                for threads in [2, 3] {
                    let ahead = try CaptureReader(path: damaged)
                    var frames: [UInt32: [[UInt8]]] = [:]
                    ahead.forEachFrame(threads: threads) { frames[$0.header.sourceID, default: []].append($0.encodedBytes) }
                    #expect(frames == expected)
                    #expect(ahead.damage.map(\.offset) == [victim.offset])
                }
            }
        }
    }

    /// A body that stops early (throws) while chunks are decoded ahead: the decoding threads stop.
    @Test func stoppingEarlyWhileDecodingAheadEndsTheThreads() throws {
        let (dir, path) = try recordedSyntheticCapture(400)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let reader = try CaptureReader(path: path)
        struct Enough: Error {}
        var seen = 0
        #expect(throws: Enough.self) {
            try reader.forEachFrame(threads: 2) { _ in
                seen += 1
                if seen == 50 { throw Enough() }
            }
        }
        #expect(seen == 50)
        // The reader is still usable afterwards, on the calling thread and ahead.
        var serial = 0, ahead = 0
        reader.forEachFrame { _ in serial += 1 }
        reader.forEachFrame(threads: 2) { _ in ahead += 1 }
        #expect(ahead == serial && serial > 50)
    }

    @Test func aDamagedEnvelopeIsSkippedToTheNextRecord() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let writer = try record(syntheticFrames(200), to: path, close: false)
        writer.abandon()
        let partial = path + ".partial"
        let clean = try CaptureReader(path: partial)
        let victim = clean.index[3]
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: partial)))
        bytes[victim.offset + 20] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: partial))
        let reader = try CaptureReader(path: partial)
        #expect(
            reader.damage.count == 1 && reader.damage[0].offset == victim.offset && reader.damage[0].length == victim.envelope.recordLength)
        #expect(reader.index.count == clean.index.count - 1)
    }

    @Test func repairWritesAValidFootedCapture() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let frames = syntheticFrames(150)
        let writer = try record(frames, to: path, close: false)
        writer.abandon()
        let partial = path + ".partial"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: partial)))
        bytes.append(contentsOf: [0x9E, 0x54, 0x52, 0x45, 1, 2, 3])  // a torn record start
        try Data(bytes).write(to: URL(fileURLWithPath: partial))
        let report = try CaptureRecovery.repair(input: partial, output: path)
        #expect(!report.inputHadFooter && report.damage.count == 1)
        let reader = try CaptureReader(path: path)
        #expect(reader.hasFooter && reader.wasRepaired && reader.wasRecovered && reader.damage.isEmpty)
        #expect(framesBySource(reader) == bySource(frames))
    }

    @Test func notACaptureIsATypedError() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/x"
        try Data("hello world, not a capture".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: CaptureError.self) { try CaptureReader(path: path) }
    }
}
