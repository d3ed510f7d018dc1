import Foundation
import TributaryAnalysis
import TributaryCapture
import TributaryText
import TributaryWire

/// `tributary inspect FILE`: one line (or one JSON object) per frame of a frame file.
enum InspectCommand: TableCommand {
    static let name = "inspect"
    static let summary = "describe a capture, or the frames in a file of concatenated frames"
    static let usage = """
        usage: tributary inspect FILE [--json] [--max-frame-size BYTES]
               tributary inspect X.tcap --packages [--json]

        When FILE is a capture (recognised by its magic, docs/CAPTURE.md), prints its description
        instead: its records (chunks of frames, gap records, configuration records), then each source
        by id — channels with units, rate, samples, duration, start and end times (the timestamps of
        its first and last frames, in ISO 8601 in UTC and in local time (TZ), and in nanoseconds since
        1970), frames, chunks, compression ratio — then its gaps, its clock-offset records (the
        publisher's clock minus the recorder's, measured by 'record': how many, first, last, range;
        every one with --json), whether it was recovered, and any damage found (every chunk is read and checked).

        Reads FILE, a sequence of frames exactly as they travel on the wire (docs/PROTOCOL.md), and
        prints one line per frame: kind, source, sequence, timestamp, filter id, size and a summary
        of the content. Use '-' for standard input.

        \(options.help())

        A malformed frame stops the listing with an error naming the field and the byte offset;
        the frames before it are still printed. Exit status: 0 ok, 1 malformed input, 2 usage.
        """

    /// The file and how to list it.
    struct Configuration {
        var path = ""
        var json = false
        var packages = false
        var maxFrameSize: Int?
    }

    static var options: OptionTable<Configuration> {
        OptionTable([
            .flag(
                "--json",
                """
                one JSON object per frame: kind, source_id, sequence, timestamp_ns,
                filter_id, flags, size and the decoded content (numbers read back exactly;
                NaN and infinities print as null)
                """, \.json),
            .integer(
                "--max-frame-size", "BYTES", "a byte count", in: WireLimits.headerLength...WireLimits.maxFrameSize,
                "reject frames larger than this (40 to 67108864, the default)", \.maxFrameSize),
            .flag(
                "--packages",
                """
                for a capture: one line (or JSON object) per package other than analog
                data and configurations — messages, XML, errors, file and image chunks,
                arrays, digital lines, gap notices — then a count per kind (what
                'tributary extract' writes out)
                """, \.packages),
        ])
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var c = Configuration()
        c.path = try Positionals.one(options.parse(arguments, into: &c), "FILE")
        return c
    }

    static func run(_ c: Configuration) throws -> Int32 {
        let path = c.path, json = c.json, packages = c.packages, maxFrame = c.maxFrameSize ?? WireLimits.maxFrameSize
        let input = try InputFile(path)
        if path != "-", CaptureDescription.isCapture(path) {
            if packages { return try listPackages(path, json: json) }
            return try CaptureDescription.inspect(path, json: json)
        }
        if packages { throw UsageError("--packages needs a capture (.tcap)") }

        var decoder = FrameStreamDecoder(maxFrameSize: maxFrame)
        var index = 0
        var out = ""
        func emit(_ frame: Frame) throws {
            let payload: Payload
            do { payload = try frame.payload() } catch {
                throw CommandError("\(path): frame \(index) (\(frame.header.kind) at byte \(frame.position)): \(error)")
            }
            if json {
                FrameDescription.json(frame, payload: payload).render(into: &out)
                out += "\n"
            } else {
                out +=
                    FrameDescription.pad("#\(index)", 7) + " " + FrameDescription.pad("@\(frame.position)", 11) + " "
                    + FrameDescription.line(frame, payload: payload) + "\n"
            }
            index += 1
            if out.utf8.count > 1 << 16 { try flush() }
        }
        func flush() throws {
            defer { out = "" }
            try out.withUTF8 { try StandardOutput.write(UnsafeRawBufferPointer($0)) }
        }
        do {
            while try input.readBlock({ try decoder.feed($0, emit) }) {}
            try decoder.finish()
        } catch let error as WireError {
            try flush()
            throw CommandError("\(path): \(error)")
        } catch {
            // The frames before a bad one are still printed, then the error.
            if !(error is StandardOutputFailure) { try? flush() }
            throw error
        }
        if !json {
            out +=
                counted(index, "frame") + (decoder.skippedFrames > 0 ? ", \(decoder.skippedFrames) of unknown ignorable kinds skipped" : "")
                + "\n"
        }
        try flush()
        return 0
    }

    /// `--packages`: the application packages of a capture, in file order.
    static func listPackages(_ path: String, json: Bool) throws -> Int32 {
        let reader = try CaptureReader(path: path)
        var out = ""
        var counts: [FrameKind: Int] = [:]
        func flush() {
            // A closed or full standard output is remembered and reported at exit, never a trap.
            var text = out
            text.withUTF8 { try? StandardOutput.write(UnsafeRawBufferPointer($0)) }
            out = ""
        }
        reader.forEachFrame { frame in
            let kind = frame.header.kind
            guard kind != .analog, kind != .configuration, let payload = try? frame.payload() else { return }
            counts[kind, default: 0] += 1
            if json {
                FrameDescription.json(frame, payload: payload).render(into: &out)
                out += "\n"
            } else {
                out += FrameDescription.line(frame, payload: payload) + "\n"
            }
            if out.utf8.count > 1 << 16 { flush() }
        }
        if !json {
            out +=
                counts.isEmpty
                ? "no packages besides analog data and configurations\n"
                : counts.sorted { $0.key.rawValue < $1.key.rawValue }.map { counted($0.value, "\($0.key) frame") }.joined(separator: ", ")
                    + "\n"
        }
        flush()
        for d in reader.damage { printError("tributary inspect: \(path): damage at \(d)") }
        return 0
    }
}
