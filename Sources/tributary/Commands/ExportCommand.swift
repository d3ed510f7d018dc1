import Foundation
import TributaryCapture
import TributaryDSP
import TributaryFormats

/// `tributary export X.tcap --format npy|csv|wav|tdms|xdf|hdf5 --out PATH`: a capture's analog data as a file
/// the measurement world reads (docs/FORMATS.md).
enum ExportCommand: Command {
    static let name = "export"
    static let summary = "write a capture's analog data as NPY, CSV, WAV, TDMS, XDF or HDF5"
    static let usage = """
    usage: tributary export X.tcap --format npy|csv|wav|tdms|xdf|hdf5 --out PATH [--source N] [--channels SPEC]
                            [--start T] [--duration S] [--counts] [--time-column] [--allow-damage] [--force]

    Gathers the analog frames of a source, in order, into a channels × samples matrix.
      npy   one source shaped (channels, samples): float64 / float32 sources in their recorded dtype,
            bit-exact to what was imported or received; int16 sources as float64 physical values
            (count × scale + offset), or with --counts as the stored int16 counts plus a sidecar
            PATH.json carrying scale, offset, rate, start time, channel names and units.
      csv   one source, one column per channel with a header of channel names; physical values
            (int16 counts × scale + offset), printed so that they read back exactly. --time-column
            adds a first column time_s: seconds since the first sample, from the recorded frame times.
      wav   one source; int16 data as 16-bit PCM counts, float32 / float64 as IEEE float WAV; needs an
            integer rate.
      tdms  every source (or --source N) as a group of channels with DAQmx's waveform properties
            (wf_start_time, wf_increment, unit_string, NI_ChannelName), float64 physical values; with
            --counts int16 sources as I16 counts with an NI linear scale.
      xdf   every source (or --source N) as a stream: header with labels and units, a samples chunk per
            recorded frame stamped with its time, boundary chunks, clock offsets and a footer; double64
            physical values, with --counts int16 counts (scales in the header's description).
      hdf5  every source (or --source N) as a group with attributes (source_id, device_name, sample_rate,
            start_time_ns, gaps) and a chunked, compressed dataset 'data' (channels, samples) with
            channel_names, units and channel_indexes; float64 physical values, with --counts int16
            counts with scale and offset attributes; block_start / block_time_ns give the frame times.

      --source N       the source (npy/csv/wav default: the lowest source id with analog data)
      --channels SPEC  channel indexes, e.g. 0-3 or 0,2,5 (default all recorded channels)
      --start T        begin T seconds after the first sample (default 0)
      --duration S     export S seconds (default: to the end)
      --counts         store int16 sources as counts (npy: with the sidecar PATH.json; tdms/xdf/hdf5: with their scales)
      --time-column    csv: a first column of sample times
      --allow-damage   export what is intact when the capture is damaged (the damage is still listed)
      --force          replace PATH (and with --counts PATH.json) if it exists (only once the new file is
                       complete; never the capture itself, by any path or link to it)

    Export holds a source's samples in memory (int16 counts exported as physical values also as
    float64): a source that would not fit in the memory available (MemAvailable, or the cgroup's
    limit) is refused before anything is decoded; TRIBUTARY_MEMORY_LIMIT=SIZE (bytes, or 512m, 4g,
    ...) sets the budget instead. With --start/--duration only the chunks holding the selected
    samples are read (and checked for damage).

    Damage found in the capture (a damaged chunk of the source or of its configuration, a torn tail,
    unreadable bytes, a duplicated record, a damaged header or footer) is listed on stderr with byte
    offsets, nothing is written and the exit status is 3, unless --allow-damage is given: then what
    is intact is exported, the damage is still listed, and the exit status is 0. A capture without a
    footer (a recording that did not close) is exported with a warning on stderr.
    Exit status: 0 written, 1 error, 2 usage, 3 damaged capture (nothing written).
    """

    /// The exit status of an export refused because the capture is damaged.
    static let damagedStatus: Int32 = 3

    static let formats = ["npy", "csv", "wav", "tdms", "xdf", "hdf5"]

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        guard let format = try arguments.option("--format") else { throw UsageError("missing --format \(formats.joined(separator: "|"))") }
        guard formats.contains(format) else { throw UsageError("--format: '\(format)' is not one of \(formats.joined(separator: ", "))") }
        guard let destination = try arguments.option("--out") else { throw UsageError("missing --out PATH") }
        let force = arguments.flag("--force")
        let source = try arguments.option("--source", "a source id") { UInt32($0) }
        let channelText = try arguments.option("--channels")
        let start = try arguments.option("--start", "a time in seconds >= 0") { Double($0).flatMap { $0 >= 0 && $0.isFinite ? $0 : nil } }
        let duration = try arguments.option("--duration", "a duration in seconds >= 0") { Double($0).flatMap { $0 >= 0 && $0.isFinite ? $0 : nil } }
        let counts = arguments.flag("--counts")
        let timeColumn = arguments.flag("--time-column")
        let allowDamage = arguments.flag("--allow-damage")
        let files = try arguments.finish()
        guard files.count == 1 else { throw UsageError(files.isEmpty ? "missing X.tcap" : "expected one capture, got \(files.count)") }
        if timeColumn && format != "csv" { throw UsageError("--time-column applies to --format csv only") }
        try checkDestination(destination, input: files[0], force: force)
        if counts && format == "npy" {
            try checkDestination(destination + ".json", input: files[0], force: force, what: "the --counts sidecar of '\(destination)'")
        }
        // Written beside the destination, renamed over it only once complete: an existing file is
        // never left half-overwritten, and an export that fails leaves nothing behind.
        let out = destination + ".\(getpid()).partial-export"
        var channels: [UInt32]?
        if let channelText {
            do { channels = try ChannelSpec(parsing: channelText).channels.map { UInt32($0) } } catch { throw UsageError("--channels: \(error)") }
        }
        let reader = try CaptureReader(path: files[0])
        let available = SourceSeries.analogSources(reader)
        let wanted: [UInt32]
        if let source {
            guard available.contains(source) else {
                throw CommandError("\(files[0]): source \(source) has no analog data (sources with analog data: \(available.map(String.init).joined(separator: ", ")))")
            }
            wanted = [source]
        } else {
            guard let first = available.first else { throw CommandError("\(files[0]): no analog data") }
            wanted = ["tdms", "xdf", "hdf5"].contains(format) ? available : [first]
        }
        // Export holds each source's samples in memory: refuse, before decoding anything, what would
        // not fit rather than let the allocation fail or the system's out-of-memory killer pick a victim.
        // With --start/--duration only the chunks holding the selected samples are read.
        var windows: [UInt32: Range<Int>] = [:]
        if start != nil || duration != nil {
            for id in wanted {
                windows[id] = SourceSeries.window(reader: reader, source: id, channels: channels, start: start ?? 0, duration: duration)
            }
        }
        let budget = try MemoryBudget.available()
        let physical = !counts || ["csv", "wav"].contains(format)
        var needed = 0
        for id in wanted {
            guard let budget, let (values, perValue, isCounts) = SourceSeries.gatherSize(reader: reader, source: id, channels: channels,
                                                                                           window: windows[id], physical: physical) else { continue }
            // CSV is written as one text (about 25 bytes a value) and its UTF-8 copy, beside the values
            // (and a time column); WAV converts to float64 and builds its file in memory.
            let extra = format == "csv" ? 3 * 8 + 2 * 25 : format == "wav" ? 2 * 8 : 0
            let (bytes, overflow) = values.multipliedReportingOverflow(by: perValue + extra)
            needed = overflow || needed.addingReportingOverflow(bytes).overflow ? .max : needed + bytes
            if needed > budget {
                throw CommandError("\(files[0]): exporting source \(id) needs about \(MemoryBudget.describe(needed)) of memory "
                                   + (wanted.count > 1 ? "with the sources before it " : "")
                                   + "(export holds a source's samples in memory) and \(MemoryBudget.describe(budget)) is available; "
                                   + "export a part at a time (--start/--duration: only the chunks it needs are read), "
                                   + "fewer channels (--channels)"
                                   + (wanted.count > 1 ? ", one source at a time (--source N)" : "")
                                   + (isCounts && physical && !["csv", "wav"].contains(format) ? ", or its int16 counts (--counts)" : "")
                                   + ", or set TRIBUTARY_MEMORY_LIMIT to allow more")
            }
        }
        var series: [SourceSeries] = []
        for id in wanted {
            let gathered = Result { () throws(CaptureError) -> SourceSeries in
                try SourceSeries(reader: reader, source: id, channels: channels, allowDamage: allowDamage, window: windows[id])
            }
            switch gathered {
            case .success(var s):
                if start != nil || duration != nil {
                    do { s = try s.selecting(start: start ?? 0, duration: duration) } catch { throw CommandError("\(files[0]): \(error.detail)") }
                }
                series.append(s)
            case .failure(let error) where error.kind != .damagedRecord: throw error
            case .failure:
                for d in reader.damage { printError("tributary export: \(files[0]): damage at \(d)") }
                printError("tributary export: \(files[0]) is damaged (\(reader.damage.count) damaged regions); nothing written. "
                           + "Pass --allow-damage to export what is intact, or run 'tributary repair \(files[0]) --out REPAIRED.tcap'")
                return damagedStatus
            }
        }
        for d in series.first?.damage ?? [] { printError("tributary export: warning: \(files[0]): damage at \(d); exported what is intact") }
        if !reader.hasFooter {
            printError("tributary export: warning: \(files[0]) has no footer (its recording did not close): "
                       + "what was being written when it stopped is missing")
        }
        if counts, ["csv", "wav"].contains(format) { throw UsageError("--counts applies to npy, tdms, xdf and hdf5") }
        if counts, format == "npy", !series[0].isCounts {
            throw CommandError("--counts: source \(series[0].sourceID) is stored as \(series[0].samples.dtype == .float64 ? "float64" : "float32"), not int16 counts")
        }
        do {
            switch format {
            case "npy":
                let data = series[0]
                // Physical units unless the counts are asked for: an int16 matrix without its scale is not a measurement.
                let samples: NPYSamples = data.isCounts && !counts ? .float64(data.physicalValues) : data.samples
                try NPY.write(NPYArray(channels: data.channelCount, samplesPerChannel: data.sampleCount, samples: samples), path: out)
                if counts { try sidecar(data).write(to: URL(fileURLWithPath: destination + ".json"), options: .atomic) }
            case "csv":
                let data = series[0]
                var names = data.channelNames, values = data.physicalValues, columns = data.channelCount
                if timeColumn {
                    // From the recorded frame times (SourceSeries.sampleTimes, which tributary_capture_times shares).
                    guard let times = data.sampleTimes else { throw CommandError("--time-column needs one sampling rate; source \(data.sourceID) has none") }
                    names.insert("time_s", at: 0)
                    values.insert(contentsOf: times, at: 0)
                    columns += 1
                }
                try CSVTable(channelNames: names, channelCount: columns, values: values).write(to: out)
            case "wav":
                let data = series[0]
                let rows = data.channelCount
                guard let rate = data.rate, rate == rate.rounded(), rate >= 1, rate <= 4_294_967_295 else {
                    throw CommandError("WAV needs one integer sampling rate; the configuration gives \(data.rate.map { "\($0)" } ?? "none")")
                }
                let wav: WAVFile
                switch data.samples {
                case .int16(let v): wav = WAVFile(sampleRate: Int(rate), format: .int16, channelCount: rows, samples: v.map(Double.init))
                case .float32(let v): wav = WAVFile(sampleRate: Int(rate), format: .float32, channelCount: rows, samples: v.map(Double.init))
                case .float64(let v): wav = WAVFile(sampleRate: Int(rate), format: .float64, channelCount: rows, samples: v)
                }
                try wav.write(to: out)
            case "hdf5":
                try FormatExport.writeHDF5(series, counts: counts, name: (files[0] as NSString).lastPathComponent, to: out)
            case "tdms":
                try FormatExport.tdms(series, counts: counts, name: (files[0] as NSString).lastPathComponent).write(to: out)
            default:
                try FormatExport.writeXDF(series, counts: counts, to: out)
            }
            guard rename(out, destination) == 0 else {
                throw CommandError("cannot rename the export to '\(destination)': \(String(cString: strerror(errno)))")
            }
        } catch let error as CommandError {
            unlink(out)
            throw error
        } catch {
            unlink(out)
            throw CommandError("\(error)")
        }
        for s in series {
            print("\(destination): source \(s.sourceID), \(s.channelCount) channels × \(s.sampleCount) samples")
        }
        return 0
    }

    /// Refuses to overwrite an existing file without `--force`, and ever to overwrite the capture
    /// being exported (by any path or link to it: compared by device and inode) or a directory.
    /// - Parameter what: how to name `path` in the error when it is not `--out` itself.
    static func checkDestination(_ path: String, input: String, force: Bool, what: String? = nil) throws {
        var target = stat()
        guard stat(path, &target) == 0 else { return }
        var source = stat()
        if stat(input, &source) == 0, source.st_dev == target.st_dev, source.st_ino == target.st_ino {
            throw CommandError("'\(path)'\(what.map { " (\($0))" } ?? "") is the capture being exported; choose another --out")
        }
        if target.st_mode & S_IFMT == S_IFDIR { throw CommandError("'\(path)' is a directory; --out names a file") }
        if !force { throw CommandError("'\(path)' exists; pass --force to replace it (once the new file is complete)") }
    }

    /// The NPY sidecar of `--counts`: what turns the counts into physical values, and when they were taken.
    static func sidecar(_ s: SourceSeries) throws -> Data {
        let object: [String: Any] = [
            "source_id": s.sourceID, "device_name": s.deviceName, "device_type": s.deviceType,
            "channel_indexes": s.channelIndexes.map { Int($0) }, "channel_names": s.channelNames, "units": s.units,
            "scale": s.scale, "offset": s.offset, "sample_rate": s.rate as Any, "start_time_ns": s.startNs,
            "samples": s.sampleCount, "dtype": "int16", "value": "count * scale + offset",
            "gaps": s.gaps.map { ["first_missing_sequence": $0.firstMissingSequence, "missing_count": $0.missingCount, "time_ns": $0.timeNs] },
        ]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
    }
}
