import Foundation
import Testing
import TributaryTestSupport

@testable import TributaryWire

/// Replays every input that ever crashed or tripped the wire fuzzer (Fuzz/regressions/wire-fuzz/),
/// exactly as the fuzz target feeds it: the first byte picks the piece size.
@Suite struct FuzzRegressionTests {
    static let corpus = FuzzCorpus(target: "wire-fuzz")

    /// Every fuzz target's corpus (a missing folder would make its replay test run nothing).
    @Test(arguments: ["wire-fuzz", "capture-fuzz"])
    func regressionCorpusIsPresent(target: String) {
        let corpus = FuzzCorpus(target: target)
        #expect(!corpus.inputs.isEmpty, "no inputs in \(corpus.directory.path)")
    }

    @Test(arguments: corpus.inputs)
    func replay(name: String) throws {
        let data = try Self.corpus.bytes(name)
        guard data.count > 1 else { return }
        let piece = Int(data[0]) + 1
        var decoder = FrameStreamDecoder(maxFrameSize: 1 << 20, blockSize: 256)
        var offset = 1
        do {
            while offset < data.count {
                let end = min(data.count, offset + piece)
                try decoder.feed(Array(data[offset..<end])) { frame in
                    if let package = try? frame.payload().materialize() {
                        let once = Frame(encoding: package, header: frame.header)
                        let again = try Frame(copying: once.encodedBytes).payload().materialize()
                        #expect(Frame(encoding: again, header: frame.header).encodedBytes == once.encodedBytes)
                    }
                }
                offset = end
            }
            try decoder.finish()
        } catch is WireError {
            // A typed error is the expected outcome for malformed input.
        }
    }
}
