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
