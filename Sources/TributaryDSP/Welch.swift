import CKernels
import Foundation

/// How each segment is detrended before windowing (scipy's `detrend`).
public enum Detrend: String, Sendable, CaseIterable {
    /// No detrending.
    case none
    /// Subtract the segment's mean (scipy's default).
    case constant
    /// Subtract the segment's least-squares line.
    case linear
}

/// How Welch combines the segments' periodograms.
public enum WelchAverage: String, Sendable, CaseIterable {
    /// Arithmetic mean (scipy's default).
    case mean
    /// Median divided by the median's bias for chi-squared(2) values (robust to bursts).
    case median
}

/// The unit of a Welch estimate.
public enum SpectralScaling: String, Sendable, CaseIterable {
    /// Power spectral density, unit^2/Hz (scipy's default).
    case density
    /// Power spectrum, unit^2 (a tone's bin reads its RMS^2).
    case spectrum
}

/// The parameters of a Welch estimate; the defaults equal `scipy.signal.welch`'s.
public struct WelchConfiguration: Sendable, Equatable {
    /// Samples per segment (scipy's `nperseg`, default 256); reduced to the signal length when longer.
    public var segmentLength: Int
    /// Samples shared by successive segments; nil means segmentLength / 2.
    public var overlap: Int?
    /// FFT length (zero padding); nil means segmentLength.
    public var fftLength: Int?
    /// The window (periodic, as scipy's `get_window`).
    public var window: WindowKind
    /// Per-segment detrending.
    public var detrend: Detrend
    /// Mean or median of the periodograms.
    public var average: WelchAverage
    /// Density (unit^2/Hz) or spectrum (unit^2).
    public var scaling: SpectralScaling
    /// FFTW planning rigor.
    public var rigor: FFTRigor

    public init(
        segmentLength: Int = 256, overlap: Int? = nil, fftLength: Int? = nil, window: WindowKind = .hann,
        detrend: Detrend = .constant, average: WelchAverage = .mean, scaling: SpectralScaling = .density,
        rigor: FFTRigor = .estimate
    ) {
        self.segmentLength = segmentLength
        self.overlap = overlap
        self.fftLength = fftLength
        self.window = window
        self.detrend = detrend
        self.average = average
        self.scaling = scaling
        self.rigor = rigor
    }
}

/// A one-sided spectral estimate: frequencies in Hz and one value per frequency.
public struct PowerSpectralDensity: Sendable, Equatable {
    /// Bin frequencies, k * fs / nfft.
    public var frequencies: [Double]
    /// PSD (unit^2/Hz) or power spectrum (unit^2) per bin.
    public var values: [Double]
    /// Number of segments averaged.
    public var segments: Int
}

/// An invalid spectral-analysis parameter, named.
public struct SpectralParameterError: Error, Equatable, CustomStringConvertible {
    /// The parameter ("nperseg", "noverlap", "nfft", "sample rate", "signal").
    public var parameter: String
    /// What is wrong with it.
    public var problem: String
    public var description: String { "\(parameter): \(problem)" }
    init(_ parameter: String, _ problem: String) {
        self.parameter = parameter
        self.problem = problem
    }
}

/// The segment engine shared by Welch, the streaming accumulator and the spectrogram: detrend,
/// window, FFT and |X|^2 of one segment, into preallocated buffers.
final class SegmentPeriodogram<T: FFTScalar> {
    let segmentLength: Int
    let fftLength: Int
    let detrend: Detrend
    let window: [T]
    /// sum(w) and sum(w^2) in double precision, for the scalings.
    let windowSum: Double
    let windowSumOfSquares: Double
    let fft: RealFFT<T>
    var binCount: Int { fftLength / 2 + 1 }
    // Linear detrend: t centred on the segment's middle, and 1 / sum(t^2).
    let inverseSumT2: Double

    convenience init(segmentLength: Int, fftLength: Int, window kind: WindowKind, detrend: Detrend, rigor: FFTRigor) throws {
        try self.init(
            fftLength: fftLength, window: Window.shared(kind, count: segmentLength, periodic: true).values,
            detrend: detrend, rigor: rigor)
    }

    /// A segment engine with any window (its length is the segment length), as scipy's array windows.
    init(fftLength: Int, window values: [Double], detrend: Detrend, rigor: FFTRigor) throws {
        let segmentLength = values.count
        self.segmentLength = segmentLength
        self.fftLength = fftLength
        self.detrend = detrend
        window = values.map { T($0) }
        windowSum = values.reduce(0, +)
        windowSumOfSquares = values.reduce(0) { $0 + $1 * $1 }
        fft = try RealFFT<T>(count: fftLength, rigor: rigor)
        let n = Double(segmentLength)
        inverseSumT2 = segmentLength > 1 ? 12 / (n * (n * n - 1)) : 0
        // Zero padding beyond the segment stays zero: only the first segmentLength inputs are written.
        fft.scratchInput.update(repeating: 0)
    }

    /// Transforms one segment; the interleaved spectrum is left in `fft.alignedOutput`.
    @inline(__always)
    func transform(_ x: UnsafePointer<T>) {
        let out = fft.alignedInput
        let n = segmentLength
        window.withUnsafeBufferPointer { wb in
            let w = wb.baseAddress!
            if T.self == Double.self, detrend != .linear {
                // The same arithmetic eight values at a time (dsp_kernels.h); mean 0 is no detrend.
                let xd = UnsafeRawPointer(x).assumingMemoryBound(to: Double.self)
                let mean = detrend == .constant ? tributary_pairwise_sum(xd, n) / Double(n) : 0
                tributary_detrend_window(
                    xd, UnsafeRawPointer(w).assumingMemoryBound(to: Double.self), mean,
                    UnsafeMutableRawPointer(out).assumingMemoryBound(to: Double.self), n)
                return
            }
            switch detrend {
            case .none:
                for i in 0..<n { out[i] = x[i] * w[i] }
            case .constant:
                // numpy's summation order, so that the mean (and with it the ill-conditioned bins near DC
                // of data with a large offset) is bit-identical to scipy's detrend.
                let mean = pairwiseSum(x, n) / T(n)
                for i in 0..<n { out[i] = (x[i] - mean) * w[i] }
            case .linear:
                // Least squares in double precision: x ~ mean + slope * (i - (n-1)/2).
                var sx = 0.0, stx = 0.0
                let centre = Double(n - 1) / 2
                for i in 0..<n {
                    let v = Double(x[i])
                    sx += v
                    stx += (Double(i) - centre) * v
                }
                let mean = sx / Double(n)
                let slope = stx * inverseSumT2
                for i in 0..<n {
                    out[i] = T(Double(x[i]) - (mean + slope * (Double(i) - centre))) * w[i]
                }
            }
        }
        fft.execute(fft.alignedInput, fft.alignedOutput)
    }

    /// Adds |X_k|^2 of the last transform to `sums` (binCount values).
    @inline(__always)
    func accumulatePower(into sums: UnsafeMutablePointer<Double>) {
        let y = fft.alignedOutput
        if T.self == Double.self {
            tributary_accumulate_power(UnsafeRawPointer(y).assumingMemoryBound(to: Double.self), sums, binCount)
            return
        }
        for k in 0..<binCount {
            let re = Double(y[2 * k]), im = Double(y[2 * k + 1])
            sums[k] += re * re + im * im
        }
    }

    /// Writes |X_k|^2 of the last transform to `row`.
    @inline(__always)
    func storePower(into row: UnsafeMutablePointer<Double>) {
        let y = fft.alignedOutput
        for k in 0..<binCount {
            let re = Double(y[2 * k]), im = Double(y[2 * k + 1])
            row[k] = re * re + im * im
        }
    }

    /// The factor turning |X_k|^2 into a one-sided density or spectrum value at bin k.
    func scale(bin k: Int, sampleRate: Double, scaling: SpectralScaling) -> Double {
        let base = scaling == .density ? 1 / (sampleRate * windowSumOfSquares) : 1 / (windowSum * windowSum)
        // One-sided: every bin but DC and (for even nfft) Nyquist carries the negative frequency's power too.
        let unpaired = k == 0 || (fftLength % 2 == 0 && k == fftLength / 2)
        return unpaired ? base : 2 * base
    }
}

/// Bounds of the spectral estimates, so that a length from a command line or a peer cannot make an
/// analysis allocate without limit (or abort): buffers are a few times the transform length per channel.
public enum SpectralLimits {
    /// The longest Welch segment, FFT or spectrum block: 2^22 samples (32 MiB of doubles per buffer).
    public static let maxTransformLength = 1 << 22
}

/// The segment geometry of a Welch estimate over a signal of a given length (scipy's rules).
struct WelchGeometry {
    var segmentLength: Int
    var step: Int
    var fftLength: Int
    var segments: Int

    init(configuration c: WelchConfiguration, signalLength n: Int) throws {
        guard n > 0 else { throw SpectralParameterError("signal", "is empty") }
        guard (1...SpectralLimits.maxTransformLength).contains(c.segmentLength) else {
            throw SpectralParameterError("nperseg", "must be in 1...\(SpectralLimits.maxTransformLength), not \(c.segmentLength)")
        }
        // scipy reduces nperseg to the signal length (with a warning).
        let nperseg = Swift.min(c.segmentLength, n)
        let overlap = c.overlap ?? nperseg / 2
        guard overlap >= 0, overlap < nperseg else {
            throw SpectralParameterError("noverlap", "must be in 0..<\(nperseg) (nperseg), not \(overlap)")
        }
        let nfft = c.fftLength ?? nperseg
        guard nfft >= nperseg, nfft <= SpectralLimits.maxTransformLength else {
            throw SpectralParameterError(
                "nfft", "must be in \(nperseg)...\(SpectralLimits.maxTransformLength) (nperseg to the limit), not \(nfft)")
        }
        segmentLength = nperseg
        step = nperseg - overlap
        fftLength = nfft
        segments = (n - overlap) / step
    }
}

/// Welch power spectral density estimates equal to `scipy.signal.welch`; reusable (plans, windows
/// and scratch are kept between calls), one instance per thread.
public final class WelchEstimator {
    /// The parameters.
    public let configuration: WelchConfiguration
    /// Sampling rate in Hz.
    public let sampleRate: Double
    private var doubleCore: SegmentPeriodogram<Double>?
    private var floatCore: SegmentPeriodogram<Float>?
    private var sums: [Double] = []
    private var rows: [Double] = []

    /// Creates an estimator.
    /// - Throws: `SpectralParameterError` for a non-positive sample rate.
    public init(configuration: WelchConfiguration = WelchConfiguration(), sampleRate: Double = 1) throws {
        guard sampleRate > 0, sampleRate.isFinite else {
            throw SpectralParameterError("sample rate", "must be positive and finite, not \(sampleRate)")
        }
        self.configuration = configuration
        self.sampleRate = sampleRate
    }

    private func core<T: FFTScalar>(_ geometry: WelchGeometry, _ existing: SegmentPeriodogram<T>?) throws -> SegmentPeriodogram<T> {
        if let existing, existing.segmentLength == geometry.segmentLength, existing.fftLength == geometry.fftLength { return existing }
        return try SegmentPeriodogram<T>(
            segmentLength: geometry.segmentLength, fftLength: geometry.fftLength,
            window: configuration.window, detrend: configuration.detrend, rigor: configuration.rigor)
    }

    /// The Welch estimate of one channel of float64 samples.
    /// - Throws: `SpectralParameterError` for an empty signal or inconsistent segment parameters.
    public func estimate(_ x: UnsafeBufferPointer<Double>) throws -> PowerSpectralDensity {
        let geometry = try WelchGeometry(configuration: configuration, signalLength: x.count)
        let c = try core(geometry, doubleCore)
        doubleCore = c
        return run(c, geometry, x)
    }

    /// The Welch estimate of one channel of float32 samples (transformed in single precision,
    /// periodograms accumulated in double).
    public func estimate(_ x: UnsafeBufferPointer<Float>) throws -> PowerSpectralDensity {
        let geometry = try WelchGeometry(configuration: configuration, signalLength: x.count)
        let c = try core(geometry, floatCore)
        floatCore = c
        return run(c, geometry, x)
    }

    /// The Welch estimate of an array.
    public func estimate(_ x: [Double]) throws -> PowerSpectralDensity {
        try x.withUnsafeBufferPointer { try estimate($0) }
    }

    /// Estimates of every channel of a channel-major matrix.
    public func estimate(channels x: UnsafeBufferPointer<Double>, channelCount: Int) throws -> [PowerSpectralDensity] {
        guard channelCount > 0, x.count % channelCount == 0 else {
            throw SpectralParameterError("signal", "\(x.count) values do not split into \(channelCount) channels")
        }
        let n = x.count / channelCount
        return try (0..<channelCount).map { try estimate(UnsafeBufferPointer(rebasing: x[($0 * n)..<(($0 + 1) * n)])) }
    }

    private func run<T: FFTScalar>(_ c: SegmentPeriodogram<T>, _ g: WelchGeometry, _ x: UnsafeBufferPointer<T>) -> PowerSpectralDensity {
        let bins = c.binCount
        let base = x.baseAddress!
        var values = [Double](repeating: 0, count: bins)
        switch configuration.average {
        case .mean:
            if sums.count != bins {
                sums = [Double](repeating: 0, count: bins)
            } else {
                sums.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
            }
            sums.withUnsafeMutableBufferPointer { s in
                for segment in 0..<g.segments {
                    c.transform(base + segment * g.step)
                    c.accumulatePower(into: s.baseAddress!)
                }
            }
            let inverse = 1 / Double(g.segments)
            for k in 0..<bins { values[k] = sums[k] * inverse * c.scale(bin: k, sampleRate: sampleRate, scaling: configuration.scaling) }
        case .median:
            let count = g.segments * bins
            if rows.count < count { rows = [Double](repeating: 0, count: count) }
            rows.withUnsafeMutableBufferPointer { r in
                for segment in 0..<g.segments {
                    c.transform(base + segment * g.step)
                    c.storePower(into: r.baseAddress! + segment * bins)
                }
            }
            let bias = Self.medianBias(g.segments)
            var column = [Double](repeating: 0, count: g.segments)
            for k in 0..<bins {
                for segment in 0..<g.segments { column[segment] = rows[segment * bins + k] }
                let m = g.segments > 1 ? Self.median(&column) / bias : column[0]
                values[k] = m * c.scale(bin: k, sampleRate: sampleRate, scaling: configuration.scaling)
            }
        }
        let df = sampleRate / Double(g.fftLength)
        return PowerSpectralDensity(frequencies: (0..<bins).map { Double($0) * df }, values: values, segments: g.segments)
    }

    /// numpy's median: the middle value, or the mean of the two middle values.
    static func median(_ values: inout [Double]) -> Double {
        values.sort()
        let n = values.count
        return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2
    }

    /// The bias of the median of n chi-squared(2) periodograms relative to their mean (scipy's `_median_bias`).
    static func medianBias(_ n: Int) -> Double {
        var sum = 0.0
        var i = 1
        while i <= (n - 1) / 2 {
            let ii2 = 2 * Double(i)
            sum += 1 / (ii2 + 1) - 1 / ii2
            i += 1
        }
        return 1 + sum
    }
}

/// Welch's method in one call: `scipy.signal.welch(x, fs, window, nperseg, noverlap, nfft, detrend, scaling, average)`.
/// - Throws: `SpectralParameterError` for bad parameters.
public func welch(_ x: [Double], sampleRate: Double = 1, configuration: WelchConfiguration = WelchConfiguration()) throws
    -> PowerSpectralDensity
{
    try WelchEstimator(configuration: configuration, sampleRate: sampleRate).estimate(x)
}

/// numpy's pairwise summation (`pairwise_sum_DOUBLE`): blocks of at most 128 summed with eight
/// accumulators, halves (rounded to multiples of 8) summed recursively.
@inline(__always)
func pairwiseSum<T: FFTScalar>(_ a: UnsafePointer<T>, _ n: Int) -> T {
    if T.self == Double.self {
        return T(tributary_pairwise_sum(UnsafeRawPointer(a).assumingMemoryBound(to: Double.self), n))
    }
    if n < 8 {
        var r: T = 0
        for i in 0..<n { r += a[i] }
        return r
    }
    if n <= 128 {
        var r0 = a[0], r1 = a[1], r2 = a[2], r3 = a[3], r4 = a[4], r5 = a[5], r6 = a[6], r7 = a[7]
        var i = 8
        let end = n - n % 8
        while i < end {
            r0 += a[i]; r1 += a[i + 1]; r2 += a[i + 2]; r3 += a[i + 3]
            r4 += a[i + 4]; r5 += a[i + 5]; r6 += a[i + 6]; r7 += a[i + 7]
            i += 8
        }
        var result = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n { result += a[i]; i += 1 }
        return result
    }
    var n2 = n / 2
    n2 -= n2 % 8
    return pairwiseSum(a, n2) + pairwiseSum(a + n2, n - n2)
}
