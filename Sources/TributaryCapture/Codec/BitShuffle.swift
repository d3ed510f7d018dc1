import CKernels

/// Bit-shuffle: rearranges an array of fixed-size numbers so that bit k of every element is stored
/// contiguously, which turns slowly varying samples into long runs that zstd compresses well.
///
/// The layout is that of the `bitshuffle` library (K. Masui, used by HDF5 filter 32008) with its
/// default block size, so other implementations can read it. For `n` elements of `s` bytes
/// (little-endian numbers), `count = n * s + r` bytes (`0 <= r < s`):
///
/// 1. The elements are cut into blocks of `B = blockElementCount(elementSize: s)` elements
///    (8192 / s: 4096 for s = 2, 2048 for s = 4, 1024 for s = 8), in order. After the full blocks,
///    the next `(n mod B) - (n mod 8)` elements form one last, shorter block (a multiple of 8, maybe none).
/// 2. A block of `m` elements (m a multiple of 8) becomes `8s` bit rows of `m / 8` bytes, rows stored one
///    after another. Row `8j + k` holds bit `k` (0 = least significant) of byte `j` (0 = least
///    significant byte) of every element: bit `t` (0 = least significant) of byte `b` of the row is that
///    bit of element `8b + t` of the block. Equivalently, with numpy:
///    `np.packbits(np.unpackbits(block.view(np.uint8).reshape(m, s), axis=1, bitorder="little").T,
///    axis=1, bitorder="little")`.
/// 3. The last `n mod 8` elements and the `r` trailing bytes are copied unchanged after the blocks.
///
/// The output has the same size as the input. Both directions allocate nothing.
public enum BitShuffle {
    /// The element sizes this implementation shuffles.
    public static let supportedElementSizes: Set<Int> = [1, 2, 4, 8]

    /// Elements per block for an element size: 8192 bytes' worth, a multiple of 8, at least 128
    /// (bitshuffle's `bshuf_default_block_size`).
    public static func blockElementCount(elementSize: Int) -> Int {
        max(128, (8192 / elementSize) / 8 * 8)
    }

    /// Bit-shuffles `source` into `destination` (same size, distinct memory).
    /// - Parameters:
    ///   - source: `count` bytes of little-endian elements (trailing partial element allowed).
    ///   - destination: at least `source.count` bytes; the first `source.count` are written.
    ///   - elementSize: 1, 2, 4 or 8.
    public static func shuffle(
        _ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer,
        elementSize: Int
    ) {
        checkedDispatch(source, destination, elementSize: elementSize, forward: true)
    }

    /// Reverses `shuffle`: `unshuffle(shuffle(x)) == x` for the same element size.
    /// - Parameters:
    ///   - source: bit-shuffled bytes.
    ///   - destination: at least `source.count` bytes; the first `source.count` are written.
    ///   - elementSize: the element size used to shuffle (1, 2, 4 or 8).
    public static func unshuffle(
        _ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer,
        elementSize: Int
    ) {
        checkedDispatch(source, destination, elementSize: elementSize, forward: false)
    }

    /// `dispatch` once the element size and the destination's size are checked (a caller's bug: trap).
    @inline(__always)
    private static func checkedDispatch(
        _ source: UnsafeRawBufferPointer, _ destination: UnsafeMutableRawBufferPointer, elementSize: Int, forward: Bool
    ) {
        precondition(supportedElementSizes.contains(elementSize), "bit-shuffle element size \(elementSize) unsupported")
        precondition(destination.count >= source.count, "bit-\(forward ? "" : "un")shuffle destination too small")
        dispatch(source, destination, elementSize: elementSize, forward: forward)
    }

    /// Calls `run` with the element size as a literal, so each size gets its own specialised loop
    /// (inlined, so that `forward` is a literal too).
    @inline(__always)
    private static func dispatch(
        _ source: UnsafeRawBufferPointer, _ destination: UnsafeMutableRawBufferPointer,
        elementSize: Int, forward: Bool
    ) {
        guard let src = source.baseAddress, let dst = destination.baseAddress else { return }
        switch elementSize {
        case 1: run(src, dst, count: source.count, size: 1, forward: forward)
        case 2: run(src, dst, count: source.count, size: 2, forward: forward)
        case 4: run(src, dst, count: source.count, size: 4, forward: forward)
        default: run(src, dst, count: source.count, size: 8, forward: forward)
        }
    }

    /// Walks the blocks; `size` is a literal at every call site so the kernels specialise.
    @inline(__always)
    private static func run(
        _ src: UnsafeRawPointer, _ dst: UnsafeMutableRawPointer, count: Int, size: Int,
        forward: Bool
    ) {
        let n = count / size
        let blockElements = blockElementCount(elementSize: size)
        // Scratch on the stack: 64 words for each of two 64-element groups, and their paired form.
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 128) { scratch in
            withUnsafeTemporaryAllocation(of: SIMD2<UInt64>.self, capacity: 64) { pairs in
                let w = scratch.baseAddress!
                let v = pairs.baseAddress!
                var start = 0
                while start + blockElements <= n {
                    block(
                        src + start * size, dst + start * size, elements: blockElements, size: size,
                        forward: forward, w: w, v: v)
                    start += blockElements
                }
                let last = (n - start) - (n - start) % 8
                if last > 0 {
                    block(src + start * size, dst + start * size, elements: last, size: size, forward: forward, w: w, v: v)
                    start += last
                }
                let tail = count - start * size
                if tail > 0 { (dst + start * size).copyMemory(from: src + start * size, byteCount: tail) }
            }
        }
    }

    /// Shuffles or unshuffles one block of `elements` (a multiple of 8) elements, 64 at a time.
    ///
    /// A group of 64 elements of `8 * size` bits is a 64 x (8 size) bit matrix; row p of the output is
    /// column p of that matrix, one 64-bit word per group. The group is packed into `bits = 8 size`
    /// words, word i holding elements i, i + bits, i + 2 bits, ... side by side, so that one
    /// bits x bits transpose of every 'bits'-wide lane at once produces the rows.
    ///
    /// Two neighbouring groups go through the transpose together, one in each lane of a
    /// `SIMD2<UInt64>` (one SSE2 register): their row words are adjacent in the output, so each row
    /// is one 16-byte store or load. The transpose was most of the kernel's time.
    @inline(__always)
    private static func block(
        _ src: UnsafeRawPointer, _ dst: UnsafeMutableRawPointer, elements: Int, size: Int,
        forward: Bool, w: UnsafeMutablePointer<UInt64>, v: UnsafeMutablePointer<SIMD2<UInt64>>
    ) {
        let bits = 8 * size
        let rowBytes = elements / 8
        let groups = elements / 64
        var first = 0
        #if _endian(little)
            if forward && size == 8 && groups > 0 {
                // A C kernel (AVX-512BW + VBMI, or AVX2) does the block's full groups where the processor has it.
                first = tributary_bitshuffle8_groups(
                    src.assumingMemoryBound(to: UInt8.self), dst.assumingMemoryBound(to: UInt8.self),
                    groups, rowBytes)
            }
            while first + 2 <= groups {
                let g = first
                if forward {
                    gather(src + g * 64 * size, w, size: size)
                    gather(src + (g + 1) * 64 * size, w + 64, size: size)
                    for i in 0..<bits { v[i] = SIMD2(w[i], w[64 + i]) }
                    transpose(v, bits: bits)
                    for p in 0..<bits { (dst + p * rowBytes + g * 8).storeBytes(of: v[p], as: SIMD2<UInt64>.self) }
                } else {
                    for p in 0..<bits { v[p] = (src + p * rowBytes + g * 8).loadUnaligned(as: SIMD2<UInt64>.self) }
                    transpose(v, bits: bits)
                    for i in 0..<bits {
                        w[i] = v[i][0]
                        w[64 + i] = v[i][1]
                    }
                    scatter(w, dst + g * 64 * size, size: size)
                    scatter(w + 64, dst + (g + 1) * 64 * size, size: size)
                }
                first += 2
            }
        #endif
        for g in first..<groups {
            if forward {
                gather(src + g * 64 * size, w, size: size)
                transpose(w, bits: bits)
                for p in 0..<bits {
                    (dst + p * rowBytes + g * 8).storeBytes(of: w[p].littleEndian, as: UInt64.self)
                }
            } else {
                for p in 0..<bits {
                    w[p] = UInt64(littleEndian: (src + p * rowBytes + g * 8).loadUnaligned(as: UInt64.self))
                }
                transpose(w, bits: bits)
                scatter(w, dst + g * 64 * size, size: size)
            }
        }
        // A block whose length is not a multiple of 64 ends with a group of 8...56 elements: run it
        // through a zero-padded copy (its rows are `partial / 8` bytes).
        let partial = elements - groups * 64
        guard partial > 0 else { return }
        let padded = UnsafeMutableRawPointer(w + 64)
        let byteOffset = groups * 64 * size
        let partialBytes = partial / 8
        if forward {
            padded.initializeMemory(as: UInt8.self, repeating: 0, count: 64 * size)
            padded.copyMemory(from: src + byteOffset, byteCount: partial * size)
            gather(UnsafeRawPointer(padded), w, size: size)
            transpose(w, bits: bits)
            for p in 0..<bits {
                var word = w[p].littleEndian
                withUnsafeBytes(of: &word) { (dst + p * rowBytes + groups * 8).copyMemory(from: $0.baseAddress!, byteCount: partialBytes) }
            }
        } else {
            for p in 0..<bits {
                var word: UInt64 = 0
                withUnsafeMutableBytes(of: &word) {
                    $0.baseAddress!.copyMemory(from: src + p * rowBytes + groups * 8, byteCount: partialBytes)
                }
                w[p] = UInt64(littleEndian: word)
            }
            transpose(w, bits: bits)
            scatter(w, padded, size: size)
            (dst + byteOffset).copyMemory(from: UnsafeRawPointer(padded), byteCount: partial * size)
        }
    }

    /// Packs 64 elements into `8 size` words: word i, lane q (bits q*8size ..< (q+1)*8size) = element q*8size + i.
    @inline(__always)
    private static func gather(_ src: UnsafeRawPointer, _ w: UnsafeMutablePointer<UInt64>, size: Int) {
        switch size {
        case 8:
            for i in 0..<64 { w[i] = UInt64(littleEndian: src.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)) }
        case 4:
            for i in 0..<32 {
                let a = UInt64(UInt32(littleEndian: src.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)))
                let b = UInt64(UInt32(littleEndian: src.loadUnaligned(fromByteOffset: (i + 32) * 4, as: UInt32.self)))
                w[i] = a | b &<< 32
            }
        case 2:
            for i in 0..<16 {
                var word: UInt64 = 0
                for q in 0..<4 {
                    let e = UInt16(littleEndian: src.loadUnaligned(fromByteOffset: (q * 16 + i) * 2, as: UInt16.self))
                    word |= UInt64(e) &<< UInt64(16 * q)
                }
                w[i] = word
            }
        default:
            for i in 0..<8 {
                var word: UInt64 = 0
                for q in 0..<8 { word |= UInt64(src.load(fromByteOffset: q * 8 + i, as: UInt8.self)) &<< UInt64(8 * q) }
                w[i] = word
            }
        }
    }

    /// Inverse of `gather`.
    @inline(__always)
    private static func scatter(_ w: UnsafeMutablePointer<UInt64>, _ dst: UnsafeMutableRawPointer, size: Int) {
        switch size {
        case 8:
            for i in 0..<64 { dst.storeBytes(of: w[i].littleEndian, toByteOffset: i * 8, as: UInt64.self) }
        case 4:
            for i in 0..<32 {
                dst.storeBytes(of: UInt32(truncatingIfNeeded: w[i]).littleEndian, toByteOffset: i * 4, as: UInt32.self)
                dst.storeBytes(
                    of: UInt32(truncatingIfNeeded: w[i] &>> 32).littleEndian, toByteOffset: (i + 32) * 4,
                    as: UInt32.self)
            }
        case 2:
            for i in 0..<16 {
                for q in 0..<4 {
                    dst.storeBytes(
                        of: UInt16(truncatingIfNeeded: w[i] &>> UInt64(16 * q)).littleEndian,
                        toByteOffset: (q * 16 + i) * 2, as: UInt16.self)
                }
            }
        default:
            for i in 0..<8 {
                for q in 0..<8 {
                    dst.storeBytes(
                        of: UInt8(truncatingIfNeeded: w[i] &>> UInt64(8 * q)), toByteOffset: q * 8 + i,
                        as: UInt8.self)
                }
            }
        }
    }

    /// Transposes, in every `bits`-wide lane of the words at once, the bits x bits bit matrix whose
    /// row r is lane bits of word r: afterwards bit c of word r is the former bit r of word c.
    /// Each step swaps the off-diagonal quarters of 2j x 2j sub-blocks (delta swap); it is its own inverse.
    @inline(__always)
    private static func transpose(_ w: UnsafeMutablePointer<UInt64>, bits: Int) {
        var j = bits / 2
        while j > 0 {
            let m = mask(j)
            var k = 0
            while k < bits {
                for r in k..<(k + j) {
                    let t = ((w[r] &>> UInt64(j)) ^ w[r + j]) & m
                    w[r] ^= t &<< UInt64(j)
                    w[r + j] ^= t
                }
                k += 2 * j
            }
            j /= 2
        }
    }

    /// `transpose` of two groups at once, one per lane.
    @inline(__always)
    private static func transpose(_ w: UnsafeMutablePointer<SIMD2<UInt64>>, bits: Int) {
        var j = bits / 2
        while j > 0 {
            let m = SIMD2<UInt64>(repeating: mask(j))
            let shift = SIMD2<UInt64>(repeating: UInt64(j))
            var k = 0
            while k < bits {
                for r in k..<(k + j) {
                    let t = ((w[r] &>> shift) ^ w[r + j]) & m
                    w[r] ^= t &<< shift
                    w[r + j] ^= t
                }
                k += 2 * j
            }
            j /= 2
        }
    }

    /// Bits whose position p has bit j clear: 0x5555... for j = 1, 0x3333... for 2, ..., low halves for 32.
    @inline(__always)
    private static func mask(_ j: Int) -> UInt64 {
        switch j {
        case 1: 0x5555_5555_5555_5555
        case 2: 0x3333_3333_3333_3333
        case 4: 0x0F0F_0F0F_0F0F_0F0F
        case 8: 0x00FF_00FF_00FF_00FF
        case 16: 0x0000_FFFF_0000_FFFF
        default: 0x0000_0000_FFFF_FFFF
        }
    }
}
