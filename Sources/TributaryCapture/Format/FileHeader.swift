import Foundation

/// The header at the start of every capture file (docs/CAPTURE.md §2).
public struct CaptureFileHeader: Sendable, Equatable {
    /// Format version (`CaptureFormat.version` when written; 1 … 4 when read).
    public var version: UInt16
    /// A random identifier for the capture (RFC 4122 version 4 bytes).
    public var uuid: UUID
    /// When the capture was created, in nanoseconds since 1970-01-01T00:00:00Z.
    public var createdNs: Int64
    /// The program that wrote it, e.g. "tributary 0.1" (at most 256 bytes of UTF-8).
    public var writer: String

    /// Creates a header for a new capture.
    public init(uuid: UUID = UUID(), createdNs: Int64, writer: String) {
        version = CaptureFormat.version
        self.uuid = uuid
        self.createdNs = createdNs
        // Cut the name at a character boundary that fits the limit instead of refusing to record.
        var name = writer
        while name.utf8.count > CaptureFormat.maxWriterLength { name.removeLast() }
        self.writer = name
    }

    /// Bytes of the encoded header (a multiple of 8; records start right after it).
    public var encodedLength: Int { pad8(44 + writer.utf8.count + 4) }

    /// The encoded header.
    public func encoded() -> [UInt8] {
        let length = encodedLength
        var bytes = [UInt8](repeating: 0, count: length)
        bytes.withUnsafeMutableBytes { raw in
            var w = RecordWriter(raw)
            w.write(CaptureFormat.fileMagic)
            w.write(version)
            w.write(UInt16(0))
            w.write(UInt32(length))
            withUnsafeBytes(of: uuid.uuid) { w.write($0) }
            w.write(createdNs)
            w.write(string: writer)
            w.put(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[..<(length - 4)])), at: length - 4)
        }
        return bytes
    }

    /// The result of reading the bytes at the start of a file.
    public enum Parsed: Sendable {
        /// A valid header of `length` bytes.
        case valid(CaptureFileHeader, length: Int)
        /// The magic and version are right but the header is damaged; records are searched from `resumeAt`.
        case damaged(reason: String, resumeAt: Int)
    }

    /// Parses the header from the first bytes of a file (give at least 8 + 4 + 300 bytes when available).
    /// - Throws: `CaptureError.notACapture` when the magic is missing or the version is not one this
    ///   reader implements (`CaptureFormat.readableVersions`).
    public static func parse(_ bytes: UnsafeRawBufferPointer, file: String) throws(CaptureError) -> Parsed {
        let r = RecordReader(bytes, source: file)
        guard bytes.count >= 8, bytes.prefix(8).elementsEqual(CaptureFormat.fileMagic) else {
            throw CaptureError(.notACapture, file: file, offset: 0, "no capture magic (89 54 43 41 50 0D 0A 1A) at byte 0")
        }
        guard bytes.count >= 10 else { return .damaged(reason: "the file ends inside the header", resumeAt: 8) }
        let version = r.u16(at: 8)
        guard CaptureFormat.readableVersions.contains(version) else {
            let known = CaptureFormat.readableVersions
            throw CaptureError(
                .notACapture, file: file, offset: 8,
                "capture format version \(version); this reader implements versions \(known.lowerBound)-\(known.upperBound)")
        }
        guard bytes.count >= 48 else { return .damaged(reason: "the file ends inside the header", resumeAt: 8) }
        let length = Int(r.u32(at: 12))
        let writerLength = Int(r.u32(at: 40))
        guard length >= 48, length & 7 == 0, writerLength <= CaptureFormat.maxWriterLength,
            length == pad8(44 + writerLength + 4)
        else {
            return .damaged(reason: "header_length \(length) / writer_length \(writerLength) are inconsistent", resumeAt: 8)
        }
        guard bytes.count >= length else { return .damaged(reason: "the file ends inside the header", resumeAt: 8) }
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<(length - 4)]))
        guard crc == r.u32(at: length - 4) else {
            return .damaged(reason: "header CRC32C mismatch", resumeAt: length)
        }
        var uuidBytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuidBytes) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[16..<32])) }
        guard let writer = String(validating: UnsafeRawBufferPointer(rebasing: bytes[44..<(44 + writerLength)]), as: UTF8.self) else {
            return .damaged(reason: "writer name is not UTF-8", resumeAt: length)
        }
        var header = CaptureFileHeader(uuid: UUID(uuid: uuidBytes), createdNs: r.i64(at: 32), writer: writer)
        header.version = version
        return .valid(header, length: length)
    }
}
