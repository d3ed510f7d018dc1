import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

/// Source-origin records (type 7, docs/CAPTURE.md §6) and the numbering of a recording of several
/// publishers: written in order with the chunks, indexed by the footer, found again by a scan and by
/// repair; damage in one is reported, not fatal; colliding ids get the lowest free id.
@Suite final class CaptureSourceOriginTests {
    /// Each test's own directory (Swift Testing makes an instance per test), removed with it.
    private let dir = temporaryDirectory()
    deinit { try? FileManager.default.removeItem(atPath: dir) }

    private let origins = [
        CaptureSourceOrigin(sourceID: 1, publisherSourceID: 1, publisherIndex: 0, address: "tcp://10.0.0.1:5564", publisher: "amp"),
        CaptureSourceOrigin(sourceID: 4, publisherSourceID: 1, publisherIndex: 1, address: "tcp://[::1]:5564", publisher: "Kraftmeßplatte"),
    ]

    /// 200 synthetic frames recorded into `dir`/a.tcap with the two origins among them.
    private func recordWithOrigins() throws -> (path: String, frames: [Frame]) {
        let path = dir + "/a.tcap"
        let frames = syntheticFrames(200)
        try record(path, frames: frames)
        return (path, frames)
    }

    private func record(_ path: String, frames: [Frame]) throws {
        let writer = try CaptureWriter(
            path: path,
            options: CaptureWriterOptions(
                maxChunkDuration: 0.2, minChunkBytes: 0, maxChunkBytes: 64 << 10, compressionThreads: 2, fsync: .none,
                checkpointInterval: 0))
        try writer.recordSourceOrigin(origins[0], timeNs: 1_000)
        for (k, frame) in frames.enumerated() {
            try writer.append(frame)
            if k == 50 { try writer.recordSourceOrigin(origins[1], timeNs: 2_000) }
        }
        try writer.close()
    }

    private func plain(_ o: [CaptureSourceOrigin]) -> [CaptureSourceOrigin] {
        o.map {
            var c = $0; c.offset = 0; return c
        }
    }

    @Test func originsRoundTripThroughTheFooterAScanAndRepair() throws {
        let (path, frames) = try recordWithOrigins()
        let reader = try CaptureReader(path: path)
        #expect(reader.hasFooter)
        #expect(plain(reader.sourceOrigins) == origins)
        #expect(reader.sourceOrigin(4)?.publisher == "Kraftmeßplatte")
        #expect(reader.sourceOrigin(2) == nil)
        #expect(reader.index.first?.envelope.type == .sourceOrigin)  // before any chunk
        #expect(reader.damage.isEmpty)
        #expect(framesBySource(reader) == bySource(frames))  // the stream itself is unchanged
        // Without the footer (a crashed recording) the scan finds them too.
        let footerOffset = reader.index.last.map { $0.offset + $0.envelope.recordLength }!
        let cut = dir + "/cut.tcap"
        try Data(contentsOf: URL(fileURLWithPath: path)).prefix(footerOffset).write(to: URL(fileURLWithPath: cut))
        let scanned = try CaptureReader(path: cut)
        #expect(!scanned.hasFooter)
        #expect(plain(scanned.sourceOrigins) == origins)
        #expect(scanned.damage.isEmpty)
        // Repair keeps them.
        let repaired = dir + "/repaired.tcap"
        _ = try CaptureRecovery.repair(input: cut, output: repaired)
        #expect(plain(try CaptureReader(path: repaired).sourceOrigins) == origins)
    }

    @Test func aDamagedOriginRecordIsReportedAndSkipped() throws {
        let (path, frames) = try recordWithOrigins()
        let offset = try #require(try CaptureReader(path: path).sourceOrigins.last?.offset)
        try expectDamagedRecordSkipped(path, byteAt: offset + CaptureFormat.envelopeLength + 30, inRecordAt: offset, frames: frames) {
            #expect(plain($0.sourceOrigins) == [origins[0]])
        }
    }

    @Test func malformedPayloadsDecodeToNothing() {
        let good = origins[1].payload
        func decode(_ bytes: [UInt8], source: UInt32 = 4) -> CaptureSourceOrigin? {
            bytes.withUnsafeBytes { CaptureSourceOrigin.decode($0, envelopeSourceID: source, offset: 0) }
        }
        #expect(decode(good)?.address == "tcp://[::1]:5564")
        #expect(decode(good, source: 3) == nil)  // not the envelope's source
        #expect(decode(Array(good.dropLast())) == nil)  // lengths do not add up
        #expect(decode(good + [0]) == nil)
        #expect(decode(Array(good.prefix(23))) == nil)
        var reserved = good
        reserved[20] = 1
        #expect(decode(reserved) == nil)
        var notUTF8 = good
        notUTF8[24] = 0xFF
        #expect(decode(notUTF8) == nil)
        var tooLong = good
        tooLong[13] = 0x20  // an address length of 8,192 + …
        #expect(decode(tooLong) == nil)
    }

    @Test func longTextsAreCutAtACharacterBoundary() {
        let long = CaptureSourceOrigin(
            sourceID: 1, publisherSourceID: 1, publisherIndex: 0, address: String(repeating: "a", count: 5000),
            publisher: String(repeating: "ß", count: 3000))
        let decoded = long.payload.withUnsafeBytes { CaptureSourceOrigin.decode($0, envelopeSourceID: 1, offset: 0) }
        #expect(decoded?.address.utf8.count == 4096)
        #expect(decoded?.publisher == String(repeating: "ß", count: 2048))
    }

    @Test func collidingIdsGetTheLowestFreeID() {
        typealias Key = CaptureSourceNumbering.Key
        // A: 1, 2; B: 1, 3 (its 3 kept although listed after its colliding 1); C: 2, 7, 0.
        var (n, order) = CaptureSourceNumbering.plan(welcomed: [[1, 2], [1, 3], [2, 7, 0]])
        #expect(
            order == [
                Key(publisher: 0, source: 1), Key(publisher: 0, source: 2), Key(publisher: 1, source: 1),
                Key(publisher: 1, source: 3), Key(publisher: 2, source: 2), Key(publisher: 2, source: 7),
            ])
        #expect(n.ids[Key(publisher: 0, source: 1)] == 1)
        #expect(n.ids[Key(publisher: 0, source: 2)] == 2)
        #expect(n.ids[Key(publisher: 1, source: 3)] == 3)
        #expect(n.ids[Key(publisher: 2, source: 7)] == 7)
        #expect(n.ids[Key(publisher: 1, source: 1)] == 4)
        #expect(n.ids[Key(publisher: 2, source: 2)] == 5)
        #expect(n.captureIDs(publisher: 1) == [3, 4])
        // Source 0 is shared, never renumbered; a source added later keeps a free id, else the lowest free.
        #expect(n.id(publisher: 1, source: 0)! == (0, false))
        #expect(n.id(publisher: 0, source: 9)! == (9, true))
        #expect(n.id(publisher: 2, source: 9)! == (6, true))
        #expect(n.id(publisher: 2, source: 9)! == (6, false))
        #expect(n.id(publisher: 1, source: 1)! == (4, false))
        // The same id listed twice by one publisher is one source.
        let (twice, twiceOrder) = CaptureSourceNumbering.plan(welcomed: [[5, 5]])
        #expect(twiceOrder.count == 1 && twice.ids[Key(publisher: 0, source: 5)] == 5)
    }
}
