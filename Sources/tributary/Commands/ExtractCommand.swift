import Foundation
import TributaryAnalysis
import TributaryCapture
import TributaryText
import TributaryTransport
import TributaryWire

/// `tributary extract X.tcap --out DIR`: everything a capture holds besides analog data, as files.
enum ExtractCommand: TableCommand {
    static let name = "extract"
    static let summary = "write a capture's messages, XML, errors, files, images, arrays and digital lines to a directory"
    static let usage = """
        usage: tributary extract X.tcap --out DIR [--kinds LIST] [--sources IDS] [--force]

        Writes into DIR (created if missing):
          messages.jsonl, xml.jsonl, errors.jsonl
                        one JSON object per package: kind, source_id, sequence, timestamp_ns, flags and
                        its content (message code and text, the XML text, error code, name and message)
          files/NAME, images/NAME
                        each file / image reassembled from its chunks and checked against its MD5, under
                        its sanitised name (the last path component; unsafe names become transfer-ID.bin;
                        repeated names get -2, -3, … before the extension); files.jsonl / images.jsonl
                        list name, sent_name, path, size, md5, md5_checked, attributes, format,
                        source_id, sequence, timestamp_ns
          arrays/S-SEQ.npy (numbers and booleans, shaped rows × columns) or arrays/S-SEQ.json (strings),
                        listed in arrays.jsonl with element type, shape, origin, source, sequence, time
          digital/source-S.npy
                        uint8 0/1 shaped (lines, samples), the source's digital frames concatenated, with
                        digital.jsonl: per frame the line indexes, first_sample, sample range and time

        \(options.help())

        A file whose chunks are incomplete or fail their MD5 is reported on stderr and not written;
        the exit status is then 1. Analog data is exported with 'tributary export'.
        """

    /// What extract writes out: the kinds a subscription delivers that are the application's content
    /// — every data kind but analog (that is 'tributary export''s), and the errors —, in the
    /// vocabulary's order (FrameKind).
    static let allKinds: [FrameKind] = FrameKind.allCases.filter { $0.isDelivered && (($0.isData && $0 != .analog) || $0 == .error) }

    /// The capture, what to extract and where.
    struct Configuration {
        var capture = ""
        var out: String?
        var kinds = Set(allKinds)
        var sources: Set<UInt32>?
        var force = false
    }

    static var options: OptionTable<Configuration> {
        OptionTable([
            .text("--out", "DIR", "the directory to write into (created if missing; required)", \.out),
            .custom("--kinds", "LIST", "comma-separated subset of \(allKinds.map(\.description).joined(separator: ",")) (default all)") {
                c, text in
                c.kinds = []
                for name in text.split(separator: ",").map(String.init) {
                    guard let k = allKinds.first(where: { $0.description == name || $0.description + "s" == name }) else {
                        throw UsageError("--kinds: '\(name)' is not one of \(allKinds.map(\.description).joined(separator: ","))")
                    }
                    c.kinds.insert(k)
                }
            },
            .custom("--sources", "IDS", "comma-separated source ids (default all, source 0 included)") { c, text in
                c.sources = Set(
                    try text.split(separator: ",").map { s -> UInt32 in
                        guard let id = UInt32(s) else { throw UsageError("--sources: '\(s)' is not a source id") }
                        return id
                    })
            },
            .flag("--force", "write into a DIR that exists and is not empty (files of the same names are replaced)", \.force),
        ])
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var c = Configuration()
        let files = try options.parse(arguments, into: &c)
        guard c.out != nil else { throw UsageError("missing --out DIR") }
        c.capture = try Positionals.one(files, "capture", missing: "X.tcap")
        return c
    }

    static func run(_ c: Configuration) throws -> Int32 {
        let out = c.out ?? "", kinds = c.kinds, sources = c.sources, force = c.force, files = [c.capture]
        let reader = try CaptureReader(path: files[0])
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: out, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw CommandError("\(out) exists and is not a directory") }
            let existing: [String]
            do { existing = try fm.contentsOfDirectory(atPath: out) } catch {
                throw CommandError("cannot read \(out): \(error.localizedDescription)")
            }
            if !force, !existing.isEmpty {
                let extracted = existing.contains {
                    ["messages.jsonl", "xml.jsonl", "errors.jsonl", "files", "images", "arrays", "digital"].contains($0)
                }
                throw CommandError(
                    "\(out) " + (extracted ? "already holds extracted files" : "exists and is not empty")
                        + "; pass --force to write into it")
            }
        }
        do { try fm.createDirectory(atPath: out, withIntermediateDirectories: true) } catch {
            throw CommandError("cannot create \(out): \(error.localizedDescription)")
        }

        var extractor = Extractor(directory: out, kinds: kinds)
        reader.forEachFrame(sources: sources) { frame in extractor.add(frame) }
        try extractor.finish()
        for d in reader.damage { printError("tributary extract: warning: \(files[0]): damage at \(d); extracted what is intact") }
        let counts = extractor.counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
        print("\(out): " + (counts.isEmpty ? "nothing to extract" : counts.joined(separator: ", ")))
        for problem in extractor.problems { printError("tributary extract: \(files[0]): \(problem)") }
        return extractor.problems.isEmpty ? 0 : 1
    }
}

/// Accumulates the packages of a capture and writes them out.
struct Extractor {
    let directory: String
    let kinds: Set<FrameKind>
    var counts: [String: Int] = [:]
    var problems: [String] = []
    private var lines: [String: String] = [:]
    private var assembler = BlobAssembler(maxTransferSize: 1 << 32, maxPendingTransfers: 1 << 16, maxPendingBytes: 1 << 34)
    private var usedNames: [String: Set<String>] = [:]
    /// Per source: line indexes and the states of each line, concatenated.
    private var digital: [UInt32: (indexes: [UInt32], states: [[UInt8]])] = [:]

    init(directory: String, kinds: Set<FrameKind>) {
        self.directory = directory
        self.kinds = kinds
    }

    private func path(_ parts: String...) -> String { ([directory] + parts).joined(separator: "/") }

    private mutating func line(_ file: String, _ json: JSON) {
        lines[file, default: ""] += json.render() + "\n"
    }

    private func meta(_ h: FrameHeader) -> [(String, JSON)] {
        [("source_id", .uint(UInt64(h.sourceID))), ("sequence", .uint(h.sequence)), ("timestamp_ns", .int(Int(h.timestampNs)))]
    }

    mutating func add(_ frame: Frame) {
        let h = frame.header
        guard kinds.contains(h.kind) else { return }
        guard let payload = try? frame.payload() else {
            problems.append("\(h.kind) frame of source \(h.sourceID), sequence \(h.sequence): undecodable payload")
            return
        }
        switch payload {
        case .message, .xml, .error:
            let file = h.kind == .message ? "messages.jsonl" : h.kind == .xml ? "xml.jsonl" : "errors.jsonl"
            line(file, FrameDescription.json(frame, payload: payload))
            counts["\(h.kind == .message ? "messages" : h.kind == .xml ? "xml" : "errors")", default: 0] += 1
        case .file(let chunk), .image(let chunk):
            do {
                if let blob = try assembler.add(chunk) { write(blob, header: h) }
            } catch {
                problems.append("\(h.kind) '\(chunk.name)' (transfer \(chunk.transferID)): \(error)")
            }
        case .array(let a):
            let base = "\(h.sourceID)-\(h.sequence)"
            var members =
                meta(h) + [
                    ("element_type", .string(a.elementType.description)), ("rows", .int(a.rowCount)),
                    ("columns", .int(a.columnCount)), ("row_origin", .uint(UInt64(a.rowOrigin))),
                    ("column_origin", .uint(UInt64(a.columnOrigin))),
                ]
            do {
                try FileManager.default.createDirectory(atPath: path("arrays"), withIntermediateDirectories: true)
                if a.elementType == .string {
                    let rows: JSON = .array(
                        (0..<a.rowCount).map { r in .strings((0..<a.columnCount).map { a.string(row: r, column: $0) }) })
                    try Data((rows.render() + "\n").utf8).write(to: URL(fileURLWithPath: path("arrays", base + ".json")))
                    members.append(("path", .string("arrays/\(base).json")))
                } else {
                    let descr: String
                    switch a.elementType {
                    case .double: descr = "<f8"
                    case .float: descr = "<f4"
                    case .int32: descr = "<i4"
                    case .int16: descr = "<i2"
                    case .int64: descr = "<i8"
                    default: descr = "|b1"
                    }
                    let bytes: [UInt8]
                    switch a.elementType {
                    case .double: bytes = a.withElements(Double.self) { Array(UnsafeRawBufferPointer($0)) }
                    case .float: bytes = a.withElements(Float.self) { Array(UnsafeRawBufferPointer($0)) }
                    case .int32: bytes = a.withElements(Int32.self) { Array(UnsafeRawBufferPointer($0)) }
                    case .int16: bytes = a.withElements(Int16.self) { Array(UnsafeRawBufferPointer($0)) }
                    case .int64: bytes = a.withElements(Int64.self) { Array(UnsafeRawBufferPointer($0)) }
                    default: bytes = a.withElements(UInt8.self) { $0.map { $0 != 0 ? 1 : 0 } }
                    }
                    try Self.npy(descr: descr, shape: [a.rowCount, a.columnCount], data: bytes).write(
                        to: URL(fileURLWithPath: path("arrays", base + ".npy")))
                    members.append(("path", .string("arrays/\(base).npy")))
                }
                line("arrays.jsonl", .object(members))
                counts["arrays", default: 0] += 1
            } catch {
                problems.append("array \(base): \(error.localizedDescription)")
            }
        case .digital(let d):
            let id = h.sourceID
            let indexes = (0..<d.lineCount).map(d.lineIndex)
            var entry = digital[id] ?? (indexes, Array(repeating: [], count: d.lineCount))
            guard entry.indexes == indexes else {
                problems.append(
                    "digital frames of source \(id) change their lines (\(entry.indexes) then \(indexes)); sequence \(h.sequence) skipped")
                return
            }
            let start = entry.states.first?.count ?? 0
            for l in 0..<d.lineCount {
                entry.states[l].reserveCapacity(start + d.sampleCount)
                for s in 0..<d.sampleCount { entry.states[l].append(d.state(line: l, sample: s) ? 1 : 0) }
            }
            digital[id] = entry
            line(
                "digital.jsonl",
                .object(
                    meta(h) + [
                        ("line_indexes", .ids(indexes)), ("first_sample", .uint(d.firstSample)),
                        ("start", .int(start)), ("count", .int(d.sampleCount)),
                        ("path", .string("digital/source-\(id).npy")),
                    ]))
        default:
            return
        }
    }

    private mutating func write(_ blob: AssembledBlob, header h: FrameHeader) {
        let folder = h.kind == .image ? "images" : "files"
        let transfer = "transfer"
        var name = FileNameSanitizer.safeName(blob.name) ?? "\(transfer)-\(h.sequence).bin"
        var used = usedNames[folder, default: []]
        if used.contains(name) {
            let ext = (name as NSString).pathExtension, stem = (name as NSString).deletingPathExtension
            var k = 2
            while used.contains(ext.isEmpty ? "\(stem)-\(k)" : "\(stem)-\(k).\(ext)") { k += 1 }
            name = ext.isEmpty ? "\(stem)-\(k)" : "\(stem)-\(k).\(ext)"
        }
        used.insert(name)
        usedNames[folder] = used
        do {
            try FileManager.default.createDirectory(atPath: path(folder), withIntermediateDirectories: true)
            try Data(blob.content).write(to: URL(fileURLWithPath: path(folder, name)))
        } catch {
            problems.append("\(folder)/\(name): \(error.localizedDescription)")
            return
        }
        let digest = MD5.digest(blob.content)
        line(
            "\(folder).jsonl",
            .object(
                meta(h) + [
                    ("name", .string(name)), ("sent_name", .string(blob.name)), ("path", .string("\(folder)/\(name)")),
                    ("size", .int(blob.content.count)), ("md5", .string(MD5.hex(digest))), ("md5_checked", .bool(blob.md5 != nil)),
                    ("attributes", .strings(blob.attributes)), ("format", blob.imageFormat.map { .string($0.description) } ?? .null),
                ]))
        counts[folder, default: 0] += 1
    }

    mutating func finish() throws {
        if assembler.pendingCount > 0 {
            problems.append("\(assembler.pendingCount) file / image transfers are incomplete in the capture; not written")
        }
        for (id, entry) in digital {
            let n = entry.states.first?.count ?? 0
            do {
                try FileManager.default.createDirectory(atPath: path("digital"), withIntermediateDirectories: true)
                try Self.npy(descr: "|u1", shape: [entry.states.count, n], data: entry.states.flatMap { $0 })
                    .write(to: URL(fileURLWithPath: path("digital", "source-\(id).npy")))
                counts["digital sources", default: 0] += 1
            } catch {
                problems.append("digital/source-\(id).npy: \(error.localizedDescription)")
            }
        }
        for (file, text) in lines {
            do { try Data(text.utf8).write(to: URL(fileURLWithPath: path(file))) } catch {
                throw CommandError("cannot write \(path(file)): \(error.localizedDescription)")
            }
        }
    }

    /// An NPY version 1.0 file of C-order `data` with dtype `descr`.
    static func npy(descr: String, shape: [Int], data: [UInt8]) -> Data {
        let shapeText = shape.count == 1 ? "(\(shape[0]),)" : "(" + shape.map(String.init).joined(separator: ", ") + ")"
        var header = "{'descr': '\(descr)', 'fortran_order': False, 'shape': \(shapeText), }"
        let total = 10 + header.utf8.count + 1
        header += String(repeating: " ", count: (64 - total % 64) % 64) + "\n"
        var out = Data([0x93] + Array("NUMPY".utf8) + [1, 0])
        let n = UInt16(header.utf8.count)
        out.append(contentsOf: [UInt8(n & 0xFF), UInt8(n >> 8)])
        out.append(contentsOf: Array(header.utf8))
        out.append(contentsOf: data)
        return out
    }
}
