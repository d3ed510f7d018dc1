import TributaryWire

/// The analysis of one source of a frame stream.
public struct SourceAnalysis: Sendable {
    public var id: UInt32
    /// The device name from the source's configuration, or "".
    public var name: String
    public var sampleRate: Double
    /// Reports in the order the channels first appeared; `index` is the configuration index.
    public var channels: [ChannelReport]
    /// Units by configuration index, from the configuration.
    public var units: [UInt32: String]
    /// Channel names (descriptions) by configuration index, from the configuration.
    public var channelNames: [UInt32: String] = [:]
    /// Analog frames whose first sample did not follow the previous frame's last (lost or skipped data).
    public var discontinuities: Int
}

/// Analyses a stream of frames of any length — from a capture, a subscription or an NPY file cut
/// into frames — through filter → statistics / Welch / spectrum / measurements, with memory bounded
/// independently of the stream's length:
/// - statistics are streamed and merged (`StatisticsAccumulator`);
/// - Welch with mean averaging is streamed (`StreamingWelch`), one segment per channel;
/// - the averaged spectrum is streamed block by block;
/// - measurements (tone, THD, SINAD, …) use the first `measurementLength` samples of each channel;
/// - Welch with median averaging needs every segment and keeps up to `recordLimit` samples.
public final class FrameAnalysis {
    public let request: AnalysisRequest
    /// Samples per channel kept for median Welch (which needs every segment).
    public let recordLimit: Int
    /// Samples per channel the measurements use (the first ones).
    public let measurementLength: Int
    /// Filters applied to every frame before analysis (as a subscriber with these filters would see it).
    public let filters: SubscriberFilters
    /// Overrides the sample rate of every source (for data without configuration, e.g. NPY files).
    public let sampleRateOverride: Double?

    private var sources: [UInt32: SourceState] = [:]
    private var sourceOrder: [UInt32] = []
    private var scratch: [Double] = []

    /// - Parameters:
    ///   - request: what to compute.
    ///   - filters: applied to each frame first (default: none).
    ///   - sampleRate: overrides the configured rate of every source; required when the stream has
    ///     no configuration frames.
    ///   - measurementLength: samples per channel the measurements use, from the start (default 2^20:
    ///     8 MiB per channel, far more than a tone or THD needs for its resolution).
    ///   - recordLimit: samples per channel kept for median Welch (default 2^24).
    public init(
        request: AnalysisRequest, filters: SubscriberFilters = SubscriberFilters(), sampleRate: Double? = nil,
        measurementLength: Int = 1 << 20, recordLimit: Int = 1 << 24
    ) {
        self.request = request
        self.filters = filters
        sampleRateOverride = sampleRate
        self.measurementLength = measurementLength
        self.recordLimit = max(recordLimit, measurementLength)
    }

    /// Consumes one frame: configurations name sources and give their rates; analog frames are
    /// filtered and analysed; other kinds are ignored.
    ///
    /// - Throws: `WireError` for a malformed frame, `SpectralParameterError` when the data cannot
    ///   satisfy the request (no sample rate, median Welch over more than `recordLimit` samples).
    public func add(_ frame: Frame) throws {
        switch frame.header.kind {
        case .configuration:
            guard case .configuration(let configuration) = try frame.payload() else { return }
            source(frame.header.sourceID).configure(configuration)
        case .analog:
            try filters.outputs(for: frame) { filtered in try self.analyse(filtered.analog()) }
        default:
            break
        }
    }

    private func source(_ id: UInt32) -> SourceState {
        if let state = sources[id] { return state }
        let state = SourceState(id: id)
        sources[id] = state
        sourceOrder.append(id)
        return state
    }

    private func analyse(_ view: AnalogView) throws {
        let state = source(view.header.sourceID)
        state.noteFirstSample(view.firstSample, count: view.sampleCount)
        if scratch.count < view.sampleCount { scratch = [Double](repeating: 0, count: view.sampleCount) }
        for row in 0..<view.channelCount {
            let index = view.channelIndex(row)
            let channel = try state.channel(
                index, filterID: view.header.filterID, request: request,
                sampleRate: sampleRateOverride ?? state.sampleRate(forChannelIndex: index),
                limits: (measurementLength, recordLimit))
            if view.format == .float64 {
                // Already physical values: analysed where they lie.
                try view.withSamples(Double.self, channel: row) { samples throws in try channel.add(samples) }
                continue
            }
            try scratch.withUnsafeMutableBufferPointer { buffer in
                let values = UnsafeMutableBufferPointer(rebasing: buffer[0..<view.sampleCount])
                convert(view, row: row, into: values)
                try channel.add(UnsafeBufferPointer(values))
            }
        }
    }

    /// The analyses, one per source with analog data, in order of appearance.
    ///
    /// - Throws: `SpectralParameterError` or `FFTError` when a request cannot be met by the data
    ///   (a failed measurement is reported in `ChannelReport.measurementError` instead).
    public func finish() throws -> [SourceAnalysis] {
        try sourceOrder.compactMap { id in
            let state = sources[id]!
            // Sources whose data never reached the analysis (filtered out, or configuration only) are left out.
            guard !state.order.isEmpty else { return nil }
            var reports = try state.order.map { try state.channels[$0]!.report() }
            if let cross = request.crossChannel {
                try crossChannel(cross, state, &reports)
            }
            return SourceAnalysis(
                id: id, name: state.name, sampleRate: sampleRateOverride ?? state.firstRate ?? 0,
                channels: reports,
                units: state.units, channelNames: state.channelNames, discontinuities: state.discontinuities)
        }
    }
}

/// Converts one row of an analog view to physical values (int16 counts × scale + offset).
extension FrameAnalysis {
    /// The coherence and H1/H2 of every channel of a source against its reference channel (the records
    /// of unequal lengths are cut to the shorter, the segment to the record as scipy shortens it).
    fileprivate func crossChannel(_ cross: CrossChannelRequest, _ state: SourceState, _ reports: inout [ChannelReport]) throws {
        guard let referenceKey = state.order.first(where: { Int($0.index) == cross.reference }) else {
            throw SpectralParameterError(
                "reference channel",
                "\(cross.reference) is not in source \(state.id) (channels \(state.order.map { String($0.index) }.joined(separator: ", ")))"
            )
        }
        let reference = state.channels[referenceKey]!
        for (i, key) in state.order.enumerated() where key != referenceKey {
            let channel = state.channels[key]!
            let n = min(reference.record.count, channel.record.count)
            guard n > 0 else { continue }
            var c = cross.configuration
            if c.segmentLength > n { c.segmentLength = n }
            let overlap = c.overlap ?? c.segmentLength / 2
            let segments = SegmentParameters(
                window: Window.shared(c.window, count: c.segmentLength).values,
                overlap: min(overlap, c.segmentLength - 1), detrend: c.detrend, rigor: c.rigor)
            let configuration = CrossSpectralConfiguration(segments: segments, average: c.average, scaling: .density)
            let spectra = try CrossSpectralEstimator(configuration: configuration, sampleRate: channel.sampleRate)
                .estimate(Array(reference.record[..<n]), Array(channel.record[..<n]))
            reports[i].crossChannel = CrossChannelReport(
                reference: cross.reference, segmentLength: c.segmentLength,
                h1: TransferEstimate(spectra: spectra, estimator: .h1),
                h2: TransferEstimate(spectra: spectra, estimator: .h2))
        }
    }
}

func convert(_ view: AnalogView, row: Int, into out: UnsafeMutableBufferPointer<Double>) {
    view.copyValues(channel: row, into: out)
}

private struct ChannelKey: Hashable {
    var index: UInt32
    var filterID: UInt32
}

private final class SourceState {
    let id: UInt32
    var name = ""
    var rates: [UInt32: Double] = [:]
    var units: [UInt32: String] = [:]
    var channelNames: [UInt32: String] = [:]
    /// Peak amplitude of a full-scale sine per channel (half its configured range).
    var fullScales: [UInt32: Double] = [:]
    var firstRate: Double?
    var channels: [ChannelKey: ChannelState] = [:]
    var order: [ChannelKey] = []
    var nextSample: UInt64?
    var discontinuities = 0

    init(id: UInt32) { self.id = id }

    func configure(_ configuration: Configuration) {
        name = configuration.deviceName
        for c in configuration.channels {
            rates[c.index] = c.samplingRate
            units[c.index] = c.unit
            channelNames[c.index] = c.description
            let half = (c.maxValue - c.minValue) / 2
            if half > 0, half.isFinite { fullScales[c.index] = half }
        }
        firstRate = firstRate ?? configuration.channels.first?.samplingRate
    }

    func sampleRate(forChannelIndex index: UInt32) throws -> Double {
        if let rate = rates[index] ?? firstRate, rate > 0, rate.isFinite { return rate }
        throw SpectralParameterError(
            "sample rate", "source \(id) has no configuration giving the rate of channel \(index); give the rate explicitly")
    }

    func noteFirstSample(_ first: UInt64, count: Int) {
        if let expected = nextSample, expected != first { discontinuities += 1 }
        nextSample = first &+ UInt64(count)
    }

    func channel(
        _ index: UInt32, filterID: UInt32, request: AnalysisRequest, sampleRate: Double,
        limits: (measurement: Int, record: Int)
    ) throws -> ChannelState {
        let key = ChannelKey(index: index, filterID: filterID)
        if let state = channels[key] { return state }
        let state = try ChannelState(
            index: index, request: request, sampleRate: sampleRate,
            measurementLength: limits.measurement, recordLimit: limits.record)
        state.fullScale = request.fullScale ?? fullScales[index]
        channels[key] = state
        order.append(key)
        return state
    }
}

/// The streaming analysis of one channel.
private final class ChannelState {
    let index: UInt32
    let request: AnalysisRequest
    let sampleRate: Double
    let recordLimit: Int
    let measurementLength: Int
    /// Peak amplitude of a full-scale sine, when known.
    var fullScale: Double?
    var count = 0
    var statistics = StatisticsAccumulator()
    let welch: StreamingWelch?
    let spectrum: SpectrumAnalyzer?
    var averager: SpectrumAverager?
    var spectrumBlock: [Double] = []
    /// The first samples, for measurements, median Welch and records shorter than a Welch segment.
    var record: [Double] = []
    let recordCapacity: Int

    init(index: UInt32, request: AnalysisRequest, sampleRate: Double, measurementLength: Int, recordLimit: Int) throws {
        self.index = index
        self.request = request
        self.sampleRate = sampleRate
        self.recordLimit = recordLimit
        self.measurementLength = measurementLength
        if let w = request.welch, w.average == .mean {
            welch = try StreamingWelch(configuration: w, sampleRate: sampleRate, channelCount: 1)
        } else {
            welch = nil
        }
        if let s = request.spectrum {
            spectrum = try SpectrumAnalyzer(count: s.length, sampleRate: sampleRate, window: s.window)
            averager = SpectrumAverager(mode: s.mode)
            spectrumBlock.reserveCapacity(s.length)
        } else {
            spectrum = nil
        }
        if request.welch?.average == .median || request.spectrogram != nil || request.crossChannel != nil {
            recordCapacity = recordLimit
        } else if !request.measurements.isEmpty {
            recordCapacity = max(measurementLength, request.welch?.segmentLength ?? 0)
        } else if let w = request.welch {
            recordCapacity = w.segmentLength  // a record shorter than one segment is analysed whole, as scipy does
        } else {
            recordCapacity = 0
        }
    }

    func add(_ x: UnsafeBufferPointer<Double>) throws {
        count += x.count
        if request.statistics { statistics.add(x) }
        welch?.add(block: x, samplesPerChannel: x.count)
        if let spectrum, let length = request.spectrum?.length {
            var at = 0
            while at < x.count {
                let take = min(length - spectrumBlock.count, x.count - at)
                spectrumBlock.append(contentsOf: x[at..<(at + take)])
                at += take
                if spectrumBlock.count == length {
                    averager!.add(spectrum.spectrum(spectrumBlock))
                    spectrumBlock.removeAll(keepingCapacity: true)
                }
            }
        }
        if record.count < recordCapacity {
            record.append(contentsOf: x[0..<min(x.count, recordCapacity - record.count)])
        } else if request.welch?.average == .median, x.count > 0 {
            throw SpectralParameterError(
                "average", "median Welch keeps every sample and channel \(index) has more than \(recordLimit); use mean averaging")
        } else if request.spectrogram != nil || request.crossChannel != nil, x.count > 0 {
            throw SpectralParameterError(
                "signal",
                "spectrograms, coherence and transfer functions keep every sample and channel \(index) has more than \(recordLimit)")
        }
    }

    func report() throws -> ChannelReport {
        var report = ChannelReport(index: Int(index), samples: count)
        if request.statistics, count > 0 { report.statistics = statistics.statistics }
        if let w = request.welch {
            if let welch, welch.segments > 0 {
                report.welch = welch.estimate(channel: 0)
            } else if !record.isEmpty {
                report.welch = try WelchEstimator(configuration: w, sampleRate: sampleRate).estimate(record)
            }
        }
        if let s = request.spectrum {
            guard let average = averager?.average else {
                throw SpectralParameterError(
                    "spectrum length", "\(s.length) needs at least that many samples; channel \(index) has \(count)")
            }
            report.spectrum = AveragedSpectrum(
                frequencies: average.frequencies, amplitudeRMS: average.amplitude(.rms),
                averages: averager!.count, window: s.window)
        }
        if var c = request.spectrogram, !record.isEmpty {
            // scipy's spectrogram overlaps segments by an eighth of the (shortened) segment by default.
            if c.overlap == nil { c.overlap = min(c.segmentLength, record.count) / 8 }
            report.spectrogram = try Spectrogram(record, sampleRate: sampleRate, configuration: c)
        }
        if !request.measurements.isEmpty {
            let measured = record.count > measurementLength ? Array(record[..<measurementLength]) : record
            try report.measure(measured, sampleRate: sampleRate, request: request, fullScale: fullScale)
        }
        return report
    }
}
