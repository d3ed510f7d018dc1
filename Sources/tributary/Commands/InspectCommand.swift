import Foundation
import TributaryAnalysis
import TributaryWire

/// `tributary inspect FILE`: one line (or one JSON object) per frame of a frame file.
enum InspectCommand: Command {
    static let name = "inspect"
    static let summary = "describe a capture, or the frames in a file of concatenated frames"
    static let usage = """
    usage: tributary inspect FILE [--json] [--max-frame-size BYTES]

    When FILE is a capture (recognised by its magic, docs/CAPTURE.md), prints its description
    instead: sources, channels with units, rate, duration, samples, chunks, compression ratio,
    gaps, whether it was recovered, and any damage found (every chunk is read and checked).

    Reads FILE, a sequence of frames exactly as they travel on the wire (docs/PROTOCOL.md), and
    prints one line per frame: kind, source, sequence, timestamp, filter id, size and a summary
    of the content. Use '-' for standard input.

      --json                  one JSON object per frame: kind, source_id, sequence, timestamp_ns,
                              filter_id, flags, size and the decoded content (numbers read back exactly;
                              NaN and infinities print as null)
      --max-frame-size BYTES  reject frames larger than this (40 to 67108864, the default)

    A malformed frame stops the listing with an error naming the field and the byte offset;
    the frames before it are still printed. Exit status: 0 ok, 1 malformed input, 2 usage.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let json = arguments.flag("--json")
        let maxFrame = try arguments.integer("--max-frame-size", "a byte count", in: WireLimits.headerLength...WireLimits.maxFrameSize)
            ?? WireLimits.maxFrameSize
        let files = try arguments.finish()
        guard files.count == 1 else { throw UsageError(files.isEmpty ? "missing FILE" : "expected one FILE, got \(files.count)") }
        let path = files[0]
        let input = try InputFile(path)
        if path != "-", CaptureDescription.isCapture(path) {
            return try CaptureDescription.inspect(path, json: json)
        }

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
                out += "#\(index) @\(frame.position) " + FrameDescription.line(frame, payload: payload) + "\n"
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
            out += "\(index) frames" + (decoder.skippedFrames > 0 ? ", \(decoder.skippedFrames) of unknown ignorable kinds skipped" : "") + "\n"
        }
        try flush()
        return 0
    }
}
