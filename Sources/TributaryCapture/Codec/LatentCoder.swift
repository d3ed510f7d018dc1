import CKernels
import Foundation

/// Entropy coding of a sequence of 64-bit integer latents (docs/CAPTURE.md §5.1, "latent block"):
/// each value is split into a **bin** (a symbol; stream versions 3 and 4 code the symbols as one
/// zstd frame — version 4 one, two or three to a byte — versions 1 and 2, still read, with rANS
/// and 12-bit probabilities) and the exact
/// **offset bits** inside the bin (raw, LSB-first), as pcodec's binning does. Bins are `2^shift`
/// wide and consecutive; values outside the window of bins take the escape symbol and are stored as
/// `escapeWidth` raw bits above the block's minimum. The encoder chooses the shift and window by
/// measuring the cost (order-0 entropy of the bins + offset bits + table) of each candidate.
enum LatentCoder {
    static let probabilityScale = 1 << 12
    static let ransLow: UInt32 = 1 << 16

    /// Why a latent block cannot be decoded.
    struct Corrupt: Error {}

    /// A chosen binning.
    struct Plan {
        var base: Int64 = 0
        var shift = 0
        var escapeWidth = 0
        var binStart: UInt64 = 0
        var binCount = 1
        /// Bin values a symbol byte carries (stream version 4; 1 in earlier versions).
        var arity = 1
        /// Estimated bits of the block (entropy of the bins + offset bits + table).
        var bits: Double = 0
    }

    /// The symbol arities of stream version 4 and the most bins each allows in a block (the escape
    /// on top: the digits are in radix 256, 16 and 6; versions 1–3 have arity 1's).
    static func maxBins(arity: Int) -> Int { arity == 1 ? 255 : arity == 2 ? 15 : 5 }
    static let arities = 1...3
    /// The writer takes the largest arity whose estimated size is at most this fraction above
    /// arity 1's: its symbols are two or three times fewer bytes for zstd's Huffman decoder, which
    /// is the largest stage of decoding noisy integer data (docs/CAPTURE.md §5.1).
    static let arityAllowance = 0.02

    @inline(__always) static func bitLength(_ v: UInt64) -> Int { 64 - v.leadingZeroBitCount }

    /// Measures candidate binnings of `r` and returns the cheapest.
    /// - Parameters:
    ///   - histogram: scratch for `histogramSize` Ints.
    ///   - maxShift: the widest bins allowed (2^`maxShift`).
    ///   - huffmanBound: count the bound of a prefix code's loss in the cost (stream versions 3 and 4).
    ///   - fineBits: the finest histogram has about 2^`fineBits` bins over the core (at most 12); its
    ///     bins, not the latents, are most of the work on short runs (`choosePredictor` passes 10).
    ///   - multiSymbol: also plan arities 2 and 3 (stream version 4) and return the largest within
    ///     `arityAllowance` of arity 1's cost.
    ///   - arity: plan only this arity (the tests' way to make blocks of each).
    static func plan(_ r: UnsafePointer<Int64>, count n: Int, histogram: UnsafeMutablePointer<Int>,
                     robust: Bool = true, maxShift: Int = 63,
                     huffmanBound: Bool = false, fineBits: Int = 12, multiSymbol: Bool = false, arity only: Int? = nil) -> Plan {
        var plan = Plan()
        guard n > 0 else { plan.binCount = 1; return plan }
        var lo = r[0], hi = r[0]
        tributary_min_max64(r, n, &lo, &hi)   // a C kernel: VPMINSQ/VPMAXSQ where the processor has them
        let range = UInt64(bitPattern: hi &- lo)
        let width = bitLength(range)
        // The core of the distribution: far outliers become escapes rather than widening every bin.
        var (coreLo, coreHi) = (UInt64(0), range)
        if robust && n >= 256 && width > 8 { (coreLo, coreHi) = core(r, count: n, lowest: lo, range: range) }
        let fine = max(0, bitLength(coreHi - coreLo) - min(fineBits, 12))
        let startFine = ((coreLo >> UInt64(fine)) >> 10) << 10
        let fineBins = Int((coreHi >> UInt64(fine)) - startFine) + 1
        // Long blocks are measured on every `step`-th value: the costs below are those of the
        // sample, scaled to the block (the minimum and the width above are the block's own).
        let step = n >= histogramSampleAbove ? histogramStep : 1
        let sampled = (n + step - 1) / step
        histogram.initialize(repeating: 0, count: fineBins)
        // Wrapping operations throughout (fine < 64, counts ≤ n): no overflow or shift-width
        // checks in the loop that is most of the planner's time.
        let fineShift = UInt64(fine), binLimit = UInt64(fineBins)
        var i = 0
        while i < n {
            let index = (UInt64(bitPattern: r[i] &- lo) &>> fineShift) &- startFine
            if index < binLimit { histogram[Int(truncatingIfNeeded: index)] &+= 1 }
            i &+= step
        }
        plan.base = lo
        plan.escapeWidth = width
        plan.bits = .infinity
        // The best plan of each arity (index arity − 1), and how many levels in a row did not improve it.
        var best = InlineArray<3, Plan>(repeating: plan)
        var worse = InlineArray<3, Int>(repeating: 0)
        var savedEscapes = InlineArray<3, Int>(repeating: 0)
        let arityCount = multiSymbol || only != nil ? 3 : 1
        if let only {
            precondition(arities.contains(only), "arity \(only) is not one of stream version 4's")
            for a in 0..<3 where a != only - 1 { worse[a] = 2 }  // never planned
        }
        let total = Double(sampled), scale = Double(step)
        // Coarser levels are merged in place: bin b of a level only reads bins 2b and 2b+1 of the previous.
        let merged = histogram
        var bins = fineBins
        for extra in 0...10 {
            let shift = fine + extra
            if shift > width || shift > maxShift { break }
            if extra > 0 {
                // Merge pairs of the previous level (startFine is a multiple of 2^10, so they align).
                let previous = bins
                bins = (previous + 1) / 2
                // Counts add up to at most n: the wrapping adds never wrap (and keep the loops branch-free).
                for b in 0..<bins { merged[b] = merged[2 * b] &+ (2 * b + 1 < previous ? merged[2 * b + 1] : 0) }
            }
            for a in 0..<arityCount where worse[a] < 2 {
                let arity = a + 1, limit = maxBins(arity: arity)
                // Two or three a byte only where the window holds a fair part of the core (the
                // finest levels, with thousands of bins, are most of the work and never chosen).
                if arity > 1 && bins > 16 * limit { continue }
                // Window of at most `limit` consecutive bins holding the most samples.
                var start = 0, count = min(bins, limit)
                var inside = 0
                for b in 0..<count { inside &+= merged[b] }
                if bins > limit {
                    var most = inside, sum = inside
                    var s = 1
                    while s <= bins &- limit {
                        sum = sum &+ merged[s &+ limit &- 1] &- merged[s &- 1]
                        if sum > most { most = sum; start = s }
                        s &+= 1
                    }
                    inside = most
                }
                // Trim empty bins at the edges of the window.
                while count > 1 && merged[start] == 0 { start += 1; count -= 1 }
                while count > 1 && merged[start + count - 1] == 0 { count -= 1 }
                let escapes = sampled - inside
                // Σ c·log2(N/c) = N·log2 N − Σ c·log2 c.
                var bits = 0.0
                var largest = 0
                for b in start..<(start + count) where merged[b] > 0 {
                    let c = Double(merged[b])
                    bits -= c * fastLog2(c)
                    largest = max(largest, merged[b])
                }
                // A prefix code (the Huffman coding of the symbol bytes) loses up to p_max + 0.086
                // bits per symbol (Gallager's bound), most when few bins hold most values; a byte
                // of k values is one symbol whose largest probability is p_max^k.
                if huffmanBound {
                    let p = Double(largest) / total
                    bits += arity == 1 ? Double(largest) + 0.086 * total
                        : total / Double(arity) * ((arity == 2 ? p * p : p * p * p) + 0.086)
                }
                if escapes > 0 { bits += Double(escapes) * (Double(width) - fastLog2(Double(escapes))) }
                bits += total * fastLog2(total) + Double(inside) * Double(shift)
                // The table: ~10 bits a bin (versions 1–2's frequencies), ~4 a symbol byte (zstd's Huffman weights).
                let symbolsUsed = arity == 1 ? count : min(256, arity == 2 ? (count + 1) * (count + 1) : (count + 1) * (count + 1) * (count + 1))
                bits = bits * scale + Double(symbolsUsed) * (arity == 1 ? 10 : 4)
                // The cost falls, then rises with the shift: stop after two rises.
                if bits >= best[a].bits {
                    worse[a] += 1
                } else {
                    worse[a] = 0
                    best[a].bits = bits
                    best[a].shift = shift
                    best[a].binStart = (startFine >> UInt64(extra)) + UInt64(start)
                    best[a].binCount = count
                    best[a].arity = arity
                    // The window's counts, for the comparison of arities below.
                    if multiSymbol && only == nil {
                        let saved = histogram + savedCounts(a)
                        saved.update(from: merged + start, count: count)
                        savedEscapes[a] = escapes
                    }
                }
            }
            if worse[0] >= 2 && (arityCount == 1 || (worse[1] >= 2 && worse[2] >= 2)) { break }
        }
        if let only { return best[only - 1] }
        guard multiSymbol else { return best[0] }
        // The arities compared by the size of their symbol bytes' Huffman code (what zstd's literals
        // come to; the bound above, which chose each arity's bins, overstates the loss of one
        // symbol a byte several times), the offset and escape bits, and ~4 bits of table a symbol.
        // The bound favours two or three a byte by at most about 1 % of the size: an arity more
        // than 3 % above arity 1 by it cannot come within the allowance (and is not measured).
        let margin = best[0].bits * (1.03 + arityAllowance)
        let two = best[1].bits <= margin, three = best[2].bits <= margin
        guard two || three else { return best[0] }
        var cost = InlineArray<3, Double>(repeating: .infinity)
        for a in 0..<3 where a == 0 || (a == 1 ? two : three) {
            let arity = a + 1, count = best[a].binCount, escapes = savedEscapes[a]
            let digits = histogram + savedCounts(a)
            digits[count] = escapes  // the escape is the digit after the bins
            let radix = escapes > 0 ? count + 1 : count
            let leaves = histogram + huffmanScratch
            var used = 0
            switch arity {
            case 1:
                for d in 0..<radix where digits[d] > 0 { leaves[used] = digits[d]; used += 1 }
            case 2:
                for d0 in 0..<radix where digits[d0] > 0 {
                    for d1 in 0..<radix where digits[d1] > 0 { leaves[used] = digits[d0] * digits[d1]; used += 1 }
                }
            default:
                for d0 in 0..<radix where digits[d0] > 0 {
                    for d1 in 0..<radix where digits[d1] > 0 {
                        for d2 in 0..<radix where digits[d2] > 0 { leaves[used] = digits[d0] * digits[d1] * digits[d2]; used += 1 }
                    }
                }
            }
            // Expected code length of a symbol byte: Σ internal node weights / Σ leaf weights.
            let perByte = huffmanLength(leaves, count: used, scratch: leaves + 256)
            let shift = Double(best[a].shift)
            let bits = total / Double(arity) * perByte + total * shift + Double(escapes) * max(0, Double(width) - shift)
            cost[a] = bits * scale + Double(used) * 4
        }
        // The largest arity within the allowance.
        for a in stride(from: 2, to: 0, by: -1) where cost[a] <= cost[0] * (1 + arityAllowance) { return best[a] }
        return best[0]
    }

    /// The expected code length (bits a symbol) of a Huffman code for the `n` positive `weights`
    /// (reordered in place): the sum of the weights of the merged nodes over the sum of the leaves'
    /// — two queues after a sort, no tree. `scratch` holds the merged nodes (n − 1 Ints).
    static func huffmanLength(_ weights: UnsafeMutablePointer<Int>, count n: Int, scratch: UnsafeMutablePointer<Int>) -> Double {
        guard n > 1 else { return 0 }
        // Shell sort (≤ 256 weights; no allocation, unlike the standard library's sort).
        var gap = 1
        while gap < n / 3 { gap = 3 * gap + 1 }
        while gap > 0 {
            for i in gap..<n {
                let w = weights[i]
                var j = i
                while j >= gap && weights[j - gap] > w { weights[j] = weights[j - gap]; j -= gap }
                weights[j] = w
            }
            gap /= 3
        }
        var leaf = 0, nodeFirst = 0, nodeCount = 0
        var merged = 0.0, leaves = 0.0
        for i in 0..<n { leaves += Double(weights[i]) }
        @inline(__always) func smallest() -> Int {
            if leaf < n && (nodeFirst == nodeCount || weights[leaf] <= scratch[nodeFirst]) { leaf += 1; return weights[leaf - 1] }
            nodeFirst += 1
            return scratch[nodeFirst - 1]
        }
        for _ in 0..<(n - 1) {
            let w = smallest() + smallest()
            scratch[nodeCount] = w
            nodeCount += 1
            merged += Double(w)
        }
        return merged / leaves
    }

    /// The core of `r`'s distribution (relative to its minimum `lowest`), from a sample of
    /// m = min(n, 1024) values spread over it: the sample's (m/1000 + 1)-th smallest a and largest b
    /// (the 0.1 % quantiles — with m ≤ 1024, the first or second), widened by (b − a)/2 on each side
    /// within [0, range]. One pass keeps the two smallest and two largest; no sort (docs/CAPTURE.md
    /// does not fix the encoder's choice, but captures stay byte-identical to the sorting form's).
    static func core(_ r: UnsafePointer<Int64>, count n: Int, lowest: Int64, range: UInt64) -> (low: UInt64, high: UInt64) {
        let m = min(n, 1024), stride = n / m
        var small0 = UInt64.max, small1 = UInt64.max, large0: UInt64 = 0, large1: UInt64 = 0
        for j in 0..<m {
            let v = UInt64(bitPattern: r[j * stride] &- lowest)
            if v < small1 { if v < small0 { small1 = small0; small0 = v } else { small1 = v } }
            if v > large1 { if v > large0 { large1 = large0; large0 = v } else { large1 = v } }
        }
        let (a, b) = m >= 1000 ? (small1, large1) : (small0, large0)
        let spread = (b - a) / 2
        return (a >= spread ? a - spread : 0, range - b >= spread ? b + spread : range)
    }

    /// log2 to about 1e-4 (exponent plus a polynomial of the mantissa): enough to compare costs.
    @inline(__always) static func fastLog2(_ x: Double) -> Double {
        let bits = x.bitPattern
        let exponent = Double(Int((bits >> 52) & 0x7FF) - 1023)
        let m = Double(bitPattern: bits & 0x000F_FFFF_FFFF_FFFF | 0x3FF0_0000_0000_0000)
        return exponent + (-1.7417939 + (2.8212026 + (-1.4699568 + (0.44717955 - 0.056570851 * m) * m) * m) * m)
    }

    /// Blocks of at least this many values are planned on a sample of every `histogramStep`-th.
    static let histogramSampleAbove = 16384
    static let histogramStep = 4

    /// Scratch Ints `plan` needs: the histogram, then each arity's saved window (bins and the
    /// escape), then the Huffman estimate's leaves and merged nodes.
    static let histogramSize = huffmanScratch + 2 * 256
    private static let histogramBins = 4096 + 1024 + 2
    /// Where arity a + 1's saved window starts.
    private static func savedCounts(_ a: Int) -> Int { histogramBins + (a == 0 ? 0 : a == 1 ? 256 : 256 + 16) }
    private static let huffmanScratch = histogramBins + 256 + 16 + 8

    /// rANS lanes of a latent block of stream version 1 and 2 (docs/CAPTURE.md §5.1).
    static func lanes(version: UInt8) -> Int { version == 1 ? 2 : 4 }

    /// Bytes of a latent block's header in stream versions 3 and 4.
    static let headerSizeV3 = 28
    /// The widest bins of stream versions 3 and 4: a 64-bit load at a value's byte holds its offset bits.
    static let maxShiftV3 = 56

    /// Writes a latent block of stream version 4 for `r` with `plan` (`plan.shift` ≤ `maxShiftV3`)
    /// at `out`; returns the bytes written. The symbols (one byte per `plan.arity` values) are one
    /// zstd frame, whose Huffman-coded literals come close to the symbols' order-0 entropy and
    /// decode several times faster than rANS; the offset bits are `shift` bits per value at fixed
    /// positions; the escapes' bits above them follow, in order.
    /// - Parameters:
    ///   - symbols: scratch for `n` bytes; `packed`: for ⌈`n` / `plan.arity`⌉ (unused at arity 1);
    ///     `positions`: for as many UInt32 as the block has escapes (at most `n`).
    ///   - compressor: a level-1 context without checksums (the capture's frame has one).
    ///   - out: room for `headerSizeV3` + 9 × `n` + 8 bytes.
    static func encodeV4(_ r: UnsafePointer<Int64>, count n: Int, plan: Plan, symbols: UnsafeMutablePointer<UInt8>,
                         packed: UnsafeMutablePointer<UInt8>, positions: UnsafeMutablePointer<UInt32>,
                         compressor: ZstdCompressor, into out: UnsafeMutableRawPointer) -> Int {
        precondition(plan.shift <= maxShiftV3, "bins of stream version 4 are at most 2^56 wide")
        precondition(arities.contains(plan.arity) && plan.binCount <= maxBins(arity: plan.arity), "a plan beyond its arity's bins")
        let shift = UInt64(plan.shift), bins = UInt64(plan.binCount), start = plan.binStart
        let escape = UInt8(plan.binCount)
        // bin = ((r[i] − base) >> shift) − start; the symbol is the bin when below binCount, else
        // the escape (a C kernel: eight values at a time with AVX-512; `binSymbolsReference`).
        let escapes = tributary_bin_symbols(r, n, UInt64(bitPattern: plan.base), UInt32(shift), start, bins, escape, symbols)
        out.storeBytes(of: UInt64(bitPattern: plan.base).littleEndian, toByteOffset: 0, as: UInt64.self)
        out.storeBytes(of: UInt8(plan.shift), toByteOffset: 8, as: UInt8.self)
        out.storeBytes(of: UInt8(plan.escapeWidth), toByteOffset: 9, as: UInt8.self)
        out.storeBytes(of: UInt8(plan.binCount), toByteOffset: 10, as: UInt8.self)
        out.storeBytes(of: UInt8(plan.arity), toByteOffset: 11, as: UInt8.self)
        out.storeBytes(of: plan.binStart.littleEndian, toByteOffset: 12, as: UInt64.self)
        out.storeBytes(of: UInt32(escapes).littleEndian, toByteOffset: 24, as: UInt32.self)
        var p = headerSizeV3
        // The symbol bytes: the symbols themselves, or their digits packed `arity` to a byte.
        let symbolCount = (n + plan.arity - 1) / plan.arity
        let symbolBytes = plan.arity == 1 ? symbols : packed
        if plan.arity > 1 { tributary_pack_digits(symbols, n, UInt32(plan.arity), packed) }
        // A zstd frame only when it is shorter than the symbol bytes: `symbol_bytes` = P means stored as they are.
        let frame = try? compressor.compress(UnsafeRawBufferPointer(start: symbolBytes, count: symbolCount),
                                             into: UnsafeMutableRawBufferPointer(start: out + p, count: symbolCount - 1))
        let stored = frame ?? symbolCount
        if frame == nil { (out + p).copyMemory(from: symbolBytes, byteCount: symbolCount) }
        out.storeBytes(of: UInt32(stored).littleEndian, toByteOffset: 20, as: UInt32.self)
        p += stored
        if plan.shift > 0 {
            // The low bits: a C kernel that writes several values at a time (BitWriter's layout).
            p += tributary_pack_low_bits(r, n, UInt64(bitPattern: plan.base), UInt32(plan.shift),
                                         (out + p).assumingMemoryBound(to: UInt8.self))
        }
        if escapes > 0 {
            // The escapes' high bits, in order (their positions by a C kernel, 32 symbols a compare).
            let highWidth = max(0, plan.escapeWidth - plan.shift)
            let found = tributary_find_byte(symbols, n, escape, positions, escapes)
            precondition(found == escapes, "the escapes counted twice differ")
            var high = BitWriter(out + p)
            for k in 0..<escapes { high.write(UInt64(bitPattern: r[Int(positions[k])] &- plan.base) >> shift, highWidth) }
            p += high.finish()
        }
        return p
    }

    /// The symbols of `encodeV4` in Swift (the kernel's reference in the tests); returns the escapes.
    static func binSymbolsReference(_ r: UnsafePointer<Int64>, count n: Int, base: Int64, shift: UInt64, start: UInt64, bins: UInt64,
                                    escape: UInt8, into symbols: UnsafeMutablePointer<UInt8>) -> Int {
        var escapes = 0
        for i in 0..<n {
            let bin = (UInt64(bitPattern: r[i] &- base) >> shift) &- start
            let isBin = bin < bins
            symbols[i] = isBin ? UInt8(truncatingIfNeeded: bin) : escape
            escapes += isBin ? 0 : 1
        }
        return escapes
    }

    /// Decoding tables and scratch, allocated once and reused from block to block.
    final class Tables {
        /// Per slot: (frequency − 1) | (slot − cumulative) << 12 | symbol << 24.
        let slots = UnsafeMutablePointer<UInt32>.allocate(capacity: 4096)
        let symbolBase = UnsafeMutablePointer<UInt64>.allocate(capacity: 256)
        let symbolWidth = UnsafeMutablePointer<UInt64>.allocate(capacity: 256)
        /// 2^width − 1 for widths ≤ 56.
        let symbolMask = UnsafeMutablePointer<UInt64>.allocate(capacity: 256)
        /// The decoded symbols of a block.
        private(set) var symbols = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        private var symbolCapacity = 1
        /// The symbol bytes of a block of arity 2 or 3 (stream version 4), decompressed.
        private(set) var packed = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        private var packedCapacity = 1
        /// The positions of a block's escapes.
        private(set) var escapePositions = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        private var escapeCapacity = 1
        /// The rANS words of a block, one padded region per lane.
        private(set) var words = UnsafeMutablePointer<UInt16>.allocate(capacity: 1)
        private var wordCapacity = 1

        init() {
            slots.initialize(repeating: 0, count: 4096)
            symbolBase.initialize(repeating: 0, count: 256)
            symbolWidth.initialize(repeating: 0, count: 256)
            symbolMask.initialize(repeating: 0, count: 256)
        }

        deinit {
            slots.deallocate()
            symbolBase.deallocate()
            symbolWidth.deallocate()
            symbolMask.deallocate()
            symbols.deallocate()
            packed.deallocate()
            escapePositions.deallocate()
            words.deallocate()
        }

        func reserve(symbols n: Int, words count: Int, packed packedCount: Int = 0, escapes escapeCount: Int = 0) {
            Self.grow(&escapePositions, &escapeCapacity, to: escapeCount)
            Self.grow(&packed, &packedCapacity, to: packedCount)
            Self.grow(&symbols, &symbolCapacity, to: n)
            Self.grow(&words, &wordCapacity, to: count)
        }

        /// Replaces `buffer` by one of at least `needed` elements (1.5× the old when that is more),
        /// its contents not kept, when it holds fewer.
        private static func grow<T>(_ buffer: inout UnsafeMutablePointer<T>, _ capacity: inout Int, to needed: Int) {
            guard needed > capacity else { return }
            buffer.deallocate()
            capacity = max(needed, capacity * 3 / 2)
            buffer = .allocate(capacity: capacity)
        }
    }

    /// Decodes a latent block of `n` values from `input` into `r`; returns the bytes consumed.
    /// - Parameter lanes: interleaved rANS states, 2 (stream version 1) or 4 (version 2).
    ///
    /// Two passes, each a tight loop without bounds checks (everything is validated before, or
    /// clamped and checked after): the bins (rANS), then the offset bits.
    static func decode(_ input: UnsafeRawBufferPointer, count n: Int, lanes: Int, tables: Tables,
                       into r: UnsafeMutablePointer<Int64>) throws(Corrupt) -> Int {
        guard input.count >= 20, lanes == 2 || lanes == 4 else { throw Corrupt() }
        let base = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        let shift = Int(input[8]), escapeWidth = Int(input[9])
        let binCount = Int(UInt16(littleEndian: input.loadUnaligned(fromByteOffset: 10, as: UInt16.self)))
        let binStart = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        guard shift <= 63, escapeWidth <= 64, binCount <= maxBins(arity: 1) else { throw Corrupt() }
        let slots = tables.slots, symbolBase = tables.symbolBase, symbolWidth = tables.symbolWidth, symbolMask = tables.symbolMask
        var p = 20
        var cumulative = 0
        var maxWidth = 0
        for s in 0...binCount {
            var v = 0, k = 0
            while true {
                guard p < input.count, k < 14 else { throw Corrupt() }
                let b = Int(input[p]); p += 1
                v |= (b & 0x7F) << k
                k += 7
                if b < 0x80 { break }
            }
            guard v <= probabilityScale - cumulative else { throw Corrupt() }
            for slot in cumulative..<(cumulative + v) {
                slots[slot] = UInt32(v - 1) | UInt32(slot - cumulative) << 12 | UInt32(s) << 24
            }
            cumulative += v
            let width = s < binCount ? shift : escapeWidth
            symbolBase[s] = s < binCount ? base &+ ((binStart &+ UInt64(s)) &<< UInt64(shift)) : base
            symbolWidth[s] = UInt64(width)
            symbolMask[s] = width >= 64 ? ~0 : (1 << UInt64(width)) &- 1
            if v > 0 { maxWidth = max(maxWidth, width) }
        }
        let headerWords = 2 * lanes - 1
        guard cumulative == probabilityScale, input.count - p >= 8 else { throw Corrupt() }
        let offsetBytes = Int(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: p, as: UInt32.self)))
        let ransBytes = Int(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: p + 4, as: UInt32.self)))
        p += 8
        guard offsetBytes <= input.count - p, ransBytes >= 4 * headerWords, ransBytes % 2 == 0,
              ransBytes <= input.count - p - offsetBytes else {
            throw Corrupt()
        }
        let bits = input.baseAddress! + p
        let rans = bits + offsetBytes
        // Each lane takes at most one word per symbol, so at most ⌈n / lanes⌉: the lanes' words are
        // copied into regions of ⌈n / lanes⌉ + 1 words (zero beyond the stored ones), where every
        // read is in bounds without a check; a lane that read other than its stored words is
        // caught after.
        let perLane = (n + lanes - 1) / lanes + 1
        tables.reserve(symbols: n, words: lanes * perLane)
        let symbols = tables.symbols, words = tables.words
        var x = InlineArray<4, UInt64>(repeating: 0), counts = InlineArray<4, Int>(repeating: 0)
        var wordsBefore = 0
        let totalWords = (ransBytes - 4 * headerWords) / 2
        for j in 0..<lanes {
            x[j] = UInt64(UInt32(littleEndian: rans.loadUnaligned(fromByteOffset: 4 * j, as: UInt32.self)))
            let count = j < lanes - 1
                ? Int(UInt32(littleEndian: rans.loadUnaligned(fromByteOffset: 4 * (lanes + j), as: UInt32.self)))
                : totalWords - wordsBefore
            guard count >= 0, count <= totalWords - wordsBefore, count < perLane else { throw Corrupt() }
            counts[j] = count
            let region = words + j * perLane
            UnsafeMutableRawPointer(region).copyMemory(from: rans + 4 * headerWords + 2 * wordsBefore, byteCount: 2 * count)
            (region + count).initialize(repeating: 0, count: perLane - count)
            wordsBefore += count
        }
        // States are held in 64 bits: the same values (< 2^32), but the optimiser does not turn
        // the lanes into SSE2 vectors, whose 32-bit multiply and lane moves lengthen the chain.
        @inline(__always) func step(_ x: inout UInt64, _ w: inout UnsafeMutablePointer<UInt16>) -> UInt8 {
            let entry = UInt64(slots[Int(x & 0xFFF)])
            x = ((entry & 0xFFF) &+ 1) &* (x &>> 12) &+ ((entry &>> 12) & 0xFFF)
            let word = UInt64(UInt16(littleEndian: w.pointee))
            let renormalise = x < UInt64(ransLow)
            x = renormalise ? x &<< 16 | word : x
            w += renormalise ? 1 : 0
            return UInt8(truncatingIfNeeded: entry &>> 24)
        }
        // Pass 1: the symbols.
        var w = InlineArray<4, UnsafeMutablePointer<UInt16>>(repeating: words)
        for j in 0..<lanes { w[j] = words + j * perLane }
        var i = 0
        if lanes == 4 {
            var x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3], w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3]
            while i + 3 < n {
                symbols[i] = step(&x0, &w0)
                symbols[i + 1] = step(&x1, &w1)
                symbols[i + 2] = step(&x2, &w2)
                symbols[i + 3] = step(&x3, &w3)
                i += 4
            }
            (x[0], x[1], x[2], x[3], w[0], w[1], w[2], w[3]) = (x0, x1, x2, x3, w0, w1, w2, w3)
        } else {
            var x0 = x[0], x1 = x[1], w0 = w[0], w1 = w[1]
            while i + 1 < n {
                symbols[i] = step(&x0, &w0)
                symbols[i + 1] = step(&x1, &w1)
                i += 2
            }
            (x[0], x[1], w[0], w[1]) = (x0, x1, w0, w1)
        }
        while i < n {
            let j = i % lanes
            symbols[i] = step(&x[j], &w[j])
            i += 1
        }
        for j in 0..<lanes where w[j] - (words + j * perLane) != counts[j] || x[j] != UInt64(ransLow) { throw Corrupt() }
        // Pass 2: the offset bits.
        if maxWidth <= 56 {
            // The rANS section (≥ 12 bytes) follows the offset bits: 8 bytes can be loaded at any byte of them.
            try offsets(bits, byteCount: offsetBytes, readable: input.count - p, symbols: symbols, count: n, tables: tables, into: r)
        } else {
            var reader = BitReader(UnsafeRawBufferPointer(start: bits, count: offsetBytes))
            for i in 0..<n {
                let s = Int(symbols[i])
                r[i] = Int64(bitPattern: symbolBase[s] &+ reader.read(Int(symbolWidth[s])))
            }
            guard !reader.overrun else { throw Corrupt() }
        }
        return p + offsetBytes + ransBytes
    }

    /// The values of symbols whose widths are all ≤ 56: a 64-bit load at the bit position's byte
    /// holds any of them. The byte is clamped to `readable` − 8 so that the load stays in bounds
    /// (a valid position is never clamped: see the caller); reading past the offset bits shows as
    /// a final position beyond them. Kept apart from the rANS pass so that its few values live in
    /// registers.
    @inline(never)
    private static func offsets(_ bits: UnsafeRawPointer, byteCount: Int, readable: Int, symbols: UnsafePointer<UInt8>,
                                count n: Int, tables: Tables, into r: UnsafeMutablePointer<Int64>) throws(Corrupt) {
        let symbolBase = tables.symbolBase, symbolWidth = tables.symbolWidth, symbolMask = tables.symbolMask
        let limit = readable - 8
        var position = 0
        for i in 0..<n {
            let s = Int(symbols[i])
            let word = UInt64(littleEndian: bits.loadUnaligned(fromByteOffset: min(position &>> 3, limit), as: UInt64.self))
            r[i] = Int64(bitPattern: symbolBase[s] &+ ((word &>> UInt64(position & 7)) & symbolMask[s]))
            position &+= Int(symbolWidth[s])
        }
        guard position <= 8 * byteCount else { throw Corrupt() }
    }

    /// Decodes a latent block of stream version 3 or 4 (`encodeV4`) of `n` values from `input`
    /// into `r`; returns the bytes consumed. Every read is bounded by `input`; a block that breaks a
    /// rule of docs/CAPTURE.md §5.1 throws.
    static func decodeV3(_ input: UnsafeRawBufferPointer, count n: Int, version: UInt8, tables: Tables,
                         decompressor: ZstdDecompressor, into r: UnsafeMutablePointer<Int64>) throws(Corrupt) -> Int {
        guard input.count >= headerSizeV3, n >= 1 else { throw Corrupt() }
        let base = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        let shift = Int(input[8]), escapeWidth = Int(input[9])
        // Version 3's u16 bin count is version 4's u8 bin count and u8 arity (0 in version 3).
        let binCount = Int(input[10]), arityByte = Int(input[11])
        let arity = version == 3 ? (arityByte == 0 ? 1 : 0) : arityByte
        let binStart = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        let symbolBytes = Int(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: 20, as: UInt32.self)))
        let escapes = Int(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: 24, as: UInt32.self)))
        guard arities.contains(arity) else { throw Corrupt() }
        let symbolCount = (n + arity - 1) / arity
        guard shift <= maxShiftV3, escapeWidth <= 64, binCount <= maxBins(arity: arity), escapes <= n,
              symbolBytes <= symbolCount, symbolBytes <= input.count - headerSizeV3 else { throw Corrupt() }
        let start = input.baseAddress!
        var p = headerSizeV3
        // The symbol bytes as stored, or decompressed into `tables`.
        var stored = UnsafeRawPointer(start + p).bindMemory(to: UInt8.self, capacity: symbolCount)
        if symbolBytes != symbolCount {
            tables.reserve(symbols: n, words: 0, packed: arity > 1 ? symbolCount : 0)
            let into = arity == 1 ? tables.symbols : tables.packed
            do {
                let written = try decompressor.decompress(UnsafeRawBufferPointer(start: start + p, count: symbolBytes),
                                                          into: UnsafeMutableRawBufferPointer(start: into, count: symbolCount))
                guard written == symbolCount else { throw Corrupt() }
            } catch { throw Corrupt() }
            stored = UnsafePointer(into)
        }
        let symbols: UnsafePointer<UInt8>
        // Every symbol must be a bin, or the escape when there are escapes: checked once (a
        // vectorised maximum, or the digits' while they are taken apart), then every value is made
        // as a bin's without a test each — the escape's "bin" is the block's minimum, so that its
        // value is base + its low bits — and the few escapes are found again (8 symbols at a time)
        // and given their high bits.
        let largest: Int
        if arity == 1 {
            symbols = stored
            var most: UInt8 = 0
            for i in 0..<n { most = max(most, symbols[i]) }
            largest = Int(most)
        } else {
            tables.reserve(symbols: n, words: 0)
            largest = Int(tributary_expand_digits(stored, n, UInt32(arity), tables.symbols))
            symbols = UnsafePointer(tables.symbols)
        }
        guard largest < binCount + (escapes > 0 ? 1 : 0) else { throw Corrupt() }
        p += symbolBytes
        let offsetBytes = (n * shift + 7) / 8
        let highWidth = max(0, escapeWidth - shift)
        let escapeBytes = (escapes * highWidth + 7) / 8
        guard offsetBytes <= input.count - p, escapeBytes <= input.count - p - offsetBytes else { throw Corrupt() }
        let bits = start + p
        var high = BitReader(UnsafeRawBufferPointer(start: bits + offsetBytes, count: escapeBytes))
        let q = UInt64(shift), mask: UInt64 = (1 << q) &- 1
        // Values whose 8-byte load at their first byte stays inside `input`; the rest (the last
        // few, when the block ends the stream) are read byte by byte.
        let readable = input.count - p
        let fast = shift == 0 ? n : (readable < 8 ? 0 : min(n, (8 * (readable - 8) + 7) / shift + 1))
        // The first `fast` values by the kernel (eight at a time with AVX-512, codec_kernels.h).
        tributary_unpack_bins(symbols, bits.assumingMemoryBound(to: UInt8.self), fast, UInt32(shift), base, binStart,
                              UInt8(binCount), r)
        if fast < n {
            // base + ((t + S) << s) for every bin symbol S, base for the escape.
            let binValue = tables.symbolBase
            for s in 0..<binCount { binValue[s] = base &+ ((binStart &+ UInt64(s)) &<< UInt64(shift)) }
            binValue[binCount] = base
            var position = fast * shift
            for i in fast..<n {
                let byte = position &>> 3
                var word: UInt64 = 0
                for k in 0..<min(8, readable - byte) { word |= UInt64(bits.load(fromByteOffset: byte + k, as: UInt8.self)) << UInt64(8 * k) }
                r[i] = Int64(bitPattern: binValue[Int(symbols[i])] &+ ((word &>> UInt64(position & 7)) & mask))
                position &+= shift
            }
        }
        guard escapes > 0 else { return p + offsetBytes }
        // The escapes' positions (a C kernel: 32 symbols a compare), then their high bits in order.
        tables.reserve(symbols: 0, words: 0, escapes: escapes)
        let positions = tables.escapePositions
        let found = tributary_find_byte(symbols, n, UInt8(binCount), positions, escapes)
        guard found == escapes else { throw Corrupt() }
        for k in 0..<escapes {
            let i = Int(positions[k])
            let low = UInt64(bitPattern: r[i]) &- base
            r[i] = Int64(bitPattern: base &+ ((high.read(highWidth) &<< q) | low))
        }
        guard !high.overrun else { throw Corrupt() }
        return p + offsetBytes + escapeBytes
    }
}

/// LSB-first bit writer, branch-free: every write stores 8 bytes (little-endian) at the current
/// byte and advances by the whole bytes filled; the caller guarantees 8 bytes of room past the end.
struct BitWriter {
    private let start: UnsafeMutableRawPointer
    private var out: UnsafeMutableRawPointer
    /// Pending bits (fewer than 8 after every write).
    private var accumulator: UInt64 = 0
    private var filled: UInt64 = 0

    init(_ start: UnsafeMutableRawPointer) { self.start = start; out = start }

    @inline(__always) mutating func write(_ value: UInt64, _ width: Int) {
        if width > 56 {
            put(value & 0xFFFF_FFFF, 32)
            put(value >> 32, width - 32)
        } else {
            put(value, width)
        }
    }

    /// `value` has no bits at or above `width` (≤ 56).
    @inline(__always) private mutating func put(_ value: UInt64, _ width: Int) {
        accumulator |= value &<< filled  // filled < 8, so the value's bits all fit
        filled &+= UInt64(width)
        out.storeBytes(of: accumulator.littleEndian, as: UInt64.self)
        let bytes = filled &>> 3  // ≤ 7
        out += Int(bytes)
        accumulator &>>= bytes &* 8
        filled &= 7
    }

    /// Flushes the last bits; returns the bytes written.
    mutating func finish() -> Int {
        if filled > 0 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: accumulator), as: UInt8.self)
            out += 1
        }
        accumulator = 0
        filled = 0
        return out - start
    }
}

/// LSB-first bit reader over a bounded buffer: reading past the end gives zero bits and sets `overrun`.
struct BitReader {
    /// Never read when `count` is 0 (then it is only a placeholder).
    private let base: UnsafeRawPointer
    private let count: Int
    private let totalBits: Int
    private var position = 0
    var overrun: Bool { position > totalBits }

    init(_ buffer: UnsafeRawBufferPointer) {
        base = buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 16)!
        count = buffer.count
        totalBits = buffer.count * 8
    }

    @inline(__always) mutating func read(_ width: Int) -> UInt64 {
        if width == 0 { return 0 }
        if width > 56 {
            let low = take(32)
            return low | take(width - 32) << 32
        }
        return take(width)
    }

    @inline(__always) private mutating func take(_ width: Int) -> UInt64 {
        let byte = position >> 3
        let word: UInt64
        if byte &+ 8 <= count {
            word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: byte, as: UInt64.self))
        } else {
            var w: UInt64 = 0
            var i = 0
            while byte + i < count && i < 8 {
                w |= UInt64(base.load(fromByteOffset: byte + i, as: UInt8.self)) << UInt64(8 * i)
                i += 1
            }
            word = w
        }
        // Masking shifts: width ≤ 56 and position & 7 ≤ 7, so no shift reaches 64.
        let value = (word &>> UInt64(position & 7)) & ((1 &<< UInt64(width)) &- 1)
        position &+= width
        return value
    }
}
