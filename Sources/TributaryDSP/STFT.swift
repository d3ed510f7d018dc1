import CFFTW
import Foundation

/// The segmentation of the short-time transforms and cross-spectra, with any window: scipy's
/// `nperseg` (the window's length), `noverlap`, `nfft` and `detrend`.
public struct SegmentParameters: Sendable, Equatable {
    /// The window's values; their count is the segment length.
    public var window: [Double]
    /// Samples shared by successive segments, 0 ..< segment length.
    public var overlap: Int
    /// FFT length (zero padding), segment length ... `SpectralLimits.maxTransformLength`.
    public var fftLength: Int
    /// Per-segment detrending.
    public var detrend: Detrend
    /// FFTW planning rigor.
    public var rigor: FFTRigor

    public init(window: [Double], overlap: Int, fftLength: Int? = nil, detrend: Detrend = .constant, rigor: FFTRigor = .estimate) {
        self.window = window
        self.overlap = overlap
        self.fftLength = fftLength ?? window.count
        self.detrend = detrend
        self.rigor = rigor
    }

    /// Samples per segment.
    public var segmentLength: Int { window.count }
    /// Samples from one segment's start to the next one's.
    public var step: Int { window.count - overlap }

    /// Checks the parameters as scipy does (with messages naming scipy's parameters).
    public func validate() throws {
        let limit = SpectralLimits.maxTransformLength
        guard (1...limit).contains(window.count) else {
            throw SpectralParameterError("nperseg", "must be in 1...\(limit), not \(window.count)")
        }
        guard window.allSatisfy(\.isFinite) else { throw SpectralParameterError("window", "values must be finite") }
        guard overlap >= 0, overlap < window.count else {
            throw SpectralParameterError("noverlap", "must be in 0..<\(window.count) (nperseg), not \(overlap)")
        }
        guard fftLength >= window.count, fftLength <= limit else {
            throw SpectralParameterError("nfft", "must be in \(window.count)...\(limit) (nperseg to the limit), not \(fftLength)")
        }
    }

    /// The number of whole segments in a signal of `n` samples (scipy's segments start at 0, `step` apart).
    public func segmentCount(signalLength n: Int) throws -> Int {
        try validate()
        guard n >= window.count else {
            throw SpectralParameterError("nperseg", "\(window.count) is longer than the signal (\(n) samples)")
        }
        return (n - window.count) / step + 1
    }

    /// Bins of a one-sided (nfft / 2 + 1) or two-sided (nfft) spectrum.
    public func binCount(twoSided: Bool) -> Int { twoSided ? fftLength : fftLength / 2 + 1 }

    /// The bins' frequencies: scipy's `rfftfreq` or (two-sided) `fftfreq` order, negative frequencies last.
    public func frequencies(sampleRate: Double, twoSided: Bool) -> [Double] {
        let n = fftLength
        // numpy's rfftfreq / fftfreq: k * (1 / (n * d)) with d = 1 / fs.
        let df = 1 / (Double(n) * (1 / sampleRate))
        return (0..<binCount(twoSided: twoSided)).map { k in
            Double(twoSided && k > (n - 1) / 2 ? k - n : k) * df
        }
    }
}

/// The complex short-time spectra of real signals (`scipy.signal.stft`'s segments before scaling):
/// detrend, window and FFT of each segment through the plan cache. One instance per thread.
public final class ShortTimeTransform {
    /// The segmentation.
    public let parameters: SegmentParameters
    let core: SegmentPeriodogram<Double>

    /// - Throws: `SpectralParameterError` for bad parameters, `FFTError` when FFTW cannot plan.
    public init(_ parameters: SegmentParameters) throws {
        try parameters.validate()
        self.parameters = parameters
        core = try SegmentPeriodogram<Double>(
            fftLength: parameters.fftLength, window: parameters.window,
            detrend: parameters.detrend, rigor: parameters.rigor)
    }

    /// Transforms the segment starting at `x`; bin k of the result is `bin(k)`.
    @inline(__always)
    func transform(_ x: UnsafePointer<Double>) { core.transform(x) }

    /// Bin k (0 ..< nfft) of the last transform; bins past nfft / 2 are the conjugates of their mirrors.
    @inline(__always)
    func bin(_ k: Int) -> (re: Double, im: Double) {
        let y = core.fft.alignedOutput
        let n = parameters.fftLength
        if k <= n / 2 { return (y[2 * k], y[2 * k + 1]) }
        return (y[2 * (n - k)], -y[2 * (n - k) + 1])
    }

    /// The spectra of every segment of `x`, times `scale`, as interleaved complex values laid out
    /// [bin][segment] (scipy's frequency-by-time order).
    /// - Parameters:
    ///   - x: the signal (at least one segment long).
    ///   - scale: the factor every value is multiplied by.
    ///   - twoSided: all nfft bins (else nfft / 2 + 1).
    ///   - out: bins × segments × 2 values.
    /// - Returns: the number of segments.
    /// - Throws: `SpectralParameterError` when the signal is shorter than a segment or `out` too short.
    @discardableResult
    public func spectra(
        _ x: UnsafeBufferPointer<Double>, scale: Double, twoSided: Bool,
        into out: UnsafeMutableBufferPointer<Double>
    ) throws -> Int {
        let segments = try parameters.segmentCount(signalLength: x.count)
        let bins = parameters.binCount(twoSided: twoSided)
        guard out.count >= bins * segments * 2 else {
            throw SpectralParameterError("output", "needs \(bins * segments * 2) values, has \(out.count)")
        }
        let o = out.baseAddress!, step = parameters.step
        for s in 0..<segments {
            transform(x.baseAddress! + s * step)
            for k in 0..<bins {
                var (re, im) = bin(k)
                // scipy's two-sided FFT of real data has -0 for the imaginary parts of DC and Nyquist
                // (which the sign of an angle of a negative real value shows).
                if twoSided, k == 0 || 2 * k == parameters.fftLength { im = -0.0 }
                o[2 * (k * segments + s)] = re * scale
                o[2 * (k * segments + s) + 1] = im * scale
            }
        }
        return segments
    }
}

/// The inverse short-time transform of `scipy.signal.istft` (one-sided input): each segment's
/// inverse real FFT (nfft points, cut to the window's length), times `gain` and the window,
/// overlap-added, divided by the overlap-added squared window wherever that exceeds 1e-10.
/// - Parameters:
///   - z: interleaved complex values laid out [bin][segment], `bins` × `segments` (bins is nfft / 2 + 1;
///     the imaginary parts of DC and, for even nfft, Nyquist are ignored, as by an inverse real FFT).
///   - window: the window (its count is nperseg, at most nfft).
///   - step: samples between segments (nperseg - noverlap), 1 ... nperseg.
///   - gain: scipy's `win.sum()` (scaling 'spectrum') or `sqrt(fs * sum(win**2))` ('psd').
///   - range: the samples of the overlap-added signal (nperseg + (segments - 1) * step long) to return.
///   - out: `range.count` values.
/// - Returns: the number of returned samples whose squared-window sum is at most 1e-10 (NOLA failures).
/// - Throws: `SpectralParameterError` for inconsistent sizes.
public func inverseShortTimeTransform(
    _ z: UnsafeBufferPointer<Double>, segments: Int, window: [Double], fftLength: Int, step: Int,
    gain: Double, range: Range<Int>, rigor: FFTRigor = .estimate,
    into out: UnsafeMutableBufferPointer<Double>
) throws -> Int {
    let nperseg = window.count, nfft = fftLength
    let limit = SpectralLimits.maxTransformLength
    guard (1...limit).contains(nperseg), (nperseg...limit).contains(nfft) else {
        throw SpectralParameterError("nfft", "must be in \(nperseg)...\(limit) (nperseg to the limit), not \(nfft)")
    }
    guard (1...nperseg).contains(step) else { throw SpectralParameterError("noverlap", "must be in 0..<\(nperseg) (nperseg)") }
    guard segments >= 1 else { throw SpectralParameterError("Zxx", "has no segments") }
    let bins = nfft / 2 + 1
    guard z.count == bins * segments * 2 else {
        throw SpectralParameterError("Zxx", "has \(z.count / 2) values, not \(bins) bins × \(segments) segments")
    }
    let (total, overflow) = step.multipliedReportingOverflow(by: segments - 1)
    guard !overflow, total <= Int.max - nperseg else { throw SpectralParameterError("Zxx", "too many segments") }
    let length = nperseg + total
    guard range.lowerBound >= 0, range.upperBound <= length, out.count >= range.count else {
        throw SpectralParameterError("output", "range \(range) is not within the \(length) samples")
    }
    let plan = try FFTPlanCache.shared.realPlan(count: nfft, rigor: rigor, of: Double.self, inverse: true)
    let spectrum = fftw_alloc_complex(bins)!, signal = fftw_alloc_real(nfft)!
    defer { fftw_free(spectrum); fftw_free(signal) }
    var sum = [Double](repeating: 0, count: length)
    var norm = [Double](repeating: 0, count: length)
    let inverseN = 1 / Double(nfft)
    let zb = z.baseAddress!
    let spectrumValues = UnsafeMutableRawPointer(spectrum).assumingMemoryBound(to: Double.self)
    for s in 0..<segments {
        for k in 0..<bins {
            spectrumValues[2 * k] = zb[2 * (k * segments + s)]
            spectrumValues[2 * k + 1] = zb[2 * (k * segments + s) + 1]
        }
        spectrumValues[1] = 0
        if nfft % 2 == 0 { spectrumValues[2 * (bins - 1) + 1] = 0 }
        fftw_execute_dft_c2r(plan.plan, spectrum, signal)
        let start = s * step
        for i in 0..<nperseg {
            let w = window[i]
            sum[start + i] += signal[i] * inverseN * gain * w
            norm[start + i] += w * w
        }
    }
    var failures = 0
    let o = out.baseAddress!
    for (j, i) in range.enumerated() {
        if norm[i] > 1e-10 { o[j] = sum[i] / norm[i] } else { o[j] = sum[i]; failures += 1 }
    }
    return failures
}
