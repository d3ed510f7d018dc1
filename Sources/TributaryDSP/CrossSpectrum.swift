import Foundation

/// The parameters of a cross-spectral estimate (`scipy.signal.csd`, `welch`, `coherence`).
public struct CrossSpectralConfiguration: Sendable, Equatable {
    /// Window, overlap, nfft, detrend.
    public var segments: SegmentParameters
    /// Mean or median of the segments' products (the median of the real and imaginary parts apart, as scipy's).
    public var average: WelchAverage
    /// Density (unit^2/Hz) or spectrum (unit^2).
    public var scaling: SpectralScaling
    /// All nfft bins (scipy's `return_onesided=False`), else the one-sided nfft / 2 + 1 with doubled powers.
    public var twoSided: Bool

    public init(segments: SegmentParameters, average: WelchAverage = .mean, scaling: SpectralScaling = .density, twoSided: Bool = false) {
        self.segments = segments
        self.average = average
        self.scaling = scaling
        self.twoSided = twoSided
    }

    /// scipy's defaults for a window and segment length: `get_window('hann', nperseg)`, noverlap nperseg // 2.
    public static func scipyDefaults(segmentLength: Int, window: WindowKind = .hann) -> CrossSpectralConfiguration {
        CrossSpectralConfiguration(
            segments: SegmentParameters(
                window: Window.shared(window, count: segmentLength).values,
                overlap: segmentLength / 2))
    }
}

/// Auto- and cross-spectral densities of two signals of equal length from one pass over their segments.
public struct CrossSpectra: Sendable, Equatable {
    /// Bin frequencies in Hz.
    public var frequencies: [Double]
    /// Pxx, the reference's power spectral density (empty when not asked for).
    public var pxx: [Double]
    /// Pyy, the other signal's (empty when not asked for).
    public var pyy: [Double]
    /// Pxy = mean(conj(X) Y), real and imaginary parts (scipy's `csd(x, y)`).
    public var pxyReal: [Double]
    public var pxyImaginary: [Double]
    /// Number of segments averaged.
    public var segments: Int
}

/// Which spectra `CrossSpectralEstimator.estimate` computes.
public struct CrossSpectraSelection: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let pxx = CrossSpectraSelection(rawValue: 1)
    public static let pyy = CrossSpectraSelection(rawValue: 2)
    public static let pxy = CrossSpectraSelection(rawValue: 4)
    public static let all: CrossSpectraSelection = [.pxx, .pyy, .pxy]
}

/// Welch estimates of auto- and cross-spectra, equal to `scipy.signal.welch` and `scipy.signal.csd`;
/// reusable (plans, windows and scratch kept), one instance per thread.
public final class CrossSpectralEstimator {
    /// The parameters.
    public let configuration: CrossSpectralConfiguration
    /// Sampling rate in Hz.
    public let sampleRate: Double
    private let x: ShortTimeTransform
    private let y: ShortTimeTransform

    /// - Throws: `SpectralParameterError` for bad parameters or sample rate.
    public init(configuration: CrossSpectralConfiguration, sampleRate: Double = 1) throws {
        guard sampleRate > 0, sampleRate.isFinite else {
            throw SpectralParameterError("fs", "must be positive and finite, not \(sampleRate)")
        }
        self.configuration = configuration
        self.sampleRate = sampleRate
        x = try ShortTimeTransform(configuration.segments)
        y = try ShortTimeTransform(configuration.segments)
    }

    /// The factor per bin: scipy's density or spectrum scale, doubled for the one-sided bins that
    /// carry a negative frequency's power too.
    func scales() -> [Double] {
        let p = configuration.segments
        let w = p.window
        let base =
            configuration.scaling == .density
            ? 1 / (sampleRate * w.reduce(0) { $0 + $1 * $1 })
            : 1 / (w.reduce(0, +) * w.reduce(0, +))
        let bins = p.binCount(twoSided: configuration.twoSided)
        return (0..<bins).map { k in
            if configuration.twoSided || k == 0 || (p.fftLength % 2 == 0 && k == p.fftLength / 2) { return base }
            return 2 * base
        }
    }

    /// The spectra of two signals of equal length (scipy zero-pads the shorter one first).
    /// - Parameters:
    ///   - reference: x.
    ///   - other: y; nil estimates x's auto-spectrum alone (`pxx`).
    ///   - selection: which of Pxx, Pyy, Pxy to compute.
    /// - Throws: `SpectralParameterError` for a signal shorter than a segment or of another length.
    public func estimate(
        _ reference: UnsafeBufferPointer<Double>, _ other: UnsafeBufferPointer<Double>?,
        selection: CrossSpectraSelection = .all
    ) throws -> CrossSpectra {
        let p = configuration.segments
        let segments = try p.segmentCount(signalLength: reference.count)
        if let other, other.count != reference.count {
            throw SpectralParameterError("y", "has \(other.count) samples, x has \(reference.count)")
        }
        let selection = other == nil ? selection.intersection(.pxx) : selection
        let bins = p.binCount(twoSided: configuration.twoSided)
        let wantX = selection.contains(.pxx), wantY = selection.contains(.pyy), wantXY = selection.contains(.pxy)
        let median = configuration.average == .median && segments > 1
        // Mean: running sums; median: every segment's values, [bin][segment].
        let rows = median ? segments : 1
        var sxx = [Double](repeating: 0, count: wantX ? bins * rows : 0)
        var syy = [Double](repeating: 0, count: wantY ? bins * rows : 0)
        var sre = [Double](repeating: 0, count: wantXY ? bins * rows : 0)
        var sim = [Double](repeating: 0, count: wantXY ? bins * rows : 0)
        let step = p.step
        for s in 0..<segments {
            x.transform(reference.baseAddress! + s * step)
            if let other { y.transform(other.baseAddress! + s * step) }
            for k in 0..<bins {
                let i = median ? k * segments + s : k
                let (ar, ai) = x.bin(k)
                if wantX { sxx[i] += ar * ar + ai * ai }
                if other != nil {
                    let (br, bi) = y.bin(k)
                    if wantY { syy[i] += br * br + bi * bi }
                    if wantXY {
                        // conj(a) * b
                        sre[i] += ar * br + ai * bi
                        sim[i] += ar * bi - ai * br
                    }
                }
            }
        }
        let scale = scales()
        func reduce(_ values: [Double]) -> [Double] {
            guard !values.isEmpty else { return [] }
            if median {
                let bias = WelchEstimator.medianBias(segments)
                return (0..<bins).map { k in
                    var column = Array(values[(k * segments)..<((k + 1) * segments)])
                    return WelchEstimator.median(&column) * scale[k] / bias
                }
            }
            let inverse = 1 / Double(segments)
            return (0..<bins).map { values[$0] * scale[$0] * inverse }
        }
        return CrossSpectra(
            frequencies: p.frequencies(sampleRate: sampleRate, twoSided: configuration.twoSided),
            pxx: reduce(sxx), pyy: reduce(syy), pxyReal: reduce(sre), pxyImaginary: reduce(sim), segments: segments)
    }

    /// The spectra of two arrays.
    public func estimate(_ reference: [Double], _ other: [Double]?, selection: CrossSpectraSelection = .all) throws -> CrossSpectra {
        try reference.withUnsafeBufferPointer { r in
            guard let other else { return try estimate(r, nil, selection: selection) }
            return try other.withUnsafeBufferPointer { try estimate(r, $0, selection: selection) }
        }
    }
}
