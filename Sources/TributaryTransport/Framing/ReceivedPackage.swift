import Foundation

#if canImport(TributaryWire)
    import TributaryWire
#endif

/// A file or image received whole (its chunks reassembled and its MD5 verified).
public struct ReceivedFile: Sendable, Hashable {
    /// The name exactly as the peer sent it. Never use it as a path.
    public var originalName: String
    /// The last path component of the name, if it is safe to create (`FileNameSanitizer`); nil otherwise.
    public var safeName: String?
    /// Free-form attributes sent with the file.
    public var attributes: [String]
    /// For images: the encoding; nil for files.
    public var imageFormat: ImageFormat?
    /// The verified MD5, when the peer sent one.
    public var md5: [UInt8]?
    /// The content.
    public var content: [UInt8]

    init(_ blob: AssembledBlob) {
        originalName = blob.name
        safeName = FileNameSanitizer.safeName(blob.name)
        attributes = blob.attributes
        imageFormat = blob.imageFormat
        md5 = blob.md5
        content = blob.content
    }

    /// Why a received file was not written.
    public enum WriteError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The peer's name has no safe form (empty, `.`/`..`, control characters, too long).
        case unsafeName(String)
        /// A file with that name exists already (received files never overwrite).
        case exists(path: String)
        /// The file system refused (the reason from Foundation).
        case failed(path: String, reason: String)

        public var description: String {
            switch self {
            case .unsafeName(let name): "refusing to write a received file named \(name.debugDescription): not a safe file name"
            case .exists(let path): "\(path): exists already; received files never overwrite"
            case .failed(let path, let reason): "\(path): \(reason)"
            }
        }
    }

    /// Writes the content into `directory` under `safeName`, never overwriting.
    /// - Returns: The path written.
    /// - Throws: `WriteError`.
    public func write(into directory: String) throws(WriteError) -> String {
        guard let safeName else { throw .unsafeName(originalName) }
        let path = (directory as NSString).appendingPathComponent(safeName)
        do {
            // `.withoutOverwriting` is O_EXCL: no race with a file appearing between the checks.
            try Data(content).write(to: URL(fileURLWithPath: path), options: .withoutOverwriting)
        } catch {
            if FileManager.default.fileExists(atPath: path) { throw .exists(path: path) }
            throw .failed(path: path, reason: "\(error)")
        }
        return path
    }
}

/// What a received frame carries, decoded: bulk data as zero-copy views into the received message,
/// files and images reassembled.
public enum ReceivedContent: Sendable {
    case configuration(Configuration)
    case error(ErrorReport)
    case analog(AnalogView)
    case digital(DigitalView)
    case message(Message)
    case xml(String)
    case file(ReceivedFile)
    case image(ReceivedFile)
    case array(ArrayView)
    /// Frames the publisher had to drop for this subscriber (exactly that many sequence numbers).
    case gap(Gap)
    /// The properties of the header's source and its channels, replacing those it had (extension kind 129).
    case properties(SourceProperties)

    /// The kind of the frame (the frames, for a file or an image) it came in.
    public var kind: FrameKind {
        switch self {
        case .configuration: .configuration
        case .error: .error
        case .analog: .analog
        case .digital: .digital
        case .message: .message
        case .xml: .xml
        case .file: .file
        case .image: .image
        case .array: .array
        case .gap: .gap
        case .properties: .properties
        }
    }

    /// The content of a decoded payload that is handed over as it is, with no reassembly or session
    /// state (every delivered kind but file, image and close); nil for the others. The one conversion
    /// the publisher and the subscriber share.
    init?(handedOver payload: Payload) {
        switch payload {
        case .configuration(let c): self = .configuration(c)
        case .error(let e): self = .error(e)
        case .analog(let a): self = .analog(a)
        case .digital(let d): self = .digital(d)
        case .message(let m): self = .message(m)
        case .xml(let x): self = .xml(x)
        case .array(let a): self = .array(a)
        case .gap(let g): self = .gap(g)
        case .properties(let p): self = .properties(p)
        case .file, .image, .analogFilter, .arrayFilter, .removeFilter, .signalFilter, .hello, .welcome, .start, .stop,
            .selectSources, .close, .credit:
            return nil
        }
    }
}

/// One received package with its header (source, filter id, sequence number, timestamp).
public struct ReceivedPackage: Sendable {
    /// The frame header as received (for a Subject: `filterID` is the id the Subject returned for the
    /// filter, stable across reconnections).
    public let header: FrameHeader
    public let content: ReceivedContent
    /// The frame as it arrived (its header as received, before the filter id is mapped), for
    /// recorders that store what arrived bit for bit; nil for files and images (reassembled from
    /// several frames) and for errors the Subject detected itself. Keeping it keeps the received
    /// message alive, as the views do.
    public let frame: Frame?

    public init(header: FrameHeader, content: ReceivedContent, frame: Frame? = nil) {
        self.header = header
        self.content = content
        self.frame = frame
    }
}
