/// The 88-byte envelope in front of every record (docs/CAPTURE.md §3). Also the body of a
/// seek-table entry, which is the envelope's bytes 8..<88 behind the record's file offset.
public struct RecordEnvelope: Sendable, Hashable {
    public var type: RecordType
    public var codec: RecordCodec
    /// The source whose frames the chunk holds (0: frames that belong to no source).
    public var sourceID: UInt32
    /// Sequence number of the first frame (gap: the first missing sequence number).
    public var firstSequence: UInt64
    /// Sequence number of the last frame (gap: the last missing one).
    public var lastSequence: UInt64
    /// `timestamp_ns` of the first frame (for data, the time of its first sample).
    public var firstTimeNs: Int64
    /// `timestamp_ns` of the last frame.
    public var lastTimeNs: Int64
    /// Analog samples per channel in the chunk (the sum of the analog frames' sample counts).
    public var sampleCount: UInt64
    /// Frames in the chunk.
    public var frameCount: UInt32
    /// Bit k set when the chunk holds a frame of wire kind k (1...31).
    public var kindMask: UInt32
    /// Payload bytes in the file after the envelope (before the padding to 8).
    public var storedLength: UInt32
    /// Payload bytes once decoded (the zstd frame's content size).
    public var contentLength: UInt32
    /// Bytes of the frames the chunk decodes to (for other records, `contentLength`).
    public var framesLength: UInt32
    /// CRC32C of the stored payload bytes (without padding).
    public var payloadCRC: UInt32

    public init(
        type: RecordType, codec: RecordCodec, sourceID: UInt32 = 0, firstSequence: UInt64 = 0,
        lastSequence: UInt64 = 0, firstTimeNs: Int64 = 0, lastTimeNs: Int64 = 0, sampleCount: UInt64 = 0,
        frameCount: UInt32 = 0, kindMask: UInt32 = 0, storedLength: UInt32 = 0, contentLength: UInt32 = 0,
        framesLength: UInt32? = nil, payloadCRC: UInt32 = 0
    ) {
        self.type = type
        self.codec = codec
        self.sourceID = sourceID
        self.firstSequence = firstSequence
        self.lastSequence = lastSequence
        self.firstTimeNs = firstTimeNs
        self.lastTimeNs = lastTimeNs
        self.sampleCount = sampleCount
        self.frameCount = frameCount
        self.kindMask = kindMask
        self.storedLength = storedLength
        self.contentLength = contentLength
        self.framesLength = framesLength ?? contentLength
        self.payloadCRC = payloadCRC
    }

    /// Bytes the whole record occupies: envelope, payload and padding to a multiple of 8.
    public var recordLength: Int { CaptureFormat.envelopeLength + pad8(Int(storedLength)) }

    /// Writes the 88 envelope bytes (with both sync marker and envelope CRC) at `base`.
    public func write(to base: UnsafeMutableRawPointer) {
        var w = RecordWriter(UnsafeMutableRawBufferPointer(start: base, count: CaptureFormat.envelopeLength))
        w.write(CaptureFormat.syncMarker)
        w.write(type.rawValue)
        w.write(codec.rawValue)
        w.write(UInt16(CaptureFormat.envelopeLength))
        w.write(sourceID)
        w.write(firstSequence)
        w.write(lastSequence)
        w.write(firstTimeNs)
        w.write(lastTimeNs)
        w.write(sampleCount)
        w.write(frameCount)
        w.write(kindMask)
        w.write(storedLength)
        w.write(contentLength)
        w.write(framesLength)
        w.write(UInt32(0))
        w.write(payloadCRC)
        w.write(CRC32C.checksum(UnsafeRawBufferPointer(start: base, count: 84)))
    }

    /// The encoded envelope.
    public func encoded() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: CaptureFormat.envelopeLength)
        bytes.withUnsafeMutableBytes { write(to: $0.baseAddress!) }
        return bytes
    }

    /// Why envelope bytes were rejected.
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case noSyncMarker
        case badCRC
        case invalidField(String)

        public var description: String {
            switch self {
            case .noSyncMarker: "no record sync marker"
            case .badCRC: "envelope CRC32C mismatch"
            case .invalidField(let what): what
            }
        }
    }

    /// Parses and validates the 88 bytes of an envelope.
    /// - Parameter bytes: at least 88 bytes starting at the sync marker.
    /// - Throws: `Problem` when the marker, the CRC or a field is wrong.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(Problem) -> RecordEnvelope {
        let r = RecordReader(bytes)
        guard bytes.count >= CaptureFormat.envelopeLength, r.u64(at: 0) == CaptureFormat.syncMarker else { throw .noSyncMarker }
        guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<84])) == r.u32(at: 84) else { throw .badCRC }
        return try parseFields(UnsafeRawBufferPointer(rebasing: bytes[8..<88]))
    }

    /// Parses envelope bytes 8..<88 (also the body of a seek-table entry); the CRC is not checked here.
    static func parseFields(_ b: UnsafeRawBufferPointer) throws(Problem) -> RecordEnvelope {
        let r = RecordReader(b)
        // b[i] is envelope byte 8 + i.
        guard let type = RecordType(rawValue: r.u8(at: 0)) else { throw .invalidField("record_type \(r.u8(at: 0)) is unknown") }
        guard let codec = RecordCodec(rawValue: r.u8(at: 1)) else { throw .invalidField("codec \(r.u8(at: 1)) is unknown") }
        guard Int(r.u16(at: 2)) == CaptureFormat.envelopeLength else { throw .invalidField("envelope_length \(r.u16(at: 2)) is not 88") }
        let envelope = RecordEnvelope(
            type: type, codec: codec, sourceID: r.u32(at: 4), firstSequence: r.u64(at: 8), lastSequence: r.u64(at: 16),
            firstTimeNs: r.i64(at: 24), lastTimeNs: r.i64(at: 32), sampleCount: r.u64(at: 40), frameCount: r.u32(at: 48),
            kindMask: r.u32(at: 52), storedLength: r.u32(at: 56), contentLength: r.u32(at: 60), framesLength: r.u32(at: 64),
            payloadCRC: r.u32(at: 72))
        guard r.u32(at: 68) == 0 else { throw .invalidField("reserved envelope bytes 76-79 are not zero") }
        guard Int(envelope.storedLength) <= CaptureFormat.maxRecordLength, Int(envelope.contentLength) <= CaptureFormat.maxRecordLength,
            Int(envelope.framesLength) <= CaptureFormat.maxRecordLength
        else {
            throw .invalidField(
                "record length \(max(envelope.storedLength, envelope.contentLength, envelope.framesLength)) exceeds \(CaptureFormat.maxRecordLength)"
            )
        }
        guard envelope.type == .chunk || envelope.framesLength == envelope.contentLength else {
            throw .invalidField("frames_length must equal content_length for a \(type) record")
        }
        guard codec == .zstd || envelope.storedLength == envelope.contentLength else {
            throw .invalidField("an uncompressed record must have stored_length == content_length")
        }
        return envelope
    }
}

/// One row of the seek table: where a record is and what it holds.
public struct IndexEntry: Sendable, Hashable {
    /// File offset of the record's envelope.
    public var offset: Int
    /// The record's envelope.
    public var envelope: RecordEnvelope

    /// Writes the 88-byte entry: u64 offset, then envelope bytes 8..<88.
    func write(to base: UnsafeMutableRawPointer) {
        var scratch = [UInt8](repeating: 0, count: CaptureFormat.envelopeLength)
        scratch.withUnsafeMutableBytes { envelope.write(to: $0.baseAddress!) }
        var w = RecordWriter(UnsafeMutableRawBufferPointer(start: base, count: CaptureFormat.indexEntryLength))
        w.write(UInt64(offset))
        scratch.withUnsafeBytes { w.write(UnsafeRawBufferPointer(rebasing: $0[8...])) }
    }

    /// Reads an 88-byte entry.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(RecordEnvelope.Problem) -> IndexEntry {
        let r = RecordReader(bytes)
        let offset = r.u64(at: 0)
        guard offset <= UInt64(Int.max) else { throw .invalidField("entry offset \(offset) is impossible") }
        return IndexEntry(offset: Int(offset), envelope: try RecordEnvelope.parseFields(UnsafeRawBufferPointer(rebasing: bytes[8..<88])))
    }
}
