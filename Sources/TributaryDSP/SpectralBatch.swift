import Foundation

// Many rows of one spectral computation in one call, rows on the cores (`ParallelWork`), each
// worker with its own transforms: the spectrogram's powers (scipy.signal.spectrogram, mode 'psd')
// and the Welch cross-spectra and coherence of row pairs (scipy.signal.csd, welch, coherence).
// Every row's values are those of the one-row code, whatever the threads.

/// Spectrograms of many rows at once.
public enum SpectrogramBatch {
    /// The factor of every power: scipy's density 1 / (fs·Σw²) or spectrum 1 / (Σw)² scale.
    public static func scale(window: [Double], sampleRate: Double, scaling: SpectralScaling) -> Double {
        scaling == .density ? 1 / (sampleRate * window.reduce(0) { $0 + $1 * $1 }) : 1 / (window.reduce(0, +) * window.reduce(0, +))
    }

    /// `scipy.signal.spectrogram(x, mode='psd')` of `rows` signals of `length` samples each (row r
    /// at x + r·length): out receives rows × bins × segments values, scipy's layout, each segment's
    /// |X|² times `scale`, doubled in the one-sided bins that carry a negative frequency's power too.
    /// - Returns: the segments per row.
    /// - Throws: `SpectralParameterError` for bad parameters, a signal shorter than a segment or `out` too short.
    @discardableResult
    public static func psd(
        _ x: UnsafePointer<Double>, rows: Int, length: Int, parameters: SegmentParameters, scale: Double, twoSided: Bool = false,
        into out: UnsafeMutableBufferPointer<Double>
    ) throws -> Int {
        guard rows >= 0 else { throw SpectralParameterError("rows", "must not be negative, not \(rows)") }
        let segments = try parameters.segmentCount(signalLength: length)
        let bins = parameters.binCount(twoSided: twoSided)
        let (perRow, o1) = bins.multipliedReportingOverflow(by: segments)
        let (needed, o2) = perRow.multipliedReportingOverflow(by: rows)
        guard !o1, !o2, out.count >= needed else {
            throw SpectralParameterError(
                "output", "needs rows × bins × segments = \(rows) × \(bins) × \(segments) values, has \(out.count)")
        }
        guard rows > 0 else { return segments }
        _ = try ShortTimeTransform(parameters)  // plans once, and fails here rather than on a worker
        let nfft = parameters.fftLength, step = parameters.step, o = out.baseAddress!
        let doubled = (0..<bins).map { k in !twoSided && k > 0 && !(nfft % 2 == 0 && k == nfft / 2) }
        let failures = FailureLog()
        ParallelWork.run(pieces: rows, samples: ParallelWork.work(rows, length)) { row in
            let transform: ShortTimeTransform
            do { transform = try ShortTimeTransform(parameters) } catch {
                failures.record(error)
                return
            }
            let base = o + row * perRow
            for s in 0..<segments {
                transform.transform(x + row * length + s * step)
                for k in 0..<bins {
                    let (re, im) = transform.bin(k)
                    let power = (re * re + im * im) * scale
                    base[k * segments + s] = doubled[k] ? power * 2 : power
                }
            }
        }
        if let error = failures.first { throw error }
        return segments
    }

    /// `scipy.signal.spectrogram(x, fs, window, nperseg, noverlap, nfft, detrend, scaling=…, mode='psd')`
    /// of `rows` signals, the scale from the window, sampling rate and scaling.
    @discardableResult
    public static func psd(
        _ x: UnsafePointer<Double>, rows: Int, length: Int, parameters: SegmentParameters, sampleRate: Double,
        scaling: SpectralScaling, twoSided: Bool = false, into out: UnsafeMutableBufferPointer<Double>
    ) throws -> Int {
        guard sampleRate > 0, sampleRate.isFinite else {
            throw SpectralParameterError("fs", "must be positive and finite, not \(sampleRate)")
        }
        return try psd(
            x, rows: rows, length: length, parameters: parameters,
            scale: scale(window: parameters.window, sampleRate: sampleRate, scaling: scaling), twoSided: twoSided, into: out)
    }
}

/// Welch cross-spectra and coherence of many row pairs at once.
public enum CrossSpectralBatch {
    /// The spectra of `rows` pairs (x + r·length, y + r·length; y nil: x's auto-spectra alone), each
    /// row's as `CrossSpectralEstimator.estimate` gives it, handed to `store(row, spectra)` (called
    /// from the workers: it must write only that row's outputs).
    public static func spectra(
        _ x: UnsafePointer<Double>, _ y: UnsafePointer<Double>?, rows: Int, length: Int, configuration: CrossSpectralConfiguration,
        sampleRate: Double, selection: CrossSpectraSelection, store: (Int, CrossSpectra) -> Void
    ) throws {
        guard rows >= 0 else { throw SpectralParameterError("rows", "must not be negative, not \(rows)") }
        _ = try configuration.segments.segmentCount(signalLength: length)
        let check = try CrossSpectralEstimator(configuration: configuration, sampleRate: sampleRate)
        guard rows > 0 else { return }
        if rows == 1 {
            store(
                0,
                try check.estimate(
                    UnsafeBufferPointer(start: x, count: length), y.map { UnsafeBufferPointer(start: $0, count: length) },
                    selection: selection))
            return
        }
        let failures = FailureLog()
        ParallelWork.run(pieces: rows, samples: ParallelWork.work(rows, length)) { row in
            do {
                let estimator = try CrossSpectralEstimator(configuration: configuration, sampleRate: sampleRate)
                let xs = UnsafeBufferPointer(start: x + row * length, count: length)
                let ys = y.map { UnsafeBufferPointer(start: $0 + row * length, count: length) }
                store(row, try estimator.estimate(xs, ys, selection: selection))
            } catch {
                failures.record(error)
            }
        }
        if let error = failures.first { throw error }
    }

    /// `scipy.signal.coherence(x, y)` of `rows` pairs: out receives rows × bins values, |Pxy|² / Pxx / Pyy
    /// (|Pxy| as numpy's abs, a hypotenuse), from one pass over each pair's segments.
    public static func coherence(
        _ x: UnsafePointer<Double>, _ y: UnsafePointer<Double>, rows: Int, length: Int, configuration: CrossSpectralConfiguration,
        sampleRate: Double, into out: UnsafeMutableBufferPointer<Double>
    ) throws {
        let bins = configuration.segments.binCount(twoSided: configuration.twoSided)
        let (needed, overflow) = bins.multipliedReportingOverflow(by: max(rows, 0))
        guard !overflow, out.count >= needed else {
            throw SpectralParameterError("output", "needs rows × bins = \(rows) × \(bins) values, has \(out.count)")
        }
        let o = out.baseAddress
        try spectra(x, y, rows: rows, length: length, configuration: configuration, sampleRate: sampleRate, selection: .all) { row, c in
            for k in 0..<bins {
                let magnitude = hypot(c.pxyReal[k], c.pxyImaginary[k])
                o![row * bins + k] = magnitude * magnitude / c.pxx[k] / c.pyy[k]
            }
        }
    }
}

/// The first error of the workers of one call.
final class FailureLog: @unchecked Sendable {
    private let lock = NSLock()
    private var error: Error?

    func record(_ error: Error) {
        lock.lock()
        if self.error == nil { self.error = error }
        lock.unlock()
    }

    var first: Error? {
        lock.lock()
        defer { lock.unlock() }
        return error
    }
}
