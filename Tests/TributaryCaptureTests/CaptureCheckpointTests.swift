import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

/// Opening a capture without a footer through its checkpoint chain (docs/CAPTURE.md §7 step 2): the
/// index must be what a full scan finds, and damage must still cost only the damaged record.
@Suite struct CaptureCheckpointTests {
    /// Records with a checkpoint after (nearly) every record and leaves the file as a crashed writer would.
    func crashedCapture(_ frames: [Frame], in dir: String) throws -> String {
        let path = dir + "/a.tcap"
        let writer = try CaptureWriter(path: path, options: checkpointingEveryRecord(maxChunkDuration: 0.2))
        for frame in frames { try writer.append(frame) }
        try writer.flush()
        writer.abandon()
        return path + ".partial"
    }

    /// A crashed capture of the first 120 frames of the synthetic stream: the frames and the path.
    func crashedCapture(in dir: String) throws -> (frames: [Frame], path: String) {
        let frames = syntheticFrames(120)
        return (frames, try crashedCapture(frames, in: dir))
    }

    @Test func checkpointIndexEqualsTheScan() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (frames, path) = try crashedCapture(in: dir)
        let reader = try CaptureReader(path: path)
        #expect(reader.indexSource == .checkpoints)
        #expect(!reader.hasFooter && reader.wasRecovered)
        #expect(reader.damage.isEmpty)
        #expect(reader.index.count > 5)
        #expect(framesBySource(reader) == bySource(frames))

        // The same file with its checkpoints made unrecognisable is scanned and gives the same index.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        var o = reader.recordsStart
        while o + 88 <= bytes.count {
            let stored = bytes.withUnsafeBytes { Int(RecordReader($0).u32(at: o + 64)) }
            if bytes[o + 8] == RecordType.checkpoint.rawValue { bytes[o + 8] = 0x7F }
            o += 88 + pad8(stored)
        }
        let copy = dir + "/scanned.tcap"
        try Data(bytes).write(to: URL(fileURLWithPath: copy))
        let plain = try CaptureReader(path: copy)
        #expect(plain.indexSource == .scan)
        #expect(plain.index == reader.index)
        #expect(!reader.gaps.isEmpty && plain.gaps == reader.gaps)
    }

    @Test func recordsAfterTheLastCheckpointAreScannedAndATornTailLosesOnlyItsRecord() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try crashedCapture(in: dir).path
        let full = try CaptureReader(path: path)
        let chunks = full.index.filter { $0.envelope.type == .chunk }
        let last = try #require(chunks.last)
        // Cut the file in the middle of the last chunk: its checkpoint never made it, the one before did.
        #expect(truncate(path, off_t(last.offset + 88 + Int(last.envelope.storedLength) / 2)) == 0)
        let reader = try CaptureReader(path: path)
        #expect(reader.indexSource == .checkpoints)
        #expect(reader.index == Array(full.index.prefix { $0.offset < last.offset }))
        #expect(reader.damage.count == 1 && reader.damage[0].offset == last.offset)
    }

    @Test func aCorruptChunkBehindACheckpointLosesOnlyThatChunk() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (frames, path) = try crashedCapture(in: dir)
        let clean = try CaptureReader(path: path)
        let chunks = clean.index.filter { $0.envelope.type == .chunk }
        let victim = chunks[chunks.count / 2]
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let lost = try clean.frames(of: victim).map(\.encodedBytes)
        for at in [victim.offset + 88 + Int(victim.envelope.storedLength) / 2, victim.offset + 20] {
            var damaged = bytes
            damaged[at] ^= 0x10
            try Data(damaged).write(to: URL(fileURLWithPath: path))
            let reader = try CaptureReader(path: path)
            #expect(reader.indexSource == .checkpoints)
            var expected = bySource(frames)
            expected[victim.envelope.sourceID]?.removeAll { lost.contains($0) }
            #expect(framesBySource(reader) == expected)
            #expect(reader.damage.map(\.offset) == [victim.offset])
            // repair keeps everything else
            let repaired = dir + "/repaired.tcap"
            // repaired twice: the second replaces the first
            let report = try CaptureRecovery.repair(input: path, output: repaired, replace: true)
            #expect(report.recordsKept == clean.index.count - 1)
            #expect(framesBySource(try CaptureReader(path: repaired)) == expected)
        }
    }

    @Test func aDamagedCheckpointFallsBackToTheScan() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (frames, path) = try crashedCapture(in: dir)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        // Find the first checkpoint record and flip a bit in its payload.
        var o = try CaptureReader(path: path).recordsStart, first: Int?
        while o + 88 <= bytes.count, first == nil {
            if bytes[o + 8] == RecordType.checkpoint.rawValue { first = o }
            o += 88 + pad8(bytes.withUnsafeBytes { Int(RecordReader($0).u32(at: o + 64)) })
        }
        let checkpoint = try #require(first)
        bytes[checkpoint + 88 + 20] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try CaptureReader(path: path)
        #expect(reader.indexSource == .scan)
        #expect(reader.damage.map(\.offset) == [checkpoint])
        #expect(framesBySource(reader) == bySource(frames))
    }
}
