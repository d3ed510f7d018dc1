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
        if data[0] & 1 != 0 { CaptureChecksums.recompute(&bytes) }
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
}
