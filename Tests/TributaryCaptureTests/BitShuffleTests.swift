import CKernels
import Testing
import TributaryTestSupport

@testable import TributaryCapture

/// The layout written in BitShuffle's documentation, implemented bit by bit.
func referenceShuffle(_ input: [UInt8], elementSize s: Int) -> [UInt8] {
    var out = input
    let n = input.count / s
    let blockElements = BitShuffle.blockElementCount(elementSize: s)
    var blocks: [(start: Int, count: Int)] = []
    var start = 0
    while start + blockElements <= n { blocks.append((start, blockElements)); start += blockElements }
    let last = (n - start) - (n - start) % 8
    if last > 0 { blocks.append((start, last)) }
    for (start, m) in blocks {
        let base = start * s
        for i in 0..<(m * s) { out[base + i] = 0 }
        for j in 0..<s {
            for k in 0..<8 {
                let row = 8 * j + k
                for e in 0..<m where (input[base + e * s + j] >> k) & 1 == 1 {
                    out[base + row * (m / 8) + e / 8] |= UInt8(1) << (e % 8)
                }
            }
        }
    }
    return out
}

@Test(arguments: [1, 2, 4, 8])
func shuffleMatchesReferenceLayout(elementSize: Int) {
    var rng = SplitMix64(seed: UInt64(elementSize))
    // 0, tiny, non-multiples of 8 and 64, exactly one block, one block plus a partial block and a tail.
    let blockBytes = BitShuffle.blockElementCount(elementSize: elementSize) * elementSize
    for count in [
        0, 1, 7, 8 * elementSize, 63 * elementSize + 3, 64 * elementSize, 200 * elementSize + 1,
        blockBytes, blockBytes + 8 * elementSize, 2 * blockBytes + 77 * elementSize + elementSize - 1,
    ] {
        let input = rng.bytes(count)
        var shuffled = [UInt8](repeating: 0xAA, count: count)
        input.withUnsafeBytes { src in shuffled.withUnsafeMutableBytes { BitShuffle.shuffle(src, into: $0, elementSize: elementSize) } }
        #expect(shuffled == referenceShuffle(input, elementSize: elementSize), "count \(count)")
        var restored = [UInt8](repeating: 0x55, count: count)
        shuffled.withUnsafeBytes { src in restored.withUnsafeMutableBytes { BitShuffle.unshuffle(src, into: $0, elementSize: elementSize) }
        }
        #expect(restored == input, "count \(count)")
    }
}

@Test func shuffleOfOneElementPatternIsKnown() {
    // 8 int16 elements, only element 3 has bit 9 (byte 1, bit 1) set: row 8*1+1 = 9 is byte 0b0000_1000.
    var input = [UInt8](repeating: 0, count: 16)
    input[3 * 2 + 1] = 0b10
    var out = [UInt8](repeating: 0, count: 16)
    input.withUnsafeBytes { src in out.withUnsafeMutableBytes { BitShuffle.shuffle(src, into: $0, elementSize: 2) } }
    var expected = [UInt8](repeating: 0, count: 16)
    expected[9] = 0b1000
    #expect(out == expected)
}

@Test func blockSizesFollowBitshuffleDefaults() {
    #expect(BitShuffle.blockElementCount(elementSize: 1) == 8192)
    #expect(BitShuffle.blockElementCount(elementSize: 2) == 4096)
    #expect(BitShuffle.blockElementCount(elementSize: 4) == 2048)
    #expect(BitShuffle.blockElementCount(elementSize: 8) == 1024)
}

/// Eight-byte elements go through a C kernel where the processor has AVX-512BW and VBMI, or AVX2: the same
/// layout at every kernel level (CodecKernelTests' levels), against the bit-by-bit reference.
@Test func eightByteShuffleMatchesTheReferenceAtEveryKernelLevel() {
    var rng = SplitMix64(seed: 808)
    let blockBytes = BitShuffle.blockElementCount(elementSize: 8) * 8
    defer { _ = tributary_kernels_cap(2) }
    for level: Int32 in 0...2 {
        _ = tributary_kernels_cap(level)
        for count in [64 * 8, 64 * 8 + 5, 128 * 8, 192 * 8 + 8, blockBytes, blockBytes + 64 * 8 + 24, 3 * blockBytes + 1000 * 8 + 3] {
            let input = rng.bytes(count)
            var shuffled = [UInt8](repeating: 0xAA, count: count)
            input.withUnsafeBytes { src in shuffled.withUnsafeMutableBytes { BitShuffle.shuffle(src, into: $0, elementSize: 8) } }
            #expect(shuffled == referenceShuffle(input, elementSize: 8), "level \(level), count \(count)")
        }
    }
}
