import CKernels
import Foundation

/// Entropy coding of a sequence of 64-bit integer latents (docs/CAPTURE.md §5.1, "latent block"):
/// each value is split into a **bin** (a symbol; stream version 3 codes the symbols as one zstd
/// frame, versions 1 and 2 — still read — with rANS and 12-bit probabilities) and the exact
/// **offset bits** inside the bin (raw, LSB-first), as pcodec's binning does. Bins are `2^shift`
/// wide and consecutive; values outside the window of bins take the escape symbol and are stored as
/// `escapeWidth` raw bits above the block's minimum. The encoder chooses the shift and window by
/// measuring the cost (order-0 entropy of the bins + offset bits + table) of each candidate.
enum LatentCoder {
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
        /// Estimated bits of the block (entropy of the bins + offset bits + table).
        var bits: Double = 0
    }

    @inline(__always) static func bitLength(_ v: UInt64) -> Int { 64 - v.leadingZeroBitCount }

    /// Measures candidate binnings of `r` and returns the cheapest.
    /// - Parameters:
    ///   - histogram: scratch for `histogramSize` Ints.
    ///   - maxShift: the widest bins allowed (2^`maxShift`).
    ///   - huffmanBound: count the bound of a prefix code's loss in the cost (stream version 3).
    ///   - fineBits: the finest histogram has about 2^`fineBits` bins over the core (at most 12); its
    ///     bins, not the latents, are most of the work on short runs (`choosePredictor` passes 10).
    static func plan(_ r: UnsafePointer<Int64>, count n: Int, histogram: UnsafeMutablePointer<Int>,
                     robust: Bool = true, maxShift: Int = 63,
                     huffmanBound: Bool = false, fineBits: Int = 12) -> Plan {
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
        var i = 0
        while i < n {
            let index = (UInt64(bitPattern: r[i] &- lo) >> UInt64(fine)) &- startFine
            if index < UInt64(fineBins) { histogram[Int(index)] += 1 }
            i &+= step
        }
        plan.base = lo
        plan.escapeWidth = width
        plan.bits = .infinity
        let total = Double(sampled), scale = Double(step)
        // Coarser levels are merged in place: bin b of a level only reads bins 2b and 2b+1 of the previous.
        let merged = histogram
        var bins = fineBins
        var worse = 0
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
            // Window of at most maxBins consecutive bins holding the most samples.
            var start = 0, count = min(bins, maxBins)
            var inside = 0
            for b in 0..<count { inside &+= merged[b] }
            if bins > maxBins {
                var best = inside, sum = inside
                for s in 1...(bins - maxBins) {
                    sum = sum &+ merged[s + maxBins - 1] &- merged[s - 1]
                    if sum > best { best = sum; start = s }
                }
                inside = best
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
            // A prefix code (the Huffman coding of stream version 3's symbols) loses up to
            // p_max + 0.086 bits per symbol (Gallager's bound), most when few bins hold most values.
            if huffmanBound { bits += Double(largest) + 0.086 * total }
            if escapes > 0 { bits += Double(escapes) * (Double(width) - fastLog2(Double(escapes))) }
            bits += total * fastLog2(total) + Double(inside) * Double(shift)
            bits = bits * scale + Double(count) * 10
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
            }
        }
        return plan
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

    /// Scratch Ints `plan` needs.
    static let histogramSize = 4096 + 1024 + 2

    /// rANS lanes of a latent block of stream version 1 and 2 (docs/CAPTURE.md §5.1).
    static func lanes(version: UInt8) -> Int { version == 1 ? 2 : 4 }

    /// Bytes of a latent block's header in stream version 3.
    static let headerSizeV3 = 28
    /// The widest bins of stream version 3: a 64-bit load at a value's byte holds its offset bits.
    static let maxShiftV3 = 56

    /// Writes a latent block of stream version 3 for `r` with `plan` (`plan.shift` ≤ `maxShiftV3`)
    /// at `out`; returns the bytes written. The symbols (one byte per value) are one zstd frame,
    /// whose Huffman-coded literals come within ~1 % of the symbols' order-0 entropy and decode
    /// several times faster than rANS; the offset bits are `shift` bits per value at fixed
    /// positions; the escapes' bits above them follow, in order.
    /// - Parameters:
    ///   - symbols: scratch for `n` bytes.
    ///   - compressor: a level-1 context without checksums (the capture's frame has one).
    ///   - out: room for `headerSizeV3` + 9 × `n` + 8 bytes.
    static func encodeV3(_ r: UnsafePointer<Int64>, count n: Int, plan: Plan, symbols: UnsafeMutablePointer<UInt8>,
                         compressor: ZstdCompressor, into out: UnsafeMutableRawPointer) -> Int {
        precondition(plan.shift <= maxShiftV3, "bins of stream version 3 are at most 2^56 wide")
        let shift = UInt64(plan.shift), bins = UInt64(plan.binCount), start = plan.binStart
        let escape = UInt8(plan.binCount)
        // bin = ((r[i] − base) >> shift) − start; the symbol is the bin when below binCount, else
        // the escape (a C kernel: eight values at a time with AVX-512; `binSymbolsReference`).
        let escapes = tributary_bin_symbols(r, n, UInt64(bitPattern: plan.base), UInt32(shift), start, bins, escape, symbols)
        out.storeBytes(of: UInt64(bitPattern: plan.base).littleEndian, toByteOffset: 0, as: UInt64.self)
        out.storeBytes(of: UInt8(plan.shift), toByteOffset: 8, as: UInt8.self)
        out.storeBytes(of: UInt8(plan.escapeWidth), toByteOffset: 9, as: UInt8.self)
        out.storeBytes(of: UInt16(plan.binCount).littleEndian, toByteOffset: 10, as: UInt16.self)
        out.storeBytes(of: plan.binStart.littleEndian, toByteOffset: 12, as: UInt64.self)
        out.storeBytes(of: UInt32(escapes).littleEndian, toByteOffset: 24, as: UInt32.self)
        var p = headerSizeV3
        // A zstd frame only when it is shorter than the symbols: `symbol_bytes` = n means stored as they are.
        let frame = try? compressor.compress(UnsafeRawBufferPointer(start: symbols, count: n),
                                             into: UnsafeMutableRawBufferPointer(start: out + p, count: n - 1))
        let symbolBytes = frame ?? n
        if frame == nil { (out + p).copyMemory(from: symbols, byteCount: n) }
        out.storeBytes(of: UInt32(symbolBytes).littleEndian, toByteOffset: 20, as: UInt32.self)
        p += symbolBytes
        let lowMask: UInt64 = shift == 0 ? 0 : (1 << shift) - 1
        if plan.shift > 0 {
            // Narrow offsets go several to a write (as many as 56 bits hold; the values' bits in
            // order, least significant first, as one at a time): the writer's chain of dependent
            // shifts is then several times shorter.
            let width = plan.shift, perWrite = 56 / width
            var writer = BitWriter(out + p)
            var i = 0
            if perWrite > 1 {
                while i + perWrite <= n {
                    var word: UInt64 = 0
                    for j in 0..<perWrite { word |= (UInt64(bitPattern: r[i + j] &- plan.base) & lowMask) &<< UInt64(j * width) }
                    writer.write(word, perWrite * width)
                    i += perWrite
                }
            }
            while i < n { writer.write(UInt64(bitPattern: r[i] &- plan.base) & lowMask, width); i += 1 }
            p += writer.finish()
        }
        if escapes > 0 {
            let highWidth = max(0, plan.escapeWidth - plan.shift)
            var high = BitWriter(out + p)
            // Escapes are few: eight symbols at a time are skipped when none of them is one.
            let pattern = UInt64(escape) &* 0x0101_0101_0101_0101
            var i = 0
            while i < n {
                if i + 8 <= n {
                    let x = UnsafeRawPointer(symbols + i).loadUnaligned(as: UInt64.self) ^ pattern
                    // A zero byte in x is an escape (the classic has-zero-byte test; exact: no false negatives).
                    if (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080 == 0 { i &+= 8; continue }
                }
                if symbols[i] == escape { high.write(UInt64(bitPattern: r[i] &- plan.base) >> shift, highWidth) }
                i &+= 1
            }
            p += high.finish()
        }
        return p
    }

    /// The symbols of `encodeV3` in Swift (the kernel's reference in the tests); returns the escapes.
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
            words.deallocate()
        }

        func reserve(symbols n: Int, words count: Int) {
            if n > symbolCapacity {
                symbols.deallocate()
                symbolCapacity = max(n, symbolCapacity * 3 / 2)
                symbols = .allocate(capacity: symbolCapacity)
            }
            if count > wordCapacity {
                words.deallocate()
                wordCapacity = max(count, wordCapacity * 3 / 2)
                words = .allocate(capacity: wordCapacity)
            }
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
        guard shift <= 63, escapeWidth <= 64, binCount <= maxBins else { throw Corrupt() }
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

    /// Decodes a latent block of stream version 3 (`encodeV3`) of `n` values from `input` into `r`;
    /// returns the bytes consumed. Every read is bounded by `input`; a block that breaks a rule of
    /// docs/CAPTURE.md §5.1 throws.
    static func decodeV3(_ input: UnsafeRawBufferPointer, count n: Int, tables: Tables, decompressor: ZstdDecompressor,
                         into r: UnsafeMutablePointer<Int64>) throws(Corrupt) -> Int {
        guard input.count >= headerSizeV3, n >= 1 else { throw Corrupt() }
        let base = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        let shift = Int(input[8]), escapeWidth = Int(input[9])
        let binCount = Int(UInt16(littleEndian: input.loadUnaligned(fromByteOffset: 10, as: UInt16.self)))
        let binStart = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        let symbolBytes = Int(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: 20, as: UInt32.self)))
        let escapes = Int(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: 24, as: UInt32.self)))
        guard shift <= maxShiftV3, escapeWidth <= 64, binCount <= maxBins, escapes <= n,
              symbolBytes <= n, symbolBytes <= input.count - headerSizeV3 else { throw Corrupt() }
        let start = input.baseAddress!
        var p = headerSizeV3
        let symbols: UnsafePointer<UInt8>
        if symbolBytes == n {
            symbols = UnsafeRawPointer(start + p).bindMemory(to: UInt8.self, capacity: n)
        } else {
            tables.reserve(symbols: n, words: 0)
            do {
                let written = try decompressor.decompress(UnsafeRawBufferPointer(start: start + p, count: symbolBytes),
                                                          into: UnsafeMutableRawBufferPointer(start: tables.symbols, count: n))
                guard written == n else { throw Corrupt() }
            } catch { throw Corrupt() }
            symbols = UnsafePointer(tables.symbols)
        }
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
        // Every symbol must be a bin, or the escape when there are escapes: checked once (a
        // vectorised maximum), then every value is made as a bin's without a test each — the
        // escape's "bin" is the block's minimum, so that its value is base + its low bits — and
        // the few escapes are found again (8 symbols at a time) and given their high bits.
        var largest: UInt8 = 0
        for i in 0..<n { largest = max(largest, symbols[i]) }
        guard Int(largest) < binCount + (escapes > 0 ? 1 : 0) else { throw Corrupt() }
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
        let escape = UInt8(binCount)
        var taken = 0
        @inline(__always) func addHigh(_ i: Int) throws(Corrupt) {
            guard taken < escapes else { throw Corrupt() }
            let low = UInt64(bitPattern: r[i]) &- base
            r[i] = Int64(bitPattern: base &+ ((high.read(highWidth) &<< q) | low))
            taken += 1
        }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let pattern = ones &* UInt64(escape)
        var i = 0
        while i + 8 <= n {
            // A byte of `word` is zero where the symbol is the escape (the classic has-zero-byte test).
            let word = UInt64(littleEndian: UnsafeRawPointer(symbols + i).loadUnaligned(as: UInt64.self)) ^ pattern
            if (word &- ones) & ~word & (ones &<< 7) != 0 {
                for k in i..<(i + 8) where symbols[k] == escape { try addHigh(k) }
            }
            i += 8
        }
        for k in i..<n where symbols[k] == escape { try addHigh(k) }
        guard taken == escapes, !high.overrun else { throw Corrupt() }
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
