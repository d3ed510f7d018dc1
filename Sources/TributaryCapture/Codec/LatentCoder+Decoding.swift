import CKernels
import Foundation

/// Decoding of latent blocks: stream versions 1 and 2 (rANS lanes), 3 and 4 (zstd-coded symbols).
extension LatentCoder {
    /// Decodes a latent block of `n` values from `input` into `r`; returns the bytes consumed.
    /// - Parameter lanes: interleaved rANS states, 2 (stream version 1) or 4 (version 2).
    ///
    /// Two passes, each a tight loop without bounds checks (everything is validated before, or
    /// clamped and checked after): the bins (rANS), then the offset bits.
    static func decode(
        _ input: UnsafeRawBufferPointer, count n: Int, lanes: Int, tables: Tables,
        into r: UnsafeMutablePointer<Int64>
    ) throws(Corrupt) -> Int {
        guard input.count >= 20, lanes == 2 || lanes == 4 else { throw Corrupt() }
        let base = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        let shift = Int(input[8]), escapeWidth = Int(input[9])
        let binCount = Int(UInt16(littleEndian: input.loadUnaligned(fromByteOffset: 10, as: UInt16.self)))
        let binStart = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        guard shift <= 63, escapeWidth <= 64, binCount <= maxBins(arity: 1) else { throw Corrupt() }
        let slots = tables.slots, symbolBase = tables.symbolBase, symbolWidth = tables.symbolWidth
        var p = 20
        let (cumulative, maxWidth) = try readBins(
            input, at: &p, binCount: binCount, base: base, binStart: binStart, shift: shift, escapeWidth: escapeWidth, tables: tables)
        let headerWords = 2 * lanes - 1
        guard cumulative == probabilityScale, input.count - p >= 8 else { throw Corrupt() }
        let offsetBytes = Int(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: p, as: UInt32.self)))
        let ransBytes = Int(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: p + 4, as: UInt32.self)))
        p += 8
        guard offsetBytes <= input.count - p, ransBytes >= 4 * headerWords, ransBytes % 2 == 0,
            ransBytes <= input.count - p - offsetBytes
        else {
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
            let count =
                j < lanes - 1
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

    /// Reads the block's bin probabilities (LEB128 counts, the escape bin last) from `p` on and fills
    /// the decoding slots and each symbol's base, width and mask; returns the counts' sum and the
    /// widest offset of a used symbol.
    private static func readBins(
        _ input: UnsafeRawBufferPointer, at p: inout Int, binCount: Int, base: UInt64, binStart: UInt64, shift: Int,
        escapeWidth: Int, tables: Tables
    ) throws(Corrupt) -> (cumulative: Int, maxWidth: Int) {
        let slots = tables.slots, symbolBase = tables.symbolBase, symbolWidth = tables.symbolWidth, symbolMask = tables.symbolMask
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
        return (cumulative, maxWidth)
    }

    /// The values of symbols whose widths are all ≤ 56: a 64-bit load at the bit position's byte
    /// holds any of them. The byte is clamped to `readable` − 8 so that the load stays in bounds
    /// (a valid position is never clamped: see the caller); reading past the offset bits shows as
    /// a final position beyond them. Kept apart from the rANS pass so that its few values live in
    /// registers.
    @inline(never)
    private static func offsets(
        _ bits: UnsafeRawPointer, byteCount: Int, readable: Int, symbols: UnsafePointer<UInt8>,
        count n: Int, tables: Tables, into r: UnsafeMutablePointer<Int64>
    ) throws(Corrupt) {
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
    static func decodeV3(
        _ input: UnsafeRawBufferPointer, count n: Int, version: UInt8, tables: Tables,
        decompressor: ZstdDecompressor, into r: UnsafeMutablePointer<Int64>
    ) throws(Corrupt) -> Int {
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
            symbolBytes <= symbolCount, symbolBytes <= input.count - headerSizeV3
        else { throw Corrupt() }
        let start = input.baseAddress!
        var p = headerSizeV3
        // The symbol bytes as stored, or decompressed into `tables`.
        var stored = UnsafeRawPointer(start + p).bindMemory(to: UInt8.self, capacity: symbolCount)
        if symbolBytes != symbolCount {
            tables.reserve(symbols: n, words: 0, packed: arity > 1 ? symbolCount : 0)
            let into = arity == 1 ? tables.symbols : tables.packed
            do {
                let written = try decompressor.decompress(
                    UnsafeRawBufferPointer(start: start + p, count: symbolBytes),
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
        tributary_unpack_bins(
            symbols, bits.assumingMemoryBound(to: UInt8.self), fast, UInt32(shift), base, binStart,
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
                for k in 0..<min(8, readable - byte) {
                    word |= UInt64(bits.load(fromByteOffset: byte + k, as: UInt8.self)) << UInt64(8 * k)
                }
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
