// The fuzz targets (Fuzz/run.sh) compile TributaryBytes' files into one module with the wire's.
#if canImport(TributaryBytes)
    import TributaryBytes
#endif

/// Protocol-wide limits (docs/PROTOCOL.md §2.4).
public enum WireLimits {
    /// Header length written by this version.
    public static let headerLength = 40
    /// The largest frame (header + payload) the protocol allows: 64 MiB.
    public static let maxFrameSize = 64 << 20
    /// The most channels in an analog frame or configuration, lines in a digital frame, ids in a list.
    public static let maxChannels = 65_535
    /// The longest string field in bytes (16 MiB); message and XML texts are bounded by the frame.
    public static let maxStringLength = 16 << 20
    /// The largest other dimension of a package with no elements (an array with no columns, an
    /// analog frame with no channels …): an empty package costs no bytes, so without this bound a
    /// few bytes could make a receiver loop over 2^32 empty rows.
    public static let maxEmptyDimension = 65_536
    /// The sampling rates a configuration may announce: 0 (unknown or irregular) or from
    /// `minSamplingRate` to `maxSamplingRate` samples a second. Receivers derive periods, windows
    /// and sample times from the rate, so NaN, infinities, negative and absurd rates are refused
    /// where they enter (`invalidValue`), not at every use.
    public static let minSamplingRate = 1e-6
    /// See `minSamplingRate`: 1e12 samples a second.
    public static let maxSamplingRate = 1e12

    /// Whether `rate` may stand in a configuration (see `minSamplingRate`).
    public static func isValidSamplingRate(_ rate: Double) -> Bool {
        rate == 0 || (rate >= minSamplingRate && rate <= maxSamplingRate)
    }
}

/// Header flags. Bits 0-7 are critical: a receiver that does not know a set critical bit must reject
/// the frame. Bits 8-15 are informational: receivers ignore the ones they do not know.
public struct FrameFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// The frame comes from a replayed capture, not a live source (informational).
    public static let replayed = FrameFlags(rawValue: 1 << 8)
    /// On a hello: the subscriber accepts compact header parts on its connection (informational;
    /// docs/PROTOCOL.md §3.2). A publisher that does not know the bit ignores it.
    public static let compactHeaders = FrameFlags(rawValue: 1 << 9)

    /// Critical flags this version understands (none yet).
    @usableFromInline static let knownCritical: UInt16 = 0
}

/// The fixed 40-byte header in front of every frame (docs/PROTOCOL.md §2).
public struct FrameHeader: Sendable, Hashable {
    /// The four magic bytes "TRIB".
    public static let magic: UInt32 = 0x4249_5254  // "TRIB" read as a little-endian u32
    /// The protocol version this code writes and reads.
    public static let currentVersion: UInt8 = 1

    public var version: UInt8
    public var kind: FrameKind
    public var flags: FrameFlags
    /// Bytes from the start of the frame to the payload (40 in version 1; larger headers are skipped).
    public var headerLength: Int
    /// Payload bytes after the header, a multiple of 8.
    public var payloadLength: Int
    /// Per-stream sequence number: each sender numbers the frames of a stream 0, 1, 2, …
    public var sequence: UInt64
    /// Nanoseconds since the Unix epoch (for data: time of the first sample).
    public var timestampNs: Int64
    /// The source the frame belongs to (0: none / the session itself).
    public var sourceID: UInt32
    /// The filter the data was produced for (0: unfiltered).
    public var filterID: UInt32

    public init(
        kind: FrameKind, flags: FrameFlags = [], sequence: UInt64 = 0, timestampNs: Int64 = 0,
        sourceID: UInt32 = 0, filterID: UInt32 = 0, payloadLength: Int = 0
    ) {
        version = Self.currentVersion
        self.kind = kind
        self.flags = flags
        headerLength = WireLimits.headerLength
        self.payloadLength = payloadLength
        self.sequence = sequence
        self.timestampNs = timestampNs
        self.sourceID = sourceID
        self.filterID = filterID
    }

    /// Total frame size: header plus payload.
    @inlinable public var frameLength: Int { headerLength + payloadLength }

    /// The result of peeking at a header whose kind may be unknown.
    public enum Peek: Sendable {
        /// A frame of a known kind.
        case frame(FrameHeader)
        /// A frame of an unknown ignorable kind (>= 128) of this total length: skip it.
        case ignorable(kind: UInt8, frameLength: Int)
    }

    /// Validates the 40 header bytes at the start of `bytes`.
    ///
    /// - Parameters:
    ///   - bytes: at least the header; more bytes (the payload) may follow.
    ///   - maxFrameSize: the receiver's limit on header + payload.
    ///   - origin: offset of `bytes[0]` in the stream, for error offsets.
    /// - Throws: `WireError` naming the failing header field.
    @inlinable @inline(__always)
    public static func peek(
        _ bytes: UnsafeRawBufferPointer, maxFrameSize: Int = WireLimits.maxFrameSize,
        origin: Int = 0
    ) throws(WireError) -> Peek {
        // Hot path: one combined test over the fixed fields; the cold path finds which one failed.
        // The fixed fields are loaded directly (the guard bounds them), not through PayloadReader's
        // checked loads: on this path, taken for every frame, those measured slower in the wire suite.
        guard bytes.count >= WireLimits.headerLength else { throw headerError(bytes, maxFrameSize, origin) }
        let magic = UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self))
        let version = bytes[4]
        let rawKind = bytes[5]
        let flags = UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self))
        let headerLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt16.self)))
        let payloadLength = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
        guard magic == Self.magic, version == currentVersion, headerLength >= WireLimits.headerLength,
            (headerLength | payloadLength) & 7 == 0, headerLength + payloadLength <= maxFrameSize,
            flags & 0x00FF & ~FrameFlags.knownCritical == 0, let kind = FrameKind(rawValue: rawKind)
        else {
            if magic == Self.magic, version == currentVersion, headerLength >= WireLimits.headerLength,
                (headerLength | payloadLength) & 7 == 0, headerLength + payloadLength <= maxFrameSize, rawKind >= 128
            {
                return .ignorable(kind: rawKind, frameLength: headerLength + payloadLength)
            }
            throw headerError(bytes, maxFrameSize, origin)
        }
        var header = FrameHeader(kind: kind, flags: FrameFlags(rawValue: flags))
        header.headerLength = headerLength
        header.payloadLength = payloadLength
        header.sequence = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        header.timestampNs = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 24, as: Int64.self))
        header.sourceID = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 32, as: UInt32.self))
        header.filterID = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 36, as: UInt32.self))
        return .frame(header)
    }

    /// Says which header field is invalid (the cold path of `peek`).
    @usableFromInline @inline(never)
    static func headerError(_ bytes: UnsafeRawBufferPointer, _ maxFrameSize: Int, _ origin: Int) -> WireError {
        guard bytes.count >= WireLimits.headerLength else {
            return WireError(
                .truncated, field: "header", offset: origin + bytes.count,
                detail: "a header needs 40 bytes, \(bytes.count) present")
        }
        let fields = PayloadReader(bytes, origin: origin)
        let magic = fields.u32(at: 0)
        guard magic == Self.magic else {
            return WireError(
                .badMagic, field: "header.magic", offset: origin,
                detail: "expected 54 52 49 42 (\"TRIB\"), found \(hex(bytes, 0, 4))")
        }
        let version = fields.u8(at: 4)
        guard version == currentVersion else {
            return WireError(
                .unsupportedVersion, field: "header.version", offset: origin + 4,
                detail: "version \(version); this decoder implements version \(currentVersion)")
        }
        let headerLength = Int(fields.u16(at: 8))
        guard headerLength >= WireLimits.headerLength, headerLength & 7 == 0 else {
            return WireError(
                .badHeaderLength, field: "header.header_length", offset: origin + 8,
                detail: "\(headerLength); must be >= 40 and a multiple of 8")
        }
        let payloadLength = Int(fields.u32(at: 12))
        guard payloadLength & 7 == 0 else {
            return WireError(
                .misalignedLength, field: "header.payload_length", offset: origin + 12,
                detail: "\(payloadLength) is not a multiple of 8")
        }
        guard headerLength + payloadLength <= maxFrameSize else {
            return WireError(
                .frameTooLarge, field: "header.payload_length", offset: origin + 12,
                detail: "frame of \(headerLength + payloadLength) bytes exceeds the limit of \(maxFrameSize)")
        }
        let rawKind = fields.u8(at: 5)
        guard FrameKind(rawValue: rawKind) != nil else {
            return WireError(.unknownKind, field: "header.kind", offset: origin + 5, detail: "kind \(rawKind)")
        }
        let flags = fields.u16(at: 6)
        return WireError(
            .unsupportedFlags, field: "header.flags", offset: origin + 6,
            detail: "critical flag bits 0x\(String(flags & 0x00FF & ~FrameFlags.knownCritical, radix: 16)) are not known")
    }

    /// Writes the header's 40 bytes at `base` (a version-1 header: `header_length` is written as 40,
    /// whatever length the header was received with).
    public func encode(into base: UnsafeMutableRawPointer) {
        var writer = PayloadWriter(UnsafeMutableRawBufferPointer(start: base, count: WireLimits.headerLength))
        writer.write(Self.magic)
        writer.write(version)
        writer.write(kind.rawValue)
        writer.write(flags.rawValue)
        writer.write(UInt16(WireLimits.headerLength))
        writer.write(UInt16(0))
        writer.write(UInt32(payloadLength))
        writer.write(sequence)
        writer.write(timestampNs)
        writer.write(sourceID)
        writer.write(filterID)
    }
}

/// The 32-byte compact form of a header, for the header part of a split frame on a libzmq connection
/// whose receiver asked for it (docs/PROTOCOL.md §3.2): the 40-byte header without its bytes 0-3
/// (`magic`) and 8-11 (`header_length`, reserved), which a libzmq part of that size carries without
/// a heap allocation on either side (libzmq keeps parts of at most 32 bytes inside the message).
public enum CompactHeader {
    /// Bytes of a compact header part.
    public static let length = 32

    /// Writes the compact form of `header` (32 bytes) at `base`.
    @inlinable
    public static func encode(_ header: FrameHeader, into base: UnsafeMutableRawPointer) {
        withUnsafeTemporaryAllocation(byteCount: WireLimits.headerLength, alignment: 8) { full in
            header.encode(into: full.baseAddress!)
            base.copyMemory(from: full.baseAddress! + 4, byteCount: 4)
            (base + 4).copyMemory(from: full.baseAddress! + 12, byteCount: 28)
        }
    }

    /// Writes the 40-byte header that the 32 compact bytes stand for at `base` (magic "TRIB" and a
    /// `header_length` of 40 put back), for `FrameHeader.peek` to validate like any other header.
    /// - Precondition: `compact.count == length`.
    @inlinable
    public static func expand(_ compact: UnsafeRawBufferPointer, into base: UnsafeMutableRawPointer) {
        var w = PayloadWriter(UnsafeMutableRawBufferPointer(start: base, count: WireLimits.headerLength))
        w.write(FrameHeader.magic)
        w.write(UnsafeRawBufferPointer(rebasing: compact[0..<4]))
        w.write(UInt16(WireLimits.headerLength))
        w.write(UInt16(0))
        w.write(UnsafeRawBufferPointer(rebasing: compact[4..<32]))
    }
}

/// Hex of `count` bytes at `offset` (for error details).
@usableFromInline
func hex(_ bytes: UnsafeRawBufferPointer, _ offset: Int, _ count: Int) -> String {
    bytes[offset..<min(bytes.count, offset + count)].map { byte in
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }.joined(separator: " ")
}
