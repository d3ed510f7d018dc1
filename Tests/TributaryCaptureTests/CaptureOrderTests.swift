import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

/// Issue 38 item 12: a source's chunk records out of sequence order in the file (docs/CAPTURE.md §7
/// step 5) are reported and read back in order; and a footer entry whose offset is near Int.max is
/// damage, not an overflow.
@Suite struct CaptureOrderTests {
    /// The bytes of every record of a capture (envelope and padded payload), in file order, and the header.
    func records(_ bytes: [UInt8]) -> (header: [UInt8], records: [[UInt8]]) {
        bytes.withUnsafeBytes { raw in
            let headerLength = Int(RecordReader(raw).u32(at: 12))
            var out: [[UInt8]] = []
            var position = headerLength
            while position + 88 <= raw.count, RecordReader(raw).u64(at: position) == CaptureFormat.syncMarker {
                let length = 88 + pad8(Int(RecordReader(raw).u32(at: position + 64)))
                out.append(Array(bytes[position..<(position + length)]))
                position += length
            }
            return (Array(bytes[..<headerLength]), out)
        }
    }

    @Test func chunkRecordsOutOfSequenceOrderAreReportedAndReadInOrder() throws {
        let (dir, path, frames) = try recordSynthetic(300)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (header, all) = records(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))))
        // The chunk records of source 1, and two of them (not neighbours) swapped; the footer dropped (a scan).
        var kept = all.filter { $0[8] != RecordType.footer.rawValue }
        let ofSource1 = kept.indices.filter {
            kept[$0][8] == RecordType.chunk.rawValue && kept[$0].withUnsafeBytes { RecordReader($0).u32(at: 12) } == 1
        }
        #expect(ofSource1.count > 6)
        kept.swapAt(ofSource1[2], ofSource1[5])
        let swapped = dir + "/swapped.tcap"
        try Data(header + kept.joined()).write(to: URL(fileURLWithPath: swapped))

        let reader = try CaptureReader(path: swapped)
        #expect(framesBySource(reader) == bySource(frames))
        let reasons = reader.damage.map(\.reason)
        #expect(reasons.count == 2, "\(reasons)")
        #expect(reasons.allSatisfy { $0.contains("out of sequence order") }, "\(reasons)")

        // Repair writes the records in order: its output reads back without damage.
        let repaired = dir + "/repaired.tcap"
        let report = try CaptureRecovery.repair(input: swapped, output: repaired)
        #expect(report.damage.count == 2)
        let again = try CaptureReader(path: repaired)
        #expect(again.damage.isEmpty, "\(again.damage)")
        #expect(framesBySource(again) == bySource(frames))

        // The capture as written is in order: nothing to report.
        #expect(try CaptureReader(path: path).damage.isEmpty)
    }

    @Test func aFooterEntryOffsetNearIntMaxIsDamageNotAnOverflow() throws {
        let (dir, path, frames) = try recordSynthetic(40)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress!
            var w = RecordWriter(raw)
            let footer = Int(RecordReader(UnsafeRawBufferPointer(raw)).u64(at: raw.count - 16))
            // The first entry's offset (payload byte 16), then the payload and envelope CRCs made right again.
            w.put(UInt64(Int.max - 7), at: footer + 88 + 16)
            let stored = Int(RecordReader(UnsafeRawBufferPointer(raw)).u32(at: footer + 64))
            w.put(CRC32C.checksum(UnsafeRawBufferPointer(start: base + footer + 88, count: stored)), at: footer + 80)
            w.put(CRC32C.checksum(UnsafeRawBufferPointer(start: base + footer, count: 84)), at: footer + 84)
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try CaptureReader(path: path)
        #expect(!reader.hasFooter)
        #expect(reader.damage.contains { $0.reason.contains("footer: entry 0 is invalid") }, "\(reader.damage)")
        #expect(framesBySource(reader) == bySource(frames))
    }
}
