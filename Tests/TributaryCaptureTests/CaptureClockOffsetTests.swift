import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

/// Clock-offset records (type 6, docs/CAPTURE.md §6): written in order with the chunks, indexed by
/// the footer, found again by a scan and by repair, and damage in one is reported, not fatal.
@Suite final class CaptureClockOffsetTests {
    /// Each test's own directory (Swift Testing makes an instance per test), removed with it.
    private let dir = temporaryDirectory()
    deinit { try? FileManager.default.removeItem(atPath: dir) }

    private let estimates = [
        CaptureClockOffset(offsetNs: 1_500_000_123, rttNs: 210_000, measuredAtNs: 1_000_000_000, samples: 8, sourceIDs: [1, 2]),
        CaptureClockOffset(offsetNs: -7, rttNs: 0, measuredAtNs: 6_000_000_000, samples: 1, sourceIDs: []),
    ]

    /// 200 synthetic frames recorded into `dir`/a.tcap with the two estimates among them.
    private func recordWithOffsets() throws -> (path: String, frames: [Frame]) {
        let path = dir + "/a.tcap"
        let frames = syntheticFrames(200)
        let writer = try CaptureWriter(
            path: path,
            options: CaptureWriterOptions(
                maxChunkDuration: 0.2, minChunkBytes: 0, maxChunkBytes: 64 << 10, compressionThreads: 2, fsync: .none,
                checkpointInterval: 0))
        for (k, frame) in frames.enumerated() {
            try writer.append(frame)
            if k == 10 { try writer.recordClockOffset(estimates[0]) }
            if k == 100 { try writer.recordClockOffset(estimates[1]) }
        }
        try writer.close()
        return (path, frames)
    }

    @Test func offsetsRoundTripThroughTheFooterAndAScan() throws {
        let (path, frames) = try recordWithOffsets()
        let reader = try CaptureReader(path: path)
        #expect(reader.hasFooter)
        let read = reader.clockOffsets
        #expect(
            read.map {
                CaptureClockOffset(
                    offsetNs: $0.offsetNs, rttNs: $0.rttNs, measuredAtNs: $0.measuredAtNs, samples: $0.samples, sourceIDs: $0.sourceIDs)
            } == estimates)
        #expect(read[0].applies(to: 2) && !read[0].applies(to: 3) && read[1].applies(to: 3))
        #expect(reader.damage.isEmpty)
        #expect(framesBySource(reader) == bySource(frames))  // the stream itself is unchanged
        // Without the footer (a crashed recording) the scan finds them too.
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        let footerOffset = reader.index.last.map { $0.offset + $0.envelope.recordLength }!
        let cut = dir + "/cut.tcap"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(footerOffset).write(to: URL(fileURLWithPath: cut))
        #expect(footerOffset < size)
        let scanned = try CaptureReader(path: cut)
        #expect(!scanned.hasFooter)
        #expect(scanned.clockOffsets.map(\.offsetNs) == estimates.map(\.offsetNs))
        // Repair keeps them.
        let repaired = dir + "/repaired.tcap"
        _ = try CaptureRecovery.repair(input: cut, output: repaired)
        #expect(try CaptureReader(path: repaired).clockOffsets.map(\.offsetNs) == estimates.map(\.offsetNs))
    }

    @Test func aDamagedOffsetRecordIsReportedAndSkipped() throws {
        let (path, frames) = try recordWithOffsets()
        let offset = try #require(try CaptureReader(path: path).clockOffsets.first?.offset)
        try expectDamagedRecordSkipped(path, byteAt: offset + CaptureFormat.envelopeLength + 3, inRecordAt: offset, frames: frames) {
            #expect($0.clockOffsets.map(\.offsetNs) == [estimates[1].offsetNs])
        }
    }

    @Test func malformedPayloadsDecodeToNothing() {
        var bytes = [UInt8](repeating: 0, count: 36)
        bytes[28] = 2  // two source ids announced, one present
        #expect(bytes.withUnsafeBytes { CaptureClockOffset.decode($0, offset: 0) } == nil)
        bytes[28] = 1
        #expect(bytes.withUnsafeBytes { CaptureClockOffset.decode($0, offset: 0) }?.sourceIDs == [0])
        #expect(Array(bytes.prefix(31)).withUnsafeBytes { CaptureClockOffset.decode($0, offset: 0) } == nil)
    }
}
