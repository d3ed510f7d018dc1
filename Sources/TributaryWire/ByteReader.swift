/// Reads little-endian fields from a payload, checking every read against the end of the bytes.
///
/// `position` is relative to `bytes`; `origin` is the offset of `bytes[0]` in the decoded frame or
/// stream, so that errors report the absolute byte offset of the failing field.
@usableFromInline
struct ByteReader {
    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline let origin: Int
    @usableFromInline var position: Int = 0

    @inlinable
    init(_ bytes: UnsafeRawBufferPointer, origin: Int) {
        self.bytes = bytes
        self.origin = origin
    }

    @inlinable var remaining: Int { bytes.count - position }
    @inlinable var absolutePosition: Int { origin + position }

    @inlinable
    func truncated(_ field: String, needed: Int) -> WireError {
        WireError(
            .truncated, field: field, offset: origin + position,
            detail: "needs \(needed) bytes, \(remaining) left")
    }

    @inlinable
    mutating func read<T: FixedWidthInteger>(_: T.Type, _ field: String) throws(WireError) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw truncated(field, needed: size) }
        let value = T(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: T.self))
        position += size
        return value
    }

    @inlinable
    mutating func readDouble(_ field: String) throws(WireError) -> Double {
        Double(bitPattern: try read(UInt64.self, field))
    }

    @inlinable
    mutating func skip(_ n: Int, _ field: String) throws(WireError) {
        guard n >= 0, remaining >= n else { throw truncated(field, needed: n) }
        position += n
    }

    /// Moves to the next multiple of 8 (payload-relative; payloads start 8-aligned).
    @inlinable
    mutating func align8(_ field: String) throws(WireError) {
        let pad = (8 - position & 7) & 7
        try skip(pad, field)
    }

    /// Reads a count and checks that `count * elementSize` bytes can still follow.
    @inlinable
    mutating func readCount(_ field: String, elementSize: Int, limit: Int = Int(UInt32.max)) throws(WireError) -> Int {
        let start = absolutePosition
        let count = Int(try read(UInt32.self, field))
        guard count <= limit else {
            throw WireError(.countTooLarge, field: field, offset: start, detail: "\(count) exceeds the limit \(limit)")
        }
        let (bytesNeeded, overflow) = count.multipliedReportingOverflow(by: elementSize)
        guard !overflow, bytesNeeded <= remaining else {
            throw WireError(
                .countTooLarge, field: field, offset: start,
                detail: "\(count) elements of \(elementSize) bytes do not fit in the \(remaining) bytes left")
        }
        return count
    }

    /// Reads the two u32 counts that open an analog or digital payload: its rows (`row`: "channel" or
    /// "line"), at most `WireLimits.maxChannels`, then its samples, at most
    /// `WireLimits.maxEmptyDimension` when there is no row.
    mutating func readRowAndSampleCounts(
        _ rowField: String, _ sampleField: String, row: String
    ) throws(WireError) -> (rows: Int, samples: Int) {
        let rowsAt = absolutePosition
        let rows = Int(try read(UInt32.self, rowField))
        guard rows <= WireLimits.maxChannels else {
            throw WireError(
                .countTooLarge, field: rowField, offset: rowsAt, detail: "\(rows) exceeds the limit \(WireLimits.maxChannels)")
        }
        let samplesAt = absolutePosition
        let samples = Int(try read(UInt32.self, sampleField))
        guard rows > 0 || samples <= WireLimits.maxEmptyDimension else {
            throw WireError(
                .countTooLarge, field: sampleField, offset: samplesAt,
                detail: "\(samples) samples of no \(row): a frame without \(row)s has at most "
                    + "\(WireLimits.maxEmptyDimension) samples")
        }
        return (rows, samples)
    }

    /// Reads a string: u32 byte length, then that many bytes of UTF-8.
    mutating func readString(_ field: String, limit: Int = WireLimits.maxStringLength) throws(WireError) -> String {
        let length = try readCount(field + ".length", elementSize: 1, limit: limit)
        let start = position
        position += length
        let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + length)])
        guard let text = String(validating: slice.bindMemory(to: UInt8.self), as: UTF8.self) else {
            throw WireError(.invalidUTF8, field: field, offset: origin + start, detail: "\(length) bytes are not valid UTF-8")
        }
        return text
    }

    /// Reads `count` raw bytes as an array.
    mutating func readBytes(_ count: Int, _ field: String) throws(WireError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw truncated(field, needed: count) }
        let result = Array(UnsafeRawBufferPointer(rebasing: bytes[position..<(position + count)]))
        position += count
        return result
    }

    /// Checks that only padding (fewer than 8 bytes) follows the content.
    @inlinable
    func finish(_ kind: FrameKind) throws(WireError) {
        let contentEnd = (position + 7) & ~7
        guard contentEnd == bytes.count else {
            throw WireError(
                .lengthMismatch, field: "\(kind).payload_length", offset: origin + position,
                detail: "content ends at payload byte \(position) but the payload has \(bytes.count) bytes")
        }
    }
}

/// Writes little-endian fields into a buffer sized beforehand by the package's `contentLength`.
struct ByteWriter {
    let base: UnsafeMutableRawPointer
    var position: Int = 0

    init(_ base: UnsafeMutableRawPointer) { self.base = base }

    mutating func write<T: FixedWidthInteger>(_ value: T) {
        (base + position).storeBytes(of: value.littleEndian, as: T.self)
        position += MemoryLayout<T>.size
    }

    mutating func write(_ value: Double) { write(value.bitPattern) }

    mutating func write(_ bytes: UnsafeRawBufferPointer) {
        if let source = bytes.baseAddress, bytes.count > 0 {
            (base + position).copyMemory(from: source, byteCount: bytes.count)
        }
        position += bytes.count
    }

    mutating func write(_ bytes: [UInt8]) { bytes.withUnsafeBytes { write($0) } }

    mutating func write(string: String) {
        var text = string
        text.withUTF8 { utf8 in
            write(UInt32(utf8.count))
            write(UnsafeRawBufferPointer(utf8))
        }
    }

    /// Advances over zero bytes to the next multiple of 8 (the buffer is zero-filled).
    mutating func align8() { position = (position + 7) & ~7 }

    mutating func skip(_ n: Int) { position += n }
}

/// Size of an encoded string field.
@inline(__always)
func encodedSize(_ string: String) -> Int { 4 + string.utf8.count }

/// Rounds up to a multiple of 8.
@inlinable @inline(__always)
func align8(_ n: Int) -> Int { (n + 7) & ~7 }
