import Foundation
import TributaryDSP

// Time-frequency and two-channel spectra (docs/C_API.md, "Spectral functions"): windows by scipy's
// names, the short-time transform and its inverse, and Welch auto- and cross-spectra. Arrays are the
// caller's, row-major float64; every size is checked before any arithmetic on it.

/// The largest number of values one call reads or writes through one pointer (2^40: 8 TiB of doubles).
private let maxValues: UInt = 1 << 40

/// A count from C as an Int in `range`, or an argument error naming it.
private func count(_ value: UInt, _ name: String, _ range: ClosedRange<Int>) throws(APIError) -> Int {
    guard value <= UInt(range.upperBound), Int(value) >= range.lowerBound else {
        throw APIError(.argument, "\(name) must be in \(range.lowerBound)...\(range.upperBound), not \(value)")
    }
    return Int(value)
}

/// `a * b` (and `* c`) within `maxValues`, or an argument error naming the array.
private func product(_ factors: [Int], _ name: String) throws(APIError) -> Int {
    var total = 1
    for f in factors {
        let (p, overflow) = total.multipliedReportingOverflow(by: f)
        guard !overflow, p <= Int(maxValues) else { throw APIError(.argument, "\(name) would hold more than 2^40 values") }
        total = p
    }
    return total
}

private func detrendMode(_ code: Int32) throws(APIError) -> Detrend {
    switch code {
    case 0: return .none
    case 1: return .constant
    case 2: return .linear
    default: throw APIError(.argument, "detrend must be 0 (none), 1 (constant) or 2 (linear), not \(code)")
    }
}

private func flag(_ code: Int32, _ name: String) throws(APIError) -> Bool {
    guard code == 0 || code == 1 else { throw APIError(.argument, "\(name) must be 0 or 1, not \(code)") }
    return code == 1
}

/// The window values of a caller's array (nperseg values, finite).
private func windowValues(_ window: UnsafePointer<Double>?, _ nperseg: UInt) throws(APIError) -> [Double] {
    let n = try count(nperseg, "nperseg", 1...SpectralLimits.maxTransformLength)
    guard let window else { throw APIError(.argument, "window is NULL") }
    let values = Array(UnsafeBufferPointer(start: window, count: n))
    guard values.allSatisfy(\.isFinite) else { throw APIError(.argument, "window values must be finite") }
    return values
}

private func segmentParameters(
    _ window: UnsafePointer<Double>?, _ nperseg: UInt, _ noverlap: UInt, _ nfft: UInt,
    _ detrend: Int32
) throws(APIError) -> SegmentParameters {
    let w = try windowValues(window, nperseg)
    let overlap = try count(noverlap, "noverlap", 0...(w.count - 1))
    let fft = try count(nfft, "nfft", w.count...SpectralLimits.maxTransformLength)
    return SegmentParameters(window: w, overlap: overlap, fftLength: fft, detrend: try detrendMode(detrend))
}

/// Runs a DSP body, turning its parameter errors into argument errors.
private func dsp<T>(_ body: () throws -> T) throws(APIError) -> T {
    do { return try body() } catch let error as SpectralParameterError {
        throw APIError(.argument, error.description)
    } catch let error as APIError {
        throw error
    } catch {
        throw APIError(.internal, "\(error)")
    }
}

/// `scipy.signal.get_window(name + parameters, count, fftbins=!symmetric)` into `out` (count values).
@_cdecl("tributary_spectral_window")
public func tributary_spectral_window(
    _ name: UnsafePointer<CChar>?, _ parameters: UnsafePointer<Double>?, _ parameterCount: UInt,
    _ count: UInt, _ symmetric: Int32, _ out: UnsafeMutablePointer<Double>?
) -> Int32 {
    guarded("tributary_spectral_window") {
        let name = try string(name, "name")
        let p = try TributaryC.count(parameterCount, "parameter_count", 0...8)
        if p > 0, parameters == nil { throw APIError(.argument, "parameters is NULL") }
        let n = try TributaryC.count(count, "count", 1...SpectralLimits.maxTransformLength)
        let out = try TributaryC.out(out, "out")
        let values = try dsp {
            try SpectralWindow.values(
                name: name, parameters: p > 0 ? Array(UnsafeBufferPointer(start: parameters!, count: p)) : [],
                count: n, symmetric: try flag(symmetric, "symmetric"))
        }
        out.update(from: values, count: n)
    }
}

/// The arguments `tributary_stft` and `tributary_spectrogram` share, checked: the signal
/// (`segmentedSignal`), a finite scale and the two-sided flag, and the segments they make.
private struct ShortTimeArguments {
    let x: UnsafePointer<Double>
    let rows: Int, samples: Int
    let parameters: SegmentParameters
    let twoSided: Bool
    let segments: Int

    init(
        _ x: UnsafePointer<Double>?, _ rows: UInt, _ samples: UInt, _ window: UnsafePointer<Double>?,
        _ nperseg: UInt, _ noverlap: UInt, _ nfft: UInt, _ detrend: Int32, _ twosided: Int32, _ scale: Double
    ) throws(APIError) {
        guard let x else { throw APIError(.argument, "x is NULL") }
        self.x = x
        (self.rows, self.samples, parameters) = try segmentedSignal(rows, samples, window, nperseg, noverlap, nfft, detrend)
        guard scale.isFinite else { throw APIError(.argument, "scale must be finite, not \(scale)") }
        twoSided = try flag(twosided, "twosided")
        segments = (self.samples - parameters.segmentLength) / parameters.step + 1
    }

    /// The caller's `out`, if it holds `needed` values (`layout` says what they are, in the error).
    func output(
        _ out: UnsafeMutablePointer<Double>?, _ outCount: UInt, _ needed: Int, _ layout: String
    ) throws(APIError) -> UnsafeMutablePointer<Double> {
        guard let out, outCount >= UInt(needed) else {
            throw APIError(.argument, "out must hold \(needed) values (\(layout)), not \(out == nil ? 0 : outCount)")
        }
        return out
    }
}

/// The short-time spectra of `rows` signals of `samples` values each: out holds rows × bins × segments
/// interleaved complex values (bins nfft / 2 + 1, or nfft when twosided), each times `scale`.
@_cdecl("tributary_stft")
public func tributary_stft(
    _ x: UnsafePointer<Double>?, _ rows: UInt, _ samples: UInt, _ window: UnsafePointer<Double>?,
    _ nperseg: UInt, _ noverlap: UInt, _ nfft: UInt, _ detrend: Int32, _ twosided: Int32, _ scale: Double,
    _ out: UnsafeMutablePointer<Double>?, _ outCount: UInt, _ segments: UnsafeMutablePointer<UInt>?
) -> Int32 {
    guarded("tributary_stft") {
        let a = try ShortTimeArguments(x, rows, samples, window, nperseg, noverlap, nfft, detrend, twosided, scale)
        let per = try product([a.parameters.binCount(twoSided: a.twoSided), a.segments, 2], "out")
        let needed = try product([a.rows, per], "out")
        let out = try a.output(out, outCount, needed, "rows × bins × segments × 2")
        let transform = try dsp { try ShortTimeTransform(a.parameters) }
        for row in 0..<a.rows {
            _ = try dsp {
                try transform.spectra(
                    UnsafeBufferPointer(start: a.x + row * a.samples, count: a.samples), scale: scale,
                    twoSided: a.twoSided, into: UnsafeMutableBufferPointer(start: out + row * per, count: per))
            }
        }
        if let segments { segments.pointee = UInt(a.segments) }
    }
}

/// Welch auto- and cross-spectra of `rows` pairs of signals (x[row], y[row], `samples` values each):
/// pxx and pyy receive rows × bins values, pxy rows × bins interleaved complex values (conj(X) Y);
/// any of them may be NULL (y NULL: pxx only). bins is nfft / 2 + 1, or nfft when twosided.
@_cdecl("tributary_cross_spectra")
public func tributary_cross_spectra(
    _ x: UnsafePointer<Double>?, _ y: UnsafePointer<Double>?, _ rows: UInt, _ samples: UInt,
    _ window: UnsafePointer<Double>?, _ nperseg: UInt, _ noverlap: UInt, _ nfft: UInt,
    _ detrend: Int32, _ average: Int32, _ scaling: Int32, _ twosided: Int32, _ fs: Double,
    _ pxx: UnsafeMutablePointer<Double>?, _ pyy: UnsafeMutablePointer<Double>?,
    _ pxy: UnsafeMutablePointer<Double>?, _ bins: UInt
) -> Int32 {
    guarded("tributary_cross_spectra") {
        guard let x else { throw APIError(.argument, "x is NULL") }
        let (r, n, p) = try segmentedSignal(rows, samples, window, nperseg, noverlap, nfft, detrend)
        guard average == 0 || average == 1 else { throw APIError(.argument, "average must be 0 (mean) or 1 (median), not \(average)") }
        guard scaling == 0 || scaling == 1 else { throw APIError(.argument, "scaling must be 0 (density) or 1 (spectrum), not \(scaling)") }
        guard fs > 0, fs.isFinite else { throw APIError(.argument, "fs must be positive and finite, not \(fs)") }
        let twoSided = try flag(twosided, "twosided")
        let b = p.binCount(twoSided: twoSided)
        guard bins == UInt(b) else { throw APIError(.argument, "bins must be \(b) (the spectrum's bins), not \(bins)") }
        if y == nil, pyy != nil || pxy != nil { throw APIError(.argument, "pyy and pxy need y") }
        var selection = CrossSpectraSelection()
        if pxx != nil { selection.insert(.pxx) }
        if pyy != nil { selection.insert(.pyy) }
        if pxy != nil { selection.insert(.pxy) }
        guard !selection.isEmpty else { throw APIError(.argument, "pxx, pyy and pxy are all NULL") }
        let configuration = CrossSpectralConfiguration(
            segments: p, average: average == 1 ? .median : .mean,
            scaling: scaling == 1 ? .spectrum : .density, twoSided: twoSided)
        // Rows on the cores, each written only by its own worker.
        try dsp {
            try CrossSpectralBatch.spectra(
                x, y, rows: r, length: n, configuration: configuration, sampleRate: fs, selection: selection
            ) { row, c in
                if let pxx { (pxx + row * b).update(from: c.pxx, count: b) }
                if let pyy { (pyy + row * b).update(from: c.pyy, count: b) }
                if let pxy {
                    for k in 0..<b {
                        pxy[2 * (row * b + k)] = c.pxyReal[k]
                        pxy[2 * (row * b + k) + 1] = c.pxyImaginary[k]
                    }
                }
            }
        }
    }
}

/// `scipy.signal.spectrogram(mode='psd')` of `rows` signals of `samples` values each: out holds
/// rows × bins × segments powers (|X|² × scale, doubled in the one-sided bins that stand for a
/// negative frequency too), scipy's layout; rows on the cores.
@_cdecl("tributary_spectrogram")
public func tributary_spectrogram(
    _ x: UnsafePointer<Double>?, _ rows: UInt, _ samples: UInt, _ window: UnsafePointer<Double>?,
    _ nperseg: UInt, _ noverlap: UInt, _ nfft: UInt, _ detrend: Int32, _ twosided: Int32, _ scale: Double,
    _ out: UnsafeMutablePointer<Double>?, _ outCount: UInt, _ segments: UnsafeMutablePointer<UInt>?
) -> Int32 {
    guarded("tributary_spectrogram") {
        let a = try ShortTimeArguments(x, rows, samples, window, nperseg, noverlap, nfft, detrend, twosided, scale)
        let needed = try product([a.rows, a.parameters.binCount(twoSided: a.twoSided), a.segments], "out")
        let out = try a.output(out, outCount, needed, "rows × bins × segments")
        _ = try dsp {
            try SpectrogramBatch.psd(
                a.x, rows: a.rows, length: a.samples, parameters: a.parameters, scale: scale, twoSided: a.twoSided,
                into: UnsafeMutableBufferPointer(start: out, count: needed))
        }
        if let segments { segments.pointee = UInt(a.segments) }
    }
}

/// The inverse short-time transform of `rows` one-sided spectra (each bins × segments interleaved
/// complex values, bins = nfft / 2 + 1), as `scipy.signal.istft`: out receives rows × (end - start)
/// samples of the overlap-added signal; `nola_failures` (may be NULL) the number of samples of the
/// first row whose squared-window sum was at most 1e-10.
@_cdecl("tributary_istft")
public func tributary_istft(
    _ z: UnsafePointer<Double>?, _ rows: UInt, _ bins: UInt, _ segments: UInt,
    _ window: UnsafePointer<Double>?, _ nperseg: UInt, _ noverlap: UInt, _ nfft: UInt, _ gain: Double,
    _ start: UInt, _ end: UInt, _ out: UnsafeMutablePointer<Double>?,
    _ nolaFailures: UnsafeMutablePointer<UInt>?
) -> Int32 {
    guarded("tributary_istft") {
        guard let z else { throw APIError(.argument, "z is NULL") }
        guard let out else { throw APIError(.argument, "out is NULL") }
        let r = try count(rows, "rows", 1...Int(maxValues))
        let p = try segmentParameters(window, nperseg, noverlap, nfft, 0)
        let b = try count(bins, "bins", (p.fftLength / 2 + 1)...(p.fftLength / 2 + 1))
        let s = try count(segments, "segments", 1...Int(maxValues))
        let per = try product([b, s, 2], "z")
        _ = try product([r, per], "z")
        let length = try product([p.step, s - 1], "the signal") + p.segmentLength
        let lo = try count(start, "start", 0...length)
        let hi = try count(end, "end", lo...length)
        _ = try product([r, hi - lo], "out")
        guard gain.isFinite else { throw APIError(.argument, "gain must be finite, not \(gain)") }
        for row in 0..<r {
            let failures = try dsp {
                try inverseShortTimeTransform(
                    UnsafeBufferPointer(start: z + row * per, count: per), segments: s, window: p.window,
                    fftLength: p.fftLength, step: p.step, gain: gain, range: lo..<hi,
                    into: UnsafeMutableBufferPointer(start: out + row * (hi - lo), count: hi - lo))
            }
            if row == 0, let nolaFailures { nolaFailures.pointee = UInt(failures) }
        }
    }
}

/// The rows × samples of a signal cut into segments, checked: counts, the array's size, the segment
/// parameters, and a segment no longer than the signal.
private func segmentedSignal(
    _ rows: UInt, _ samples: UInt, _ window: UnsafePointer<Double>?, _ nperseg: UInt, _ noverlap: UInt, _ nfft: UInt,
    _ detrend: Int32
) throws(APIError) -> (rows: Int, samples: Int, parameters: SegmentParameters) {
    let r = try count(rows, "rows", 1...Int(maxValues)), n = try count(samples, "samples", 1...Int(maxValues))
    _ = try product([r, n], "x")
    let p = try segmentParameters(window, nperseg, noverlap, nfft, detrend)
    guard n >= p.segmentLength else {
        throw APIError(.argument, "nperseg (\(p.segmentLength)) is longer than the signal (\(n) samples)")
    }
    return (r, n, p)
}
