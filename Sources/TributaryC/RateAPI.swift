import Foundation
import TributaryDSP

// Rate change through the C interface (include/tributary.h, docs/C_API.md "Rate change"):
// upfirdn, resample_poly and decimate of TributaryDSP's RateChange, the functions that Python's
// tributary.signal calls. Every count from the caller is range-checked before any arithmetic.

/// A factor (up, down, q) from C within 1…RateChange.maxFactor.
private func factor(_ value: UInt, _ name: String) throws(APIError) -> Int {
    guard value >= 1, value <= UInt(RateChange.maxFactor) else {
        throw APIError(.argument, "\(name) must be from 1 to \(RateChange.maxFactor), not \(value)")
    }
    return Int(value)
}

/// A signal length or coefficient count from C.
private func size(_ value: UInt, _ name: String, min: Int = 0, max limit: Int) throws(APIError) -> Int {
    guard value >= UInt(min), value <= UInt(limit) else {
        throw APIError(.argument, "\(name) must be from \(min) to \(limit), not \(value)")
    }
    return Int(value)
}

private func extensionMode(_ mode: Int32) throws(APIError) -> ExtensionMode {
    guard let m = ExtensionMode(rawValue: mode) else {
        throw APIError(.argument, "mode must be one of TRIBUTARY_EXT_CONSTANT … TRIBUTARY_EXT_LINE (0 to 8), not \(mode)")
    }
    return m
}

private func rateError(_ error: any Error) -> APIError { APIError(.argument, "\(error)") }

/// The pointers of a call's input and output: none needed when either array is empty.
private func arrays(_ x: UnsafePointer<Double>?, _ input: FilterLayout, _ y: UnsafeMutablePointer<Double>?, _ output: FilterLayout)
    throws(APIError) -> (UnsafePointer<Double>, UnsafeMutablePointer<Double>)?
{
    if output.count == 0 { return nil }
    guard let y else { throw APIError(.argument, "y is NULL") }
    if input.count == 0 {
        // Only constant-mode upfirdn of an empty line has outputs: x is never read.
        return (UnsafePointer(y), y)
    }
    guard let x else { throw APIError(.argument, "x is NULL") }
    return (x, y)
}

private func checkOutput(_ expected: Int, _ given: UInt, _ what: String) throws(APIError) {
    guard given == UInt(expected) else {
        throw APIError(.argument, "out_length must be the \(what) output length \(expected), not \(given)")
    }
}

/// Runs one step of a rate change, its error an argument error.
private func rateStep<T>(_ step: () throws -> T) throws(APIError) -> T {
    do { return try step() } catch { throw rateError(error) }
}

/// The arrays of a rate change whose output is `length()` samples long along the axis, once the
/// caller's `out_length` is checked against it: nil when there is nothing to compute.
private func outputArrays(
    _ x: UnsafePointer<Double>?, _ shape: FilterLayout, _ y: UnsafeMutablePointer<Double>?, outLength: UInt, _ what: String,
    length: () throws -> Int
) throws(APIError) -> (UnsafePointer<Double>, UnsafeMutablePointer<Double>)? {
    let n = try rateStep(length)
    try checkOutput(n, outLength, what)
    return try arrays(x, shape, y, FilterLayout(outer: shape.outer, length: n, inner: shape.inner))
}

/// The length along the axis of upfirdn's output: ⌈((length - 1)·up + h_count) / down⌉.
@_cdecl("tributary_upfirdn_length")
public func tributary_upfirdn_length(_ hCount: UInt, _ length: UInt, _ up: UInt, _ down: UInt, _ result: UnsafeMutablePointer<UInt>?)
    -> Int32
{
    guarded("tributary_upfirdn_length") {
        let result = try out(result, "out_length")
        let taps = try size(hCount, "h_count", min: 1, max: FIRDesign.maxTaps)
        let n = try size(length, "length", max: IIRFilter.maxSamples)
        let u = try factor(up, "up"), d = try factor(down, "down")
        do { result.pointee = UInt(try RateChange.upfirdnLength(taps: taps, length: n, up: u, down: d)) } catch { throw rateError(error) }
    }
}

/// The length along the axis of resample_poly's output: ⌈length·up / down⌉ (up and down reduced).
@_cdecl("tributary_resample_length")
public func tributary_resample_length(_ length: UInt, _ up: UInt, _ down: UInt, _ result: UnsafeMutablePointer<UInt>?) -> Int32 {
    guarded("tributary_resample_length") {
        let result = try out(result, "out_length")
        let n = try size(length, "length", max: IIRFilter.maxSamples)
        let u = try factor(up, "up"), d = try factor(down, "down")
        do { result.pointee = UInt(try RateChange.resampleLength(length: n, up: u, down: d)) } catch { throw rateError(error) }
    }
}

/// scipy.signal.upfirdn along one axis of a C-ordered array seen as (outer, length, inner): upsample by
/// `up`, filter by the `h_count` taps of `h`, keep every `down`-th sample; the signal extended by
/// `mode` (TRIBUTARY_EXT_*, `cval` for constant). `y` (not overlapping `x`) holds outer × out_length
/// × inner values, out_length as tributary_upfirdn_length gives it.
@_cdecl("tributary_upfirdn")
public func tributary_upfirdn(
    _ h: UnsafePointer<Double>?, _ hCount: UInt, _ x: UnsafePointer<Double>?, _ y: UnsafeMutablePointer<Double>?,
    _ outer: UInt, _ length: UInt, _ inner: UInt, _ up: UInt, _ down: UInt, _ mode: Int32, _ cval: Double,
    _ outLength: UInt
) -> Int32 {
    guarded("tributary_upfirdn") {
        let taps = try size(hCount, "h_count", min: 1, max: FIRDesign.maxTaps)
        guard let h else { throw APIError(.argument, "h is NULL") }
        let coefficients = Array(UnsafeBufferPointer(start: h, count: taps))
        let shape = try arrayLayout(outer, length, inner)
        let u = try factor(up, "up"), d = try factor(down, "down")
        let m = try extensionMode(mode)
        guard
            let (xp, yp) = try outputArrays(
                x, shape, y, outLength: outLength, "upfirdn",
                length: { try RateChange.upfirdnLength(taps: taps, length: shape.length, up: u, down: d) })
        else { return }
        try rateStep { try RateChange.upfirdn(h: coefficients, x: xp, y: yp, layout: shape, up: u, down: d, mode: m, cval: cval) }
    }
}

/// scipy.signal.resample_poly along one axis: the rate times up/down by a polyphase FIR filter.
/// With `taps` (non-NULL, `taps_count` > 0) that filter is applied (scipy's window given as an
/// array); else a firwin low-pass of 20·max(up, down) + 1 taps with `window` ("kaiser" with shape
/// `beta` is scipy's default ('kaiser', 5.0); "hamming", "hann", "blackman", "boxcar"). The
/// signal is extended by `mode` (TRIBUTARY_EXT_*, scipy's padtype; `cval` for constant). `y` holds
/// outer × out_length × inner values, out_length as tributary_resample_length gives it.
@_cdecl("tributary_resample_poly")
public func tributary_resample_poly(
    _ x: UnsafePointer<Double>?, _ y: UnsafeMutablePointer<Double>?, _ outer: UInt, _ length: UInt,
    _ inner: UInt, _ up: UInt, _ down: UInt, _ window: UnsafePointer<CChar>?, _ beta: Double,
    _ taps: UnsafePointer<Double>?, _ tapsCount: UInt, _ mode: Int32, _ cval: Double,
    _ outLength: UInt
) -> Int32 {
    guarded("tributary_resample_poly") {
        let shape = try arrayLayout(outer, length, inner)
        let u = try factor(up, "up"), d = try factor(down, "down")
        let m = try extensionMode(mode)
        let filter: ResampleWindow
        if let taps, tapsCount > 0 {
            let n = try size(tapsCount, "taps_count", min: 1, max: FIRDesign.maxTaps)
            filter = .taps(Array(UnsafeBufferPointer(start: taps, count: n)))
        } else {
            let name = try string(window, "window")
            guard let shape = FIRWindow(name: name, beta: beta) else {
                throw APIError(.argument, "window must be hamming, hann, blackman, boxcar or kaiser (with a finite beta), not '\(name)'")
            }
            filter = .design(shape)
        }
        guard
            let (xp, yp) = try outputArrays(
                x, shape, y, outLength: outLength, "resample_poly",
                length: { try RateChange.resampleLength(length: shape.length, up: u, down: d) })
        else { return }
        try rateStep { try RateChange.resamplePoly(x: xp, y: yp, layout: shape, up: u, down: d, window: filter, mode: m, cval: cval) }
    }
}

/// scipy.signal.decimate along one axis: the anti-aliasing filter `ftype` TRIBUTARY_DECIMATE_IIR
/// (cheby1 of order n, default 8) or _FIR (firwin of n + 1 taps, default n = 20·q), `n` -1 for the
/// default; `zero_phase` 1 filters forward and backward (scipy's default), 0 forward only; then every
/// q-th sample. `y` holds outer × ⌈length / q⌉ × inner values (out_length).
@_cdecl("tributary_decimate")
public func tributary_decimate(
    _ x: UnsafePointer<Double>?, _ y: UnsafeMutablePointer<Double>?, _ outer: UInt, _ length: UInt,
    _ inner: UInt, _ q: UInt, _ order: Int64, _ ftype: Int32, _ zeroPhase: Int32, _ outLength: UInt
) -> Int32 {
    guarded("tributary_decimate") {
        let shape = try arrayLayout(outer, length, inner)
        let factorQ = try factor(q, "q")
        guard ftype == 0 || ftype == 1 else {
            throw APIError(.argument, "ftype must be TRIBUTARY_DECIMATE_IIR (0) or _FIR (1), not \(ftype)")
        }
        guard zeroPhase == 0 || zeroPhase == 1 else { throw APIError(.argument, "zero_phase must be 0 or 1, not \(zeroPhase)") }
        guard order >= -1, order < Int64(FIRDesign.maxTaps) else {
            throw APIError(.argument, "n must be -1 (the default) or from 0 to \(FIRDesign.maxTaps - 1), not \(order)")
        }
        let n: Int
        do { n = try RateChange.decimateLength(length: shape.length, q: factorQ) } catch { throw rateError(error) }
        try checkOutput(n, outLength, "decimate")
        let filter: DecimationFilter = ftype == 0 ? .iir : .fir
        let designOrder: Int? = order == -1 ? nil : Int(order)
        // The filter is designed (and its errors reported) also for an empty signal.
        do {
            if filter == .iir {
                _ = try RateChange.decimationSections(q: factorQ, order: designOrder)
            } else {
                _ = try RateChange.decimationTaps(q: factorQ, order: designOrder)
            }
        } catch { throw rateError(error) }
        guard let (xp, yp) = try arrays(x, shape, y, FilterLayout(outer: shape.outer, length: n, inner: shape.inner)) else { return }
        do {
            try RateChange.decimate(x: xp, y: yp, layout: shape, q: factorQ, order: designOrder, filter: filter, zeroPhase: zeroPhase == 1)
        } catch { throw rateError(error) }
    }
}
