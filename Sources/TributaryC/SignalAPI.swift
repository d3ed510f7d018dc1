import Foundation
import TributaryDSP

// Digital filters through the C interface (include/tributary.h, docs/C_API.md "Digital filters"):
// the design and the application of TributaryDSP's filters, the functions that Python's
// tributary.signal calls. Arrays are the caller's; every count and number is checked first.

/// The largest number of sections, taps or coefficients accepted.
private let maxCoefficients = 1 << 24

/// A count from C as an Int within 0…limit.
private func count(_ value: UInt, _ name: String, min: Int = 0, max limit: Int = maxCoefficients) throws(APIError) -> Int {
    guard value >= UInt(min), value <= UInt(limit) else {
        throw APIError(.argument, "\(name) must be from \(min) to \(limit), not \(value)")
    }
    return Int(value)
}

/// `n` values at a required pointer, copied.
private func values(_ pointer: UnsafePointer<Double>?, _ n: Int, _ name: String) throws(APIError) -> [Double] {
    guard n > 0 else { return [] }
    guard let pointer else { throw APIError(.argument, "\(name) is NULL") }
    return Array(UnsafeBufferPointer(start: pointer, count: n))
}

/// The (outer, length, inner) view of the caller's array, checked (the filters' and the rate
/// changes').
func arrayLayout(_ outer: UInt, _ length: UInt, _ inner: UInt) throws(APIError) -> FilterLayout {
    guard outer <= UInt(Int.max), length <= UInt(Int.max), inner <= UInt(Int.max) else {
        throw APIError(.argument, "outer, length and inner must each be at most \(Int.max)")
    }
    let (lines, o1) = Int(outer).multipliedReportingOverflow(by: Int(inner))
    let (total, o2) = lines.multipliedReportingOverflow(by: Int(length))
    guard !o1, !o2, total <= IIRFilter.maxSamples else {
        throw APIError(.argument, "the array (\(outer) × \(length) × \(inner)) is too large")
    }
    return FilterLayout(outer: Int(outer), length: Int(length), inner: Int(inner))
}

private func samples(_ x: UnsafePointer<Double>?, _ y: UnsafeMutablePointer<Double>?, _ layout: FilterLayout)
    throws(APIError) -> (UnsafePointer<Double>, UnsafeMutablePointer<Double>)?
{
    if layout.count == 0 { return nil }
    guard let x else { throw APIError(.argument, "x is NULL") }
    guard let y else { throw APIError(.argument, "y is NULL") }
    return (x, y)
}

private func padding(_ padtype: Int32, _ padlen: Int64) throws(APIError) -> (FilterPadding, Int?) {
    let kinds: [Int32: FilterPadding] = [0: .none, 1: .odd, 2: .even, 3: .constant]
    guard let kind = kinds[padtype] else {
        throw APIError(.argument, "padtype must be TRIBUTARY_PAD_NONE, _ODD, _EVEN or _CONSTANT (0 to 3), not \(padtype)")
    }
    guard padlen >= -1, padlen <= Int64(IIRFilter.maxSamples) else {
        throw APIError(.argument, "padlen must be -1 (the default, 3 × taps) or a length >= 0, not \(padlen)")
    }
    return (kind, padlen == -1 ? nil : Int(padlen))
}

private func filterError(_ error: any Error) -> APIError { APIError(.argument, "\(error)") }
private func designError(_ error: any Error) -> APIError { APIError(.argument, "\(error)") }

/// Designs a digital IIR filter as scipy.signal.iirfilter: `family` "butter", "cheby1" (ripple
/// `rp` dB), "cheby2" (attenuation `rs` dB), "ellip" (both), "bessel" (norm 'phase') or
/// "bessel_delay" (norm 'delay'); `wn` one or two critical frequencies, fractions of
/// Nyquist when `fs` is 0, else Hz; `btype` as scipy's. `output` 0 writes sections × 6
/// coefficients (sos), 1 writes b then a (ba, equal lengths). `count` receives the number of
/// values; a `capacity` too small gives TRIBUTARY_E_BUFFER with `count` the number needed.
@_cdecl("tributary_iir_design")
public func tributary_iir_design(
    _ family: UnsafePointer<CChar>?, _ order: Int32, _ wn: UnsafePointer<Double>?, _ wnCount: UInt,
    _ btype: UnsafePointer<CChar>?, _ rp: Double, _ rs: Double, _ fs: Double, _ output: Int32,
    _ destination: UnsafeMutablePointer<Double>?, _ capacity: UInt,
    _ written: UnsafeMutablePointer<UInt>?
) -> Int32 {
    guarded("tributary_iir_design") {
        let written = try out(written, "count")
        written.pointee = 0
        let familyName = try string(family, "family"), bandName = try string(btype, "btype")
        guard let band = FilterBand(name: bandName) else {
            throw APIError(.argument, "'\(bandName)' is an invalid bandtype for filter (lowpass, highpass, bandpass or bandstop)")
        }
        let kind: FilterFamily
        switch familyName {
        case "butter": kind = .butterworth
        case "cheby1": kind = .chebyshev1(ripple: rp)
        case "cheby2": kind = .chebyshev2(attenuation: rs)
        case "ellip": kind = .elliptic(ripple: rp, attenuation: rs)
        case "bessel", "bessel_phase": kind = .bessel(norm: .phase)
        case "bessel_delay": kind = .bessel(norm: .delay)
        default: throw APIError(.argument, "family must be butter, cheby1, cheby2, ellip, bessel or bessel_delay, not '\(familyName)'")
        }
        guard output == 0 || output == 1 else { throw APIError(.argument, "output must be 0 (sos) or 1 (ba), not \(output)") }
        let frequencies = try values(wn, try count(wnCount, "wn_count", min: 1, max: 2), "wn")
        guard fs == 0 || (fs > 0 && fs.isFinite) else {
            throw APIError(.argument, "fs must be 0 (none) or a positive finite number, not \(fs)")
        }
        let coefficients: [Double]
        do {
            if output == 0 {
                coefficients = try FilterDesign.iirSOS(
                    order: Int(order), frequencies: frequencies, band: band, family: kind,
                    fs: fs == 0 ? nil : fs
                ).coefficients
            } else {
                let f = try FilterDesign.iirBA(
                    order: Int(order), frequencies: frequencies, band: band, family: kind, fs: fs == 0 ? nil : fs)
                coefficients = f.b + f.a
            }
        } catch {
            throw designError(error)
        }
        try deliver(coefficients, to: destination, capacity: capacity, count: written)
    }
}

/// Writes `values` to the caller's buffer of `capacity` values; `count` receives how many there
/// are, also when the buffer is too small (TRIBUTARY_E_BUFFER).
private func deliver(
    _ values: [Double], to destination: UnsafeMutablePointer<Double>?, capacity: UInt,
    count written: UnsafeMutablePointer<UInt>
) throws(APIError) {
    written.pointee = UInt(values.count)
    guard capacity >= UInt(values.count) else {
        throw APIError(.buffer, "the coefficients need \(values.count) values, the buffer holds \(capacity)")
    }
    guard let destination else { throw APIError(.argument, "coefficients is NULL") }
    destination.update(from: values, count: values.count)
}

/// A second-order notch filter as scipy.signal.iirnotch: `w0` in Hz for a sampling rate `fs` (2 for
/// fractions of Nyquist), quality factor `q`; writes three b and three a coefficients.
@_cdecl("tributary_iirnotch")
public func tributary_iirnotch(
    _ w0: Double, _ q: Double, _ fs: Double, _ b: UnsafeMutablePointer<Double>?,
    _ a: UnsafeMutablePointer<Double>?
) -> Int32 {
    guarded("tributary_iirnotch") {
        let b = try out(b, "b"), a = try out(a, "a")
        let f: TransferFunction
        do { f = try FilterDesign.notch(w0: w0, q: q, fs: fs) } catch { throw designError(error) }
        b.update(from: f.b, count: 3)
        a.update(from: f.a, count: 3)
    }
}

/// A linear-phase FIR filter as scipy.signal.firwin: `numtaps` taps; `cutoff` in Hz for a sampling
/// rate `fs` (2 for fractions of Nyquist), strictly increasing inside (0, fs/2); `window` "hamming",
/// "hann", "blackman", "boxcar" or "kaiser" (shape `beta`); a finite `width` (Hz) chooses a Kaiser
/// window for that transition width instead; `pass_zero` 1 when DC is passed; `scale` 1 for unit
/// gain at the centre of the first pass band. Writes `numtaps` values to `taps`.
@_cdecl("tributary_firwin")
public func tributary_firwin(
    _ numtaps: UInt, _ cutoff: UnsafePointer<Double>?, _ cutoffCount: UInt, _ window: UnsafePointer<CChar>?,
    _ beta: Double, _ width: Double, _ passZero: Int32, _ scale: Int32, _ fs: Double,
    _ taps: UnsafeMutablePointer<Double>?
) -> Int32 {
    guarded("tributary_firwin") {
        let n = try count(numtaps, "numtaps", min: 1, max: FIRDesign.maxTaps)
        let taps = try out(taps, "taps")
        guard fs > 0, fs.isFinite else { throw APIError(.argument, "fs must be a positive finite number, not \(fs)") }
        guard passZero == 0 || passZero == 1, scale == 0 || scale == 1 else {
            throw APIError(.argument, "pass_zero and scale must be 0 or 1")
        }
        let nyquist = 0.5 * fs
        let edges = try values(cutoff, try count(cutoffCount, "cutoff_count", min: 1, max: 1 << 16), "cutoff").map { $0 / nyquist }
        let shape: FIRWindow
        if !width.isNaN {
            guard width > 0, width.isFinite else {
                throw APIError(.argument, "width must be a positive finite number (or NaN for none), not \(width)")
            }
            shape = .kaiser(beta: FIRDesign.kaiserBeta(taps: n, width: width / nyquist))
        } else {
            let name = try string(window, "window")
            guard let named = FIRWindow(name: name, beta: beta) else {
                throw APIError(.argument, "window must be hamming, hann, blackman, boxcar or kaiser (with a finite beta), not '\(name)'")
            }
            shape = named
        }
        let h: [Double]
        do { h = try FIRDesign.firwin(taps: n, cutoff: edges, window: shape, passZero: passZero == 1, scale: scale == 1) } catch {
            throw designError(error)
        }
        taps.update(from: h, count: n)
    }
}

private func sections(_ sos: UnsafePointer<Double>?, _ n: UInt) throws(APIError) -> SecondOrderSections {
    let s = SecondOrderSections(coefficients: try values(sos, try count(n, "sections", min: 1, max: maxCoefficients / 6) * 6, "sos"))
    do { try s.validate() } catch { throw filterError(error) }
    return s
}

private func transfer(_ b: UnsafePointer<Double>?, _ nb: UInt, _ a: UnsafePointer<Double>?, _ na: UInt) throws(APIError) -> TransferFunction
{
    TransferFunction(b: try values(b, try count(nb, "b_count", min: 1), "b"), a: try values(a, try count(na, "a_count", min: 1), "a"))
}

/// scipy.signal.sosfilt along one axis of a C-ordered array seen as (outer, length, inner): `sos`
/// holds sections × 6 coefficients (every a0 = 1). `zi` (may be NULL: zeros) holds the initial state
/// shaped (sections, outer, 2, inner); the final state goes to `zf` (may be NULL; may be `zi`).
/// `y` may be `x`.
@_cdecl("tributary_sosfilt")
public func tributary_sosfilt(
    _ sos: UnsafePointer<Double>?, _ n: UInt, _ x: UnsafePointer<Double>?, _ y: UnsafeMutablePointer<Double>?,
    _ outer: UInt, _ length: UInt, _ inner: UInt, _ zi: UnsafePointer<Double>?,
    _ zf: UnsafeMutablePointer<Double>?
) -> Int32 {
    guarded("tributary_sosfilt") {
        let s = try sections(sos, n)
        let shape = try arrayLayout(outer, length, inner)
        guard let (xp, yp) = try samples(x, y, shape) else { return }
        do { try IIRFilter.sosfilt(s, x: xp, y: yp, layout: shape, initial: zi, final: zf) } catch { throw filterError(error) }
    }
}

/// scipy.signal.lfilter along one axis (as tributary_sosfilt): b and a (a[0] not zero); `zi` shaped
/// (outer, K - 1, inner) with K = max(b_count, a_count).
@_cdecl("tributary_lfilter")
public func tributary_lfilter(
    _ b: UnsafePointer<Double>?, _ nb: UInt, _ a: UnsafePointer<Double>?, _ na: UInt,
    _ x: UnsafePointer<Double>?, _ y: UnsafeMutablePointer<Double>?, _ outer: UInt, _ length: UInt, _ inner: UInt,
    _ zi: UnsafePointer<Double>?, _ zf: UnsafeMutablePointer<Double>?
) -> Int32 {
    guarded("tributary_lfilter") {
        let f = try transfer(b, nb, a, na)
        do { _ = try f.normalized() } catch { throw filterError(error) }
        let shape = try arrayLayout(outer, length, inner)
        guard let (xp, yp) = try samples(x, y, shape) else { return }
        do { try IIRFilter.lfilter(f, x: xp, y: yp, layout: shape, initial: zi, final: zf) } catch { throw filterError(error) }
    }
}

/// scipy.signal.sosfiltfilt along one axis: `padtype` TRIBUTARY_PAD_*, `padlen` -1 for scipy's
/// default (3 × taps). `y` may be `x`.
@_cdecl("tributary_sosfiltfilt")
public func tributary_sosfiltfilt(
    _ sos: UnsafePointer<Double>?, _ n: UInt, _ x: UnsafePointer<Double>?, _ y: UnsafeMutablePointer<Double>?,
    _ outer: UInt, _ length: UInt, _ inner: UInt, _ padtype: Int32, _ padlen: Int64
) -> Int32 {
    guarded("tributary_sosfiltfilt") {
        let s = try sections(sos, n)
        let shape = try arrayLayout(outer, length, inner)
        let (kind, edge) = try padding(padtype, padlen)
        guard let (xp, yp) = try samples(x, y, FilterLayout(outer: 1, length: max(shape.count, 1), inner: 1)) else { return }
        do { try IIRFilter.sosfiltfilt(s, x: xp, y: yp, layout: shape, padding: kind, padlen: edge) } catch { throw filterError(error) }
    }
}

/// scipy.signal.filtfilt (method 'pad') along one axis, as tributary_sosfiltfilt.
@_cdecl("tributary_filtfilt")
public func tributary_filtfilt(
    _ b: UnsafePointer<Double>?, _ nb: UInt, _ a: UnsafePointer<Double>?, _ na: UInt,
    _ x: UnsafePointer<Double>?, _ y: UnsafeMutablePointer<Double>?, _ outer: UInt, _ length: UInt, _ inner: UInt,
    _ padtype: Int32, _ padlen: Int64
) -> Int32 {
    guarded("tributary_filtfilt") {
        let f = try transfer(b, nb, a, na)
        let shape = try arrayLayout(outer, length, inner)
        let (kind, edge) = try padding(padtype, padlen)
        guard let (xp, yp) = try samples(x, y, FilterLayout(outer: 1, length: max(shape.count, 1), inner: 1)) else { return }
        do { try IIRFilter.filtfilt(f, x: xp, y: yp, layout: shape, padding: kind, padlen: edge) } catch { throw filterError(error) }
    }
}

/// scipy.signal.sosfilt_zi: writes sections × 2 values to `zi`.
@_cdecl("tributary_sosfilt_zi")
public func tributary_sosfilt_zi(_ sos: UnsafePointer<Double>?, _ n: UInt, _ zi: UnsafeMutablePointer<Double>?) -> Int32 {
    guarded("tributary_sosfilt_zi") {
        let s = SecondOrderSections(coefficients: try values(sos, try count(n, "sections", min: 1, max: maxCoefficients / 6) * 6, "sos"))
        let zi = try out(zi, "zi")
        let values: [Double]
        do { values = try InitialState.sos(s) } catch { throw filterError(error) }
        zi.update(from: values, count: values.count)
    }
}

/// scipy.signal.lfilter_zi: writes max(b_count, a_count) - 1 values to `zi` (after dropping
/// leading zeros of a, which may make it fewer: `count` receives how many).
@_cdecl("tributary_lfilter_zi")
public func tributary_lfilter_zi(
    _ b: UnsafePointer<Double>?, _ nb: UInt, _ a: UnsafePointer<Double>?, _ na: UInt,
    _ zi: UnsafeMutablePointer<Double>?, _ written: UnsafeMutablePointer<UInt>?
) -> Int32 {
    guarded("tributary_lfilter_zi") {
        let f = try transfer(b, nb, a, na)
        let written = try out(written, "count")
        let values: [Double]
        do { values = try InitialState.lfilter(f) } catch { throw filterError(error) }
        written.pointee = UInt(values.count)
        if values.isEmpty { return }
        let zi = try out(zi, "zi")
        zi.update(from: values, count: values.count)
    }
}
