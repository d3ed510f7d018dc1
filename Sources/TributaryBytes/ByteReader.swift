/// Reads little- or big-endian fields from bytes, checking every read against their end. The one
/// reader of the frame decoder, the file formats (TDMS, XDF, NPY, WAV) and the capture file.
///
/// Two ways to read:
/// - in order, from `position`: each read names its field and throws `Failure` (the caller's error,
///   made once from a `ByteError`) when the bytes end before the field does;
/// - at a fixed offset (`u32(at:)`…), where the caller has already checked that the bytes are long
///   enough (a record of fixed size): a read past the end is the caller's bug and stops the program,
///   it never reads outside the bytes.
///
/// `position` is relative to `bytes`; `origin` is the offset of `bytes[0]` in the frame, stream or
/// file, so that errors carry absolute offsets.
public struct ByteReader<Failure: ByteFailure> {
    /// The bytes read.
    public let bytes: UnsafeRawBufferPointer
    /// The absolute offset of `bytes[0]` (in errors).
    public let origin: Int
    /// What the bytes are, for errors (a file's name), or "".
    public let source: String
    /// Where the next in-order read starts, relative to `bytes`.
    public var position: Int
    /// Whether multi-byte fields are big-endian (a TDMS segment may say so); little-endian otherwise.
    public var bigEndian: Bool

    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer, origin: Int = 0, position: Int = 0, source: String = "", bigEndian: Bool = false) {
        self.bytes = bytes
        self.origin = origin
        self.source = source
        self.position = position
        self.bigEndian = bigEndian
    }

    /// Bytes after `position` (negative if `position` was set past the end).
    @inlinable public var remaining: Int { bytes.count - position }
    /// `position` as an absolute offset.
    @inlinable public var absolutePosition: Int { origin + position }

    /// The caller's error for `reason` at `field`, the current position (`at`: another offset
    /// relative to `bytes`).
    @inline(never)
    public func failure(_ reason: ByteError.Reason, _ field: String, at: Int? = nil) -> Failure {
        Failure(ByteError(reason, field: field, offset: origin + (at ?? position), remaining: max(0, remaining)), source: source)
    }

    /// Checks that `n` bytes follow `position` (n ≥ 0).
    @inlinable
    public func need(_ n: Int, _ field: String) throws(Failure) {
        guard n >= 0, n <= remaining else { throw failure(.truncated(needed: n), field) }
    }

    // MARK: In order

    /// Reads a `T` at `position` in the reader's byte order and moves past it.
    @inlinable
    public mutating func read<T: FixedWidthInteger>(_: T.Type, _ field: String) throws(Failure) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw failure(.truncated(needed: size), field) }
        let raw = bytes.loadUnaligned(fromByteOffset: position, as: T.self)
        position += size
        return bigEndian ? T(bigEndian: raw) : T(littleEndian: raw)
    }

    @inlinable public mutating func u8(_ field: String) throws(Failure) -> UInt8 { try read(UInt8.self, field) }
    @inlinable public mutating func u16(_ field: String) throws(Failure) -> UInt16 { try read(UInt16.self, field) }
    @inlinable public mutating func u32(_ field: String) throws(Failure) -> UInt32 { try read(UInt32.self, field) }
    @inlinable public mutating func u64(_ field: String) throws(Failure) -> UInt64 { try read(UInt64.self, field) }
    @inlinable public mutating func i8(_ field: String) throws(Failure) -> Int8 { try read(Int8.self, field) }
    @inlinable public mutating func i16(_ field: String) throws(Failure) -> Int16 { try read(Int16.self, field) }
    @inlinable public mutating func i32(_ field: String) throws(Failure) -> Int32 { try read(Int32.self, field) }
    @inlinable public mutating func i64(_ field: String) throws(Failure) -> Int64 { try read(Int64.self, field) }
    @inlinable public mutating func f32(_ field: String) throws(Failure) -> Float { Float(bitPattern: try read(UInt32.self, field)) }
    @inlinable public mutating func f64(_ field: String) throws(Failure) -> Double { Double(bitPattern: try read(UInt64.self, field)) }

    /// Moves `n` bytes on (n ≥ 0).
    @inlinable
    public mutating func skip(_ n: Int, _ field: String) throws(Failure) {
        try need(n, field)
        position += n
    }

    /// Moves to the next multiple of `alignment` (a power of two) of `position`.
    @inlinable
    public mutating func align(to alignment: Int, _ field: String) throws(Failure) {
        let mask = alignment - 1
        try skip((alignment - position & mask) & mask, field)
    }

    /// The next `n` bytes, without copying, and moves past them.
    @inlinable
    public mutating func slice(_ n: Int, _ field: String) throws(Failure) -> UnsafeRawBufferPointer {
        try need(n, field)
        let slice = UnsafeRawBufferPointer(rebasing: bytes[position..<(position + n)])
        position += n
        return slice
    }

    /// The next `n` bytes, copied into an array.
    @inlinable
    public mutating func readBytes(_ n: Int, _ field: String) throws(Failure) -> [UInt8] {
        Array(try slice(n, field))
    }

    /// The next `n` bytes as text, invalid UTF-8 replaced by U+FFFD.
    @inlinable
    public mutating func utf8(_ n: Int, _ field: String) throws(Failure) -> String {
        String(decoding: try slice(n, field), as: UTF8.self)
    }

    /// Reads a u32 count, at most `limit`, and checks that `count * elementSize` bytes can still follow.
    @inlinable
    public mutating func readCount(_ field: String, elementSize: Int, limit: Int = Int(UInt32.max)) throws(Failure) -> Int {
        let start = position
        let count = Int(try read(UInt32.self, field))
        guard count <= limit else { throw failure(.countTooLarge(count: count, limit: limit), field, at: start) }
        let (needed, overflow) = count.multipliedReportingOverflow(by: elementSize)
        guard !overflow, needed <= remaining else {
            throw failure(.countExceedsBytes(count: count, elementSize: elementSize), field, at: start)
        }
        return count
    }

    /// Reads a string: a u32 byte length (at most `limit`; the field `<field>.length`), then that many
    /// bytes of valid UTF-8.
    @inlinable
    public mutating func readString(_ field: String, limit: Int) throws(Failure) -> String {
        let length = try readCount(field + ".length", elementSize: 1, limit: limit)
        let start = position
        let text = try slice(length, field)
        guard let string = String(validating: text.bindMemory(to: UInt8.self), as: UTF8.self) else {
            throw failure(.invalidUTF8(length: length), field, at: start)
        }
        return string
    }

    // MARK: At fixed offsets

    /// The `T` at `offset` (relative to `bytes`) in the reader's byte order; `position` does not move.
    /// - Precondition: the caller checked that the `T` lies inside the bytes.
    @inlinable
    public func load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        precondition(fits(offset, MemoryLayout<T>.size, in: bytes.count), "a fixed-offset read past the checked bytes")
        let raw = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
        return bigEndian ? T(bigEndian: raw) : T(littleEndian: raw)
    }

    @inlinable public func u8(at offset: Int) -> UInt8 { load(UInt8.self, at: offset) }
    @inlinable public func u16(at offset: Int) -> UInt16 { load(UInt16.self, at: offset) }
    @inlinable public func u32(at offset: Int) -> UInt32 { load(UInt32.self, at: offset) }
    @inlinable public func u64(at offset: Int) -> UInt64 { load(UInt64.self, at: offset) }
    @inlinable public func i16(at offset: Int) -> Int16 { load(Int16.self, at: offset) }
    @inlinable public func i32(at offset: Int) -> Int32 { load(Int32.self, at: offset) }
    @inlinable public func i64(at offset: Int) -> Int64 { load(Int64.self, at: offset) }
    @inlinable public func f32(at offset: Int) -> Float { Float(bitPattern: load(UInt32.self, at: offset)) }
    @inlinable public func f64(at offset: Int) -> Double { Double(bitPattern: load(UInt64.self, at: offset)) }
}
