import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

/// A chunk whose payload CRC32C does not match is damage, reported at its offset, even when its
/// body still decodes: the check must not lean on the decoder's own rejections (issue 38).
@Suite struct ChunkChecksumTests {
    @Test func aChunkThatDecodesButFailsItsCRCIsReportedAtItsOffset() throws {
        let (dir, path, frames) = try recordSynthetic(120, name: "x.tcap")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clean = try CaptureReader(path: path)
        let victim = clean.index.filter { $0.envelope.type == .chunk }[2]
        var b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // The payload is untouched (it decodes as before); only its stored CRC is wrong, and the
        // envelope's own CRC is made right again so that the envelope itself is accepted. The
        // footer goes (a crashed writer's file), so the file is scanned record by record.
        b.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress! + victim.offset
            base.storeBytes(of: (base.loadUnaligned(fromByteOffset: 80, as: UInt32.self) ^ 0x0100_0000), toByteOffset: 80, as: UInt32.self)
            base.storeBytes(
                of: CRC32C.checksum(UnsafeRawBufferPointer(start: base, count: 84)).littleEndian, toByteOffset: 84, as: UInt32.self)
        }
        b.removeLast(16)
        try Data(b).write(to: URL(fileURLWithPath: path))
        let reader = try CaptureReader(path: path)
        var delivered = 0
        reader.forEachFrame { _ in delivered += 1 }
        let crc = reader.damage.filter { $0.reason.contains("CRC32C") }
        #expect(crc.map(\.offset) == [victim.offset], "\(reader.damage)")
        #expect(delivered == frames.count - Int(victim.envelope.frameCount), "the damaged chunk's frames were delivered")
    }
}
