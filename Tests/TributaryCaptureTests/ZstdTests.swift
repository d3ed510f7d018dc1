import Testing
import TributaryTestSupport

@testable import TributaryCapture

private func compressed(_ input: [UInt8], level: Int = 1, rawLiterals: Bool = false) throws -> [UInt8] {
    let compressor = try ZstdCompressor(level: level, rawLiterals: rawLiterals)
    var out = [UInt8](repeating: 0, count: ZstdCompressor.maxCompressedSize(input.count))
    let n = try input.withUnsafeBytes { src in try out.withUnsafeMutableBytes { try compressor.compress(src, into: $0) } }
    return Array(out[..<n])
}

/// Decompresses through the typed-throwing API, keeping its error type for the assertions.
private func decompressed(_ frame: [UInt8], bound: Int) throws(ZstdError) -> [UInt8] {
    let decompressor = try ZstdDecompressor()
    var out = [UInt8](repeating: 0, count: bound)
    var result: Result<Int, ZstdError> = .success(0)
    frame.withUnsafeBytes { src in
        out.withUnsafeMutableBytes { dst in
            do throws(ZstdError) { result = .success(try decompressor.decompress(src, into: dst)) } catch { result = .failure(error) }
        }
    }
    let n = try result.get()
    return Array(out[..<n])
}

@Test(arguments: [0, 1, 100, 65_537])
func zstdRoundTripDeclaresContentSize(count: Int) throws {
    var rng = SplitMix64(seed: UInt64(count))
    let input = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next() % 7) }
    let frame = try compressed(input)
    #expect(try frame.withUnsafeBytes { try ZstdDecompressor.contentSize(of: $0) } == count)
    #expect(try decompressed(frame, bound: count) == input)
}

/// Raw literals: bytes without matches are stored as they are (no Huffman stage), so noise of 6 bits a
/// byte, which Huffman shrinks to about 3/4 at level 1, stays at its size; the frames read back the
/// same. At negative levels zstd 1.5 leaves literals raw by default: the option makes it explicit.
@Test func rawLiteralsSkipTheHuffmanStageAndStillRoundTrip() throws {
    var rng = SplitMix64(seed: 21)
    let input = (0..<100_000).map { _ in UInt8(truncatingIfNeeded: rng.next() % 64) }  // 6 bits a byte, next to no matches
    let huffman = try compressed(input, level: 1)
    #expect(huffman.count < input.count * 8 / 10, "Huffman-coded \(huffman.count) of \(input.count)")
    for level in [1, -1] {
        let raw = try compressed(input, level: level, rawLiterals: true)
        #expect(raw.count > input.count * 95 / 100, "level \(level): raw literals \(raw.count) of \(input.count)")
        #expect(try decompressed(raw, bound: input.count) == input)
    }
    // The fast path's options store literals raw; with entropy coding on they are ignored (a coded
    // stream's symbols need the Huffman stage).
    #expect(ChunkCodecOptions.fast.usesRawLiterals)
    #expect(!ChunkCodecOptions(rawLiterals: true).usesRawLiterals)
}

@Test func zstdRejectsTruncatedCorruptTrailingAndOversized() throws {
    var rng = SplitMix64(seed: 9)
    let input = (0..<10_000).map { _ in UInt8(truncatingIfNeeded: rng.next() % 5) }
    let frame = try compressed(input)
    // Truncated: every length short of the whole frame is refused with a typed error.
    for cut in [0, 1, 5, frame.count / 2, frame.count - 1] {
        #expect(throws: ZstdError.self) { try decompressed(Array(frame[..<cut]), bound: input.count) }
    }
    // A flipped bit in the body fails decoding or the content checksum.
    var corrupt = frame
    corrupt[frame.count / 2] ^= 0x10
    #expect(throws: ZstdError.self) { try decompressed(corrupt, bound: input.count) }
    // Checksum bytes (the last 4) altered: only the checksum can catch it.
    var badChecksum = frame
    badChecksum[frame.count - 1] ^= 0xFF
    do { _ = try decompressed(badChecksum, bound: input.count); Issue.record("checksum not verified") } catch {
        #expect(error.kind == .decompression)
        #expect(error.message.lowercased().contains("checksum"))
    }
    do { _ = try decompressed(frame + [0], bound: input.count); Issue.record("trailing byte accepted") } catch {
        #expect(error.kind == .malformedFrame)
    }
    do { _ = try decompressed(frame, bound: input.count - 1); Issue.record("bound ignored") } catch {
        #expect(error.kind == .contentTooLarge)
    }
    do { _ = try decompressed(Array("not zstd at all".utf8), bound: 100); Issue.record("garbage accepted") } catch {
        #expect(error.kind == .malformedFrame)
        #expect(!error.message.isEmpty)
    }
}

@Test func zstdRejectsOutOfRangeLevel() {
    #expect(throws: ZstdError.self) { try ZstdCompressor(level: 1000) }
    #expect(throws: ZstdError.self) { try ZstdCompressor(level: 1).setLevel(23) }
    #expect(throws: Never.self) { try ZstdCompressor(level: 1).setLevel(19) }
}
