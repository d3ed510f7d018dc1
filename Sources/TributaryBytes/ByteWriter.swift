/// Where a `ByteWriter` writes: memory sized beforehand (`UnsafeMutableRawBufferPointer`: a frame's
/// payload, a capture record) or an array that grows as it is written (`[UInt8]`: a file format's
/// metadata, the live view's update).
public protocol ByteDestination {
    /// Writes `value` (already in the byte order wanted) at `offset`. Growable storage grows to hold
    /// it, zero-filling any gap; fixed storage requires it to lie inside.
    mutating func store<T: FixedWidthInteger>(_ value: T, at offset: Int)
    /// Copies `bytes` to `offset`, under the same rule.
    mutating func copy(_ bytes: UnsafeRawBufferPointer, to offset: Int)
    /// Calls `body` with the `count` bytes at `offset`, under the same rule (bytes a growable storage
    /// adds are zero; bytes a fixed one holds keep their values).
    mutating func withRegion<R>(at offset: Int, count: Int, _ body: (UnsafeMutableRawBufferPointer) -> R) -> R
}

extension UnsafeMutableRawBufferPointer: ByteDestination {
    @inlinable
    func check(_ offset: Int, _ count: Int) {
        precondition(fits(offset, count, in: self.count), "a write past the memory sized for it")
    }

    @inlinable
    public mutating func store<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        check(offset, MemoryLayout<T>.size)
        baseAddress.unsafelyUnwrapped.storeBytes(of: value, toByteOffset: offset, as: T.self)
    }

    @inlinable
    public mutating func copy(_ bytes: UnsafeRawBufferPointer, to offset: Int) {
        check(offset, bytes.count)
        if let source = bytes.baseAddress, bytes.count > 0 {
            (baseAddress.unsafelyUnwrapped + offset).copyMemory(from: source, byteCount: bytes.count)
        }
    }

    @inlinable
    public mutating func withRegion<R>(at offset: Int, count: Int, _ body: (UnsafeMutableRawBufferPointer) -> R) -> R {
        check(offset, count)
        return body(UnsafeMutableRawBufferPointer(rebasing: self[offset..<(offset + count)]))
    }
}

extension Array: ByteDestination where Element == UInt8 {
    /// Grows (with zeros) to `end` bytes.
    @inlinable
    mutating func grow(to end: Int) {
        if end > count { append(contentsOf: repeatElement(0, count: end - count)) }
    }

    @inlinable
    public mutating func store<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        precondition(offset >= 0, "a write before the start of the bytes")
        if offset == count {
            Swift.withUnsafeBytes(of: value) { append(contentsOf: $0) }
        } else {
            grow(to: offset + MemoryLayout<T>.size)
            withUnsafeMutableBytes { $0.storeBytes(of: value, toByteOffset: offset, as: T.self) }
        }
    }

    @inlinable
    public mutating func copy(_ bytes: UnsafeRawBufferPointer, to offset: Int) {
        precondition(offset >= 0, "a write before the start of the bytes")
        if offset == count {
            append(contentsOf: bytes)
        } else if bytes.count > 0 {
            grow(to: offset + bytes.count)
            withUnsafeMutableBytes { ($0.baseAddress! + offset).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        }
    }

    @inlinable
    public mutating func withRegion<R>(at offset: Int, count: Int, _ body: (UnsafeMutableRawBufferPointer) -> R) -> R {
        precondition(offset >= 0 && count >= 0, "a write before the start of the bytes")
        grow(to: offset + count)
        return withUnsafeMutableBytes { body(UnsafeMutableRawBufferPointer(rebasing: $0[offset..<(offset + count)])) }
    }
}

/// Writes little-endian fields, in order from `position` or at fixed offsets, into a `ByteDestination`.
/// The one writer of the frame encoder, the file formats (TDMS, XDF), the capture file and the live
/// view's update. Every write is checked against the storage (fixed storage: its size; a write
/// beyond it is the caller's bug in sizing, and stops the program rather than write outside).
public struct ByteWriter<Storage: ByteDestination> {
    /// The bytes written to.
    public var storage: Storage
    /// Where the next in-order write goes.
    public var position: Int

    @inlinable
    public init(_ storage: Storage, position: Int = 0) {
        self.storage = storage
        self.position = position
    }

    // MARK: In order

    /// Writes `value` little-endian at `position` and moves past it.
    @inlinable
    public mutating func write<T: FixedWidthInteger>(_ value: T) {
        storage.store(value.littleEndian, at: position)
        position += MemoryLayout<T>.size
    }

    @inlinable public mutating func write(_ value: Double) { write(value.bitPattern) }
    @inlinable public mutating func write(_ value: Float) { write(value.bitPattern) }

    @inlinable public mutating func u8(_ value: UInt8) { write(value) }
    @inlinable public mutating func u16(_ value: UInt16) { write(value) }
    @inlinable public mutating func u32(_ value: UInt32) { write(value) }
    @inlinable public mutating func u64(_ value: UInt64) { write(value) }
    @inlinable public mutating func i16(_ value: Int16) { write(value) }
    @inlinable public mutating func i32(_ value: Int32) { write(value) }
    @inlinable public mutating func i64(_ value: Int64) { write(value) }
    @inlinable public mutating func f32(_ value: Float) { write(value.bitPattern) }
    @inlinable public mutating func f64(_ value: Double) { write(value.bitPattern) }

    /// Copies `bytes` to `position` and moves past them.
    @inlinable
    public mutating func write(_ bytes: UnsafeRawBufferPointer) {
        storage.copy(bytes, to: position)
        position += bytes.count
    }

    @inlinable public mutating func write(_ bytes: [UInt8]) { bytes.withUnsafeBytes { write($0) } }

    /// Writes a string: its UTF-8 byte length as a u32, then the bytes.
    /// - Precondition: fewer than 2³² bytes (the caller limits its strings).
    @inlinable
    public mutating func write(string: String) {
        var text = string
        text.withUTF8 { utf8 in
            write(UInt32(utf8.count))
            write(UnsafeRawBufferPointer(utf8))
        }
    }

    /// Moves `n` bytes on (n ≥ 0): fixed storage keeps what those bytes hold, growable storage adds zeros.
    @inlinable
    public mutating func skip(_ n: Int) {
        storage.withRegion(at: position, count: n) { _ in }
        position += n
    }

    /// Moves to the next multiple of `alignment` (a power of two) of `position`, as `skip` does.
    @inlinable
    public mutating func align(to alignment: Int) {
        let mask = alignment - 1
        skip((alignment - position & mask) & mask)
    }

    /// Calls `body` with the next `count` bytes (to fill in place: a block of samples) and moves past them.
    @inlinable
    public mutating func withRegion<R>(count: Int, _ body: (UnsafeMutableRawBufferPointer) -> R) -> R {
        let result = storage.withRegion(at: position, count: count, body)
        position += count
        return result
    }

    // MARK: At fixed offsets

    /// Writes `value` little-endian at `offset`; `position` does not move.
    @inlinable
    public mutating func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        storage.store(value.littleEndian, at: offset)
    }

    @inlinable public mutating func put(_ value: Double, at offset: Int) { put(value.bitPattern, at: offset) }
}

extension ByteWriter where Storage == [UInt8] {
    /// A writer into a new, empty array.
    @inlinable public init() { self.init([]) }

    /// The bytes written.
    @inlinable public var bytes: [UInt8] { storage }

    /// Empties the array (keeping its capacity) and starts again at position 0.
    @inlinable
    public mutating func removeAll() {
        storage.removeAll(keepingCapacity: true)
        position = 0
    }
}
