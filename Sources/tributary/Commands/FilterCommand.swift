import Foundation
import TributaryAnalysis
import TributaryCapture
import TributaryText
import TributaryWire

/// `tributary filter`: applies subscriber filters to a frame file, exactly as the publisher would.
enum FilterCommand: TableCommand {
    static let name = "filter"
    static let summary = "apply analog/array filters to a frame file or a capture, as the publisher would"
    static let usage = """
        usage: tributary filter IN --out OUT --filter SPEC [--filter SPEC]... [--allow-damage] [--force]

        Reads IN, a file of frames (docs/PROTOCOL.md) or a capture (.tcap, recognised by its magic), and
        writes to OUT the frames a subscriber with these filters would receive from a publisher
        (docs/PROTOCOL.md §6): filtered analog and array frames carry their filter's id; frames no filter
        governs are copied unchanged. The filters get ids 1, 2, … in the order given. Sequence numbers and
        timestamps are kept from IN.
        OUT is a capture when its name ends in .tcap, else a frame file. A capture written from a capture
        keeps its gap records (in place) and configurations. An existing OUT (capture or frame file) is
        replaced only with --force, and only once the new file is complete (written beside it, then
        renamed); OUT is never IN itself (by any path or link to it), not even with --force.
        On success one line says what each filter kept: sources, channels, frames and samples per channel
        (or that it kept nothing, and why when IN has nothing of its kind), the frames copied unchanged,
        and the gap records kept in a capture OUT.

        \(options.help())

        Damage found in a capture IN (a damaged chunk, a torn tail, unreadable bytes, a duplicated or
        misplaced record, a damaged header or footer) is listed on stderr with byte offsets, OUT is not
        written (an existing OUT is left as it was) and the exit status is 3, unless --allow-damage is
        given: then the intact chunks are filtered, the damage is still listed, and the exit status is 0.
        (Standard output or a device has received the frames before the first damaged chunk.)
        Filters that keep nothing of the frames they govern — channels or sources IN does not have —
        are an error naming the sources and channels IN holds; nothing is written.
        Exit status: 0 written, 1 error, 2 usage, 3 damaged capture (nothing written).
        """

    /// The exit status of a filter refused because the capture is damaged (as `export`'s).
    static let damagedStatus: Int32 = 3

    /// The command line as given.
    struct Given {
        var filters: [String] = []
        var out: String?
        var force = false
        var allowDamage = false
    }

    /// The input, the filters (ids 1, 2, … in the order given, each with its spec) and the output.
    struct Configuration {
        var input: String
        var out: String
        var force: Bool
        var allowDamage: Bool
        var filters: SubscriberFilters
        var names: [UInt32: String]
    }

    static var options: OptionTable<Given> {
        OptionTable([
            .texts(
                "--filter", "KIND:QUERY",
                """
                analog:QUERY: an analog filter, SCCT query 'CHANNELS;SOURCES' (e.g. 'analog:1-3;0,2');
                TYPE:QUERY: an array filter for arrays of TYPE (double, float, int32, int16,
                int64, bool, string), SCCT query 'ROWS;COLUMNS' (e.g. 'double:5-15;5-15'); repeatable
                """, \.filters),
            .text("--out", "OUT", "the frame file or capture to write ('-' for standard output)", \.out),
            .flag("--force", "replace an existing OUT", \.force),
            .flag("--allow-damage", "filter what is intact when the capture IN is damaged (the damage is still listed)", \.allowDamage),
        ])
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var given = Given()
        let inputs = try options.parse(arguments, into: &given)
        guard let out = given.out else { throw UsageError("missing --out OUT") }
        let input = try Positionals.one(inputs, "IN")
        guard !given.filters.isEmpty else { throw UsageError("give at least one --filter") }
        var filters = SubscriberFilters()
        var names: [UInt32: String] = [:]
        for spec in given.filters {
            guard let colon = spec.firstIndex(of: ":") else {
                throw UsageError("--filter '\(spec)': expected KIND:QUERY, e.g. analog:1-3;0,2 or double:5-15;5-15")
            }
            let kind = String(spec[..<colon]), query = String(spec[spec.index(after: colon)...])
            let id = filters.nextFilterID
            do {
                if kind == "analog" {
                    try filters.add(AnalogFilterRequest(query: query), id: id)
                } else if let type = ArrayElementType.allCases.first(where: { $0.description == kind }) {
                    try filters.add(ArrayFilterRequest(elementType: type, query: query), id: id)
                } else {
                    throw UsageError(
                        "--filter '\(spec)': unknown kind '\(kind)' (analog, double, float, int32, int16, int64, bool, string)")
                }
            } catch let error as QueryError {
                throw UsageError("--filter '\(spec)': \(error)")
            }
            names[id] = spec
        }
        return Configuration(
            input: input, out: out, force: given.force, allowDamage: given.allowDamage, filters: filters, names: names)
    }

    static func run(_ c: Configuration) throws -> Int32 {
        let input = c.input, out = c.out, force = c.force, allowDamage = c.allowDamage, filters = c.filters, names = c.names
        try InputFile.check(input)
        let output = try FilterOutput(out, input: input, force: force)
        var selection = FilterSelection(filters: filters, specs: names)
        do {
            if CaptureDescription.isCapture(input) {
                let status = try filterCapture(input, into: output, selection: &selection, allowDamage: allowDamage)
                if status != 0 {
                    output.abandon()
                    return status
                }
            } else {
                let file = try InputFile(input)
                var decoder = FrameStreamDecoder()
                do {
                    while try file.readBlock({ raw in try decoder.feed(raw) { frame in try selection.outputs(for: frame, output.append) } })
                    {}
                    try decoder.finish()
                } catch let error as WireError {
                    // Standard output or a device keeps what was filtered before the bad frame; a file is not replaced.
                    if output.isDirect { try output.finish() } else { output.abandon() }
                    throw CommandError("\(input): \(error)")
                }
            }
            if selection.keptNothing {
                output.abandon()
                throw CommandError("\(input): " + selection.emptySelectionText())
            }
            try output.finish()
        } catch let error as CommandError {
            output.abandon()
            throw error
        } catch let error as StandardOutputFailure {
            output.abandon()
            throw error
        } catch {
            output.abandon()
            throw CommandError("\(input): \(error)")
        }
        let line = "\(out == "-" ? "standard output" : out): " + selection.keptText()
        if output.isStandardOutput { printError(line) } else { print(line) }
        return 0
    }

    /// Filters the chunks of a capture in file order, writing its gap records in place when OUT is a
    /// capture. Returns 0, or `damagedStatus` (the damage listed on stderr) when the capture is
    /// damaged and `allowDamage` is false: then nothing more goes to OUT, and every chunk is still
    /// read so that all the damage is listed.
    static func filterCapture(_ input: String, into output: FilterOutput, selection: inout FilterSelection, allowDamage: Bool) throws
        -> Int32
    {
        let reader = try CaptureReader(path: input)
        let gaps = Dictionary(reader.gaps.map { ($0.offset, $0) }, uniquingKeysWith: { a, _ in a })
        var refused = !allowDamage && !reader.damage.isEmpty
        for entry in reader.index {
            switch entry.envelope.type {
            case .chunk:
                guard let frames = try? reader.frames(of: entry) else {
                    if !allowDamage { refused = true }
                    continue
                }
                if refused { continue }
                for frame in frames { try selection.outputs(for: frame, output.append) }
            case .gap:
                if !refused, let g = gaps[entry.offset], try output.recordGap(g) { selection.gapRecords += 1 }
            default:
                continue
            }
        }
        if refused {
            for d in reader.damage { printError("tributary filter: \(input): damage at \(d)") }
            printError(
                "tributary filter: \(input) is damaged (\(counted(reader.damage.count, "damaged region"))); "
                    + (output.isDirect ? "the frames before the first damaged chunk were written. " : "nothing written. ")
                    + "Pass --allow-damage to filter what is intact, or run 'tributary repair \(input) --out REPAIRED.tcap'")
            return damagedStatus
        }
        for d in reader.damage { printError("tributary filter: warning: \(input): damage at \(d); skipped") }
        if !reader.hasFooter {
            printError(
                "tributary filter: warning: \(input) has no footer (its recording did not close): "
                    + "what was being written when it stopped is missing")
        }
        return 0
    }
}

/// Where `filter` writes: a capture (OUT ends in .tcap), or a frame file — standard output and devices
/// written directly, a regular file written beside OUT and renamed over it once complete.
final class FilterOutput {
    private let writer: CaptureWriter?
    private let target: FrameFileTarget?
    private var pending = Data()
    private var finished = false

    init(_ path: String, input: String, force: Bool) throws {
        if path.hasSuffix(".tcap") {
            let destination: CaptureDestination
            destination = try CaptureDestination(path: path, replace: force, inputs: [input])
            // Filters drop and repeat frames: their sequence numbers jump by design, which is no loss.
            writer = try CaptureWriter(destination: destination, options: CaptureWriterOptions(fsync: .none, detectSequenceJumps: false))
            target = nil
        } else {
            writer = nil
            target = try FrameFileTarget(path, input: input, force: force)
        }
    }

    /// True when OUT is written as it goes (standard output, a device, a pipe): nothing can be taken back.
    var isDirect: Bool { target?.temporary == nil && writer == nil }
    var isStandardOutput: Bool { target?.path == "-" }

    func append(_ frame: Frame) throws {
        if let writer { return try writer.append(frame) }
        frame.withUnsafeBytes { pending.append(contentsOf: $0) }
        // write(2), never FileHandle: a closed pipe or a full disk is an error, not a trap.
        if pending.count > 1 << 20 { try flush() }
    }

    /// Copies a gap record into a capture OUT. - Returns: whether it was written (OUT is a capture).
    @discardableResult
    func recordGap(_ g: CaptureGap) throws -> Bool {
        guard let writer else { return false }
        try writer.recordGap(
            sourceID: g.sourceID, firstMissing: g.firstMissingSequence, count: g.missingCount,
            cause: g.cause ?? .announced, timeNs: g.timeNs)
        return true
    }

    private func flush() throws {
        guard let target, !pending.isEmpty else { return }
        defer { pending.removeAll(keepingCapacity: true) }
        try target.file.write(pending)
    }

    /// Completes OUT: closes the capture, or writes what is pending and renames the frame file into place.
    func finish() throws {
        guard !finished else { return }
        finished = true
        if let writer {
            _ = try writer.close()
        } else if let target {
            try flush()
            try target.commit()
        }
    }

    /// Leaves an existing OUT as it was and removes what was written beside it.
    func abandon() {
        guard !finished else { return }
        finished = true
        if let writer {
            writer.abandon()
            unlink(writer.partialPath)
        } else {
            target?.abandon()
        }
    }
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
