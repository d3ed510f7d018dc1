import CKernels
import Foundation

/// The encoder's choice of binning (shift, window of bins, symbol arity) by measured cost.
extension LatentCoder {
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
    static func plan(
        _ r: UnsafePointer<Int64>, count n: Int, histogram: UnsafeMutablePointer<Int>,
        robust: Bool = true, maxShift: Int = 63,
        huffmanBound: Bool = false, fineBits: Int = 12, multiSymbol: Bool = false, arity only: Int? = nil
    ) -> Plan {
        var plan = Plan()
        guard n > 0 else { plan.binCount = 1; return plan }
        var lo = r[0], hi = r[0]
        tributary_min_max64(r, n, &lo, &hi)  // a C kernel: VPMINSQ/VPMAXSQ where the processor has them
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
                let arity = a + 1
                // Two or three a byte only where the window holds a fair part of the core (the
                // finest levels, with thousands of bins, are most of the work and never chosen).
                if arity > 1 && bins > 16 * maxBins(arity: arity) { continue }
                let (bits, start, count, escapes) = windowCost(
                    merged, bins: bins, arity: arity, shift: shift, sampled: sampled,
                    scale: scale, width: width, huffmanBound: huffmanBound)
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
                    // The window's counts, for the comparison of arities (`chooseArity`).
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
        return chooseArity(best, savedEscapes: savedEscapes, histogram: histogram, total: total, scale: scale, width: width)
    }

    /// The best window of at most `maxBins(arity:)` consecutive bins of one level (`bins` counts at
    /// `merged`, bins 2^`shift` wide) for symbols of `arity`, and its estimated cost in bits (of the
    /// `sampled` values, scaled to the block by `scale`).
    @inline(__always)
    private static func windowCost(
        _ merged: UnsafeMutablePointer<Int>, bins: Int, arity: Int, shift: Int, sampled: Int, scale: Double,
        width: Int, huffmanBound: Bool
    ) -> (bits: Double, start: Int, count: Int, escapes: Int) {
        let limit = maxBins(arity: arity), total = Double(sampled)
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
            bits +=
                arity == 1
                ? Double(largest) + 0.086 * total
                : total / Double(arity) * ((arity == 2 ? p * p : p * p * p) + 0.086)
        }
        if escapes > 0 { bits += Double(escapes) * (Double(width) - fastLog2(Double(escapes))) }
        bits += total * fastLog2(total) + Double(inside) * Double(shift)
        // The table: ~10 bits a bin (versions 1–2's frequencies), ~4 a symbol byte (zstd's Huffman weights).
        let symbolsUsed = arity == 1 ? count : min(256, arity == 2 ? (count + 1) * (count + 1) : (count + 1) * (count + 1) * (count + 1))
        bits = bits * scale + Double(symbolsUsed) * (arity == 1 ? 10 : 4)
        return (bits, start, count, escapes)
    }

    /// The arities compared by the size of their symbol bytes' Huffman code (what zstd's literals
    /// come to; `windowCost`'s bound, which chose each arity's bins, overstates the loss of one
    /// symbol a byte several times), the offset and escape bits, and ~4 bits of table a symbol.
    /// The bound favours two or three a byte by at most about 1 % of the size: an arity more
    /// than 3 % above arity 1 by it cannot come within the allowance (and is not measured).
    private static func chooseArity(
        _ best: InlineArray<3, Plan>, savedEscapes: InlineArray<3, Int>, histogram: UnsafeMutablePointer<Int>,
        total: Double, scale: Double, width: Int
    ) -> Plan {
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
}
