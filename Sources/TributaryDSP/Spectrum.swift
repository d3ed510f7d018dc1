import Foundation

/// Amplitude as peak or RMS (peak / sqrt 2) of the sinusoid a bin represents.
public enum AmplitudeScale: String, Sendable {
    case peak
    case rms
}

/// The one-sided spectrum of one block: complex bins and the window it was taken with, from which
/// amplitude, power, PSD and phase follow with the usual window corrections.
public struct Spectrum: Sendable {
    /// Sampling rate in Hz.
    public var sampleRate: Double
    /// Transform length N.
    public var count: Int
    /// Real parts of the N/2+1 bins.
    public var real: [Double]
    /// Imaginary parts of the N/2+1 bins.
    public var imaginary: [Double]
    /// sum(w) of the window used.
    public var windowSum: Double
    /// sum(w^2) of the window used.
    public var windowSumOfSquares: Double

    /// Bin spacing in Hz.
    public var binWidth: Double { sampleRate / Double(count) }
    /// The bins' frequencies.
    public var frequencies: [Double] { (0..<real.count).map { Double($0) * binWidth } }

    /// True for DC and, at even N, the Nyquist bin, which have no negative-frequency twin.
    @inline(__always) func unpaired(_ k: Int) -> Bool { k == 0 || (count % 2 == 0 && k == count / 2) }

    /// |X_k|^2 of bin k.
    @inline(__always) func magnitudeSquared(_ k: Int) -> Double { real[k] * real[k] + imaginary[k] * imaginary[k] }

    /// Amplitude spectrum: the amplitude of the sinusoid each bin represents, corrected by the window's coherent gain.
    public func amplitude(_ scale: AmplitudeScale = .peak) -> [Double] {
        (0..<real.count).map { k in
            let a = magnitudeSquared(k).squareRoot() / windowSum
            if unpaired(k) { return a }  // DC is a constant, not a sinusoid: its value is its amplitude
            return scale == .peak ? 2 * a : 2.squareRoot() * a
        }
    }

    /// Power spectrum, unit^2: the mean square each bin represents (RMS amplitude squared).
    public func power() -> [Double] {
        (0..<real.count).map { k in
            let p = magnitudeSquared(k) / (windowSum * windowSum)
            return unpaired(k) ? p : 2 * p
        }
    }

    /// One-sided power spectral density, unit^2/Hz (scipy's `periodogram` with the same window).
    public func powerSpectralDensity() -> [Double] {
        let scale = 1 / (sampleRate * windowSumOfSquares)
        return (0..<real.count).map { k in
            let p = magnitudeSquared(k) * scale
            return unpaired(k) ? p : 2 * p
        }
    }

    /// Phase of each bin in radians (cosine reference, atan2(im, re)).
    public func phase() -> [Double] {
        (0..<real.count).map { atan2(imaginary[$0], real[$0]) }
    }
}

/// Computes windowed one-sided spectra of blocks of one length; reusable, one per thread.
public final class SpectrumAnalyzer {
    /// Block length N.
    public let count: Int
    /// Sampling rate in Hz.
    public let sampleRate: Double
    /// The window.
    public let window: Window
    let fft: RealFFT<Double>

    /// Creates an analyzer for blocks of `count` samples.
    /// - Throws: `SpectralParameterError` for a bad length or rate, `FFTError` when FFTW cannot plan.
    public init(count: Int, sampleRate: Double, window: WindowKind = .hann, rigor: FFTRigor = .estimate) throws {
        guard (1...SpectralLimits.maxTransformLength).contains(count) else {
            throw SpectralParameterError("length", "must be in 1...\(SpectralLimits.maxTransformLength), not \(count)")
        }
        guard sampleRate > 0, sampleRate.isFinite else { throw SpectralParameterError("sample rate", "must be positive and finite") }
        self.count = count
        self.sampleRate = sampleRate
        self.window = Window.shared(window, count: count, periodic: true)
        fft = try RealFFT<Double>(count: count, rigor: rigor)
    }

    /// Transforms the first `count` samples of `x` (windowed), leaving bins in the FFT's aligned output.
    func transformInPlace(_ x: UnsafeBufferPointer<Double>) {
        precondition(x.count >= count, "block shorter than the analyzer's length")
        let input = fft.alignedInput
        window.values.withUnsafeBufferPointer { w in
            for i in 0..<count { input[i] = x[i] * w[i] }
        }
        fft.execute(fft.alignedInput, fft.alignedOutput)
    }

    /// The spectrum of the first `count` samples of `x`.
    public func spectrum(_ x: UnsafeBufferPointer<Double>) -> Spectrum {
        transformInPlace(x)
        let bins = count / 2 + 1
        let y = fft.alignedOutput
        return Spectrum(
            sampleRate: sampleRate, count: count,
            real: (0..<bins).map { y[2 * $0] }, imaginary: (0..<bins).map { y[2 * $0 + 1] },
            windowSum: window.sum, windowSumOfSquares: window.sumOfSquares)
    }

    /// The spectrum of an array's first `count` samples.
    public func spectrum(_ x: [Double]) -> Spectrum {
        x.withUnsafeBufferPointer { spectrum($0) }
    }
}
