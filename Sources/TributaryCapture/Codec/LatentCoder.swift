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
    static func encodeV4(
        _ r: UnsafePointer<Int64>, count n: Int, plan: Plan, symbols: UnsafeMutablePointer<UInt8>,
        packed: UnsafeMutablePointer<UInt8>, positions: UnsafeMutablePointer<UInt32>,
        compressor: ZstdCompressor, into out: UnsafeMutableRawPointer
    ) -> Int {
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
        let frame = try? compressor.compress(
            UnsafeRawBufferPointer(start: symbolBytes, count: symbolCount),
            into: UnsafeMutableRawBufferPointer(start: out + p, count: symbolCount - 1))
        let stored = frame ?? symbolCount
        if frame == nil { (out + p).copyMemory(from: symbolBytes, byteCount: symbolCount) }
        out.storeBytes(of: UInt32(stored).littleEndian, toByteOffset: 20, as: UInt32.self)
        p += stored
        if plan.shift > 0 {
            // The low bits: a C kernel that writes several values at a time (BitWriter's layout).
            p += tributary_pack_low_bits(
                r, n, UInt64(bitPattern: plan.base), UInt32(plan.shift),
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
    static func binSymbolsReference(
        _ r: UnsafePointer<Int64>, count n: Int, base: Int64, shift: UInt64, start: UInt64, bins: UInt64,
        escape: UInt8, into symbols: UnsafeMutablePointer<UInt8>
    ) -> Int {
        var escapes = 0
        for i in 0..<n {
            let bin = (UInt64(bitPattern: r[i] &- base) >> shift) &- start
            let isBin = bin < bins
            symbols[i] = isBin ? UInt8(truncatingIfNeeded: bin) : escape
            escapes += isBin ? 0 : 1
        }
        return escapes
    }
}
