import Foundation
import TributaryAnalysis
import TributaryFormats
import TributaryText
import TributaryTransport
import TributaryWire

/// An application package the command line sends: `serve --message/--xml/--file/--image/--array`
/// (published), `subscribe`/`record --send-*` (sent to the publisher), or a JSON line of a control
/// input (`serve --control`). Loaded completely when parsed, so a missing file or a bad array is a
/// usage error before anything connects.
enum OutgoingPackage: Sendable {
    case message(String, code: Int32)
    case xml(String)
    case file(content: [UInt8], name: String)
    case image(content: [UInt8], name: String, format: ImageFormat)
    case array(Array2D)

    /// What it is, for the lines the commands print ("message 'hello'", "file 'a.bin' (12 bytes)").
    var summary: String {
        switch self {
        case .message(let text, let code): "message (code \(code)) \(FrameDescription.quoted(text))"
        case .xml(let text): "XML (\(counted(text.utf8.count, "byte")))"
        case .file(let content, let name): "file '\(name.terminalSafe)' (\(counted(content.count, "byte")))"
        case .image(let content, let name, let format): "\(format) image '\(name.terminalSafe)' (\(counted(content.count, "byte")))"
        case .array(let a): "\(a.elementType) array \(a.rowCount) x \(a.columnCount)"
        }
    }

    /// The kind of the frames it is sent in.
    var kind: FrameKind {
        switch self {
        case .message: .message
        case .xml: .xml
        case .file: .file
        case .image: .image
        case .array: .array
        }
    }

    /// The kinds the command line sends: every application package kind of the one vocabulary
    /// (`FrameKind.isApplicationPackage`), in its order. Each has an option (`OptionNames`) and a
    /// control line (`lineKeys`); python/tests/test_vocabulary.py checks both for every kind.
    static let kinds: [FrameKind] = FrameKind.allCases.filter(\.isApplicationPackage)

    // MARK: From the command line

    /// The option names of one direction, the kind's name after a prefix: `--message ...` for serve,
    /// `--send-message ...` for subscribe and record.
    struct OptionNames {
        let prefix: String
        func callAsFunction(_ kind: FrameKind) -> String { prefix + kind.description }
        static let publish = OptionNames(prefix: "--")
        static let send = OptionNames(prefix: "--send-")
    }

    /// The package options' texts as given, each repeatable.
    struct Given {
        var messages: [String] = []
        var xml: [String] = []
        var files: [String] = []
        var images: [String] = []
        var arrays: [String] = []
        var isEmpty: Bool { messages.isEmpty && xml.isEmpty && files.isEmpty && images.isEmpty && arrays.isEmpty }

        /// The texts given for one kind.
        func texts(_ kind: FrameKind) -> [String] {
            switch kind {
            case .message: messages
            case .xml: xml
            case .file: files
            case .image: images
            case .array: arrays
            default: []
            }
        }

        /// The packages, loaded and checked, kind by kind in the order of `kinds`: message, XML,
        /// file, image, array.
        func packages(_ names: OptionNames) throws -> [OutgoingPackage] {
            var packages: [OutgoingPackage] = []
            for kind in OutgoingPackage.kinds {
                for text in texts(kind) { packages.append(try load(kind, text, option: names(kind))) }
            }
            return packages
        }
    }

    /// The package options of one direction (each repeatable), in the order they are sent.
    static func options(_ names: OptionNames) -> OptionTable<Given> {
        let send = names.prefix == OptionNames.send.prefix
        return OptionTable([
            .texts(
                names(.message), "TEXT",
                send ? "send a message (code 0) to the publisher once started; repeatable" : "a message (code 0); repeatable", \.messages),
            .texts(
                names(.xml), "FILE|TEXT",
                send
                    ? "send an XML document: TEXT when it starts with '<', else read from FILE"
                    : "an XML document: TEXT when it starts with '<', else read from FILE; repeatable", \.xml),
            .texts(
                names(.file), "PATH",
                send
                    ? "send a file (chunked, with its MD5, under its base name); repeatable"
                    : "a file (sent in 1 MiB chunks with its MD5, under its base name); repeatable", \.files),
            .texts(
                names(.image), "PATH",
                send
                    ? "send an image: png, jpeg, bmp or tiff, from the extension; repeatable"
                    : "an image: png, jpeg, bmp or tiff, from the extension; repeatable", \.images),
            .texts(
                names(.array), "TYPE:FILE.npy",
                send
                    ? """
                    send a 2D array from an NPY file (float64, float32 or int16) as TYPE
                    double, float, int32, int16, int64 or bool; repeatable
                    (sent in this order — messages, XML, files, images, arrays — right
                    after the start, once, not again after a reconnection)
                    """
                    : """
                    a 2D array from an NPY file (float64, float32 or int16; shape (rows,
                    columns) or (columns,)) as TYPE double, float, int32, int16, int64 or bool;
                    repeatable
                    These are sent to each subscriber once, when it starts (in this order:
                    messages, XML, files, images, arrays), and with --every to every started
                    subscriber again every S seconds.
                    """, \.arrays),
        ])
    }

    /// One package option's value: `--message TEXT`, `--xml FILE|TEXT`, `--file PATH`, `--image PATH`
    /// or `--array TYPE:FILE.npy`.
    static func load(_ kind: FrameKind, _ text: String, option: String) throws -> OutgoingPackage {
        switch kind {
        case .message: return .message(text, code: 0)
        case .xml: return .xml(try xmlText(text, option: option))
        case .file: return try loadFile(text, option: option)
        case .image: return try loadImage(text, format: nil, option: option)
        case .array:
            guard let colon = text.firstIndex(of: ":"), let type = elementType(String(text[..<colon])) else {
                throw UsageError("option \(option): '\(text)' is not TYPE:FILE.npy with TYPE \(typeNames)")
            }
            return .array(try npyArray(String(text[text.index(after: colon)...]), as: type, option: option))
        default: throw UsageError("option \(option): the command line sends no \(kind) packages")
        }
    }

    static let typeNames = "double, float, int32, int16, int64 or bool"

    static func elementType(_ name: String) -> ArrayElementType? {
        ArrayElementType.allCases.first { $0.description == name }
    }

    /// `--xml FILE|TEXT`: text that starts with '<' is the document itself, anything else a file.
    static func xmlText(_ text: String, option: String) throws -> String {
        if text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("<") { return text }
        let bytes = try readFile(text, option: option)
        guard let xml = String(validating: bytes, as: UTF8.self) else {
            throw UsageError("option \(option): \(text) is not UTF-8 text (an XML document, or text starting with '<')")
        }
        return xml
    }

    static func loadFile(_ path: String, option: String) throws -> OutgoingPackage {
        .file(content: try readFile(path, option: option), name: (path as NSString).lastPathComponent)
    }

    /// An image; the format from `format`, else from the file's extension.
    static func loadImage(_ path: String, format: String?, option: String) throws -> OutgoingPackage {
        let name = format ?? (path as NSString).pathExtension.lowercased()
        let resolved: ImageFormat? =
            switch name {
            case "png": .png
            case "jpg", "jpeg": .jpeg
            case "bmp": .bmp
            case "tif", "tiff": .tiff
            default: nil
            }
        guard let resolved else {
            throw UsageError(
                "option \(option): \(path): the image format must be png, jpeg, bmp or tiff (from the file's extension"
                    + (format == nil ? ")" : " or \"format\"); got '\(name)'"))
        }
        return .image(content: try readFile(path, option: option), name: (path as NSString).lastPathComponent, format: resolved)
    }

    static func readFile(_ path: String, option: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw UsageError("option \(option): \(path) \(why)")
        }
        return [UInt8](data)
    }

    /// An NPY array (float64, float32 or int16; shape (rows, columns) or (columns,)) as a 2D array of
    /// `type`: integer types need integral values in their range, bool is value != 0.
    static func npyArray(_ path: String, as type: ArrayElementType, option: String) throws -> Array2D {
        let npy: NPYArray
        do { npy = try NPY.read(path: path) } catch { throw UsageError("option \(option): \(error)") }
        var values: [Double] = []
        values.reserveCapacity(npy.samples.count)
        for row in 0..<npy.channels { values += npy.channelAsDouble(row) }
        do {
            return try makeArray(values, rows: npy.channels, columns: npy.samplesPerChannel, as: type)
        } catch let error as UsageError {
            throw UsageError("option \(option): \(path): \(error)")
        }
    }

    /// Row-major `values` as a rows × columns array of `type`.
    static func makeArray(_ values: [Double], rows: Int, columns: Int, as type: ArrayElementType) throws -> Array2D {
        func integers<T: FixedWidthInteger>(_: T.Type) throws -> [T] {
            try values.enumerated().map { index, value in
                guard let exact = T(exactly: value) else {
                    throw UsageError("element \(index) (\(value)) is not an integer in \(T.min)...\(T.max) (\(type))")
                }
                return exact
            }
        }
        let elements: ArrayElements
        switch type {
        case .double: elements = .double(values)
        case .float: elements = .float(values.map { Float($0) })
        case .int32: elements = .int32(try integers(Int32.self))
        case .int16: elements = .int16(try integers(Int16.self))
        case .int64: elements = .int64(try integers(Int64.self))
        case .bool: elements = .bool(values.map { $0 != 0 })
        case .string: throw UsageError("string arrays come from JSON control lines (\"values\"), not from NPY files")
        }
        return Array2D(rowCount: rows, columnCount: columns, elements: elements)
    }

    // MARK: From a JSON control line

    /// The keys a control line of each of `kinds` may have; nil for a kind the command line does not send.
    static func lineKeys(_ kind: FrameKind) -> Set<String>? {
        switch kind {
        case .message: ["kind", "text", "code"]
        case .xml: ["kind", "text", "file"]
        case .file: ["kind", "path", "name"]
        case .image: ["kind", "path", "name", "format"]
        case .array: ["kind", "type", "npy", "values"]
        default: nil
        }
    }

    /// One JSON object: {"kind":"message","text":"…","code":0}, {"kind":"xml","text":"<a/>"} or
    /// {"kind":"xml","file":PATH}, {"kind":"file","path":PATH,"name":NAME?}, {"kind":"image","path":PATH,
    /// "format":"png"?}, {"kind":"array","type":"double","npy":PATH} or {"kind":"array","type":"int32",
    /// "values":[[1,2],[3,4]]} (strings for "string").
    /// - Throws: `UsageError` naming what is wrong with the line.
    static func parse(jsonLine line: String) throws -> OutgoingPackage {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
            throw UsageError("not a JSON object")
        }
        func string(_ key: String) throws -> String {
            guard let value = object[key] as? String else { throw UsageError("\"\(key)\" (a string) is missing") }
            return value
        }
        let name = try string("kind")
        guard let kind = FrameKind(name: name), kinds.contains(kind), let keys = lineKeys(kind) else {
            let names = kinds.map(\.description)
            throw UsageError("\"kind\" '\(name)' is not \(names.dropLast().joined(separator: ", ")) or \(names.last!)")
        }
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            throw UsageError("\"\(unknown)\" is not a key of a \(kind) line (keys: \(keys.sorted().joined(separator: ", ")))")
        }
        switch kind {
        case .message:
            var code: Int32 = 0
            if let value = object["code"] {
                guard let number = value as? NSNumber, let exact = Int32(exactly: number.doubleValue) else {
                    throw UsageError("\"code\" must be an integer in \(Int32.min)...\(Int32.max)")
                }
                code = exact
            }
            return .message(try string("text"), code: code)
        case .xml:
            if let text = object["text"] as? String { return .xml(text) }
            return .xml(try xmlText(try string("file"), option: "\"file\""))
        case .file:
            let loaded = try loadFile(try string("path"), option: "\"path\"")
            guard case .file(let content, let name) = loaded else { return loaded }
            return .file(content: content, name: (object["name"] as? String) ?? name)
        case .image:
            let loaded = try loadImage(try string("path"), format: object["format"] as? String, option: "\"path\"")
            guard case .image(let content, let name, let format) = loaded else { return loaded }
            return .image(content: content, name: (object["name"] as? String) ?? name, format: format)
        case .array:
            let typeName = try string("type")
            guard let type = elementType(typeName) ?? (typeName == "string" ? .string : nil) else {
                throw UsageError("\"type\" '\(typeName)' is not \(typeNames) or string")
            }
            if let npy = object["npy"] as? String { return .array(try npyArray(npy, as: type, option: "\"npy\"")) }
            guard let rows = object["values"] as? [[Any]] else {
                throw UsageError("an array line needs \"npy\" (a path) or \"values\" (a list of rows)")
            }
            let columns = rows.first?.count ?? 0
            guard rows.allSatisfy({ $0.count == columns }) else { throw UsageError("the rows of \"values\" differ in length") }
            if type == .string {
                let strings = try rows.flatMap {
                    try $0.map { value -> String in
                        guard let s = value as? String else { throw UsageError("a string array holds strings only") }
                        return s
                    }
                }
                return .array(Array2D(rowCount: rows.count, columnCount: columns, elements: .string(strings)))
            }
            let numbers = try rows.flatMap {
                try $0.map { value -> Double in
                    guard let n = value as? NSNumber, !(value is String) else { throw UsageError("\"values\" holds a non-number") }
                    return n.doubleValue
                }
            }
            return .array(try makeArray(numbers, rows: rows.count, columns: columns, as: type))
        default:
            throw UsageError("a control line sends no \(kind) packages")
        }
    }

    // MARK: Sending

    /// Publishes to every started subscriber, or to one session; source 0 (the application's).
    /// - Returns: false when the publisher's hand-off queue refused a frame.
    @discardableResult
    func publish(on publisher: Publisher, to recipients: Recipients = .all) -> Bool {
        switch self {
        case .message(let text, let code): publisher.publish(.message(Message(text, code: code)), to: recipients)
        case .xml(let text): publisher.publish(.xml(text), to: recipients)
        case .file(let content, let name): publisher.publishFile(content, name: name, to: recipients)
        case .image(let content, let name, let format): publisher.publishFile(content, name: name, imageFormat: format, to: recipients)
        case .array(let array): publisher.publish(.array(array), to: recipients)
        }
    }

    /// Sends to the publisher's application.
    func send(on subject: Subject) throws(ErrorReport) {
        switch self {
        case .message(let text, let code): try subject.sendMessage(text, code: code)
        case .xml(let text): try subject.sendXML(text)
        case .file(let content, let name): try subject.sendFile(content, name: name)
        case .image(let content, let name, let format): try subject.sendImage(content, description: name, format: format)
        case .array(let array): try subject.sendArray(array)
        }
    }
}
