// The fuzz targets (Fuzz/run.sh) compile TributaryBytes' files into one module with the wire's.
#if canImport(TributaryBytes)
    import TributaryBytes
#endif

/// Reads a payload's fields (TributaryBytes' reader, reporting `WireError`s whose offsets are from
/// the start of the decoded frame or stream).
@usableFromInline typealias PayloadReader = ByteReader<WireError>
/// Writes a payload's fields into its frame's memory, sized beforehand by the package's `contentLength`
/// and zero-filled (so that `skip` and `align8` leave zeros).
@usableFromInline typealias PayloadWriter = ByteWriter<UnsafeMutableRawBufferPointer>

extension WireError: ByteFailure {
    /// The wire's words for a reader's error: a truncated field, a count over its limit or larger than
    /// the bytes left, a string that is not UTF-8.
    public init(_ error: ByteError, source: String) {
        switch error.reason {
        case .truncated(let needed):
            self.init(.truncated, field: error.field, offset: error.offset, detail: "needs \(needed) bytes, \(error.remaining) left")
        case .countTooLarge(let count, let limit):
            self.init(.countTooLarge, field: error.field, offset: error.offset, detail: "\(count) exceeds the limit \(limit)")
        case .countExceedsBytes(let count, let elementSize):
            self.init(
                .countTooLarge, field: error.field, offset: error.offset,
                detail: "\(count) elements of \(elementSize) bytes do not fit in the \(error.remaining) bytes left")
        case .invalidUTF8(let length):
            self.init(.invalidUTF8, field: error.field, offset: error.offset, detail: "\(length) bytes are not valid UTF-8")
        }
    }
}

/// The layout error, close and message packages share (docs/PROTOCOL.md): a 32-bit code, then a
/// string (u32 byte length, UTF-8).
enum CodedText {
    static func contentLength(_ text: String) -> Int { 4 + encodedSize(text) }

    static func write<Code: FixedWidthInteger>(_ code: Code, _ text: String, into w: inout PayloadWriter) {
        w.write(code)
        w.write(string: text)
    }

    /// The code, then the text, at most `limit` bytes (`codeField` and `textField` name them in errors).
    static func read<Code: FixedWidthInteger>(
        _: Code.Type, _ r: inout PayloadReader, codeField: String, textField: String, limit: Int
    ) throws(WireError) -> (code: Code, text: String) {
        let code = try r.read(Code.self, codeField)
        return (code, try r.readString(textField, limit: limit))
    }
}

extension ByteReader where Failure == WireError {
    /// Moves to the next multiple of 8 (payload-relative; payloads start 8-aligned).
    @inlinable
    mutating func align8(_ field: String) throws(WireError) { try align(to: 8, field) }

    /// Reads a string of at most `WireLimits.maxStringLength` bytes: u32 byte length, then UTF-8.
    mutating func readString(_ field: String) throws(WireError) -> String {
        try readString(field, limit: WireLimits.maxStringLength)
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

extension ByteWriter where Storage == UnsafeMutableRawBufferPointer {
    /// Advances over zero bytes to the next multiple of 8 (the payload is zero-filled).
    mutating func align8() { align(to: 8) }
}

/// Size of an encoded string field.
@inline(__always)
func encodedSize(_ string: String) -> Int { 4 + string.utf8.count }

/// Rounds up to a multiple of 8.
@inlinable @inline(__always)
func align8(_ n: Int) -> Int { (n + 7) & ~7 }
