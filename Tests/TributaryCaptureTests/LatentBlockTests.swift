import Foundation
import Testing
import TributaryTestSupport

@testable import TributaryCapture

/// Latent blocks of coded stream versions 3 and 4 (docs/CAPTURE.md §5.1): the values come back bit
/// for bit whatever the bins, escapes, widths and symbol arity, and each rule of the layout is
/// enforced by the decoder.
@Suite struct LatentBlockTests {
    /// Noise of `spread` around 0, with a few outliers far away (escapes) when `outliers`.
    static func values(_ n: Int, spread: UInt64, outliers: Bool, seed: UInt64) -> [Int64] {
        var rng = SplitMix64(seed: seed)
        return (0..<n).map { i in
            if outliers && i % 997 == 5 { return Int64(bitPattern: rng.next()) }
            return Int64(rng.next() % (2 * spread + 1)) - Int64(spread)
        }
    }

    /// Encodes `r` as `NumericCodec` does (the arity its planner chooses), or with a plan of `arity`; returns the block.
    static func encode(_ r: [Int64], arity: Int? = nil) throws -> [UInt8] {
        let n = r.count
        var histogram = [Int](repeating: 0, count: LatentCoder.histogramSize)
        var symbols = [UInt8](repeating: 0, count: n)
        var packed = [UInt8](repeating: 0, count: n)
        var positions = [UInt32](repeating: 0, count: n)
        var out = [UInt8](repeating: 0, count: LatentCoder.headerSizeV3 + 9 * n + 64)
        let compressor = try ZstdCompressor(level: 1, checksum: false)
        let size = r.withUnsafeBufferPointer { rp in
            let plan = LatentCoder.plan(
                rp.baseAddress!, count: n, histogram: &histogram,
                maxShift: LatentCoder.maxShiftV3, huffmanBound: true, multiSymbol: true, arity: arity)
            if let arity { #expect(plan.arity == arity) }
            return LatentCoder.encodeV4(
                rp.baseAddress!, count: n, plan: plan, symbols: &symbols, packed: &packed,
                positions: &positions, compressor: compressor, into: &out)
        }
        return Array(out[..<size])
    }

    static func decode(_ block: [UInt8], count n: Int, version: UInt8 = 4) throws -> [Int64] {
        var r = [Int64](repeating: 0, count: n)
        let tables = LatentCoder.Tables()
        let decompressor = try ZstdDecompressor()
        let consumed = try block.withUnsafeBytes { b in
            try r.withUnsafeMutableBufferPointer {
                try LatentCoder.decodeV3(b, count: n, version: version, tables: tables, decompressor: decompressor, into: $0.baseAddress!)
            }
        }
        #expect(consumed == block.count)
        return r
    }

    static let shapes: [(Int, UInt64, Bool)] = [
        (1, 0, false), (2, 1, false), (3, 5, false), (4, 2, false), (5, 9, false),
        (1000, 0, false), (5000, 40, false), (5000, 40, true), (70_000, 3000, true),
        (4096, UInt64(Int64.max / 4), false),
    ]

    @Test(arguments: shapes, [nil, 1, 2, 3])
    func valuesRoundTrip(shape: (Int, UInt64, Bool), arity: Int?) throws {
        let (n, spread, outliers) = shape
        let r = Self.values(n, spread: spread, outliers: outliers, seed: UInt64(n) &+ spread)
        let block = try Self.encode(r, arity: arity)
        if let arity { #expect(block[11] == UInt8(arity)) }
        #expect(try Self.decode(block, count: n) == r)
    }

    /// A block of arity 1 is a block of stream version 3 once its arity byte is 0 (version 3's
    /// u16 bin count): version 3 blocks still read, and neither version takes the other's byte.
    @Test(arguments: [(5000, 40 as UInt64, true), (3, 5, false)])
    func versionThreeBlocksStillRead(n: Int, spread: UInt64, outliers: Bool) throws {
        let r = Self.values(n, spread: spread, outliers: outliers, seed: 11)
        var block = try Self.encode(r, arity: 1)
        #expect(block[11] == 1)
        #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(block, count: n, version: 3) }
        block[11] = 0
        #expect(try Self.decode(block, count: n, version: 3) == r)
        #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(block, count: n, version: 4) }
        block[11] = 4
        #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(block, count: n, version: 4) }
    }

    /// Noisy integer data (the residuals of a 16-bit converter's ~160 LSB of noise) is coded two or
    /// three bins to a symbol byte, within the planner's allowance of one a byte (its estimate, the
    /// symbol bytes' Huffman code, is not zstd's exact size: half a per cent is left for that).
    @Test func theWriterPacksNoisyDataSeveralToAByte() throws {
        var rng = SplitMix64(seed: 9)
        let r: [Int64] = (0..<65536).map { _ in
            // A sum of uniforms: close to normal, σ ≈ 160.
            (0..<4).reduce(Int64(0)) { s, _ in s + Int64(rng.next() % 555) } - 1108
        }
        let chosen = try Self.encode(r), single = try Self.encode(r, arity: 1)
        #expect(chosen[11] >= 2)
        #expect(Double(chosen.count) <= Double(single.count) * (1.005 + LatentCoder.arityAllowance))
        #expect(try Self.decode(chosen, count: r.count) == r)
    }

    /// The encoder's core of a distribution (its binning window) is the sorted sample's, found
    /// without sorting: the same two quantiles on sample sizes either side of 1000, with duplicates,
    /// outliers at both ends and values near the ends of the 64-bit range.
    @Test func theCoreIsTheSortedSamplesQuantiles() {
        var rng = SplitMix64(seed: 77)
        for n in [256, 300, 999, 1000, 1023, 1024, 1025, 5000, 65536] {
            for kind in 0..<4 {
                let r: [Int64] = (0..<n).map { i in
                    switch kind {
                    case 0: return Int64(rng.next() % 2001) - 1000
                    case 1: return Int64(rng.next() % 7)  // many duplicates
                    case 2: return i % 97 == 3 ? Int64(bitPattern: rng.next()) : Int64(rng.next() % 50_000)
                    default: return i % 2 == 0 ? Int64.min + Int64(rng.next() % 3) : Int64.max - Int64(rng.next() % 3)
                    }
                }
                let lo = r.min()!, range = UInt64(bitPattern: r.max()! &- lo)
                // The sorting form it replaced.
                let m = min(n, 1024), stride = n / m
                let sample = (0..<m).map { UInt64(bitPattern: r[$0 * stride] &- lo) }.sorted()
                let a = sample[m / 1000], b = sample[m - 1 - m / 1000], spread = (b - a) / 2
                let expected = (a >= spread ? a - spread : 0, range - b >= spread ? b + spread : range)
                let got = r.withUnsafeBufferPointer { LatentCoder.core($0.baseAddress!, count: n, lowest: lo, range: range) }
                #expect(got.low == expected.0 && got.high == expected.1, "n \(n), kind \(kind)")
            }
        }
    }

    @Test func eachRuleOfTheLayoutIsEnforced() throws {
        let n = 5000
        let r = Self.values(n, spread: 40, outliers: true, seed: 3)
        let good = try Self.encode(r)
        func u32(_ b: [UInt8], _ at: Int) -> UInt32 {
            b[at..<(at + 4)].enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * $1.offset) }
        }
        func set32(_ b: inout [UInt8], _ at: Int, _ v: UInt32) { for k in 0..<4 { b[at + k] = UInt8(truncatingIfNeeded: v >> (8 * k)) } }
        let escapes = u32(good, 24), symbolBytes = Int(u32(good, 20))
        #expect(escapes > 0 && symbolBytes < n, "the test needs escapes and a symbol frame")
        var bad = good
        bad[8] = 57  // shift above 56
        #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(bad, count: n) }
        bad = good
        set32(&bad, 24, escapes + 1)  // one escape more than the symbols hold
        #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(bad, count: n) }
        bad = good
        set32(&bad, 20, UInt32(n + 1))  // symbol bytes beyond m
        #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(bad, count: n) }
        bad = good
        bad[10] = bad[10] &- 1  // one bin fewer: the last bin's symbol is now beyond the escape or an escape too many
        #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(bad, count: n) }
        // Without escapes too: a symbol beyond the bins is damage.
        let plain = try Self.encode(Self.values(n, spread: 40, outliers: false, seed: 4))
        #expect(u32(plain, 24) == 0 && plain[8] > 0)
        var fewer = plain
        fewer[10] = fewer[10] &- 1
        #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(fewer, count: n) }
        // The symbol frame must hold exactly m symbols: decoding for another m is an error.
        #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(good, count: n - 1) }
        // Truncated anywhere: an error, never a read out of bounds.
        for cut in stride(from: 0, to: good.count, by: max(1, good.count / 97)) {
            #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(Array(good[..<cut]), count: n) }
        }
    }

    /// The rules of arities 2 and 3: at most 15 or 5 bins, ⌈m / k⌉ symbol bytes, radix-6 bytes
    /// below 216, zero digits past the block's end — on blocks whose symbol bytes are stored as
    /// they are (short blocks: a zstd frame would not be shorter), so that the bytes can be edited.
    @Test func eachRuleOfTheArities() throws {
        for arity in 2...3 {
            let n = 7, p = (n + arity - 1) / arity  // 4 or 3 symbol bytes; the last holds a padding digit
            let r = Self.values(n, spread: 3, outliers: false, seed: 5)
            let good = try Self.encode(r, arity: arity)
            #expect(good[11] == UInt8(arity) && Int(good[20]) == p, "arity \(arity): the symbol bytes are stored")
            #expect(try Self.decode(good, count: n) == r)
            var bad = good
            bad[10] = UInt8(LatentCoder.maxBins(arity: arity) + 1)  // more bins than the radix holds
            #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(bad, count: n) }
            bad = good
            bad[20] = UInt8(p + 1)  // more symbol bytes than ⌈m / k⌉
            #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(bad, count: n) }
            bad = good
            // A digit of value m (beyond the block) in the last symbol byte.
            bad[28 + p - 1] = arity == 2 ? bad[28 + p - 1] | 0x10 : bad[28 + p - 1] + 36
            #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(bad, count: n) }
            bad = good
            bad[28] = arity == 2 ? 0xFF : 250  // a digit beyond the escape, or (radix 6) not a symbol byte
            #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(bad, count: n) }
            #expect(throws: LatentCoder.Corrupt.self) { try Self.decode(good, count: n - 1) }
        }
    }
}
