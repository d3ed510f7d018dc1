/// How successive spectra are combined (NI's averaging modes).
public enum SpectrumAveragingMode: String, Sendable, CaseIterable {
    /// Average the complex bins (reduces noise of a signal synchronous with the blocks; keeps phase).
    case vector
    /// Average the power |X|^2 (reduces the variance of the noise floor, not its level).
    case rms
    /// Keep the largest power seen in each bin.
    case peakHold = "peak-hold"
}

/// How much weight each new spectrum gets.
public enum SpectrumAveragingWeighting: Sendable, Equatable {
    /// Every spectrum weighs the same (the running mean of all spectra so far).
    case linear
    /// New = (1 - 1/N) old + (1/N) spectrum, with 1/k for the first k < N spectra so that the start is unbiased.
    case exponential(Int)
}

/// Averages successive spectra of one length (NI's Spectrum averaging: vector, RMS, peak hold;
/// linear or exponential weighting). Allocates nothing per spectrum after the first.
public struct SpectrumAverager: Sendable {
    /// The mode.
    public let mode: SpectrumAveragingMode
    /// The weighting (ignored by peak hold).
    public let weighting: SpectrumAveragingWeighting
    /// Spectra added so far.
    public private(set) var count = 0
    private var real: [Double] = []
    private var imaginary: [Double] = []
    private var powerValues: [Double] = []
    private var template: Spectrum?

    public init(mode: SpectrumAveragingMode, weighting: SpectrumAveragingWeighting = .linear) {
        self.mode = mode
        self.weighting = weighting
    }

    /// Adds a spectrum (all must have the same length and window).
    public mutating func add(_ spectrum: Spectrum) {
        let bins = spectrum.real.count
        if template == nil {
            template = spectrum
            real = [Double](repeating: 0, count: bins)
            imaginary = real
            powerValues = real
        }
        precondition(bins == real.count, "spectra of different lengths")
        count += 1
        let weight: Double
        switch weighting {
        case .linear: weight = 1 / Double(count)
        case .exponential(let n): weight = 1 / Double(Swift.min(count, Swift.max(n, 1)))
        }
        switch mode {
        case .vector:
            for k in 0..<bins {
                real[k] += (spectrum.real[k] - real[k]) * weight
                imaginary[k] += (spectrum.imaginary[k] - imaginary[k]) * weight
            }
        case .rms:
            for k in 0..<bins { powerValues[k] += (spectrum.magnitudeSquared(k) - powerValues[k]) * weight }
        case .peakHold:
            for k in 0..<bins { powerValues[k] = Swift.max(powerValues[k], spectrum.magnitudeSquared(k)) }
        }
    }

    /// The averaged spectrum. For RMS and peak hold the bins hold sqrt(average |X|^2) with zero phase,
    /// so that amplitude, power and PSD read the averaged magnitudes.
    public var average: Spectrum? {
        guard var s = template else { return nil }
        switch mode {
        case .vector:
            s.real = real
            s.imaginary = imaginary
        case .rms, .peakHold:
            s.real = powerValues.map { $0.squareRoot() }
            s.imaginary = [Double](repeating: 0, count: powerValues.count)
        }
        return s
    }
}
