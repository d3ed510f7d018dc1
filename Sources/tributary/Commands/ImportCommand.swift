import Foundation
import TributaryCapture
import TributaryFormats
import TributaryInterchange
import TributaryText
import TributaryWire

/// `tributary import FILE --rate HZ --out X.tcap`: records an NPY, WAV, CSV, TDMS, XDF or HDF5 file as a capture.
enum ImportCommand: TableCommand {
    static let name = "import"
    static let summary = "record an NPY, WAV, CSV, TDMS, XDF or HDF5 file as a capture (.tcap)"
    static let usage = """
        usage: tributary import FILE.npy|.wav|.csv --rate HZ --out X.tcap [--start-time ISO8601|UNIX] [--source-id N] [--source-name S]
                                [--unit U] [--fast-codec] [--force]
               tributary import FILE.tdms|.xdf|.h5 --out X.tcap [--select NAMES] [--rate HZ] [--fast-codec] [--force]

        Records FILE as one source of a capture (docs/CAPTURE.md): a configuration frame, then analog
        frames of 4096 samples.
          NPY  shaped (channels, samples) or (samples,), float64, float32, int16 or int32, stored bit for
               bit (int16 / int32 as counts with scale 1, offset 0).
          WAV  16-bit PCM as int16 counts with scale 1/32768 (full scale = 1.0); 24/32-bit PCM as int32
               counts with scale 1/2^23 / 1/2^31; float WAVs as they are. --rate defaults to the WAV's rate.
          CSV  one column per channel, optional header row of channel names; float64: decimal numbers
               (1, -2.5, 1e-3) or nan / inf; hexadecimal and numbers beyond float64 are errors.
          TDMS every group with numeric channels of equal length becomes a source (id from its source_id
               property, else 1, 2, …): rate from wf_increment, start time from wf_start_time, names and
               unit_string; I16 channels (also DAQmx raw i16 scalers) with an NI linear scale as counts
               with that scale (I32 as int32 counts); float32 as float32, other numbers as float64
               through their NI scales.
               DAQmx raw data and big-endian files are read (docs/FORMATS.md).
          XDF  every numeric stream becomes a source: nominal rate, channel labels and units, timestamps
               (corrected by the clock offsets as pyxdf's synchronize_clocks does, clock resets included)
               as frame times, a new block wherever they drift from the nominal rate by more than
               max(1 ms, a quarter sample); int16 / int8 / int32 streams as counts. Every string
               (marker) stream gives one message per sample (source 0, code 0, its time corrected the
               same way; several channels as a JSON array of strings; at most 1 MiB of text a sample).
          HDF5 every numeric dataset of rank 1 or 2 (channels, samples) becomes a source; attributes on the
               dataset or its group give sample_rate (else --rate), start_time_ns, channel_names, units,
               device_name, source_id, and scale / offset for int16 / int32 counts (docs/FORMATS.md).
        The input must have 1 to 65,535 channels and at least one sample. Memory stays bounded whatever
        FILE's size: it is read a frame (or a few MiB) at a time.
        \(options.help())
        X.tcap.partial (maybe a crashed recording) is never overwritten: repair or move it first.
        """

    /// The command line as given: the request, and --out (required).
    struct Given {
        var request = ImportRequest(out: "")
        var out: String?
    }

    static var options: OptionTable<Given> {
        ImportRequest.readOptions.lifted(\.request)
            + OptionTable([.text("--out", "X.tcap", "the capture to write (required)", \.out)])
            + ImportRequest.writeOptions.lifted(\.request)
    }

    static func parse(_ arguments: [String]) throws -> ImportRequest {
        var given = Given()
        let files = try options.parse(arguments, into: &given)
        guard let out = given.out else { throw UsageError("missing --out X.tcap") }
        let file = try Positionals.one(files, "FILE")
        given.request.out = out
        given.request.path = file
        return given.request
    }

    static func run(_ request: ImportRequest) throws -> Int32 {
        for line in try perform(request) { print(line) }
        return 0
    }

    /// Records `request.path` as the capture `request.out`.
    /// - Returns: the lines that say what was written.
    /// - Throws: `UsageError` for options that do not fit the file, `CommandError` when it cannot be read or written.
    static func perform(_ request: ImportRequest) throws -> [String] {
        let (path, out) = (request.path, request.out)
        if let kind = FormatImport.kind(path: path) {
            if request.startText != nil {
                throw UsageError(
                    "--start-time applies to NPY, WAV and CSV files; \(kind.rawValue.uppercased()) files carry their own times")
            }
            return try importMeasurementFile(
                path, kind: kind, out: out, select: request.select, rate: request.rate, force: request.force, options: request.options)
        }
        if request.select != nil { throw UsageError("--select applies to TDMS, XDF and HDF5 files") }
        let start = try startTime(request.startText, of: path)
        // Checked before the input is read: refuse an existing output (without --force) or .partial early,
        // and an output that is the input (any spelling of it, or a link to it) even with --force.
        let destination: CaptureDestination
        destination = try CaptureDestination(path: out, replace: request.force, inputs: [path])
        // NPY, WAV or CSV by the name's extension (TDMS, XDF and HDF5 were recognised by their bytes above).
        guard let format = InterchangeFormat.of(path: path), !format.holdsEverySource else {
            throw UsageError("'\(path)': expected a .npy, .wav, .csv, .tdms, .xdf or .h5 file")
        }
        let signal: SignalFile, effectiveRate: Double?
        signal = try SignalFile.open(path: path, format: format)
        effectiveRate = request.rate ?? signal.rate
        guard let effectiveRate else { throw UsageError("missing --rate HZ") }
        try signal.validate(file: path)
        let summary: CaptureWriteSummary
        summary = try CaptureImport.write(
            signal, rate: effectiveRate, sourceID: request.sourceID,
            sourceName: request.sourceName ?? (path as NSString).lastPathComponent, unit: request.unit, startNs: start.ns,
            to: destination, options: request.options)
        return [
            "\(out): \(counted(signal.channelCount, "channel")) × \(counted(signal.sampleCount, "sample")) (\(signal.samples.format)), "
                + "\(counted(summary.records, "record")), \(counted(summary.fileBytes, "byte"))",
            "\(out): first sample at \(TimeText.utc(start.ns)) (\(start.origin))",
        ]
    }

    /// The first sample's time: --start-time, or the file's modification time.
    static func startTime(_ text: String?, of path: String) throws -> (ns: Int64, origin: String) {
        if let text {
            guard let (ns, local) = TimeText.parse(text) else {
                throw UsageError(
                    "option --start-time: '\(text)' is not a time: give ISO 8601 with a date and a time "
                        + "(2026-11-30T15:04:05.25Z, with an offset such as +01:00, or none for local time) "
                        + "or Unix seconds (1796051045.25), between the years 1678 and 2262")
            }
            return (ns, "--start-time" + (local ? ", read as local time" : ""))
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw CommandError("\(path): \(String(cString: strerror(errno)))") }
        let ns = Int64(info.st_mtim.tv_sec).multipliedSaturated(by: 1_000_000_000).addingSaturated(Int64(info.st_mtim.tv_nsec))
        return (ns, "the file's modification time; --start-time sets another")
    }

    /// TDMS, XDF and HDF5: every group / stream / dataset (or the selected ones) as a source of one capture.
    static func importMeasurementFile(
        _ path: String, kind: InterchangeFormat, out: String, select: Set<String>?, rate: Double?, force: Bool,
        options: CaptureWriterOptions
    ) throws -> [String] {
        let destination: CaptureDestination
        destination = try CaptureDestination(path: out, replace: force, inputs: [path])
        let sources: [ImportedSource]
        let summary: CaptureWriteSummary
        var markers: [MarkerImport.Stream] = []
        // XDF marker streams become messages (MarkerImport); --select may name them or numeric streams.
        var numericSelect = select
        if kind == .xdf {
            markers = try MarkerImport.read(xdf: path, select: select)
            numericSelect = select?.subtracting(markers.map(\.name)).subtracting(markers.map { "\($0.streamID)" })
        }
        if let numericSelect, numericSelect.isEmpty, !markers.isEmpty {
            sources = []
        } else {
            sources = try FormatImport.read(path: path, select: numericSelect, rate: rate, allowNone: !markers.isEmpty)
        }
        summary = try FormatImport.write(sources, messages: MarkerImport.frames(markers), to: destination, options: options)
        return sources.map { s in
            "\(out): source \(s.sourceID) '\(s.deviceName)': \(counted(s.channelCount, "channel")) × \(counted(s.sampleCount, "sample")) (\(s.samples.format)) at \(s.rate) Hz"
        }
            + markers.map { m in "\(out): marker stream \(m.streamID) '\(m.name)': \(counted(m.messages.count, "message"))" }
            + ["\(out): \(counted(summary.records, "record")), \(counted(summary.fileBytes, "byte")) (from \(kind.rawValue.uppercased()))"]
    }
}

/// What `import` (and `process`, for a file that is not a capture) records: the options of `tributary import`.
struct ImportRequest {
    var path = ""
    var out: String
    var rate: Double?
    var sourceID: UInt32 = 1
    var sourceName: String?
    var unit = "V"
    var force = false
    /// --fast-codec: the writer's fast chunk codec.
    var fastCodec = false
    var options: CaptureWriterOptions { CaptureWriterOptions(chunk: fastCodec ? .fast : ChunkCodecOptions(), fsync: .none) }
    var select: Set<String>?
    var startText: String?

    /// A request writing `out`, every option at its default.
    init(out: String) { self.out = out }

    /// The options `import` and `process` share: what to read and when it starts.
    static var readOptions: OptionTable<ImportRequest> {
        OptionTable([
            .custom(
                "--select", "NAMES",
                """
                TDMS / XDF / HDF5: only these groups / streams / datasets (comma-separated names, source ids,
                dataset paths); XDF marker streams are selected by name or id alike
                """
            ) { r, text in r.select = Set(text.split(separator: ",").map { String($0) }) },
            .parsed("--rate", "HZ", "a positive rate in Hz", "samples per second (required except for WAV)", \.rate) {
                Double($0).flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
            },
            .text(
                "--start-time", "T",
                """
                NPY / WAV / CSV: the time of the first sample, ISO 8601 (2026-11-30T15:04:05.25Z,
                an offset such as +01:00, or no zone: local time) or Unix seconds
                (1796051045.25); default the file's modification time (said in the output).
                TDMS, XDF and HDF5 files carry their own times
                """, \.startText),
        ])
    }

    /// The options of the capture `import` writes (`process` writes its own).
    static var writeOptions: OptionTable<ImportRequest> {
        OptionTable([
            .custom("--source-id", "N", "source id, default 1") { r, text in
                guard let id = UInt32(text), id > 0 else {
                    throw UsageError("option --source-id: '\(text)' is not a source id 1...4294967295")
                }
                r.sourceID = id
            },
            .custom("--source-name", "S", "device name in the configuration, default the file name") { r, text in r.sourceName = text },
            .custom("--unit", "U", "unit of every channel, default V") { r, text in r.unit = text },
            .flag(
                "--fast-codec",
                """
                compress with the codec's fast path (bit-shuffle, then zstd -1 with raw
                literals; no entropy coding): less CPU, a larger capture (docs/CAPTURE.md); the default codes for size
                """, \.fastCodec),
            .flag(
                "--force",
                """
                replace X.tcap if it exists, once the new capture is complete (never FILE itself,
                by any path or link)
                """, \.force),
        ])
    }
}
