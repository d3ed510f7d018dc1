/// The measurements an analysis can ask for.
public enum AnalysisMeasurement: String, Sendable, CaseIterable {
    case tone, thd, thdn, sinad, snr, enob, sfdr
}

/// An averaged amplitude spectrum request: blocks of `length` samples, windowed, RMS-averaged (NI linear).
public struct SpectrumRequest: Sendable, Equatable {
    /// Block (FFT) length.
    public var length: Int
    /// The window.
    public var window: WindowKind
    /// Averaging mode over the record's complete blocks.
    public var mode: SpectrumAveragingMode

    public init(length: Int, window: WindowKind = .hann, mode: SpectrumAveragingMode = .rms) {
        self.length = length
        self.window = window
        self.mode = mode
    }
}

/// Coherence or transfer functions of every channel of a source against one of its channels.
public struct CrossChannelRequest: Sendable, Equatable {
    /// The reference (input) channel's index.
    public var reference: Int
    /// H1 and H2 too (not only the coherence).
    public var transfer: Bool
    /// Window, overlap, detrend and average of the cross-spectra (scaling is density).
    public var configuration: WelchConfiguration

    public init(reference: Int, transfer: Bool, configuration: WelchConfiguration = WelchConfiguration()) {
        self.reference = reference
        self.transfer = transfer
        self.configuration = configuration
    }
}

/// A channel's coherence and transfer functions against the reference channel.
public struct CrossChannelReport: Sendable {
    /// The reference channel's index.
    public var reference: Int
    /// The segment length used (shortened to the record as scipy does).
    public var segmentLength: Int
    /// H1 = Pxy / Pxx with the coherence.
    public var h1: TransferEstimate
    /// H2 = Pyy / Pyx (its coherence is h1's).
    public var h2: TransferEstimate
}

/// What to compute for each channel: the library-level form of `tributary analyze`'s options, so
/// that files, captures and live streams are analysed by the same code.
public struct AnalysisRequest: Sendable, Equatable {
    /// Compute `Statistics`.
    public var statistics: Bool
    /// Compute a Welch PSD with these parameters.
    public var welch: WelchConfiguration?
    /// Compute an averaged amplitude spectrum.
    public var spectrum: SpectrumRequest?
    /// The tone/distortion measurements wanted.
    public var measurements: Set<AnalysisMeasurement>
    /// Parameters of the measurements.
    public var measurement: MeasurementConfiguration
    /// Peak amplitude of a full-scale sine for the full-scale readings (ENOB_fs, dBFS); nil takes it
    /// from each channel's configured range (half of max − min).
    public var fullScale: Double?
    /// Compute a spectrogram (scipy's `spectrogram`, psd mode) of each channel with these parameters.
    public var spectrogram: WelchConfiguration?
    /// Compute the coherence (and with `transfer` the H1 and H2 estimates) of each channel against a reference channel.
    public var crossChannel: CrossChannelRequest?

    public init(
        statistics: Bool = false, welch: WelchConfiguration? = nil, spectrum: SpectrumRequest? = nil,
        measurements: Set<AnalysisMeasurement> = [], measurement: MeasurementConfiguration = MeasurementConfiguration(),
        fullScale: Double? = nil
    ) {
        self.fullScale = fullScale
        self.statistics = statistics
        self.welch = welch
        self.spectrum = spectrum
        self.measurements = measurements
        self.measurement = measurement
    }
}

/// One channel's samples, in the type they were stored in (no copy).
public enum ChannelSamples {
    case float64(UnsafeBufferPointer<Double>)
    case float32(UnsafeBufferPointer<Float>)
    /// Raw counts times `scale` give the physical value.
    case int16(UnsafeBufferPointer<Int16>, scale: Double)

    /// Samples in the channel.
    public var count: Int {
        switch self {
        case .float64(let b): b.count
        case .float32(let b): b.count
        case .int16(let b, _): b.count
        }
    }

    /// The samples converted to double (physical values).
    public func doubles() -> [Double] {
        switch self {
        case .float64(let b): Array(b)
        case .float32(let b): b.map(Double.init)
        case .int16(let b, let scale): b.map { Double($0) * scale }
        }
    }
}

/// An RMS-, vector- or peak-averaged amplitude spectrum.
public struct AveragedSpectrum: Sendable, Equatable {
    /// Bin frequencies, Hz.
    public var frequencies: [Double]
    /// RMS amplitude per bin (DC: its value).
    public var amplitudeRMS: [Double]
    /// Number of blocks averaged.
    public var averages: Int
    /// The window.
    public var window: WindowKind
}

/// The results for one channel; a field is nil when it was not requested.
public struct ChannelReport: Sendable {
    /// Channel index within its source.
    public var index: Int
    /// Samples analysed.
    public var samples: Int
    public var statistics: Statistics?
    public var welch: PowerSpectralDensity?
    public var spectrum: AveragedSpectrum?
    public var tone: ToneMeasurement?
    public var distortion: DistortionMeasurement?
    /// The distortion readings referred to the channel's full scale (its configured range, or the
    /// request's `fullScale`), when one is known.
    public var fullScale: FullScaleReadings?
    /// Why the measurements may be biased by the setup (`SpectralMeasurements.setupWarnings`).
    public var measurementWarnings: [String] = []
    /// Why requested measurements are missing (e.g. no tone in the data), or nil.
    public var measurementError: String?
    /// The spectrogram (`AnalysisRequest.spectrogram`).
    public var spectrogram: Spectrogram?
    /// Coherence and transfer functions against the reference channel (not for the reference itself).
    public var crossChannel: CrossChannelReport?
}

extension ChannelReport {
    /// The single-tone and distortion measurements `request` asks for, of `values`, with the
    /// distortion referred to `fullScale` when known; a measurement that fails (no tone in the data)
    /// is reported in `measurementError`.
    /// - Throws: the errors of `SpectralMeasurements` other than `MeasurementError`.
    mutating func measure(_ values: [Double], sampleRate: Double, request: AnalysisRequest, fullScale: Double?) throws {
        do {
            let m = try SpectralMeasurements(values, sampleRate: sampleRate, configuration: request.measurement)
            let tone = try m.singleTone()
            if request.measurements.contains(.tone) { self.tone = tone }
            measurementWarnings = m.setupWarnings(for: tone, samples: values)
            if !request.measurements.subtracting([.tone]).isEmpty {
                let distortion = try m.distortion()
                self.distortion = distortion
                if let fullScale, distortion.fundamental.amplitude > 0 {
                    self.fullScale = distortion.referred(toFullScale: fullScale)
                }
            }
        } catch let error as MeasurementError {
            measurementError = error.description
        }
    }
}

/// Runs an `AnalysisRequest` on channels; keeps FFT plans and scratch between channels (one per thread).
public final class ChannelAnalyzer {
    /// The request.
    public let request: AnalysisRequest
    /// Sampling rate in Hz.
    public let sampleRate: Double
    private let welchEstimator: WelchEstimator?

    /// Creates an analyzer.
    /// - Throws: `SpectralParameterError` for a bad sample rate.
    public init(request: AnalysisRequest, sampleRate: Double) throws {
        guard sampleRate > 0, sampleRate.isFinite else {
            throw SpectralParameterError("sample rate", "must be positive and finite, not \(sampleRate)")
        }
        self.request = request
        self.sampleRate = sampleRate
        welchEstimator = try request.welch.map { try WelchEstimator(configuration: $0, sampleRate: sampleRate) }
    }

    /// Analyses one channel.
    /// - Throws: `SpectralParameterError` or `FFTError` for parameters the data cannot satisfy
    ///   (a failed tone measurement is reported in `measurementError` instead).
    public func analyze(_ samples: ChannelSamples, index: Int) throws -> ChannelReport {
        var report = ChannelReport(index: index, samples: samples.count)
        var doubles: [Double]?
        func asDoubles() -> [Double] {
            if let doubles { return doubles }
            let d = samples.doubles()
            doubles = d
            return d
        }
        if request.statistics {
            var accumulator = StatisticsAccumulator()
            switch samples {
            case .float64(let b): accumulator.add(b)
            case .float32(let b): accumulator.add(b)
            case .int16(let b, let scale): accumulator.add(b, scale: scale)
            }
            report.statistics = accumulator.statistics
        }
        if let welchEstimator {
            switch samples {
            case .float64(let b): report.welch = try welchEstimator.estimate(b)
            case .float32(let b): report.welch = try welchEstimator.estimate(b)
            case .int16: report.welch = try asDoubles().withUnsafeBufferPointer { try welchEstimator.estimate($0) }
            }
        }
        if let s = request.spectrum {
            report.spectrum = try averagedSpectrum(asDoubles(), s)
        }
        if !request.measurements.isEmpty {
            try report.measure(asDoubles(), sampleRate: sampleRate, request: request, fullScale: request.fullScale)
        }
        return report
    }

    func averagedSpectrum(_ x: [Double], _ s: SpectrumRequest) throws -> AveragedSpectrum {
        guard s.length >= 1, x.count >= s.length else {
            throw SpectralParameterError("spectrum length", "\(s.length) needs at least that many samples; the channel has \(x.count)")
        }
        let analyzer = try SpectrumAnalyzer(count: s.length, sampleRate: sampleRate, window: s.window)
        var averager = SpectrumAverager(mode: s.mode)
        x.withUnsafeBufferPointer { b in
            for block in 0..<(x.count / s.length) {
                averager.add(analyzer.spectrum(UnsafeBufferPointer(rebasing: b[(block * s.length)..<((block + 1) * s.length)])))
            }
        }
        let average = averager.average!
        return AveragedSpectrum(
            frequencies: average.frequencies, amplitudeRMS: average.amplitude(.rms),
            averages: averager.count, window: s.window)
    }
}
