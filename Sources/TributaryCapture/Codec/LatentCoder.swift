import Foundation

/// Entropy coding of a sequence of 64-bit integer latents (docs/CAPTURE.md §5.1, "latent block"):
/// each value is split into a **bin** (an rANS-coded symbol, 12-bit probabilities) and the exact
/// **offset bits** inside the bin (raw, LSB-first), as pcodec's binning does. Bins are `2^shift`
/// wide and consecutive; values outside the window of bins take the escape symbol and are stored as
/// `escapeWidth` raw bits above the block's minimum. The encoder chooses the shift and window by
/// measuring the cost (order-0 entropy of the bins + offset bits + table) of each candidate.
enum LatentCoder {
    static let probabilityBits = 12
    static let probabilityScale = 1 << 12
    static let ransLow: UInt32 = 1 << 16
    /// Most bins in a block (the escape symbol comes on top).
    static let maxBins = 255

    /// Why a latent block cannot be decoded.
    struct Corrupt: Error {}

    /// A chosen binning.
    struct Plan {
        var base: Int64 = 0
        var shift = 0
        var escapeWidth = 0
        var binStart: UInt64 = 0
        var binCount = 1
        /// counts[0..<binCount] bins, counts[binCount] escapes.
        var counts = InlineArray<256, Int>(repeating: 0)
        /// Estimated bits of the block (entropy of the bins + offset bits + table).
        var bits: Double = 0
    }

    @inline(__always) static func bitLength(_ v: UInt64) -> Int { 64 - v.leadingZeroBitCount }

    /// Measures candidate binnings of `r` and returns the cheapest.
    /// - Parameters:
    ///   - histogram: scratch for `histogramSize` Ints.
    ///   - sampleScratch: scratch for 1024 UInt64.
    static func plan(_ r: UnsafePointer<Int64>, count n: Int, histogram: UnsafeMutablePointer<Int>,
                     sampleScratch sample: UnsafeMutablePointer<UInt64>, robust: Bool = true) -> Plan {
        var plan = Plan()
        guard n > 0 else { plan.binCount = 1; return plan }
        var lo = r[0], hi = r[0]
        for i in 1..<n {
            let v = r[i]
            lo = v < lo ? v : lo
            hi = v > hi ? v : hi
        }
        let range = UInt64(bitPattern: hi &- lo)
        let width = bitLength(range)
        // The core of the distribution, from a sorted sample: far outliers become escapes rather
        // than widening every bin.
        var coreLo: UInt64 = 0, coreHi = range
        if robust && n >= 256 && width > 8 {
            let m = min(n, 1024), stride = n / m
            for j in 0..<m { sample[j] = UInt64(bitPattern: r[j * stride] &- lo) }
            sortInPlace(sample, count: m)
            let a = sample[m / 1000], b = sample[m - 1 - m / 1000]
            let spread = (b - a) / 2
            coreLo = a >= spread ? a - spread : 0
            coreHi = range - b >= spread ? b + spread : range
        }
        let fine = max(0, bitLength(coreHi - coreLo) - 12)
        let startFine = ((coreLo >> UInt64(fine)) >> 10) << 10
        let fineBins = Int((coreHi >> UInt64(fine)) - startFine) + 1
        histogram.initialize(repeating: 0, count: fineBins)
        for i in 0..<n {
            let index = (UInt64(bitPattern: r[i] &- lo) >> UInt64(fine)) &- startFine
            if index < UInt64(fineBins) { histogram[Int(index)] += 1 }
        }
        plan.base = lo
        plan.escapeWidth = width
        plan.bits = .infinity
        let total = Double(n)
        // Coarser levels are merged in place: bin b of a level only reads bins 2b and 2b+1 of the previous.
        let merged = histogram
        var bins = fineBins
        var worse = 0
        for extra in 0...10 {
            let shift = fine + extra
            if shift > width { break }
            if extra > 0 {
                // Merge pairs of the previous level (startFine is a multiple of 2^10, so they align).
                let previous = bins
                bins = (previous + 1) / 2
                for b in 0..<bins { merged[b] = merged[2 * b] + (2 * b + 1 < previous ? merged[2 * b + 1] : 0) }
            }
            // Window of at most maxBins consecutive bins holding the most samples.
            var start = 0, count = min(bins, maxBins)
            var inside = 0
            for b in 0..<count { inside += merged[b] }
            if bins > maxBins {
                var best = inside, sum = inside
                for s in 1...(bins - maxBins) {
                    sum += merged[s + maxBins - 1] - merged[s - 1]
                    if sum > best { best = sum; start = s }
                }
                inside = best
            }
            // Trim empty bins at the edges of the window.
            while count > 1 && merged[start] == 0 { start += 1; count -= 1 }
            while count > 1 && merged[start + count - 1] == 0 { count -= 1 }
            let escapes = n - inside
            // Σ c·log2(N/c) = N·log2 N − Σ c·log2 c.
            var bits = 0.0
            for b in start..<(start + count) where merged[b] > 0 {
                let c = Double(merged[b])
                bits -= c * fastLog2(c)
            }
            if escapes > 0 { bits += Double(escapes) * (Double(width) - fastLog2(Double(escapes))) }
            bits += total * fastLog2(total) + Double(inside) * Double(shift) + Double(count) * 10
            // The cost falls, then rises with the shift: stop after two rises.
            if bits >= plan.bits {
                worse += 1
                if worse >= 2 { break }
            } else {
                worse = 0
            }
            if bits < plan.bits {
                plan.bits = bits
                plan.shift = shift
                plan.binStart = (startFine >> UInt64(extra)) + UInt64(start)
                plan.binCount = count
                for b in 0..<count { plan.counts[b] = merged[start + b] }
                plan.counts[count] = escapes
            }
        }
        return plan
    }

    /// log2 to about 1e-4 (exponent plus a polynomial of the mantissa): enough to compare costs.
    @inline(__always) static func fastLog2(_ x: Double) -> Double {
        let bits = x.bitPattern
        let exponent = Double(Int((bits >> 52) & 0x7FF) - 1023)
        let m = Double(bitPattern: bits & 0x000F_FFFF_FFFF_FFFF | 0x3FF0_0000_0000_0000)
        return exponent + (-1.7417939 + (2.8212026 + (-1.4699568 + (0.44717955 - 0.056570851 * m) * m) * m) * m)
    }

    /// Scratch Ints `plan` needs.
    static let histogramSize = 4096 + 1024 + 2

    /// Counts (symbols 0 … `symbols` − 1) scaled to frequencies summing to `probabilityScale`,
    /// every used symbol at least 1.
    static func frequencies(_ counts: InlineArray<256, Int>, symbols: Int) -> InlineArray<256, Int> {
        var f = InlineArray<256, Int>(repeating: 0)
        var total = 0
        for i in 0..<symbols { total += counts[i] }
        guard total > 0 else { f[0] = probabilityScale; return f }
        var sum = 0
        for i in 0..<symbols {
            f[i] = counts[i] == 0 ? 0 : max(1, counts[i] * probabilityScale / total)
            sum += f[i]
        }
        while sum != probabilityScale {
            // Adjust the largest frequency (the one whose relative change costs least).
            var largest = 0
            for i in 0..<symbols where f[i] > f[largest] { largest = i }
            if sum < probabilityScale {
                f[largest] += probabilityScale - sum
                sum = probabilityScale
            } else {
                let take = min(sum - probabilityScale, f[largest] - 1)
                if take == 0 { break }  // cannot happen with at most 256 symbols
                f[largest] -= take
                sum -= take
            }
        }
        return f
    }

    /// In-place sort of a small buffer (quicksort, median of three; insertion sort below 16).
    static func sortInPlace<T: Comparable>(_ a: UnsafeMutablePointer<T>, count n: Int) {
        var lo = 0, hi = n - 1
        while hi - lo >= 16 {
            let mid = lo + (hi - lo) / 2
            if a[mid] < a[lo] { swap(&a[mid], &a[lo]) }
            if a[hi] < a[lo] { swap(&a[hi], &a[lo]) }
            if a[hi] < a[mid] { swap(&a[hi], &a[mid]) }
            let pivot = a[mid]
            var i = lo, j = hi
            while i <= j {
                while a[i] < pivot { i += 1 }
                while pivot < a[j] { j -= 1 }
                if i <= j { swap(&a[i], &a[j]); i += 1; j -= 1 }
            }
            // Recurse into the smaller side, loop on the larger: depth stays logarithmic.
            if j - lo < hi - i {
                sortInPlace(a + lo, count: j - lo + 1)
                lo = i
            } else {
                sortInPlace(a + i, count: hi - i + 1)
                hi = j
            }
        }
        if hi > lo {
            for i in (lo + 1)...hi {
                let x = a[i]
                var j = i - 1
                while j >= lo && x < a[j] { a[j + 1] = a[j]; j -= 1 }
                a[j + 1] = x
            }
        }
    }

    /// Writes a latent block for `r` with `plan` at `out`; returns the bytes written.
    /// - Parameter symbols: scratch for `n` bytes; `words`: scratch for `n + 4` UInt16.
    static func encode(_ r: UnsafePointer<Int64>, count n: Int, plan: Plan, symbols: UnsafeMutablePointer<UInt8>,
                       words: UnsafeMutablePointer<UInt16>, into out: UnsafeMutableRawPointer) -> Int {
        let symbolCount = plan.binCount + 1
        let freqs = frequencies(plan.counts, symbols: symbolCount)
        var p = 0
        out.storeBytes(of: UInt64(bitPattern: plan.base).littleEndian, toByteOffset: 0, as: UInt64.self)
        out.storeBytes(of: UInt8(plan.shift), toByteOffset: 8, as: UInt8.self)
        out.storeBytes(of: UInt8(plan.escapeWidth), toByteOffset: 9, as: UInt8.self)
        out.storeBytes(of: UInt16(plan.binCount).littleEndian, toByteOffset: 10, as: UInt16.self)
        out.storeBytes(of: plan.binStart.littleEndian, toByteOffset: 12, as: UInt64.self)
        p = 20
        for s in 0..<symbolCount {
            var v = freqs[s]
            while v >= 0x80 { out.storeBytes(of: UInt8(v & 0x7F | 0x80), toByteOffset: p, as: UInt8.self); v >>= 7; p += 1 }
            out.storeBytes(of: UInt8(v), toByteOffset: p, as: UInt8.self)
            p += 1
        }
        let lengths = p
        p += 8
        // Offset bits, forward, and the symbols for the rANS pass.
        let escape = UInt8(plan.binCount)
        let shift = UInt64(plan.shift), bins = UInt64(plan.binCount), start = plan.binStart
        let lowMask: UInt64 = plan.shift == 0 ? 0 : (plan.shift >= 64 ? ~0 : (1 << shift) - 1)
        var writer = BitWriter(out + p)
        for i in 0..<n {
            let u = UInt64(bitPattern: r[i] &- plan.base)
            let bin = (u >> shift) &- start
            if bin < bins {
                symbols[i] = UInt8(truncatingIfNeeded: bin)
                writer.write(u & lowMask, plan.shift)
            } else {
                symbols[i] = escape
                writer.write(u, plan.escapeWidth)
            }
        }
        let offsetBytes = writer.finish()
        p += offsetBytes
        // rANS, last symbol first; words are written backwards so that the decoder reads forwards.
        // x / f as a multiplication: with m = ⌊2^44 / f⌋ + 1 the error of x·m / 2^44 is below
        // x / 2^44 < 2^-12 ≤ 1/f for x < 2^32, so the floor is exact.
        var cum = InlineArray<256, UInt32>(repeating: 0), freq = InlineArray<256, UInt32>(repeating: 0)
        var reciprocal = InlineArray<256, UInt64>(repeating: 0)
        var c = 0
        for s in 0..<symbolCount {
            cum[s] = UInt32(c)
            freq[s] = UInt32(freqs[s])
            reciprocal[s] = freqs[s] == 0 ? 0 : (1 << 44) / UInt64(freqs[s]) + 1
            c += freqs[s]
        }
        // Two interleaved states (symbol i uses state i mod 2), each with its own word stream, so
        // that the decoder has two independent dependency chains. `words` holds both stacks:
        // state 0's grows down from `half`, state 1's from `n + 4`.
        var x0 = ransLow, x1 = ransLow
        let half = n / 2 + 2
        var w0 = half, w1 = n + 4
        @inline(__always) func put(_ i: Int, _ x: inout UInt32, _ w: inout Int) {
            let s = Int(symbols[i])
            let f = freq[s]
            if UInt64(x) >= UInt64(f) << 20 {
                w -= 1
                words[w] = UInt16(truncatingIfNeeded: x)
                x >>= 16
            }
            let product = UInt64(x).multipliedFullWidth(by: reciprocal[s])
            let q = UInt32(truncatingIfNeeded: product.high << 20 | product.low >> 44)
            x = (q << 12) &+ (x &- q &* f) &+ cum[s]
        }
        var i = n - 1
        if i >= 0 && i & 1 == 1 { put(i, &x1, &w1); i -= 1 }
        while i >= 1 {
            put(i, &x0, &w0)
            put(i - 1, &x1, &w1)
            i -= 2
        }
        if i == 0 { put(0, &x0, &w0) }
        let states = (x0, x1)
        let count0 = half - w0, count1 = n + 4 - w1
        out.storeBytes(of: states.0.littleEndian, toByteOffset: p, as: UInt32.self)
        out.storeBytes(of: states.1.littleEndian, toByteOffset: p + 4, as: UInt32.self)
        out.storeBytes(of: UInt32(count0).littleEndian, toByteOffset: p + 8, as: UInt32.self)
        p += 12
        for j in 0..<count0 { out.storeBytes(of: words[w0 + j].littleEndian, toByteOffset: p + 2 * j, as: UInt16.self) }
        p += 2 * count0
        for j in 0..<count1 { out.storeBytes(of: words[w1 + j].littleEndian, toByteOffset: p + 2 * j, as: UInt16.self) }
        p += 2 * count1
        let wordCount = count0 + count1
        out.storeBytes(of: UInt32(offsetBytes).littleEndian, toByteOffset: lengths, as: UInt32.self)
        out.storeBytes(of: UInt32(12 + 2 * wordCount).littleEndian, toByteOffset: lengths + 4, as: UInt32.self)
        return p
    }

    /// Decoding tables, reused from block to block.
    struct Tables {
        /// Per slot: (frequency − 1) | (slot − cumulative) << 12 | symbol << 24.
        var slots = [UInt32](repeating: 0, count: 4096)
        var symbolBase = [UInt64](repeating: 0, count: 256)
        var symbolWidth = [UInt8](repeating: 0, count: 256)
    }

    /// Decodes a latent block of `n` values from `input` into `r`; returns the bytes consumed.
    static func decode(_ input: UnsafeRawBufferPointer, count n: Int, tables: inout Tables,
                       into r: UnsafeMutablePointer<Int64>) throws(Corrupt) -> Int {
        guard input.count >= 20 else { throw Corrupt() }
        let base = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        let shift = Int(input[8]), escapeWidth = Int(input[9])
        let binCount = Int(UInt16(littleEndian: input.loadUnaligned(fromByteOffset: 10, as: UInt16.self)))
        let binStart = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        guard shift <= 63, escapeWidth <= 64, binCount <= maxBins else { throw Corrupt() }
        var p = 20
        var cumulative = 0
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
            tables.slots.withUnsafeMutableBufferPointer { slots in
                for slot in cumulative..<(cumulative + v) {
                    slots[slot] = UInt32(v - 1) | UInt32(slot - cumulative) << 12 | UInt32(s) << 24
                }
            }
            cumulative += v
            if s < binCount {
                tables.symbolBase[s] = base &+ ((binStart &+ UInt64(s)) &<< UInt64(shift))
                tables.symbolWidth[s] = UInt8(shift)
            } else {
                tables.symbolBase[s] = base
                tables.symbolWidth[s] = UInt8(escapeWidth)
            }
        }
        guard cumulative == probabilityScale, input.count - p >= 8 else { throw Corrupt() }
        let offsetBytes = Int(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: p, as: UInt32.self)))
        let ransBytes = Int(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: p + 4, as: UInt32.self)))
        p += 8
        guard offsetBytes <= input.count - p, ransBytes >= 12, ransBytes % 2 == 0, ransBytes <= input.count - p - offsetBytes else {
            throw Corrupt()
        }
        var reader = BitReader(UnsafeRawBufferPointer(rebasing: input[p..<(p + offsetBytes)]))
        let rans = UnsafeRawBufferPointer(rebasing: input[(p + offsetBytes)..<(p + offsetBytes + ransBytes)])
        var x0 = UInt32(littleEndian: rans.loadUnaligned(as: UInt32.self))
        var x1 = UInt32(littleEndian: rans.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        let count0 = Int(UInt32(littleEndian: rans.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        let totalWords = (ransBytes - 12) / 2
        guard count0 <= totalWords else { throw Corrupt() }
        let count1 = totalWords - count0
        // Each stream is read branch-free: the word is loaded whether needed or not, clamped to the
        // stream's last word (a stream without words reads the states' bytes, harmlessly); reading
        // past the last shows as a count above the stream's.
        let base0 = count0 > 0 ? rans.baseAddress! + 12 : rans.baseAddress!
        let base1 = count1 > 0 ? rans.baseAddress! + 12 + 2 * count0 : rans.baseAddress!
        let last0 = max(0, count0 - 1), last1 = max(0, count1 - 1)
        var w0 = 0, w1 = 0
        tables.slots.withUnsafeBufferPointer { slots in
            tables.symbolBase.withUnsafeBufferPointer { symbolBase in
                tables.symbolWidth.withUnsafeBufferPointer { symbolWidth in
                    @inline(__always) func step(_ x: inout UInt32, _ w: inout Int, _ base: UnsafeRawPointer, _ last: Int) -> Int {
                        let entry = slots[Int(x & 0xFFF)]
                        x = ((entry & 0xFFF) &+ 1) &* (x >> 12) &+ ((entry >> 12) & 0xFFF)
                        let word = UInt32(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 2 &* min(w, last), as: UInt16.self)))
                        let renormalise = x < ransLow
                        x = renormalise ? x << 16 | word : x
                        w &+= renormalise ? 1 : 0
                        return Int(entry >> 24)
                    }
                    var i = 0
                    while i + 1 < n {
                        let s0 = step(&x0, &w0, base0, last0)
                        let s1 = step(&x1, &w1, base1, last1)
                        r[i] = Int64(bitPattern: symbolBase[s0] &+ reader.read(Int(symbolWidth[s0])))
                        r[i + 1] = Int64(bitPattern: symbolBase[s1] &+ reader.read(Int(symbolWidth[s1])))
                        i += 2
                    }
                    if i < n {
                        let s0 = step(&x0, &w0, base0, last0)
                        r[i] = Int64(bitPattern: symbolBase[s0] &+ reader.read(Int(symbolWidth[s0])))
                    }
                }
            }
        }
        guard w0 == count0, w1 == count1, x0 == ransLow, x1 == ransLow, !reader.overrun else { throw Corrupt() }
        return p + offsetBytes + ransBytes
    }
}

/// LSB-first bit writer (little-endian 32-bit stores); the caller guarantees room.
struct BitWriter {
    private let start: UnsafeMutableRawPointer
    private var out: UnsafeMutableRawPointer
    private var accumulator: UInt64 = 0
    private var filled = 0

    init(_ start: UnsafeMutableRawPointer) { self.start = start; out = start }

    @inline(__always) mutating func write(_ value: UInt64, _ width: Int) {
        if width > 32 {
            put(value & 0xFFFF_FFFF, 32)
            put(value >> 32, width - 32)
        } else if width > 0 {
            put(value, width)
        }
    }

    @inline(__always) private mutating func put(_ value: UInt64, _ width: Int) {
        accumulator |= value &<< UInt64(filled)  // filled < 32
        filled += width
        if filled >= 32 {
            out.storeBytes(of: UInt32(truncatingIfNeeded: accumulator).littleEndian, as: UInt32.self)
            out += 4
            accumulator >>= 32
            filled -= 32
        }
    }

    /// Flushes the last bits; returns the bytes written.
    mutating func finish() -> Int {
        while filled > 0 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: accumulator), as: UInt8.self)
            out += 1
            accumulator >>= 8
            filled -= 8
        }
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
