import Foundation
import TributaryAnalysis
import TributaryCapture
import TributaryWire

/// `tributary filter`: applies subscriber filters to a frame file, exactly as the publisher would.
enum FilterCommand: Command {
    static let name = "filter"
    static let summary = "apply analog/array filters to a frame file or a capture, as the publisher would"
    static let usage = """
    usage: tributary filter IN --out OUT --filter SPEC [--filter SPEC]... [--force]

    Reads IN, a file of frames (docs/PROTOCOL.md) or a capture (.tcap, recognised by its magic), and
    writes to OUT the frames a subscriber with these filters would receive from a publisher
    (docs/PROTOCOL.md §6): filtered analog and array frames carry their filter's id; frames no filter
    governs are copied unchanged. The filters get ids 1, 2, … in the order given. Sequence numbers and
    timestamps are kept from IN.
    OUT is a capture when its name ends in .tcap, else a frame file. A capture written from a capture
    keeps its gap records (in place) and configurations. An existing OUT (capture or frame file) is
    replaced only with --force, and only once the new file is complete (written beside it, then
    renamed). Damaged chunks of IN are skipped and listed on stderr.

      --filter analog:QUERY          an analog filter, SCCT query 'CHANNELS;SOURCES' (e.g. 'analog:1-3;0,2')
      --filter TYPE:QUERY            an array filter for arrays of TYPE (double, float, int32, int16,
                                     int64, bool, string), SCCT query 'ROWS;COLUMNS' (e.g. 'double:5-15;5-15')
      --out OUT                      the frame file or capture to write ('-' for standard output)
      --force                        replace an existing OUT
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let specs = try arguments.options("--filter")
        guard let out = try arguments.option("--out") else { throw UsageError("missing --out OUT") }
        let force = arguments.flag("--force")
        let inputs = try arguments.finish()
        guard inputs.count == 1 else { throw UsageError(inputs.isEmpty ? "missing IN" : "expected one IN, got \(inputs.count)") }
        guard !specs.isEmpty else { throw UsageError("give at least one --filter") }

        var filters = SubscriberFilters()
        for spec in specs {
            guard let colon = spec.firstIndex(of: ":") else {
                throw UsageError("--filter '\(spec)': expected KIND:QUERY, e.g. analog:1-3;0,2 or double:5-15;5-15")
            }
            let kind = String(spec[..<colon]), query = String(spec[spec.index(after: colon)...])
            do {
                if kind == "analog" {
                    try filters.add(AnalogFilterRequest(query: query), id: filters.nextFilterID)
                } else if let type = ArrayElementType.allCases.first(where: { $0.description == kind }) {
                    try filters.add(ArrayFilterRequest(elementType: type, query: query), id: filters.nextFilterID)
                } else {
                    throw UsageError("--filter '\(spec)': unknown kind '\(kind)' (analog, double, float, int32, int16, int64, bool, string)")
                }
            } catch let error as QueryError {
                throw UsageError("--filter '\(spec)': \(error)")
            }
        }

        try InputFile.check(inputs[0])
        if CaptureDescription.isCapture(inputs[0]) || out.hasSuffix(".tcap") {
            return try filterToOrFromCapture(inputs[0], out: out, filters: filters, force: force)
        }
        let input = try InputFile(inputs[0])
        let target = try FrameFileTarget(out, input: inputs[0], force: force)
        let output = target.file
        var decoder = FrameStreamDecoder()
        var pending = Data()
        do {
            while try input.readBlock({ raw in
                try decoder.feed(raw) { frame in
                    try filters.outputs(for: frame) { filtered in filtered.withUnsafeBytes { pending.append(contentsOf: $0) } }
                }
            }) {
                if pending.count > 1 << 20 { try output.write(pending); pending.removeAll(keepingCapacity: true) }
            }
            try decoder.finish()
            try output.write(pending)
            try target.commit()
        } catch let error as WireError {
            // Standard output or a device gets what was filtered before the bad frame; a file is not replaced.
            if target.temporary == nil { try output.write(pending) } else { target.abandon() }
            throw CommandError("\(inputs[0]): \(error)")
        } catch {
            target.abandon()
            throw error
        }
        return 0
    }

    /// A frame-file OUT: standard output and devices are written directly; a regular file is refused
    /// when it exists without --force, else written beside OUT and renamed over it once complete.
    struct FrameFileTarget {
        let file: OutputFile
        let path: String
        let temporary: String?

        init(_ path: String, input: String, force: Bool) throws {
            self.path = path
            var target = stat()
            var direct = path == "-"
            if !direct, stat(path, &target) == 0 {
                var source = stat()
                if stat(input, &source) == 0, source.st_dev == target.st_dev, source.st_ino == target.st_ino {
                    throw CommandError("'\(path)' is the input file '\(input)': writing it would destroy the input")
                }
                switch target.st_mode & S_IFMT {
                case S_IFDIR: throw CommandError("'\(path)' is a directory, not a file")
                case S_IFREG:
                    if !force { throw CommandError("'\(path)' exists; pass --force to replace it (once the new file is complete)") }
                default: direct = true  // a device or a pipe: nothing to replace
                }
            }
            temporary = direct ? nil : path + ".\(getpid()).partial-filter"
            file = try OutputFile(temporary ?? path, inputs: [input])
        }

        func commit() throws {
            guard let temporary else { return }
            guard rename(temporary, path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporary)
                throw CommandError("cannot rename the output to '\(path)': \(reason)")
            }
        }

        func abandon() { if let temporary { unlink(temporary) } }
    }

    /// A capture in (with its gap records) and/or a capture out.
    static func filterToOrFromCapture(_ input: String, out: String, filters: SubscriberFilters, force: Bool) throws -> Int32 {
        var sink: (Frame) throws -> Void
        var recordGap: (CaptureGap) throws -> Void = { _ in }
        var finish: () throws -> Void
        var abandon: () -> Void = {}
        if out.hasSuffix(".tcap") {
            let destination: CaptureDestination
            do { destination = try CaptureDestination(path: out, replace: force) } catch { throw CommandError("\(error)") }
            // Filters drop and repeat frames: their sequence numbers jump by design, which is no loss.
            let writer = try CaptureWriter(destination: destination, options: CaptureWriterOptions(fsync: .none, detectSequenceJumps: false))
            sink = { frame in try writer.append(frame) }
            recordGap = { g in
                try writer.recordGap(sourceID: g.sourceID, firstMissing: g.firstMissingSequence, count: g.missingCount,
                                     cause: g.cause ?? .announced, timeNs: g.timeNs)
            }
            finish = { _ = try writer.close() }
            abandon = { writer.abandon(); unlink(writer.partialPath) }
        } else {
            // write(2), never FileHandle: a closed pipe or a full disk is an error, not a trap.
            let target = try FrameFileTarget(out, input: input, force: force)
            let output = target.file
            var pending = Data()
            sink = { frame in
                frame.withUnsafeBytes { pending.append(contentsOf: $0) }
                if pending.count > 1 << 20 { try output.write(pending); pending.removeAll(keepingCapacity: true) }
            }
            finish = {
                try output.write(pending)
                try target.commit()
            }
            abandon = { target.abandon() }
        }
        do {
            if CaptureDescription.isCapture(input) {
                let reader = try CaptureReader(path: input)
                let gaps = Dictionary(reader.gaps.map { ($0.offset, $0) }, uniquingKeysWith: { a, _ in a })
                for entry in reader.index {
                    switch entry.envelope.type {
                    case .chunk:
                        guard let frames = try? reader.frames(of: entry) else { continue }
                        for frame in frames { try filters.outputs(for: frame, sink) }
                    case .gap:
                        if let g = gaps[entry.offset] { try recordGap(g) }
                    default:
                        continue
                    }
                }
                for d in reader.damage { printError("tributary filter: warning: \(input): damage at \(d); skipped") }
            } else {
                let file = try InputFile(input)
                var decoder = FrameStreamDecoder()
                while try file.readBlock({ raw in try decoder.feed(raw) { frame in try filters.outputs(for: frame, sink) } }) {}
                try decoder.finish()
            }
            try finish()
        } catch {
            abandon()
            if let e = error as? CommandError { throw e }
            throw CommandError("\(input): \(error)")
        }
        return 0
    }
}
