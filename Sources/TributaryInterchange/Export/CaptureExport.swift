import Foundation
import TributaryCapture
import TributaryFormats
import TributaryWire

/// What to export of a capture, and how: one model for `tributary export`, `tributary_capture_export`
/// and Python's `Capture.export`, so that the three write the same bytes for the same options.
public struct ExportOptions: Sendable, Equatable {
    public var format: InterchangeFormat
    /// The source (nil: for NPY/CSV/WAV the lowest id with analog data, for TDMS/XDF/HDF5 every such source).
    public var source: UInt32?
    /// Channel indexes (as configured and recorded, not rows), in the order wanted; nil for every channel.
    public var channels: [UInt32]?
    /// Seconds after the source's first sample at which to begin (nil: 0); needs one sampling rate.
    public var start: Double?
    /// Seconds to export (nil: to the end).
    public var duration: Double?
    /// Store int16 sources as counts (NPY with a sidecar PATH.json; TDMS, XDF, HDF5 with their scales).
    public var counts: Bool
    /// CSV: a first column `time_s`, the samples' recorded times in seconds since the source's first sample.
    public var timeColumn: Bool
    /// Export what is intact of a damaged capture (the damage is still reported).
    public var allowDamage: Bool
    /// Replace an existing destination (and with NPY counts its sidecar), once the new file is complete.
    public var replace: Bool
    /// Map each source's frame times onto the recorder's clock with the capture's clock-offset records
    /// (`ClockAlignment.align`); XDF then carries no offsets of its own (its times are already aligned).
    public var align = false
    /// Replace each run of contiguous frames' times by a robust line against the sample counter
    /// (`ClockAlignment.dejitter`), after `align`.
    public var dejitter = false

    public init(
        format: InterchangeFormat, source: UInt32? = nil, channels: [UInt32]? = nil, start: Double? = nil, duration: Double? = nil,
        counts: Bool = false, timeColumn: Bool = false, allowDamage: Bool = false, replace: Bool = false
    ) {
        (self.format, self.source, self.channels, self.start, self.duration) = (format, source, channels, start, duration)
        (self.counts, self.timeColumn, self.allowDamage, self.replace) = (counts, timeColumn, allowDamage, replace)
    }

    /// Refuses what no capture could satisfy: a start or duration that is not a time ≥ 0, a time
    /// column outside CSV, counts in CSV or WAV, an empty channel list.
    /// - Throws: `ExportError` of kind `.usage`, naming the option as `spelling` spells it.
    public func check(_ spelling: ExportOptionSpelling) throws(ExportError) {
        for (option, value) in [(ExportOption.start, start), (.duration, duration)] {
            if let value, !(value >= 0 && value.isFinite) {
                throw ExportError(.usage, "\(spelling.name(option)): \(value) is not a time in seconds >= 0")
            }
        }
        if let channels, channels.isEmpty { throw ExportError(.usage, "\(spelling.name(.channels)): no channel given") }
        if timeColumn && format != .csv {
            throw ExportError(.usage, "\(spelling.name(.timeColumn)) applies to \(spelling.name(.format)) csv only")
        }
        if counts && !format.storesCounts { throw ExportError(.usage, "\(spelling.name(.counts)) applies to npy, tdms, xdf and hdf5") }
    }
}

/// The options of an export, for messages that tell the caller what to change.
public enum ExportOption: Sendable {
    case format, source, channels, start, duration, counts, timeColumn, allowDamage, replace
}

/// How the caller spells the options: the command line's flags or the keywords of the C interface's
/// JSON options and Python's `Capture.export`.
public enum ExportOptionSpelling: Sendable {
    case commandLine, keywords

    public func name(_ option: ExportOption) -> String {
        switch (self, option) {
        case (.commandLine, .format): "--format"
        case (.commandLine, .source): "--source N"
        case (.commandLine, .channels): "--channels"
        case (.commandLine, .start): "--start"
        case (.commandLine, .duration): "--duration"
        case (.commandLine, .counts): "--counts"
        case (.commandLine, .timeColumn): "--time-column"
        case (.commandLine, .allowDamage): "--allow-damage"
        case (.commandLine, .replace): "--force"
        case (.keywords, .format): "format"
        case (.keywords, .source): "source=N"
        case (.keywords, .channels): "channels"
        case (.keywords, .start): "start"
        case (.keywords, .duration): "duration"
        case (.keywords, .counts): "counts=true"
        case (.keywords, .timeColumn): "time_column=true"
        case (.keywords, .allowDamage): "allow_damage=true"
        case (.keywords, .replace): "replace=true"
        }
    }
}

/// Why an export wrote nothing.
public struct ExportError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Options that contradict each other or are out of their domain (the tool's usage errors).
        case usage
        /// The destination exists (without `replace`), is a directory or is the capture itself.
        case destination
        /// A source or channel the capture does not have.
        case range
        /// Counts asked of sources that store floating-point values.
        case type
        /// The capture is damaged and `allowDamage` was not given: `damage` lists where.
        case damaged
        /// Not a capture, or data that cannot be written as asked (no single rate, frames that change channels, …).
        case data
        /// The export would not fit in the memory available.
        case memory
        /// The file could not be read or written.
        case io
    }

    public var kind: Kind
    public var message: String
    /// The damaged regions of a `.damaged` capture.
    public var damage: [CaptureDamage]

    public init(_ kind: Kind, _ message: String, damage: [CaptureDamage] = []) {
        (self.kind, self.message, self.damage) = (kind, message, damage)
    }

    public var description: String { message }
}

/// What an export wrote: per source its channels and samples (as `tributary export` prints them).
public struct ExportedSource: Sendable, Equatable {
    public var sourceID: UInt32
    public var channelCount: Int
    public var sampleCount: Int
}

/// Exports a capture's analog data as NPY, CSV, WAV, TDMS, XDF or HDF5: the one implementation
/// behind `tributary export`, `tributary_capture_export` (C) and `Capture.export` (Python).
/// The file is written beside the destination and renamed over it only once complete, so an
/// existing file is never left half-overwritten and a failed export leaves nothing behind.
public enum CaptureExport {
    /// Opens the capture at `capturePath` and exports it (`export(_:to:options:spelling:warning:)`);
    /// the options and the destination are checked before the capture is opened.
    public static func export(
        capture capturePath: String, to destination: String, options: ExportOptions,
        spelling: ExportOptionSpelling = .keywords,
        warning: (String) -> Void = { _ in }
    ) throws(ExportError) -> [ExportedSource] {
        try options.check(spelling)
        try checkDestinations(destination, capture: capturePath, options: options, spelling: spelling)
        let reader: CaptureReader
        do { reader = try CaptureReader(path: capturePath) } catch { throw ExportError(error.kind == .io ? .io : .data, "\(error)") }
        return try export(reader, to: destination, options: options, spelling: spelling, warning: warning)
    }

    /// Exports the analog data of the capture `reader` reads to `destination`.
    /// - Parameters:
    ///   - spelling: how messages name the options.
    ///   - warning: told what is exported despite a problem (damage with `allowDamage`, a capture
    ///     without footer, counts asked of a float source among int16 ones), as it is met.
    /// - Returns: what was written, per source.
    public static func export(
        _ reader: CaptureReader, to destination: String, options: ExportOptions,
        spelling: ExportOptionSpelling = .keywords,
        warning: (String) -> Void = { _ in }
    ) throws(ExportError) -> [ExportedSource] {
        try options.check(spelling)
        try checkDestinations(destination, capture: reader.path, options: options, spelling: spelling)
        let wanted = try sources(reader, options, spelling)
        var series = try gather(reader, wanted, options, spelling)
        if options.align || options.dejitter { try adjustTimes(&series, reader: reader, options: options, warning: warning) }
        let messages = options.format == .xdf ? try messageSeries(reader, series, options, spelling) : []
        for d in series.first?.damage ?? [] { warning("warning: \(reader.path): damage at \(d); exported what is intact") }
        if !reader.hasFooter {
            warning(
                "warning: \(reader.path) has no footer (its recording did not close): what was being written when it stopped is missing")
        }
        try checkCounts(series, options, spelling, warning: warning)
        // Written beside the destination, renamed over it only once complete.
        let out = destination + ".\(getpid())-\(partialCounter.next()).partial-export"
        do throws(ExportError) {
            try write(series, messages: messages, reader: reader, options: options, spelling: spelling, destination: destination, to: out)
            guard rename(out, destination) == 0 else {
                throw ExportError(.io, "cannot rename the export to '\(destination)': \(String(cString: strerror(errno)))")
            }
        } catch {
            unlink(out)
            throw error
        }
        return series.map { ExportedSource(sourceID: $0.sourceID, channelCount: $0.channelCount, sampleCount: $0.sampleCount) }
    }

    /// Refuses to overwrite an existing file without `replace`, and ever to overwrite the capture
    /// being exported (by any path or link to it: compared by device and inode) or a directory;
    /// the same for the sidecar of NPY counts.
    static func checkDestinations(
        _ destination: String, capture: String, options: ExportOptions,
        spelling: ExportOptionSpelling
    ) throws(ExportError) {
        try checkDestination(destination, capture: capture, replace: options.replace, spelling: spelling)
        if options.counts && options.format == .npy {
            try checkDestination(
                destination + ".json", capture: capture, replace: options.replace, spelling: spelling,
                what: "the \(spelling.name(.counts)) sidecar of '\(destination)'")
        }
    }

    /// - Parameter what: how to name `path` in the error when it is not the destination itself.
    static func checkDestination(
        _ path: String, capture: String, replace: Bool, spelling: ExportOptionSpelling,
        what: String? = nil
    ) throws(ExportError) {
        var target = stat()
        guard stat(path, &target) == 0 else { return }
        var source = stat()
        if stat(capture, &source) == 0, source.st_dev == target.st_dev, source.st_ino == target.st_ino {
            let choose = spelling == .commandLine ? "choose another --out" : "choose another destination"
            throw ExportError(.destination, "'\(path)'\(what.map { " (\($0))" } ?? "") is the capture being exported; \(choose)")
        }
        if target.st_mode & S_IFMT == S_IFDIR {
            throw ExportError(
                .destination,
                "'\(path)' is a directory; " + (spelling == .commandLine ? "--out names a file" : "the destination names a file"))
        }
        if !replace {
            throw ExportError(
                .destination, "'\(path)' exists; pass \(spelling.name(.replace)) to replace it (once the new file is complete)")
        }
    }

    /// The sources to export: the one asked for, else every source with analog data (TDMS, XDF,
    /// HDF5) or the lowest such id (NPY, CSV, WAV).
    static func sources(_ reader: CaptureReader, _ options: ExportOptions, _ spelling: ExportOptionSpelling) throws(ExportError) -> [UInt32]
    {
        let available = SourceSeries.analogSources(reader)
        if let source = options.source {
            guard available.contains(source) else {
                throw ExportError(
                    .range,
                    "\(reader.path): source \(source) has no analog data "
                        + "(sources with analog data: \(available.map(String.init).joined(separator: ", ")))")
            }
            return [source]
        }
        guard let first = available.first else { throw ExportError(.range, "\(reader.path): no analog data") }
        return options.format.holdsEverySource ? available : [first]
    }

    /// Gathers the sources `wanted`, cut to the options' time window, after checking that they fit
    /// in the memory available.
    static func gather(
        _ reader: CaptureReader, _ wanted: [UInt32], _ options: ExportOptions,
        _ spelling: ExportOptionSpelling
    ) throws(ExportError) -> [SourceSeries] {
        let selects = options.start != nil || options.duration != nil
        // With --start/--duration only the chunks holding the selected samples are read.
        var windows: [UInt32: Range<Int>] = [:]
        if selects {
            for id in wanted {
                windows[id] = SourceSeries.window(
                    reader: reader, source: id, channels: options.channels, start: options.start ?? 0,
                    duration: options.duration)
            }
        }
        try checkMemory(reader, wanted, windows, options, spelling)
        var series: [SourceSeries] = []
        for id in wanted {
            var s: SourceSeries
            do {
                s = try SourceSeries(
                    reader: reader, source: id, channels: options.channels, allowDamage: options.allowDamage, window: windows[id])
            } catch  where error.kind == .damagedRecord {
                throw ExportError(
                    .damaged,
                    "\(reader.path) is damaged (\(reader.damage.count) damaged regions); nothing written. "
                        + "Pass \(spelling.name(.allowDamage)) to export what is intact, "
                        + "or run 'tributary repair \(reader.path) --out REPAIRED.tcap'", damage: reader.damage)
            } catch {
                throw ExportError(error.detail.contains("has no channel") ? .range : error.kind == .io ? .io : .data, "\(error)")
            }
            if selects {
                do { s = try s.selecting(start: options.start ?? 0, duration: options.duration) } catch {
                    throw ExportError(.data, "\(reader.path): \(error.detail)")
                }
            }
            series.append(s)
        }
        return series
    }

    /// Export holds each source's samples in memory: refuses, before decoding anything, what would
    /// not fit rather than let the allocation fail or the system's out-of-memory killer pick a victim.
    static func checkMemory(
        _ reader: CaptureReader, _ wanted: [UInt32], _ windows: [UInt32: Range<Int>], _ options: ExportOptions,
        _ spelling: ExportOptionSpelling
    ) throws(ExportError) {
        let budget: Int?
        do { budget = try MemoryBudget.available() } catch { throw ExportError(.usage, error.description) }
        guard let budget else { return }
        let physical = !options.counts
        var needed = 0
        for id in wanted {
            guard
                let (values, perValue, isCounts) = SourceSeries.gatherSize(
                    reader: reader, source: id, channels: options.channels,
                    window: windows[id], physical: physical)
            else { continue }
            // CSV is written as one text (about 25 bytes a value) and its UTF-8 copy, beside the values
            // (and a time column); WAV converts to float64 and builds its file in memory.
            let extra = options.format == .csv ? 3 * 8 + 2 * 25 : options.format == .wav ? 2 * 8 : 0
            let (bytes, overflow) = values.multipliedReportingOverflow(by: perValue + extra)
            needed = overflow || needed.addingReportingOverflow(bytes).overflow ? .max : needed + bytes
            if needed > budget {
                let several = wanted.count > 1
                throw ExportError(
                    .memory,
                    "\(reader.path): exporting source \(id) needs about \(MemoryBudget.describe(needed)) of memory "
                        + (several ? "with the sources before it " : "")
                        + "(export holds a source's samples in memory) and \(MemoryBudget.describe(budget)) is available; "
                        + "export a part at a time (\(spelling.name(.start))/\(spelling.name(.duration)): only the chunks it needs are read), "
                        + "fewer channels (\(spelling.name(.channels)))"
                        + (several ? ", one source at a time (\(spelling.name(.source)))" : "")
                        + (isCounts && physical && options.format.storesCounts ? ", or its int16 counts (\(spelling.name(.counts)))" : "")
                        + ", or set TRIBUTARY_MEMORY_LIMIT to allow more")
            }
        }
    }

    /// Counts are asked of float sources: refused when no exported source stores int16 counts (the
    /// option would change nothing); when some do, the others are written as their values, with a warning.
    static func checkCounts(
        _ series: [SourceSeries], _ options: ExportOptions, _ spelling: ExportOptionSpelling,
        warning: (String) -> Void
    ) throws(ExportError) {
        guard options.counts else { return }
        let floats = series.filter { !$0.isCounts }
        func stored(_ s: SourceSeries) -> String { s.samples.dtype == .float64 ? "float64" : "float32" }
        if floats.count == series.count, let first = floats.first {
            let which =
                floats.count == 1
                ? "source \(first.sourceID) is stored as \(stored(first))"
                : "the sources are stored as floating-point values ("
                    + floats.map { "source \($0.sourceID) \(stored($0))" }.joined(separator: ", ") + ")"
            throw ExportError(.type, "\(spelling.name(.counts)): \(which), not int16 counts")
        }
        for s in floats {
            warning(
                "warning: \(spelling.name(.counts)): source \(s.sourceID) is stored as \(stored(s)), not int16 counts; exported as float64 values"
            )
        }
    }

    /// `align` and `dejitter`: frame times onto the recorder's clock, then smoothed. A source that no
    /// clock-offset record applies to keeps its publisher's times, with a warning.
    static func adjustTimes(
        _ series: inout [SourceSeries], reader: CaptureReader, options: ExportOptions, warning: (String) -> Void
    ) throws(ExportError) {
        let offsets = options.align ? reader.clockOffsets : []
        for k in series.indices {
            if options.align, try !ClockAlignment.align(&series[k], offsets: offsets) {
                warning("warning: source \(series[k].sourceID) has no clock-offset records; its times stay on its publisher's clock")
            }
            if options.dejitter { try ClockAlignment.dejitter(&series[k]) }
        }
    }

    /// The messages an XDF export writes as marker streams: those of the exported source with
    /// `source`, else of every source and of none (source 0); with `start` / `duration` those within
    /// the exported samples' span; with `align` their times mapped as the frames' are.
    static func messageSeries(
        _ reader: CaptureReader, _ series: [SourceSeries], _ options: ExportOptions, _ spelling: ExportOptionSpelling
    ) throws(ExportError) -> [MessageSeries] {
        var messages = try MessageSeries.gather(
            reader, sources: options.source.map { [$0] }, allowDamage: options.allowDamage, spelling: spelling)
        if options.start != nil || options.duration != nil {
            let start = series.map(\.startNs).min() ?? .min
            let end = series.map { $0.endNs }.max() ?? .max
            messages = messages.map { $0.selecting(from: start, to: end) }
        }
        if options.align {
            let offsets = reader.clockOffsets
            for k in messages.indices { try ClockAlignment.align(&messages[k], offsets: offsets) }
        }
        return messages
    }

    /// Writes `series` as the options' format to `out` (and the sidecar of NPY counts beside `destination`).
    static func write(
        _ series: [SourceSeries], messages: [MessageSeries] = [], reader: CaptureReader, options: ExportOptions,
        spelling: ExportOptionSpelling, destination: String, to out: String
    ) throws(ExportError) {
        let name = (reader.path as NSString).lastPathComponent
        do {
            switch options.format {
            case .npy:
                let data = series[0]
                // Physical units unless the counts are asked for: an int16 matrix without its scale is not a measurement.
                let samples: NPYSamples = data.isCounts && !options.counts ? .float64(data.physicalValues) : data.samples
                try NPY.write(NPYArray(channels: data.channelCount, samplesPerChannel: data.sampleCount, samples: samples), path: out)
                if options.counts { try sidecar(data).write(to: URL(fileURLWithPath: destination + ".json"), options: .atomic) }
            case .csv:
                try csv(series[0], reader: reader, timeColumn: options.timeColumn, spelling: spelling).write(to: out)
            case .wav:
                try wav(series[0]).write(to: out)
            case .hdf5:
                try FormatExport.writeHDF5(series, counts: options.counts, name: name, to: out)
            case .tdms:
                try FormatExport.tdms(series, counts: options.counts, name: name).write(to: out)
            case .xdf:
                try FormatExport.writeXDF(
                    series, messages: messages, counts: options.counts, clockOffsets: options.align ? [] : reader.clockOffsets, to: out)
            }
        } catch let error as ExportError {
            throw error
        } catch {
            throw ExportError(.io, "\(error)")
        }
    }

    /// The CSV table of a source: physical values, and with `timeColumn` a first column `time_s`, the
    /// samples' recorded times in seconds since the source's first sample (the times of
    /// `tributary_capture_times`): a part selected from 1 s on starts at 1.0, not at 0.
    static func csv(_ data: SourceSeries, reader: CaptureReader, timeColumn: Bool, spelling: ExportOptionSpelling) throws(ExportError)
        -> CSVTable
    {
        var names = data.channelNames, values = data.physicalValues, columns = data.channelCount
        if timeColumn {
            // The origin is the source's first sample, not the first one selected: its time is the first
            // analog frame's (as tributary_capture_times counts); a gather from the start begins with that frame.
            let origin =
                data.firstSampleIndex == 0 && data.damage.isEmpty
                ? data.startNs : reader.firstAnalogLayout(source: data.sourceID)?.header.timestampNs ?? data.startNs
            guard let times = data.sampleTimes(since: origin) else {
                throw ExportError(.data, "\(spelling.name(.timeColumn)) needs one sampling rate; source \(data.sourceID) has none")
            }
            names.insert("time_s", at: 0)
            values.insert(contentsOf: times, at: 0)
            columns += 1
        }
        return CSVTable(channelNames: names, channelCount: columns, values: values)
    }

    /// The WAV file of a source: int16 as 16-bit PCM counts, int32 as 32-bit PCM counts, float32 /
    /// float64 as IEEE float.
    static func wav(_ data: SourceSeries) throws(ExportError) -> WAVFile {
        guard let rate = data.rate, rate == rate.rounded(), rate >= 1, rate <= 4_294_967_295 else {
            throw ExportError(.data, "WAV needs one integer sampling rate; the configuration gives \(data.rate.map { "\($0)" } ?? "none")")
        }
        switch data.samples {
        case .int16(let v):
            return WAVFile(sampleRate: Int(rate), format: .int16, channelCount: data.channelCount, samples: v.map(Double.init))
        case .int32(let v):
            return WAVFile(sampleRate: Int(rate), format: .int32, channelCount: data.channelCount, samples: v.map(Double.init))
        case .float32(let v):
            return WAVFile(sampleRate: Int(rate), format: .float32, channelCount: data.channelCount, samples: v.map(Double.init))
        case .float64(let v): return WAVFile(sampleRate: Int(rate), format: .float64, channelCount: data.channelCount, samples: v)
        }
    }

    /// The NPY sidecar of counts: what turns the counts into physical values, and when they were taken.
    static func sidecar(_ s: SourceSeries) throws -> Data {
        let object: [String: Any] = [
            "source_id": s.sourceID, "device_name": s.deviceName, "device_type": s.deviceType,
            "channel_indexes": s.channelIndexes.map { Int($0) }, "channel_names": s.channelNames, "units": s.units,
            "scale": s.scale, "offset": s.offset, "sample_rate": s.rate as Any, "start_time_ns": s.startNs,
            "samples": s.sampleCount, "dtype": s.samples.dtype == .int32 ? "int32" : "int16", "value": "count * scale + offset",
            "gaps": s.gaps.map {
                ["first_missing_sequence": $0.firstMissingSequence, "missing_count": $0.missingCount, "time_ns": $0.timeNs]
            },
        ]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
    }

    /// Numbers the partial files of exports running at once in one process (a library may export
    /// the same destination from two threads).
    private static let partialCounter = Counter()

    private final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int {
            lock.lock()
            defer { lock.unlock() }
            value += 1
            return value
        }
    }
}
