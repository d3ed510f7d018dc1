import Foundation
import Testing
import TributaryTestSupport
import TributaryWire

@testable import TributaryCapture

/// Replays the capture fuzzer's seeds and every input that ever tripped it (Fuzz/regressions/capture-fuzz/),
/// as Fuzz/CaptureFuzz.swift feeds them (bit 0 of the first byte asks for the CRCs to be fixed up),
/// through the frame reader, the analog-row reader, the per-source totals and the gaps.
@Suite struct CaptureFuzzRegressionTests {
    /// (FuzzRegressionTests checks that it is not empty.)
    static let corpus = FuzzCorpus(target: "capture-fuzz")

    @Test(arguments: corpus.inputs)
    func replay(name: String) throws {
        let data = try Self.corpus.bytes(name)
        guard data.count > 1 else { return }
        var bytes = Array(data[1...])
        if data[0] & 1 != 0 { Self.fixChecksums(&bytes) }
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/input.tcap"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        guard let reader = try? CaptureReader(path: path) else { return }
        reader.forEachFrame { frame in _ = try? frame.payload() }
        try? reader.forEachAnalogChunkConcurrently(reader.index.filter { $0.envelope.type == .chunk }, threads: 1) { _, frames in
            for frame in frames where frame.channelCount > 0 {
                _ =
                    UnsafeRawBufferPointer(start: frame.samples(row: frame.channelCount - 1), count: frame.sampleCount * frame.format.size)
                    .last
            }
        }
        _ = reader.sources
        _ = reader.gaps
    }

    /// Same as Fuzz/CaptureFuzz.swift's fixChecksums.
    static func fixChecksums(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            guard raw.count >= 48 else { return }
            let base = raw.baseAddress!
            let headerLength = Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
            guard headerLength >= 48, headerLength <= raw.count else { return }
            base.storeBytes(
                of: CRC32C.checksum(UnsafeRawBufferPointer(start: base, count: headerLength - 4)).littleEndian,
                toByteOffset: headerLength - 4, as: UInt32.self)
            var position = (headerLength + 7) & ~7
            while position + 88 <= raw.count {
                let stored = Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: position + 64, as: UInt32.self)))
                let available = min(stored, raw.count - position - 88)
                base.storeBytes(
                    of: CRC32C.checksum(UnsafeRawBufferPointer(start: base + position + 88, count: available)).littleEndian,
                    toByteOffset: position + 80, as: UInt32.self)
                base.storeBytes(
                    of: CRC32C.checksum(UnsafeRawBufferPointer(start: base + position, count: 84)).littleEndian,
                    toByteOffset: position + 84, as: UInt32.self)
                position += 88 + ((available + 7) & ~7)
            }
        }
    }
}
