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

    /// An NPY array as it is: float64, float32, or int16 / int32 counts (scale 1, offset 0), bit for bit.
    public init(npy: NPYArray) {
        let samples: AnalogSamples
        switch npy.samples {
        case .float64(let v): samples = .float64(v)
        case .float32(let v): samples = .float32(v)
        case .int16(let v):
            samples = .int16(counts: v, scale: Array(repeating: 1, count: npy.channels), offset: Array(repeating: 0, count: npy.channels))
        case .int32(let v):
            samples = .int32(counts: v, scale: Array(repeating: 1, count: npy.channels), offset: Array(repeating: 0, count: npy.channels))
        }
        self.init(samples: samples, channelCount: npy.channels, sampleCount: npy.samplesPerChannel)
    }

    /// A WAV file: 16-bit PCM as int16 counts with scale 1/32768 (full scale = ±1), 24- and 32-bit PCM
    /// as int32 counts (the codes, exact) with scale 1/2²³ and 1/2³¹ (full scale = ±1), float WAVs as
    /// float32 / float64.
    public init(wav: WAVFile) {
        let samples: AnalogSamples
        switch wav.format {
        case .int16:
            samples = .int16(
                counts: wav.samples.map { Int16($0) }, scale: Array(repeating: 1.0 / 32768, count: wav.channelCount),
                offset: Array(repeating: 0, count: wav.channelCount))
        case .float32: samples = .float32(wav.samples.map { Float($0) })
        case .int24, .int32:
            // The reader holds the codes as exact float64 integers within the format's range.
            let full = wav.format == .int24 ? 0x1p23 : 0x1p31
            samples = .int32(
                counts: wav.samples.map { Int32(exactly: $0) ?? 0 }, scale: Array(repeating: 1 / full, count: wav.channelCount),
                offset: Array(repeating: 0, count: wav.channelCount))
        case .float64: samples = .float64(wav.samples)
        }
        self.init(samples: samples, channelCount: wav.channelCount, sampleCount: wav.frameCount)
    }

    /// Checks that the signal fits a capture's frames (docs/PROTOCOL.md §2.4, docs/CAPTURE.md): at least
    /// one channel and one sample, at most 65,535 channels (an analog frame's and a configuration's limit),
    /// one name per channel, and names that fit one configuration frame.
    /// - Parameters:
    ///   - file: the file the signal was read from, named in the error.
    ///   - shape: how the input's shape maps to channels × samples, for the message (e.g. "NPY shape (70000, 1)").
    /// - Throws: `CaptureError.usage` saying what is out of bounds.
    public func validate(file: String, shape: String? = nil) throws(CaptureError) {
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

    /// A CSV table as float64, with its header names when it has them.
    public init(csv: CSVTable) {
        self.init(
            samples: .float64(csv.values), channelCount: csv.channelCount, sampleCount: csv.sampleCount, channelNames: csv.channelNames)
    }
}

extension ImportedSignal {
    /// Reads an NPY, WAV or CSV file (`tributary import`'s single-source formats): the signal, how its
    /// shape maps to channels × samples for `validate`'s message (NPY, CSV), and the rate the file
    /// gives (WAV).
    /// - Throws: the format's error (`FormatError`, a file that cannot be read), or `CaptureError.usage`
    ///   for a format that holds several sources (TDMS, XDF, HDF5: `FormatImport`).
    public static func read(path: String, format: InterchangeFormat) throws -> (signal: ImportedSignal, shape: String?, rate: Double?) {
        switch format {
        case .npy:
            let npy = try NPY.read(path: path)
            let shape =
                npy.isOneDimensional ? "NPY shape (\(npy.samplesPerChannel),)" : "NPY shape (\(npy.channels), \(npy.samplesPerChannel))"
            return (ImportedSignal(npy: npy), shape, nil)
        case .wav:
            let wav = try WAVFile.read(path: path)
            return (ImportedSignal(wav: wav), nil, Double(wav.sampleRate))
        case .csv:
            let csv = try CSVTable.read(path: path)
            return (
                ImportedSignal(csv: csv),
                "CSV of \(csv.channelCount) column\(csv.channelCount == 1 ? "" : "s") × \(csv.sampleCount) data row\(csv.sampleCount == 1 ? "" : "s")",
                nil
            )
        case .tdms, .xdf, .hdf5:
            throw CaptureError(.usage, file: path, "\(format) holds sources, not one signal: read it with FormatImport")
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
        let path = destination.path
        try signal.validate(file: path)
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
        let writer = try CaptureWriter(destination: destination, options: options)
        let configuration = Configuration(
            deviceName: sourceName, deviceType: "import",
            channels: (0..<signal.channelCount).map {
                ChannelConfiguration(
                    index: UInt32($0), description: signal.channelNames[$0], unit: unit, samplingRate: rate,
                    minValue: -.infinity, maxValue: .infinity)
            })
        do {
            try writer.append(Frame(encoding: .configuration(configuration), sequence: 0, timestampNs: startNs, sourceID: sourceID))
            let n = signal.sampleCount, channels = signal.channelCount
            var sequence: UInt64 = 1
            var first = 0
            let perFrame = max(1, min(samplesPerFrame, channels > 0 ? (32 << 20) / (channels * 8) : samplesPerFrame))
            while first < n {
                let count = min(perFrame, n - first)
                let header = FrameHeader(
                    kind: .analog, sequence: sequence, timestampNs: startNs + Int64((Double(first) / rate * 1e9).rounded()),
                    sourceID: sourceID)
                let frame = signal.samples.frame(
                    header: header, samplesPerChannel: n, first: first, count: count, firstSample: UInt64(first))
                try writer.append(frame)
                sequence += 1
                first += count
            }
            return try writer.close()
        } catch {
            writer.abandon()
            unlink(writer.partialPath)
            throw error
        }
    }
}
