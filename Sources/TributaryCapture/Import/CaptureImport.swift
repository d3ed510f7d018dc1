import Foundation
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

    /// An NPY array as it is: float64, float32, or int16 counts (scale 1, offset 0), bit for bit.
    public init(npy: NPYArray) {
        let samples: AnalogSamples
        switch npy.samples {
        case .float64(let v): samples = .float64(v)
        case .float32(let v): samples = .float32(v)
        case .int16(let v):
            samples = .int16(counts: v, scale: Array(repeating: 1, count: npy.channels), offset: Array(repeating: 0, count: npy.channels))
        }
        self.init(samples: samples, channelCount: npy.channels, sampleCount: npy.samplesPerChannel)
    }

    /// A WAV file: 16-bit PCM as int16 counts with scale 1/32768 (full scale = ±1), float WAVs as float32 /
    /// float64, 24- and 32-bit PCM as float64 integer codes (exact).
    public init(wav: WAVFile) {
        let samples: AnalogSamples
        switch wav.format {
        case .int16:
            samples = .int16(counts: wav.samples.map { Int16($0) }, scale: Array(repeating: 1.0 / 32768, count: wav.channelCount),
                             offset: Array(repeating: 0, count: wav.channelCount))
        case .float32: samples = .float32(wav.samples.map { Float($0) })
        case .float64, .int24, .int32: samples = .float64(wav.samples)
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
            throw CaptureError(.usage, file: file, "\(channelCount) channels\(what); a capture's analog frame holds at most \(WireLimits.maxChannels)")
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
            throw CaptureError(.usage, file: file, "the channel names take \(nameBytes) bytes; they must fit one configuration frame (\(WireLimits.maxFrameSize / 2) bytes with the rest)")
        }
    }

    /// A CSV table as float64, with its header names when it has them.
    public init(csv: CSVTable) {
        self.init(samples: .float64(csv.values), channelCount: csv.channelCount, sampleCount: csv.sampleCount, channelNames: csv.channelNames)
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
    public static func write(_ signal: ImportedSignal, rate: Double, sourceID: UInt32 = 1, sourceName: String = "import", unit: String = "V",
                             startNs: Int64 = 0, samplesPerFrame: Int = 4096, to path: String,
                             options: CaptureWriterOptions = CaptureWriterOptions(fsync: .none)) throws(CaptureError) -> CaptureWriteSummary {
        try write(signal, rate: rate, sourceID: sourceID, sourceName: sourceName, unit: unit, startNs: startNs, samplesPerFrame: samplesPerFrame,
                  to: CaptureDestination(path: path, replace: true), options: options)
    }

    /// Records a signal as a capture (see above) at a checked destination: the capture replaces an
    /// existing file only when it is complete, and only if the destination allows it.
    /// - Throws: `CaptureError.usage` when the signal does not fit a capture (`ImportedSignal.validate`),
    ///   its times overflow `timestamp_ns`, or the unit / source name are too long; `CaptureError.io`.
    @discardableResult
    public static func write(_ signal: ImportedSignal, rate: Double, sourceID: UInt32 = 1, sourceName: String = "import", unit: String = "V",
                             startNs: Int64 = 0, samplesPerFrame: Int = 4096, to destination: CaptureDestination,
                             options: CaptureWriterOptions = CaptureWriterOptions(fsync: .none)) throws(CaptureError) -> CaptureWriteSummary {
        let path = destination.path
        try signal.validate(file: path)
        guard rate > 0, rate.isFinite else { throw CaptureError(.usage, file: path, "rate \(rate) Hz is not a positive number") }
        let lastTimeNs = Double(startNs) + Double(signal.sampleCount - 1) / rate * 1e9
        guard lastTimeNs.magnitude < 9.2e18 else {
            throw CaptureError(.usage, file: path, "\(signal.sampleCount) samples at \(rate) Hz last \(Double(signal.sampleCount) / rate) s: "
                               + "beyond the range of timestamp_ns (about 292 years)")
        }
        for (what, text) in [("unit", unit), ("source name", sourceName)] where text.utf8.count > 65_536 {
            throw CaptureError(.usage, file: path, "the \(what) is \(text.utf8.count) bytes; at most 65536")
        }
        let writer = try CaptureWriter(destination: destination, options: options)
        let configuration = Configuration(
            deviceName: sourceName, deviceType: "import",
            channels: (0..<signal.channelCount).map {
                ChannelConfiguration(index: UInt32($0), description: signal.channelNames[$0], unit: unit, samplingRate: rate,
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
                let header = FrameHeader(kind: .analog, sequence: sequence, timestampNs: startNs + Int64((Double(first) / rate * 1e9).rounded()),
                                         sourceID: sourceID)
                let frame = signal.samples.frame(header: header, samplesPerChannel: n, first: first, count: count, firstSample: UInt64(first))
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

/// The analog data of one source of a capture, gathered channel-major: what `tributary export` writes.
public struct ExtractedAnalog: Sendable {
    public var sourceID: UInt32
    /// The configuration recorded for the source, if any.
    public var configuration: Configuration?
    /// The configuration index of each row.
    public var channelIndexes: [UInt32]
    public var sampleCount: Int
    /// The samples, channel-major, in the recorded format (int16 as counts).
    public var samples: NPYSamples
    /// int16 rows: value = count × scale + offset (from the first frame; every frame must agree).
    public var scale: [Double]
    public var offset: [Double]
    /// Everything the reader found damaged while opening the capture and reading the source (empty
    /// unless `allowDamage`: otherwise damage is an error).
    public var damage: [CaptureDamage]

    /// The sampling rate of the selected channels from the configuration (nil when unknown or mixed).
    public var rate: Double? {
        guard let configuration else { return nil }
        let rates = Set(channelIndexes.compactMap { i in configuration.channels.first { $0.index == i }?.samplingRate })
        return rates.count == 1 ? rates.first : nil
    }

    /// Values as float64 (int16 counts scaled), channel-major.
    public var physicalValues: [Double] {
        switch samples {
        case .float64(let v): return v
        case .float32(let v): return v.map(Double.init)
        case .int16(let v):
            var out = [Double](repeating: 0, count: v.count)
            for c in 0..<channelIndexes.count {
                for s in 0..<sampleCount { out[c * sampleCount + s] = Double(v[c * sampleCount + s]) * scale[c] + offset[c] }
            }
            return out
        }
    }

    /// Gathers every analog frame of `source` (in order) for the channels `channels` (configuration
    /// indexes; nil = all recorded rows).
    /// - Parameter allowDamage: gather what is intact when the capture is damaged (the damage is then in
    ///   `damage`) instead of failing.
    /// - Throws: `CaptureError.usage` when the frames disagree in channels, format or int16 scaling,
    ///   when a channel is missing, or `.damagedRecord` when the reader found any damage — while opening
    ///   the capture (a torn tail, unreadable bytes, a duplicate record, a damaged footer or header) or
    ///   in a record read for the source, its configuration included (exporting a hole silently would be
    ///   wrong): the error names the first damaged offset, `reader.damage` lists them all.
    public init(reader: CaptureReader, source: UInt32, channels: [UInt32]? = nil, allowDamage: Bool = false) throws(CaptureError) {
        sourceID = source
        configuration = reader.configuration(source: source)
        var rows: [Int] = []
        var indexes: [UInt32]?
        var format: SampleFormat?
        var f64: [Double] = [], f32: [Float] = [], i16: [Int16] = []
        var perChannel: [[Double]] = [], perChannel32: [[Float]] = [], perChannel16: [[Int16]] = []
        var scale: [Double] = [], offset: [Double] = []
        var problem: CaptureError?
        let path = reader.path
        reader.forEachAnalogBlock(source: source) { _, view in
            guard problem == nil else { return }
            let viewIndexes = view.channelIndexes
            if indexes == nil {
                indexes = viewIndexes
                format = view.format
                if let wanted = channels {
                    for w in wanted {
                        guard let r = viewIndexes.firstIndex(of: w) else {
                            problem = CaptureError(.usage, file: path, "source \(source) has no channel \(w) (recorded: \(viewIndexes))")
                            return
                        }
                        rows.append(r)
                    }
                } else {
                    rows = Array(0..<viewIndexes.count)
                }
                scale = rows.map { view.scale($0) }
                offset = rows.map { view.offset($0) }
                perChannel = Array(repeating: [], count: rows.count)
                perChannel32 = Array(repeating: [], count: rows.count)
                perChannel16 = Array(repeating: [], count: rows.count)
            }
            guard viewIndexes == indexes, view.format == format, rows.map({ view.scale($0) }) == scale, rows.map({ view.offset($0) }) == offset else {
                problem = CaptureError(.usage, file: path, "the analog frames of source \(source) change channels, format or scaling; cannot export one matrix")
                return
            }
            for (k, r) in rows.enumerated() {
                switch view.format {
                case .float64: view.withSamples(Double.self, channel: r) { perChannel[k].append(contentsOf: $0) }
                case .float32: view.withSamples(Float.self, channel: r) { perChannel32[k].append(contentsOf: $0) }
                case .int16: view.withSamples(Int16.self, channel: r) { perChannel16[k].append(contentsOf: $0) }
                }
            }
        }
        if let problem { throw problem }
        damage = reader.damage
        if let d = damage.first, !allowDamage {
            throw CaptureError(.damagedRecord, file: path, offset: d.offset,
                               "\(d.reason)" + (damage.count > 1 ? " (and \(damage.count - 1) more damaged regions)" : ""))
        }
        guard let indexes, let format else { throw CaptureError(.usage, file: path, "source \(source) has no analog data") }
        channelIndexes = rows.map { indexes[$0] }
        self.scale = scale
        self.offset = offset
        switch format {
        case .float64:
            f64 = perChannel.flatMap { $0 }
            sampleCount = perChannel.first?.count ?? 0
            samples = .float64(f64)
        case .float32:
            f32 = perChannel32.flatMap { $0 }
            sampleCount = perChannel32.first?.count ?? 0
            samples = .float32(f32)
        case .int16:
            i16 = perChannel16.flatMap { $0 }
            sampleCount = perChannel16.first?.count ?? 0
            samples = .int16(i16)
        }
    }
}
