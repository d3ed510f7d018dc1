import Testing
import TributaryTestSupport

@testable import TributaryWire

@Suite struct FrameStreamDecoderTests {
    /// Frames of every kind, concatenated as on the wire or in a frame file.
    static func stream(seed: UInt64) -> (frames: [Frame], bytes: [UInt8]) {
        var factory = PackageFactory(seed: seed)
        var frames: [Frame] = []
        for _ in 0..<3 { for kind in FrameKind.allCases { frames.append(factory.frame(kind)) } }
        return (frames, frames.flatMap { $0.encodedBytes })
    }

    static func decode(_ bytes: [UInt8], pieces: [Int], blockSize: Int = 1 << 20) throws -> [Frame] {
        var decoder = FrameStreamDecoder(blockSize: blockSize)
        var out: [Frame] = []
        var at = 0
        for size in pieces {
            try decoder.feed(Array(bytes[at..<(at + size)])) { out.append($0) }
            at += size
        }
        #expect(at == bytes.count)
        try decoder.finish()
        return out
    }

    static func check(_ frames: [Frame], against expected: [Frame]) throws {
        #expect(frames.count == expected.count)
        var position = 0
        for (got, want) in zip(frames, expected) {
            #expect(got.header == want.header)
            #expect(got.encodedBytes == want.encodedBytes)
            #expect(got.position == position)
            got.withUnsafeBytes { #expect(Int(bitPattern: $0.baseAddress!) % 8 == 0) }
            #expect(try got.payload().materialize() == want.payload().materialize())
            position += want.header.frameLength
        }
    }

    @Test func oneByteAtATime() throws {
        let (frames, bytes) = Self.stream(seed: 1)
        try Self.check(try Self.decode(bytes, pieces: Array(repeating: 1, count: bytes.count), blockSize: 64), against: frames)
    }

    @Test func everythingAtOnce() throws {
        let (frames, bytes) = Self.stream(seed: 2)
        try Self.check(try Self.decode(bytes, pieces: [bytes.count]), against: frames)
    }

    @Test func oneFramePerPiece() throws {
        let (frames, bytes) = Self.stream(seed: 3)
        try Self.check(try Self.decode(bytes, pieces: frames.map(\.header.frameLength)), against: frames)
    }

    @Test(arguments: [40, 64, 257, 4096])
    func randomPiecesAndSmallBlocks(blockSize: Int) throws {
        let (frames, bytes) = Self.stream(seed: 4)
        var rng = SplitMix64(seed: UInt64(blockSize))
        var pieces: [Int] = []
        var left = bytes.count
        while left > 0 {
            let n = min(left, Int.random(in: 1...300, using: &rng))
            pieces.append(n)
            left -= n
        }
        try Self.check(try Self.decode(bytes, pieces: pieces, blockSize: blockSize), against: frames)
    }

    @Test func ignorableKindsAreSkipped() throws {
        var bytes = Frame(encoding: .message(Message("before"))).encodedBytes
        var unknown = Frame(encoding: .xml("<skipped/>")).encodedBytes
        unknown[5] = 200  // an ignorable kind (>= 128)
        bytes += unknown + Frame(encoding: .start).encodedBytes
        var decoder = FrameStreamDecoder()
        var kinds: [FrameKind] = []
        try decoder.feed(bytes) { kinds.append($0.header.kind) }
        #expect(kinds == [.message, .start])
        #expect(decoder.skippedFrames == 1)
    }

    @Test func truncatedStreamIsReportedAtFinish() throws {
        let bytes = Frame(encoding: .message(Message("hello"))).encodedBytes
        for cut in 1..<bytes.count {
            var decoder = FrameStreamDecoder()
            try decoder.feed(Array(bytes[..<cut])) { _ in Issue.record("no frame should complete") }
            #expect(throws: WireError.self) { try decoder.finish() }
            do { try decoder.finish() } catch { #expect(error.code == .truncated && error.offset == cut) }
        }
    }

    @Test func oversizedHeaderIsRejectedBeforeBuffering() throws {
        var header = Frame(encoding: .start).encodedBytes
        header.replaceSubrange(12..<16, with: [0, 0, 0, 0x10])  // 256 MiB payload
        var decoder = FrameStreamDecoder(maxFrameSize: 1 << 20)
        let before = Frame(encoding: .stop).encodedBytes
        do {
            try decoder.feed(before + header) { _ in }
            Issue.record("expected frameTooLarge")
        } catch let error as WireError {
            #expect(error.code == .frameTooLarge && error.field == "header.payload_length")
            #expect(error.offset == before.count + 12)
        }
        // The decoder stays failed.
        #expect(throws: WireError.self) { try decoder.feed([0]) { _ in } }
    }
}
