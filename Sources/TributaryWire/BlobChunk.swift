/// Image formats an image package can carry (SCCT kSCCTImageFormat…).
public enum ImageFormat: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case png = 1
    case jpeg = 2
    case bmp = 3
    case tiff = 4

    public var description: String {
        switch self {
        case .png: "png"
        case .jpeg: "jpeg"
        case .bmp: "bmp"
        case .tiff: "tiff"
        }
    }
}

/// One chunk of a file or image transfer (SCCT FilePackage / ImagePackage).
///
/// A file or image of any size travels as `chunkCount` chunks of one transfer; every chunk repeats
/// the metadata (name, MD5, attributes, format) so that each frame is self-describing.
/// `BlobAssembler` reassembles them and verifies the MD5.
public struct BlobChunk: Sendable, Hashable {
    /// Identifies the transfer among the sender's transfers (unique per sender and session).
    public var transferID: UInt64
    /// Size of the whole file or image in bytes.
    public var totalSize: UInt64
    /// Position of this chunk's content in the whole.
    public var chunkOffset: UInt64
    public var chunkIndex: UInt32
    public var chunkCount: UInt32
    /// MD5 of the whole content, when the sender computed it.
    public var md5: [UInt8]?
    /// For images: the encoding; nil for files.
    public var imageFormat: ImageFormat?
    /// The file name, or the image description.
    public var name: String
    /// Free-form attributes (author, creation date, …).
    public var attributes: [String]
    /// This chunk's bytes.
    public var content: [UInt8]

    public init(
        transferID: UInt64, totalSize: UInt64, chunkOffset: UInt64, chunkIndex: UInt32, chunkCount: UInt32,
        md5: [UInt8]?, imageFormat: ImageFormat?, name: String, attributes: [String], content: [UInt8]
    ) {
        precondition(md5 == nil || md5!.count == 16, "an MD5 has 16 bytes")
        self.transferID = transferID
        self.totalSize = totalSize
        self.chunkOffset = chunkOffset
        self.chunkIndex = chunkIndex
        self.chunkCount = chunkCount
        self.md5 = md5
        self.imageFormat = imageFormat
        self.name = name
        self.attributes = attributes
        self.content = content
    }

    /// Splits a whole file or image into chunks of at most `chunkSize` bytes (default 1 MiB).
    ///
    /// - Parameters:
    ///   - computeMD5: whether to send the MD5 of the content (SCCT's constructor flag).
    public static func chunks(
        of content: [UInt8], transferID: UInt64, name: String, attributes: [String] = [],
        imageFormat: ImageFormat? = nil, computeMD5: Bool = true,
        chunkSize: Int = 1 << 20
    ) -> [BlobChunk] {
        precondition(chunkSize > 0, "chunk size must be positive")
        let digest = computeMD5 ? MD5.digest(content) : nil
        let count = max(1, (content.count + chunkSize - 1) / chunkSize)
        return (0..<count).map { i in
            let range = (i * chunkSize)..<min(content.count, (i + 1) * chunkSize)
            return BlobChunk(
                transferID: transferID, totalSize: UInt64(content.count), chunkOffset: UInt64(range.lowerBound),
                chunkIndex: UInt32(i), chunkCount: UInt32(count), md5: digest, imageFormat: imageFormat,
                name: name, attributes: attributes, content: Array(content[range]))
        }
    }

    static let contentOffset = 56

    var contentLength: Int {
        align8(Self.contentOffset + content.count) + encodedSize(name) + 4 + attributes.reduce(0) { $0 + encodedSize($1) }
    }

    func write(_ w: inout PayloadWriter) {
        w.write(transferID)
        w.write(totalSize)
        w.write(chunkOffset)
        w.write(chunkIndex)
        w.write(chunkCount)
        w.write(md5 ?? [UInt8](repeating: 0, count: 16))
        w.write(UInt8(md5 == nil ? 0 : 1))
        w.write(imageFormat?.rawValue ?? 0)
        w.skip(2)
        w.write(UInt32(content.count))
        w.write(content)
        w.align8()
        w.write(string: name)
        w.write(UInt32(attributes.count))
        for a in attributes { w.write(string: a) }
    }

    static func read(_ r: inout PayloadReader, isImage: Bool) throws(WireError) -> BlobChunk {
        let prefix = isImage ? "image" : "file"
        let transfer = try r.read(UInt64.self, "\(prefix).transfer_id")
        let total = try r.read(UInt64.self, "\(prefix).total_size")
        let offsetAt = r.absolutePosition
        let offset = try r.read(UInt64.self, "\(prefix).chunk_offset")
        let indexAt = r.absolutePosition
        let index = try r.read(UInt32.self, "\(prefix).chunk_index")
        let count = try r.read(UInt32.self, "\(prefix).chunk_count")
        guard count >= 1, index < count else {
            throw WireError(
                .invalidValue, field: "\(prefix).chunk_index", offset: indexAt,
                detail: "chunk \(index) of \(count); need count >= 1 and index < count")
        }
        let digest = try r.readBytes(16, "\(prefix).md5")
        let hasMD5 = try readBool(&r, "\(prefix).md5_present")
        let formatAt = r.absolutePosition
        let rawFormat = try r.read(UInt8.self, "\(prefix).image_format")
        var format: ImageFormat?
        if isImage {
            guard let f = ImageFormat(rawValue: rawFormat) else {
                throw WireError(
                    .invalidValue, field: "image.image_format", offset: formatAt,
                    detail: "\(rawFormat); expected 1 (png), 2 (jpeg), 3 (bmp) or 4 (tiff)")
            }
            format = f
        } else if rawFormat != 0 {
            throw WireError(.invalidValue, field: "file.image_format", offset: formatAt, detail: "\(rawFormat); files carry 0")
        }
        try r.skip(2, "\(prefix).reserved")
        let length = try r.readCount("\(prefix).content_length", elementSize: 1)
        guard offset <= total, UInt64(length) <= total - offset else {
            throw WireError(
                .lengthMismatch, field: "\(prefix).chunk_offset", offset: offsetAt,
                detail: "\(length) bytes at offset \(offset) run past the total size \(total)")
        }
        let content = try r.readBytes(length, "\(prefix).content")
        try r.align8("\(prefix).padding")
        let name = try r.readString("\(prefix).name")
        let attributeCount = try r.readCount("\(prefix).attribute_count", elementSize: 4, limit: WireLimits.maxChannels)
        var attributes: [String] = []
        for _ in 0..<attributeCount { attributes.append(try r.readString("\(prefix).attribute")) }
        return BlobChunk(
            transferID: transfer, totalSize: total, chunkOffset: offset, chunkIndex: index, chunkCount: count,
            md5: hasMD5 ? digest : nil, imageFormat: format, name: name, attributes: attributes, content: content)
    }
}
