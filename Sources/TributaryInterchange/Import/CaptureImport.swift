import Foundation
import TributaryCapture
import TributaryFormats
import TributaryWire

/// A channels × samples matrix to record as one source: what `tributary import` reads from NPY, WAV or CSV.
public struct ImportedSignal: Sendable {
    /// Channel-major samples in the format they will be recorded in.
    public var samples: AnalogSamples
    public var channelCount: Int
    public var sampleCount: Int
    /// Channel names (default "ch0", "ch1", ...).
    public var channelNames: [String]

    public init(samples: AnalogSamples, channelCount: Int, sampleCount: Int, channelNames: [String]? = nil) {
        self.samples = samples
        self.channelCount = channelCount
        self.sampleCount = sampleCount
        self.channelNames = channelNames ?? (0..<channelCount).map { "ch\($0)" }
    }

    /// Checks that the signal fits a capture's frames (docs/PROTOCOL.md §2.4, docs/CAPTURE.md): at least
    /// one channel and one sample, at most 65,535 channels (an analog frame's and a configuration's limit),
    /// one name per channel, and names that fit one configuration frame.
    /// - Parameters:
    ///   - file: the file the signal was read from, named in the error.
    ///   - shape: how the input's shape maps to channels × samples, for the message (e.g. "NPY shape (70000, 1)").
    /// - Throws: `CaptureError.usage` saying what is out of bounds.
    public func validate(file: String, shape: String? = nil) throws(CaptureError) {
        try Self.validate(channelCount: channelCount, sampleCount: sampleCount, channelNames: channelNames, file: file, shape: shape)
    }

    /// Checks a signal's shape and names (see `validate(file:shape:)`).
    static func validate(
        channelCount: Int, sampleCount: Int, channelNames: [String], file: String, shape: String?
    ) throws(CaptureError) {
        let what = shape.map { " (\($0), read as channels × samples)" } ?? ""
        guard channelCount >= 1 else { throw CaptureError(.usage, file: file, "no channels\(what); nothing to import") }
        guard channelCount <= WireLimits.maxChannels else {
            throw CaptureError(
                .usage, file: file, "\(channelCount) channels\(what); a capture's analog frame holds at most \(WireLimits.maxChannels)")
        }
        guard sampleCount >= 1 else { throw CaptureError(.usage, file: file, "no samples\(what); nothing to import") }
        guard channelNames.count == channelCount else {
            throw CaptureError(.usage, file: file, "\(channelNames.count) channel names for \(channelCount) channels")
        }
        var nameBytes = 0
        for (c, name) in channelNames.enumerated() {
            let n = name.utf8.count
            guard n <= WireLimits.maxStringLength else {
                throw CaptureError(.usage, file: file, "the name of channel \(c) is \(n) bytes; at most \(WireLimits.maxStringLength)")
            }
            nameBytes += n
        }
        // Each channel of a configuration frame takes 37 bytes plus its name and unit (PROTOCOL.md §5.1).
        guard nameBytes + channelCount * 64 <= WireLimits.maxFrameSize / 2 else {
            throw CaptureError(
                .usage, file: file,
                "the channel names take \(nameBytes) bytes; they must fit one configuration frame (\(WireLimits.maxFrameSize / 2) bytes with the rest)"
            )
        }
    }
}

/// Writes imported signals as captures and reads analog data back out of captures.
public enum CaptureImport {
    /// Records a signal as a capture: one configuration frame, then analog frames of at most
    /// `samplesPerFrame` samples, timestamps from `startNs` at `rate`.
    /// - Parameters:
    ///   - signal: the samples.
    ///   - rate: samples per second.
    ///   - sourceID: the source id (non-zero).
    ///   - sourceName: the device name in the configuration.
    ///   - unit: the channels' unit.
    ///   - path: the capture to write.
    /// - Returns: what was written.
    /// - Throws: `CaptureError`.
    @discardableResult
    public static func write(
        _ signal: ImportedSignal, rate: Double, sourceID: UInt32 = 1, sourceName: String = "import", unit: String = "V",
        startNs: Int64 = 0, samplesPerFrame: Int = 4096, to path: String,
        options: CaptureWriterOptions = CaptureWriterOptions(fsync: .none)
    ) throws(CaptureError) -> CaptureWriteSummary {
        try write(
            signal, rate: rate, sourceID: sourceID, sourceName: sourceName, unit: unit, startNs: startNs, samplesPerFrame: samplesPerFrame,
            to: CaptureDestination(path: path, replace: true), options: options)
    }

    /// Records a signal as a capture (see above) at a checked destination: the capture replaces an
    /// existing file only when it is complete, and only if the destination allows it.
    /// - Throws: `CaptureError.usage` when the signal does not fit a capture (`ImportedSignal.validate`),
    ///   its times overflow `timestamp_ns`, or the unit / source name are too long; `CaptureError.io`.
    @discardableResult
    public static func write(
        _ signal: ImportedSignal, rate: Double, sourceID: UInt32 = 1, sourceName: String = "import", unit: String = "V",
        startNs: Int64 = 0, samplesPerFrame: Int = 4096, to destination: CaptureDestination,
        options: CaptureWriterOptions = CaptureWriterOptions(fsync: .none)
    ) throws(CaptureError) -> CaptureWriteSummary {
        try write(
            SignalFile(
                channelCount: signal.channelCount, sampleCount: signal.sampleCount, channelNames: signal.channelNames,
                samples: .memory(signal.samples, sampleCount: signal.sampleCount)),
            rate: rate, sourceID: sourceID, sourceName: sourceName, unit: unit, startNs: startNs, samplesPerFrame: samplesPerFrame,
            to: destination, options: options)
    }

    /// Records a signal read from a file (`SignalFile.open`) as a capture at a checked destination,
    /// a frame's samples at a time (see above).
    /// - Throws: as above, and `CaptureError.usage` when the file cannot be read as it was when opened.
    @discardableResult
    public static func write(
        _ signal: SignalFile, rate: Double, sourceID: UInt32 = 1, sourceName: String = "import", unit: String = "V",
        startNs: Int64 = 0, samplesPerFrame: Int = 4096, to destination: CaptureDestination,
        options: CaptureWriterOptions = CaptureWriterOptions(fsync: .none)
    ) throws(CaptureError) -> CaptureWriteSummary {
        let path = destination.path
        try ImportedSignal.validate(
            channelCount: signal.channelCount, sampleCount: signal.sampleCount, channelNames: signal.channelNames, file: path, shape: nil)
        guard rate > 0, rate.isFinite else { throw CaptureError(.usage, file: path, "rate \(rate) Hz is not a positive number") }
        // A configuration holds no other rate (docs/PROTOCOL.md): a capture with one could not be read back.
        guard WireLimits.isValidSamplingRate(rate) else {
            throw CaptureError(
                .usage, file: path,
                "rate \(rate) Hz is outside what a capture's configuration holds "
                    + "(\(WireLimits.minSamplingRate) to \(WireLimits.maxSamplingRate) Hz)")
        }
        let lastTimeNs = Double(startNs) + Double(signal.sampleCount - 1) / rate * 1e9
        guard lastTimeNs.magnitude < 9.2e18 else {
            throw CaptureError(
                .usage, file: path,
                "\(signal.sampleCount) samples at \(rate) Hz last \(Double(signal.sampleCount) / rate) s: "
                    + "beyond the range of timestamp_ns (about 292 years)")
        }
        for (what, text) in [("unit", unit), ("source name", sourceName)] where text.utf8.count > 65_536 {
            throw CaptureError(.usage, file: path, "the \(what) is \(text.utf8.count) bytes; at most 65536")
        }
        let source = ImportedSource(
            sourceID: sourceID, deviceName: sourceName, deviceType: "import", channelNames: signal.channelNames,
            units: Array(repeating: unit, count: signal.channelCount), rate: rate, samples: signal.samples, sampleCount: signal.sampleCount,
            blocks: [ImportedBlock(start: 0, timestampNs: startNs)])
        let writer = try CaptureWriter(destination: destination, options: options)
        do {
            try FormatImport.forEachFrame(source, samplesPerFrame: samplesPerFrame) { frame in try writer.append(frame) }
            return try writer.close()
        } catch {
            writer.abandon()
            unlink(writer.partialPath)
            throw CaptureError.importing(error, file: path)
        }
    }
}

/// An NPY, WAV or CSV file opened for import (`tributary import`'s single-source formats): its shape,
/// and its samples read a window at a time when it is recorded.
public struct SignalFile: Sendable {
    public var channelCount: Int
    public var sampleCount: Int
    public var channelNames: [String]
    public var samples: ImportedSamples
    /// How the file's shape maps to channels × samples, for `validate`'s message (NPY, CSV).
    public var shape: String?
    /// The rate the file gives (WAV).
    public var rate: Double?

    public init(
        channelCount: Int, sampleCount: Int, channelNames: [String]? = nil, samples: ImportedSamples, shape: String? = nil,
        rate: Double? = nil
    ) {
        self.channelCount = channelCount
        self.sampleCount = sampleCount
        self.channelNames = channelNames ?? (0..<channelCount).map { "ch\($0)" }
        self.samples = samples
        self.shape = shape
        self.rate = rate
    }

    /// Checks that the signal fits a capture's frames (`ImportedSignal.validate`), naming the file and its shape.
    public func validate(file: String) throws(CaptureError) {
        try ImportedSignal.validate(
            channelCount: channelCount, sampleCount: sampleCount, channelNames: channelNames, file: file, shape: shape)
    }

    /// Opens an NPY, WAV or CSV file: its header (NPY, WAV) is read and checked, a CSV file read
    /// through once to check every field and count its rows. The samples are read when recorded:
    ///   NPY  as they are: float64, float32, or int16 / int32 counts (scale 1, offset 0), bit for bit;
    ///   WAV  16-bit PCM as int16 counts with scale 1/32768 (full scale = ±1), 24- and 32-bit PCM as
    ///        int32 counts (the codes, exact) with scale 1/2²³ and 1/2³¹, float WAVs as float32 / float64;
    ///   CSV  float64, with its header names when it has them.
    /// - Throws: the format's error (`NPYError`, `FormatError`), or `CaptureError.usage` for a format
    ///   that holds several sources (TDMS, XDF, HDF5: `FormatImport`).
    public static func open(path: String, format: InterchangeFormat) throws -> SignalFile {
        switch format {
        case .npy: return try npy(path)
        case .wav: return try wav(path)
        case .csv:
            let scan = try CSVTable.scan(path: path)
            let channels = scan.channelCount
            let shape =
                "CSV of \(channels) column\(channels == 1 ? "" : "s") × \(scan.sampleCount) data row\(scan.sampleCount == 1 ? "" : "s")"
            return SignalFile(
                channelCount: channels, sampleCount: scan.sampleCount, channelNames: scan.channelNames,
                samples: ImportedSamples(format: .float64) {
                    let stream = try CSVTable.Stream(path: path, channelCount: channels)
                    return FunctionSampleReader { count in .float64(try stream.next(count)) }
                }, shape: shape)
        case .tdms, .xdf, .hdf5:
            throw CaptureError(.usage, file: path, "\(format) holds sources, not one signal: read it with FormatImport")
        }
    }

    static func npy(_ path: String) throws -> SignalFile {
        let npy = try NPY.open(path: path)
        let channels = npy.channels, n = npy.samplesPerChannel
        let shape = npy.isOneDimensional ? "NPY shape (\(n),)" : "NPY shape (\(channels), \(n))"
        let ones = Array(repeating: 1.0, count: channels), zeros = Array(repeating: 0.0, count: channels)
        let format = npy.dtype.sampleFormat
        let samples = ImportedSamples(format: format) {
            let file = try NPY.open(path: path)
            return FunctionSampleReader(total: n) { first, count in
                switch try file.read(first: first, count: count) {
                case .float64(let v): return .float64(v)
                case .float32(let v): return .float32(v)
                case .int16(let v): return .int16(counts: v, scale: ones, offset: zeros)
                case .int32(let v): return .int32(counts: v, scale: ones, offset: zeros)
                }
            }
        }
        return SignalFile(channelCount: channels, sampleCount: n, samples: samples, shape: shape)
    }

    static func wav(_ path: String) throws -> SignalFile {
        let layout = try WAVFile.Stream(path: path).layout
        let channels = layout.channelCount, n = layout.frameCount
        let format: SampleFormat
        switch layout.format {
        case .int16: format = .int16
        case .float32: format = .float32
        case .int24, .int32: format = .int32
        case .float64: format = .float64
        }
        let samples = ImportedSamples(format: format) {
            let file = try WAVFile.Stream(path: path)
            return FunctionSampleReader(total: n) { first, count in
                let v = try file.read(first: first, count: count)
                switch layout.format {
                case .int16:
                    return .int16(
                        counts: v.map { Int16($0) }, scale: Array(repeating: 1.0 / 32768, count: channels),
                        offset: Array(repeating: 0, count: channels))
                case .float32: return .float32(v.map { Float($0) })
                case .int24, .int32:
                    // The reader holds the codes as exact float64 integers within the format's range.
                    let full = layout.format == .int24 ? 0x1p23 : 0x1p31
                    return .int32(
                        counts: v.map { Int32(exactly: $0) ?? 0 }, scale: Array(repeating: 1 / full, count: channels),
                        offset: Array(repeating: 0, count: channels))
                case .float64: return .float64(v)
                }
            }
        }
        return SignalFile(channelCount: channels, sampleCount: n, samples: samples, rate: Double(layout.sampleRate))
    }
}
