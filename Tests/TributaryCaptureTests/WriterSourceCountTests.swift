import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

/// A recording of more sources than the writer has chunk builders: each open chunk holds a builder,
/// so the writer used to wait forever for a free one (a publisher inventing source ids stalled
/// `record`). The chunk open longest now closes early; every frame is kept.
@Suite struct WriterSourceCountTests {
    @Test(.timeLimit(.minutes(1))) func moreSourcesThanBuildersAreAllRecorded() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/many.tcap"
        var frames: [Frame] = []
        for round in 0..<3 {
            for source in 1...200 as ClosedRange<UInt32> {
                let data = AnalogData(channels: [[Double(round), Double(source)]], firstSample: UInt64(2 * round))
                frames.append(
                    Frame(
                        encoding: .analog(data), sequence: UInt64(frames.count), timestampNs: Int64(round) * 1_000_000,
                        sourceID: source))
            }
        }
        try record(frames, to: path, maxChunkBytes: 1 << 20, chunkDuration: 60)
        let reader = try CaptureReader(path: path)
        #expect(reader.damage.isEmpty, "\(reader.damage)")
        #expect(framesBySource(reader) == bySource(frames))
    }
}
