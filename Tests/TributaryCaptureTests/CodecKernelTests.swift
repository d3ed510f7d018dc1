import CKernels
import Foundation
import Testing
import TributaryTestSupport

@testable import TributaryCapture

/// The decoder's C kernels (codec_kernels.h) at every instruction-set level this processor has —
/// portable, BMI2/AVX2, AVX-512 — bit for bit against the Swift loops that state their rule
/// (docs/CAPTURE.md §5.1): a stream-version-3/4 block's values from bin symbols and low bits, and
/// grid latents to binary64 and binary32 samples. Lengths cover every tail of the 8-wide steps.
@Suite(.serialized)
struct CodecKernelTests {
    static let lengths = [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4099]

    /// Runs `body` once at each level (the kernels fall back to the best the processor has when a
    /// level is above it), restoring the default after.
    static func atEveryLevel(_ body: (Int32) -> Void) {
        defer { _ = tributary_kernels_cap(2) }
        for level: Int32 in 0...2 {
            _ = tributary_kernels_cap(level)
            body(level)
        }
    }

    /// The rule: base + ((binStart + s) << shift) + low (base + low for the escape), wrapping.
    static func referenceValues(symbols: [UInt8], bits: [UInt8], shift: Int, base: UInt64, binStart: UInt64, escape: UInt8) -> [Int64] {
        let mask: UInt64 = shift == 0 ? 0 : (1 << UInt64(shift)) &- 1
        return symbols.indices.map { i in
            let position = i * shift
            var word: UInt64 = 0
            if shift > 0 { for k in 0..<8 { word |= UInt64(bits[position / 8 + k]) << UInt64(8 * k) } }
            let s = symbols[i]
            let bin = s == escape ? base : base &+ ((binStart &+ UInt64(s)) &<< UInt64(shift))
            return Int64(bitPattern: bin &+ ((word >> UInt64(position % 8)) & mask))
        }
    }

    @Test func binValuesMatchTheRuleAtEveryLevel() {
        var rng = SplitMix64(seed: 2026_12_01)
        Self.atEveryLevel { level in
            for shift in Array(0...17) + [24, 31, 32, 33, 40, 48, 55, 56] {
                for n in Self.lengths {
                    let bins = Int(rng.next() % 255) + 1
                    let escape = UInt8(bins)
                    let symbols = (0..<n).map { _ in UInt8(rng.next() % UInt64(bins + 1)) }
                    // 8 readable bytes at every value's first byte.
                    let bits = (0..<((n * shift) / 8 + 8)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    let base = rng.next(), binStart = rng.next() >> UInt64(rng.next() % 64)
                    let expected = Self.referenceValues(
                        symbols: symbols, bits: bits, shift: shift, base: base,
                        binStart: binStart, escape: escape)
                    var got = [Int64](repeating: 0x5A5A, count: n + 1)
                    got.withUnsafeMutableBufferPointer { r in
                        tributary_unpack_bins(symbols, bits, n, UInt32(shift), base, binStart, escape, r.baseAddress!)
                    }
                    #expect(Array(got[0..<n]) == expected, "level \(level), shift \(shift), n \(n)")
                    #expect(got[n] == 0x5A5A, "level \(level), shift \(shift), n \(n): wrote past n")
                }
            }
        }
    }

    /// Latents of every size class: small (the usual), up to ±2^51 (the AVX2 conversion's range) and
    /// beyond, and the extremes.
    static func latents(_ n: Int, _ rng: inout SplitMix64) -> [Int64] {
        (0..<n).map { i in
            switch rng.next() % 8 {
            case 0: return Int64(bitPattern: rng.next())
            case 1: return (1 << 51) - Int64(rng.next() % 3)
            case 2: return -(1 << 51) + Int64(rng.next() % 3) - 1
            case 3: return [Int64.min, Int64.max, 0, -1, 1 << 53 + 1][i % 5]
            default: return Int64(rng.next() % 65_536) - 32_768
            }
        }
    }

    @Test func gridSamplesMatchTheRuleAtEveryLevel() {
        var rng = SplitMix64(seed: 7)
        let grids: [(Double, Double)] = [(0, 20.0 / 65_536), (-10, 20.0 / 65_536), (0.1234, 3.0517578125e-4), (1e-3, 1.1e-7), (5, -0.3)]
        Self.atEveryLevel { level in
            for (offset, gain) in grids {
                for n in Self.lengths {
                    let x = Self.latents(n, &rng)
                    var out64 = [UInt64](repeating: 0xDEAD, count: n + 1)
                    var out32 = [UInt32](repeating: 0xBEEF, count: n + 1)
                    out64.withUnsafeMutableBufferPointer { tributary_grid64(x, $0.baseAddress!, n, offset, gain) }
                    out32.withUnsafeMutableBufferPointer { tributary_grid32(x, $0.baseAddress!, n, offset, gain) }
                    #expect(
                        Array(out64[0..<n]) == x.map { (offset + gain * Double($0)).bitPattern },
                        "level \(level), grid \(offset) + \(gain) k, n \(n)")
                    #expect(
                        Array(out32[0..<n]) == x.map { Float(offset + gain * Double($0)).bitPattern },
                        "level \(level), grid \(offset) + \(gain) k, n \(n)")
                    #expect(out64[n] == 0xDEAD && out32[n] == 0xBEEF, "level \(level), n \(n): wrote past n")
                    // With an adjustment block: the grid value's bits plus the adjustment, wrapping.
                    let adj = (0..<n).map { _ in Int64(bitPattern: rng.next() >> UInt64(rng.next() % 64)) * (rng.next() % 2 == 0 ? 1 : -1) }
                    out64.withUnsafeMutableBufferPointer { tributary_grid64_adjusted(x, adj, $0.baseAddress!, n, offset, gain) }
                    out32.withUnsafeMutableBufferPointer { tributary_grid32_adjusted(x, adj, $0.baseAddress!, n, offset, gain) }
                    let want64 = (0..<n).map { (i: Int) -> UInt64 in (offset + gain * Double(x[i])).bitPattern &+ UInt64(bitPattern: adj[i])
                    }
                    let want32 = (0..<n).map { (i: Int) -> UInt32 in
                        Float(offset + gain * Double(x[i])).bitPattern &+ UInt32(truncatingIfNeeded: adj[i])
                    }
                    #expect(Array(out64[0..<n]) == want64, "level \(level), adjusted, grid \(offset) + \(gain) k, n \(n)")
                    #expect(Array(out32[0..<n]) == want32, "level \(level), adjusted, grid \(offset) + \(gain) k, n \(n)")
                    #expect(out64[n] == 0xDEAD && out32[n] == 0xBEEF, "level \(level), adjusted, n \(n): wrote past n")
                    // Integer samples: the latents' low 16 or 32 bits.
                    var out16 = [Int16](repeating: 0x1234, count: n + 1), outInt32 = [Int32](repeating: 0x1234, count: n + 1)
                    out16.withUnsafeMutableBufferPointer { tributary_narrow16(x, $0.baseAddress!, n) }
                    outInt32.withUnsafeMutableBufferPointer { tributary_narrow32(x, $0.baseAddress!, n) }
                    #expect(Array(out16[0..<n]) == x.map { Int16(truncatingIfNeeded: $0) }, "level \(level), int16, n \(n)")
                    #expect(Array(outInt32[0..<n]) == x.map { Int32(truncatingIfNeeded: $0) }, "level \(level), int32, n \(n)")
                    #expect(out16[n] == 0x1234 && outInt32[n] == 0x1234, "level \(level), integers, n \(n): wrote past n")
                }
            }
        }
    }

    // MARK: Encoder kernels (codec_encode.c)

    @Test func orderEightPredictionMatchesTheRuleAtEveryLevel() {
        var rng = SplitMix64(seed: 88)
        Self.atEveryLevel { level in
            for n in Self.lengths + [24, 25, 31, 32, 33] {
                // Fitted coefficients are small (Q20); wrapping products come from large ones and latents.
                let coefficientSets: [[Int64]] = [
                    (0..<8).map { _ in Int64(rng.next() % (1 << 22)) - (1 << 21) },
                    (0..<8).map { _ in Int64(bitPattern: rng.next()) },
                ]
                for coefficients in coefficientSets {
                    let input = Self.latents(n, &rng)
                    var expected = input, got = input
                    expected.withUnsafeMutableBufferPointer {
                        NumericCodec.predictLinearReference8($0.baseAddress!, count: n, coefficients: coefficients)
                    }
                    got.withUnsafeMutableBufferPointer {
                        NumericCodec.predictLinear($0.baseAddress!, count: n, coefficients: coefficients, order: 8)
                    }
                    #expect(got == expected, "level \(level), n \(n)")
                }
            }
        }
    }

    @Test func binary64GridLatentsMatchTheRuleAtEveryLevel() {
        var rng = SplitMix64(seed: 64)
        let grids: [(Double, Double)] = [
            (0, 20.0 / 65_536), (-10, 20.0 / 65_536), (0.1234, 3.0517578125e-4), (0, 0x1p-40), (5, -0.3), (0, 1e-300),
        ]
        let specials: [Double] = [.nan, -.nan, .infinity, -.infinity, -0.0, 0, 1e300, -1e300, .leastNonzeroMagnitude, 0x1p50, -0x1p50]
        Self.atEveryLevel { level in
            for (offset, gain) in grids {
                for n in Self.lengths {
                    let samples: [UInt64] = (0..<n).map { i in
                        switch rng.next() % 6 {
                        case 0: return specials[i % specials.count].bitPattern
                        case 1: return rng.next()  // any bit pattern
                        case 2: return (offset + gain * Double(Int64(rng.next() % 200_001) - 100_000) + 1e-9).bitPattern
                        default: return (offset + gain * Double(Int64(rng.next() % 65_536) - 32_768)).bitPattern
                        }
                    }
                    var k = [Int64](repeating: 0, count: n + 1), adj = [Int64](repeating: 0, count: n + 1)
                    var kRef = k, adjRef = adj
                    let anyRef = NumericCodec.toGridReference64(samples, k: &kRef, adj: &adjRef, count: n, offset: offset, gain: gain)
                    let any = tributary_to_grid64(samples, &k, &adj, n, offset, gain, 1 / gain)
                    #expect(k == kRef && adj == adjRef, "level \(level), grid (\(offset), \(gain)), n \(n)")
                    #expect(Int64(bitPattern: any) == anyRef, "level \(level), n \(n)")
                }
            }
        }
    }

    /// Symbol digits (`tributary_pack_digits`, `tributary_expand_digits`: stream version 4's arities 2 and 3) at every
    /// level: the digits of every byte value in every position of the vector steps and the tails,
    /// and a bad byte (radix 6: ≥ 216) or a non-zero padding digit anywhere reported.
    @Test func symbolDigitsMatchTheLayoutAtEveryLevel() {
        var rng = SplitMix64(seed: 6)
        Self.atEveryLevel { level in
            for arity in 2...3 {
                let radix = arity == 2 ? 16 : 6
                for n in Self.lengths + [95, 96, 97, 191, 192, 193, 65536] where n > 0 {
                    let p = (n + arity - 1) / arity
                    let symbols = (0..<n).map { _ in UInt8(rng.next() % UInt64(radix)) }
                    var packed = [UInt8](repeating: 0, count: p)
                    for i in 0..<n {
                        packed[i % p] += symbols[i] * UInt8([1, radix, radix * radix][i / p])
                    }
                    var made = [UInt8](repeating: 0xEE, count: p)
                    tributary_pack_digits(symbols, n, UInt32(arity), &made)
                    #expect(made == packed, "level \(level), arity \(arity), n \(n)")
                    var back = [UInt8](repeating: 0xEE, count: n)
                    let largest = tributary_expand_digits(packed, n, UInt32(arity), &back)
                    #expect(back == symbols && Int(largest) == Int(symbols.max()!), "level \(level), arity \(arity), n \(n)")
                    if arity == 3 && n >= 3 {
                        var bad = packed
                        bad[Int(rng.next() % UInt64(p))] = UInt8(216 + rng.next() % 40)
                        #expect(tributary_expand_digits(bad, n, 3, &back) > 5, "level \(level), n \(n)")
                    }
                    if n % arity != 0 {
                        var bad = packed
                        bad[p - 1] = bad[p - 1] &+ UInt8([1, radix, radix * radix][n / p])  // a digit of value ≥ n
                        #expect(tributary_expand_digits(bad, n, UInt32(arity), &back) > 15, "level \(level), n \(n)")
                    }
                }
            }
            // Every byte in radix 6: its three digits, or (from 216 up) not a symbol byte.
            var out = [UInt8](repeating: 0, count: 96)
            for byte in 0...255 {
                let packed = [UInt8](repeating: UInt8(byte), count: 32)
                let largest = tributary_expand_digits(packed, 96, 3, &out)
                let digits = [UInt8(byte % 6), UInt8(byte / 6 % 6), UInt8(byte / 36)]
                #expect(
                    byte < 216
                        ? out == digits.flatMap { [UInt8](repeating: $0, count: 32) } && Int(largest) == Int(digits.max()!)
                        : largest > 5, "level \(level), byte \(byte)")
            }
        }
    }

    /// The escapes' positions (`tributary_find_byte`): every match counted, the first `capacity`
    /// listed in order, at every level and tail.
    @Test func escapePositionsMatchAtEveryLevel() {
        var rng = SplitMix64(seed: 4242)
        Self.atEveryLevel { level in
            for n in Self.lengths + [31, 32, 33, 96, 100] {
                for rate in [0, 3, 50] {
                    let bytes = (0..<n).map { _ in rng.next() % 100 < UInt64(rate) ? UInt8(5) : UInt8(rng.next() % 5) }
                    let expected = bytes.indices.filter { bytes[$0] == 5 }.map(UInt32.init)
                    for capacity in [expected.count, max(0, expected.count - 2)] {
                        var positions = [UInt32](repeating: 0xFFFF_FFFF, count: max(1, capacity))
                        let found = tributary_find_byte(bytes, n, 5, &positions, capacity)
                        #expect(found == expected.count, "level \(level), n \(n)")
                        #expect(Array(positions[..<capacity]) == Array(expected[..<capacity]), "level \(level), n \(n)")
                    }
                }
            }
        }
    }

    /// The encoder's low bits (`tributary_pack_low_bits`, values grouped per write) are those of
    /// the one-value-a-write BitWriter, byte for byte, at every width and tail.
    @Test func lowBitsAreTheBitWritersAtEveryWidth() {
        var rng = SplitMix64(seed: 56)
        for shift in 1...56 {
            for n in Self.lengths where n > 0 {
                let r = (0..<n).map { _ in Int64(bitPattern: rng.next()) }
                let base = Int64(bitPattern: rng.next())
                let mask: UInt64 = (1 << UInt64(shift)) &- 1
                var expected = [UInt8](repeating: 0, count: n * shift / 8 + 16)
                let expectedBytes = expected.withUnsafeMutableBytes { out in
                    var writer = BitWriter(out.baseAddress!)
                    for v in r { writer.write(UInt64(bitPattern: v &- base) & mask, shift) }
                    return writer.finish()
                }
                var got = [UInt8](repeating: 0, count: n * shift / 8 + 16)
                let bytes = tributary_pack_low_bits(r, n, UInt64(bitPattern: base), UInt32(shift), &got)
                #expect(bytes == expectedBytes && bytes == (n * shift + 7) / 8, "shift \(shift), n \(n)")
                #expect(got[..<bytes] == expected[..<bytes], "shift \(shift), n \(n)")
            }
        }
    }

    @Test func minimumAndMaximumMatchAtEveryLevel() {
        var rng = SplitMix64(seed: 1_2_3)
        Self.atEveryLevel { level in
            for n in Self.lengths where n > 0 {
                let values = Self.latents(n, &rng)
                var lo: Int64 = 0, hi: Int64 = 0
                tributary_min_max64(values, n, &lo, &hi)
                #expect(lo == values.min() && hi == values.max(), "level \(level), n \(n)")
            }
        }
    }

    @Test func binSymbolsAndNonzeroCountsMatchAtEveryLevel() {
        var rng = SplitMix64(seed: 4_5_6)
        Self.atEveryLevel { level in
            for n in Self.lengths {
                let values = Self.latents(n, &rng)
                for shift in [0, 1, 7, 8, 20, 33, 56, 63] {
                    let bins = UInt64(rng.next() % 255) + 1
                    let base = Int64(bitPattern: rng.next() >> UInt64(rng.next() % 64))
                    let start = rng.next() >> UInt64(rng.next() % 64)
                    var expected = [UInt8](repeating: 0xA5, count: n + 1), got = expected
                    let expectedEscapes = LatentCoder.binSymbolsReference(
                        values, count: n, base: base, shift: UInt64(shift), start: start,
                        bins: bins, escape: UInt8(bins), into: &expected)
                    let escapes = tributary_bin_symbols(values, n, UInt64(bitPattern: base), UInt32(shift), start, bins, UInt8(bins), &got)
                    #expect(got == expected && escapes == expectedEscapes, "level \(level), n \(n), shift \(shift)")
                }
                let sparse = values.map { $0 % 3 == 0 ? 0 : $0 }
                #expect(tributary_count_nonzero64(sparse, n) == sparse.filter { $0 != 0 }.count, "level \(level), n \(n)")
            }
        }
    }
}
