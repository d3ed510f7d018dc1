// The fuzz target (Fuzz/run.sh) compiles these files into one module together with TributaryBytes.
#if canImport(TributaryBytes)
    import TributaryBytes
#endif

/// Constants of the capture file format (docs/CAPTURE.md): magic numbers, sizes and limits.
public enum CaptureFormat {
    /// The eight bytes a capture file starts with: `89 54 43 41 50 0D 0A 1A` ("\x89TCAP\r\n\x1a").
    /// Like PNG's, the high byte and the CR LF / ^Z catch transfers that mangle binary files.
    public static let fileMagic: [UInt8] = [0x89, 0x54, 0x43, 0x41, 0x50, 0x0D, 0x0A, 0x1A]
    /// The format version this code writes: 4, since coded streams (§5.1) are of stream version 4,
    /// which a reader of version 3 cannot decode — it refuses the file at its header instead (as a
    /// version-1 reader refuses version 2, whose chunks may hold the coded transform).
    public static let version: UInt16 = 4
    /// The versions this code reads: 1 (no coded transform), 2 (coded streams of versions 1 and 2),
    /// 3 (stream version 3), 4.
    public static let readableVersions: ClosedRange<UInt16> = 1...4
    /// The record sync marker `9E 54 52 45 43 0D 0A 1A` ("\x9eTREC\r\n\x1a") as a little-endian u64.
    public static let syncMarker: UInt64 = 0x1A0A_0D43_4552_549E
    /// The last eight bytes of a footed capture: `89 54 43 41 50 45 4E 44` ("\x89TCAPEND").
    public static let trailerMagic: UInt64 = 0x444E_4550_4143_5489
    /// Bytes of a record envelope.
    public static let envelopeLength = 88
    /// Bytes of the trailer after the footer record (u64 footer offset, u64 trailer magic).
    public static let trailerLength = 16
    /// Bytes of one seek-table entry (in checkpoints and the footer).
    public static let indexEntryLength = 88
    /// The longest writer name in the file header.
    public static let maxWriterLength = 256
    /// Readers refuse records whose stored or content length exceeds this (a corrupt length must
    /// not make a reader allocate gigabytes): 128 MiB, twice the largest wire frame.
    public static let maxRecordLength = 128 << 20
}

/// The type of a record (envelope byte 8).
public enum RecordType: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// Wire frames of one source, compressed (docs/CAPTURE.md §4).
    case chunk = 1
    /// Frames known to be missing from the stream.
    case gap = 2
    /// The seek-table entries of the records written since the previous checkpoint.
    case checkpoint = 3
    /// The seek table of the whole file, written on clean close.
    case footer = 4
    /// A copy of a source's latest configuration frame, so that it survives the loss of the chunk
    /// that holds it (docs/CAPTURE.md §6). Not part of the recorded stream.
    case configuration = 5
    /// A clock-offset estimate of a publisher's clock against the recorder's (docs/CAPTURE.md §6).
    /// Not part of the recorded stream.
    case clockOffset = 6
    /// Where a source of a recording of several publishers came from: the publisher and its own id
    /// for the source (docs/CAPTURE.md §6). Not part of the recorded stream.
    case sourceOrigin = 7

    public var description: String {
        switch self {
        case .chunk: "chunk"
        case .gap: "gap"
        case .checkpoint: "checkpoint"
        case .footer: "footer"
        case .configuration: "configuration"
        case .clockOffset: "clock-offset"
        case .sourceOrigin: "source-origin"
        }
    }
}

/// How a record's payload is stored (envelope byte 9).
public enum RecordCodec: UInt8, Sendable {
    /// The payload is stored as it is (`stored_length == content_length`).
    case none = 0
    /// The payload is one zstd frame with content size and checksum.
    case zstd = 1
}

/// Why frames are missing (the `cause` field of a gap record).
public enum GapCause: UInt32, Sendable, CustomStringConvertible {
    /// The publisher announced the loss with a gap frame.
    case announced = 1
    /// The recorder saw sequence numbers jump without a gap frame.
    case sequenceJump = 2
    /// The recorder itself dropped frames (it could not keep up).
    case droppedByRecorder = 3

    public var description: String {
        switch self {
        case .announced: "announced by the publisher"
        case .sequenceJump: "sequence jump"
        case .droppedByRecorder: "dropped by the recorder"
        }
    }
}

/// Why a capture could not be written or read.
public struct CaptureError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What failed.
    public enum Kind: Sendable, Equatable {
        /// A system call failed (open, write, fsync, rename, read...).
        case io
        /// The file is not a capture (no magic) or has a version this code does not read.
        case notACapture
        /// The file header is damaged.
        case badHeader
        /// A record is damaged: envelope or payload CRC, lengths, zstd, chunk structure.
        case damagedRecord
        /// The caller used the API wrongly (for example appended after close).
        case usage
    }

    public var kind: Kind
    /// The file concerned.
    public var file: String
    /// Byte offset in the file where the problem is, or nil.
    public var offset: Int?
    /// What exactly is wrong.
    public var detail: String

    public init(_ kind: Kind, file: String, offset: Int? = nil, _ detail: String) {
        self.kind = kind
        self.file = file
        self.offset = offset
        self.detail = detail
    }

    public var description: String {
        let at = offset.map { " at byte \($0)" } ?? ""
        return "\(file)\(at): \(detail)"
    }
}

@inline(__always) func pad8(_ n: Int) -> Int { (n + 7) & ~7 }

/// Reads a capture's fields: fixed-offset fields of a record whose length was checked (TributaryBytes'
/// reader; the capture format is little-endian throughout).
typealias RecordReader = ByteReader<CaptureError>
/// Writes a capture's fields into memory sized for them (TributaryBytes' writer).
typealias RecordWriter = ByteWriter<UnsafeMutableRawBufferPointer>

extension CaptureError: ByteFailure {
    /// A damaged record, in the reader's words: the field, and how many bytes it needs of those left.
    public init(_ error: ByteError, source: String) {
        self.init(.damagedRecord, file: source, offset: error.offset, "\(error)")
    }
}
