import CKernels
import Foundation

// Rate change as scipy.signal does it: upfirdn (upsample by zero insertion, FIR filter, keep every
// down-th sample) in one polyphase kernel that computes only the samples kept, resample_poly (a
// Kaiser-window firwin low-pass applied by upfirdn, centred), and decimate (the anti-aliasing
// cheby1 or firwin filter, by sosfiltfilt / sosfilt or by the polyphase kernel). The sums run in
// scipy's order (oldest input first, from zero), so the results equal scipy's to the last bits.
// Arrays are seen as (outer, length, inner), as the filters in IIRFilter.swift see them.

/// How upfirdn extends the signal beyond its ends (scipy's mode; raw values are scipy's codes and
/// the C interface's TRIBUTARY_EXT_*).
public enum ExtensionMode: Int32, CaseIterable, Sendable {
    /// `cval` beyond both ends (scipy's default, cval 0).
    case constant = 0
    /// Mirrored including the end sample: 3 2 1 | 1 2 3 | 3 2 1.
    case symmetric = 1
    /// The end sample repeated.
    case edge = 2
    /// Continued along the line through the two end samples.
    case smooth = 3
    /// Periodic.
    case wrap = 4
    /// Mirrored about the end sample: 3 2 | 1 2 3 | 2 1.
    case reflect = 5
    /// Symmetric with the sign flipped.
    case antisymmetric = 6
    /// Point reflection about the end sample.
    case antireflect = 7
    /// Continued along the line through the first and the last sample.
    case line = 8

    public init?(name: String) {
        switch name {
        case "constant": self = .constant
        case "symmetric": self = .symmetric
        case "edge": self = .edge
        case "smooth": self = .smooth
        case "wrap": self = .wrap
        case "reflect": self = .reflect
        case "antisymmetric": self = .antisymmetric
        case "antireflect": self = .antireflect
        case "line": self = .line
        default: return nil
        }
    }

    public var name: String { String(describing: self) }

    /// The fewest samples the extension is defined for (scipy reads past the end, or divides by
    /// zero, on shorter signals).
    public var minimumLength: Int {
        switch self {
        case .constant: return 0
        case .symmetric, .edge, .wrap, .antisymmetric, .line: return 1
        case .smooth, .reflect, .antireflect: return 2
        }
    }
}

/// The anti-aliasing filter of decimate (scipy's ftype).
public enum DecimationFilter: Equatable, Sendable {
    /// Chebyshev type I, 0.05 dB ripple, cutoff 0.8/q of Nyquist, as second-order sections.
    case iir
    /// firwin with a Hamming window, cutoff 1/q of Nyquist.
    case fir
}

/// The FIR filter of resample_poly (scipy's window argument).
public enum ResampleWindow: Equatable, Sendable {
    /// A firwin low-pass of 20·max(up, down) + 1 taps with this window (scipy's default is
    /// Kaiser, beta 5).
    case design(FIRWindow)
    /// The filter's coefficients as given.
    case taps([Double])
}

public enum RateChange {
    /// The largest up, down or q factor accepted.
    public static let maxFactor = 1 << 20

    static func checkFactor(_ value: Int, _ name: String) throws(FilterError) {
        guard value >= 1, value <= maxFactor else { throw FilterError("\(name) must be an integer from 1 to \(maxFactor), not \(value)") }
    }

    /// ⌊a / b⌋ for b > 0 (Python's //).
    static func floorDivide(_ a: Int, _ b: Int) -> Int {
        let q = a / b
        return (a % b != 0 && a < 0) ? q - 1 : q
    }

    /// The samples upfirdn returns along the axis: ⌈((length - 1)·up + taps) / down⌉ (scipy's
    /// _output_len), checked for overflow.
    public static func upfirdnLength(taps: Int, length: Int, up: Int, down: Int) throws(FilterError) -> Int {
        try checkFactor(up, "up")
        try checkFactor(down, "down")
        guard taps >= 1, taps <= FIRDesign.maxTaps else {
            throw FilterError("h must have from 1 to \(FIRDesign.maxTaps) coefficients, not \(taps)")
        }
        guard length >= 0, length <= IIRFilter.maxSamples else { throw FilterError("the signal length \(length) is out of range") }
        let (spread, o1) = (length - 1).multipliedReportingOverflow(by: up)
        let (numerator, o2) = spread.addingReportingOverflow(taps - 1)
        guard !o1, !o2 else { throw FilterError("the output of upfirdn is too long (\(length) samples × up \(up))") }
        let n = floorDivide(numerator, down) + 1
        guard n >= 0 else {
            throw FilterError("upfirdn of an empty signal with \(taps) taps, up \(up), down \(down) has a negative length")
        }
        guard n <= IIRFilter.maxSamples else { throw FilterError("the output of upfirdn is too long (\(n) samples)") }
        return n
    }

    /// The output layout: the input's with `length` along the axis, its size checked.
    static func outputLayout(_ layout: FilterLayout, length: Int) throws(FilterError) -> FilterLayout {
        let out = FilterLayout(outer: layout.outer, length: length, inner: layout.inner)
        try IIRFilter.checkLayout(out)
        return out
    }

    // MARK: upfirdn

    /// The value of x at index `idx` < 0 (scipy's _extend_left).
    @inlinable
    static func extendLeft(_ x: UnsafePointer<Double>, _ s: Int, _ idx: Int, _ n: Int, _ mode: ExtensionMode, _ cval: Double) -> Double {
        switch mode {
        case .symmetric:
            if -idx < n { return x[(-idx - 1) * s] }
            let i = (-idx - 1) % (2 * n)
            return i < n ? x[i * s] : x[(n - 1 - (i - n)) * s]
        case .reflect:
            if -idx < n - 1 { return x[(-idx) * s] }
            let i = (-idx - 1) % (2 * (n - 1))
            return i < n - 1 ? x[(i + 1) * s] : x[(n - 2 - (i - (n - 1))) * s]
        case .wrap:
            let i = (-idx - 1) % n
            return x[(n - i - 1) * s]
        case .smooth:
            return x[0] + Double(idx) * (x[s] - x[0])
        case .line:
            let slope = (x[(n - 1) * s] - x[0]) / Double(n - 1)
            return x[0] + Double(idx) * slope
        case .antisymmetric:
            if -idx < n { return -x[(-idx - 1) * s] }
            let i = (-idx - 1) % (2 * n)
            return i < n ? -x[i * s] : x[(n - 1 - (i - n)) * s]
        case .antireflect:
            if -idx < n { return x[0] - (x[(-idx) * s] - x[0]) }
            let level = x[0] + (x[0] - x[(n - 1) * s]) * Double((-idx - 1) / (n - 1))
            let i = (-idx - 1) % (2 * (n - 1))
            return i < n - 1 ? level - (x[(i + 1) * s] - x[0]) : level - (x[(n - 1) * s] - x[(n - 2 - (i - (n - 1))) * s])
        case .edge:
            return x[0]
        case .constant:
            return cval
        }
    }

    /// The value of x at index `idx` ≥ n (scipy's _extend_right).
    @inlinable
    static func extendRight(_ x: UnsafePointer<Double>, _ s: Int, _ idx: Int, _ n: Int, _ mode: ExtensionMode, _ cval: Double) -> Double {
        switch mode {
        case .symmetric:
            if idx < 2 * n { return x[(n - 1 - (idx - n)) * s] }
            let i = idx % (2 * n)
            return i < n ? x[i * s] : x[(n - 1 - (i - n)) * s]
        case .reflect:
            if idx < 2 * n - 1 { return x[(n - 2 - (idx - n)) * s] }
            let i = idx % (2 * (n - 1))
            return i < n - 1 ? x[i * s] : x[(n - 1 - (i - (n - 1))) * s]
        case .wrap:
            return x[(idx % n) * s]
        case .smooth:
            return x[(n - 1) * s] + Double(idx - n + 1) * (x[(n - 1) * s] - x[(n - 2) * s])
        case .line:
            let slope = (x[(n - 1) * s] - x[0]) / Double(n - 1)
            return x[(n - 1) * s] + Double(idx - n + 1) * slope
        case .edge:
            return x[(n - 1) * s]
        case .antisymmetric:
            if idx < 2 * n { return -x[(n - 1 - (idx - n)) * s] }
            let i = idx % (2 * n)
            return i < n ? x[i * s] : -x[(n - 1 - (i - n)) * s]
        case .antireflect:
            if idx < 2 * n - 1 { return x[(n - 1) * s] - (x[(n - 2 - (idx - n)) * s] - x[(n - 1) * s]) }
            let level = x[(n - 1) * s] + (x[(n - 1) * s] - x[0]) * Double(idx / (n - 1) - 1)
            let i = idx % (2 * (n - 1))
            return i < n - 1 ? level + (x[i * s] - x[0]) : level + (x[(n - 1) * s] - x[(n - 1 - (i - (n - 1))) * s])
        case .constant:
            return cval
        }
    }

    /// scipy's transposed, flipped filter: phase p holds h[p + up·(P - 1)], …, h[p] (zero past the
    /// end), P = ⌈taps / up⌉ taps per phase.
    static func polyphase(_ h: [Double], up: Int) -> [Double] {
        let perPhase = (h.count + up - 1) / up
        var flipped = [Double](repeating: 0, count: perPhase * up)
        for p in 0..<up {
            for j in 0..<perPhase {
                let k = p + up * (perPhase - 1 - j)
                flipped[p * perPhase + j] = k < h.count ? h[k] : 0
            }
        }
        return flipped
    }

    /// One line of upfirdn (scipy's _apply_impl): `outCount` outputs of the polyphase filter
    /// `hf` (`up` phases of `perPhase` taps) over `n` samples of x (stride xs) into y (stride ys),
    /// less the first `skip` of them, which are computed (the loop's position needs them) but not
    /// stored: output `skip` goes to y[0].
    @inlinable
    static func upfirdnLine(
        _ x: UnsafePointer<Double>, xs: Int, n: Int, hf: UnsafePointer<Double>, perPhase: Int, up: Int, down: Int,
        mode: ExtensionMode, cval: Double, y: UnsafeMutablePointer<Double>, ys: Int, outCount: Int, skip: Int = 0,
        done: Range<Int> = 0..<0
    ) {
        guard outCount > 0 else { return }
        let zeroPad = mode == .constant && cval == 0
        let padded = n + perPhase - 1
        var xIndex = 0, yIndex = 0, t = 0
        /// Stores output `yIndex` (unless skipped) and moves to the next output's input and phase;
        /// false after the last output.
        func storeAndStep(_ sum: Double) -> Bool {
            if yIndex >= skip { y[(yIndex - skip) * ys] = sum }
            yIndex += 1
            if yIndex >= outCount { return false }
            t += down
            xIndex += t / up
            t %= up
            return true
        }
        while xIndex < n {
            // Outputs `done` were computed elsewhere (tributary_upfirdn4): output k's position is k·down.
            if yIndex == done.lowerBound, !done.isEmpty {
                yIndex = done.upperBound
                if yIndex >= outCount { return }
                (xIndex, t) = ((yIndex * down) / up, (yIndex * down) % up)
                continue
            }
            // Four outputs whose inputs all lie inside the signal: their sums run side by side
            // (four independent chains instead of one), each in the order of the loop below.
            if xIndex >= perPhase - 1, yIndex >= skip, yIndex + 4 <= outCount {
                let (x1, t1) = (xIndex + (t + down) / up, (t + down) % up)
                let (x2, t2) = (x1 + (t1 + down) / up, (t1 + down) % up)
                let (x3, t3) = (x2 + (t2 + down) / up, (t2 + down) % up)
                if x3 < n {
                    upfirdnFour(
                        x, xs: xs, newest: (xIndex, x1, x2, x3), phases: (t, t1, t2, t3), hf: hf, perPhase: perPhase,
                        y: y + (yIndex - skip) * ys, ys: ys)
                    yIndex += 4
                    if yIndex >= outCount { return }
                    xIndex = x3 + (t3 + down) / up
                    t = (t3 + down) % up
                    continue
                }
            }
            var hIndex = t * perPhase
            var c = xIndex - perPhase + 1
            var sum = 0.0
            if c < 0 {
                if zeroPad {
                    hIndex -= c
                } else {
                    while c < 0 {
                        sum += extendLeft(x, xs, c, n, mode, cval) * hf[hIndex]
                        hIndex += 1
                        c += 1
                    }
                }
                c = 0
            }
            var xp = x + c * xs
            while c <= xIndex {
                sum += xp.pointee * hf[hIndex]
                hIndex += 1
                c += 1
                xp += xs
            }
            guard storeAndStep(sum) else { return }
        }
        while xIndex < padded {
            var hIndex = t * perPhase
            var sum = 0.0
            for c in (xIndex - perPhase + 1)...xIndex {
                let value = c >= n ? extendRight(x, xs, c, n, mode, cval) : c < 0 ? extendLeft(x, xs, c, n, mode, cval) : x[c * xs]
                sum += value * hf[hIndex]
                hIndex += 1
            }
            guard storeAndStep(sum) else { return }
        }
        // scipy leaves any outputs past the padded input at zero.
        while yIndex < outCount {
            if yIndex >= skip { y[(yIndex - skip) * ys] = 0 }
            yIndex += 1
        }
    }

    /// Four outputs of upfirdn whose inputs lie inside the signal: output i is the sum, from zero,
    /// oldest input first, of x[newest_i - perPhase + 1 + j]·hf[phase_i·perPhase + j] over j.
    @inlinable
    static func upfirdnFour(
        _ x: UnsafePointer<Double>, xs: Int, newest: (Int, Int, Int, Int), phases: (Int, Int, Int, Int), hf: UnsafePointer<Double>,
        perPhase: Int, y: UnsafeMutablePointer<Double>, ys: Int
    ) {
        let back = perPhase - 1
        let p0 = x + (newest.0 - back) * xs, p1 = x + (newest.1 - back) * xs
        let p2 = x + (newest.2 - back) * xs, p3 = x + (newest.3 - back) * xs
        let h0 = hf + phases.0 * perPhase, h1 = hf + phases.1 * perPhase
        let h2 = hf + phases.2 * perPhase, h3 = hf + phases.3 * perPhase
        var s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
        var offset = 0
        for j in 0..<perPhase {
            s0 += p0[offset] * h0[j]
            s1 += p1[offset] * h1[j]
            s2 += p2[offset] * h2[j]
            s3 += p3[offset] * h3[j]
            offset += xs
        }
        y[0] = s0
        y[ys] = s1
        y[2 * ys] = s2
        y[3 * ys] = s3
    }

    /// upfirdnLine over every line of `layout` into `out`, the lines on the cores, four lines at a
    /// time through the C kernel for the outputs inside the signal (each lane's sums those of
    /// upfirdnLine, bit for bit), the edges and any lines left over by upfirdnLine.
    static func upfirdnLines(
        _ x: UnsafePointer<Double>, layout: FilterLayout, hf: UnsafePointer<Double>, perPhase: Int, up: Int, down: Int,
        mode: ExtensionMode, cval: Double, y: UnsafeMutablePointer<Double>, out: FilterLayout, outCount: Int, skip: Int
    ) {
        let n = layout.length, groups = layout.lines / 4, single = layout.lines % 4
        // Outputs inside the signal: ⌊k·down / up⌋ from perPhase − 1 to n − 1, stored (k ≥ skip).
        let lower = max(((perPhase - 1) * up + down - 1) / down, skip)
        let upper = min(outCount, (n * up + down - 1) / down)
        let interior = lower < upper ? lower..<upper : 0..<0
        ParallelWork.run(pieces: groups + single, samples: layout.count) { piece in
            let lines = piece < groups ? Array((4 * piece)..<(4 * piece + 4)) : [4 * groups + piece - groups]
            var done = 0..<0
            if lines.count == 4, !interior.isEmpty {
                let x4: [UnsafePointer<Double>?] = lines.map { x + layout.start($0) }
                let y4: [UnsafeMutablePointer<Double>?] = lines.map { y + out.start($0) + (interior.lowerBound - skip) * out.inner }
                if tributary_upfirdn4(x4, layout.inner, hf, perPhase, up, down, interior.lowerBound, interior.count, y4, out.inner) == 0 {
                    done = interior
                }
            }
            for line in lines {
                upfirdnLine(
                    x + layout.start(line), xs: layout.inner, n: n, hf: hf, perPhase: perPhase, up: up, down: down, mode: mode,
                    cval: cval, y: y + out.start(line), ys: out.inner, outCount: outCount, skip: skip, done: done)
            }
        }
    }

    static func checkMode(_ mode: ExtensionMode, length: Int) throws(FilterError) {
        guard length >= mode.minimumLength else {
            throw FilterError("mode '\(mode.name)' needs a signal of at least \(mode.minimumLength) samples along the axis, not \(length)")
        }
    }

    /// scipy.signal.upfirdn along the layout's axis: `y` holds outer × upfirdnLength × inner
    /// values. Returns the output layout.
    @discardableResult
    public static func upfirdn(
        h: [Double], x: UnsafePointer<Double>, y: UnsafeMutablePointer<Double>, layout: FilterLayout,
        up: Int = 1, down: Int = 1, mode: ExtensionMode = .constant, cval: Double = 0
    ) throws(FilterError) -> FilterLayout {
        try IIRFilter.checkLayout(layout)
        let n = try upfirdnLength(taps: h.count, length: layout.length, up: up, down: down)
        try checkMode(mode, length: layout.length)
        let out = try outputLayout(layout, length: n)
        let hf = polyphase(h, up: up), perPhase = hf.count / up
        hf.withUnsafeBufferPointer { hp in
            upfirdnLines(
                x, layout: layout, hf: hp.baseAddress!, perPhase: perPhase, up: up, down: down, mode: mode, cval: cval, y: y, out: out,
                outCount: n, skip: 0)
        }
        return out
    }

    // MARK: resample_poly

    static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

    /// The factors reduced by their greatest common divisor.
    public static func reduced(up: Int, down: Int) throws(FilterError) -> (up: Int, down: Int) {
        try checkFactor(up, "up")
        try checkFactor(down, "down")
        let g = gcd(up, down)
        return (up / g, down / g)
    }

    /// The samples resample_poly returns along the axis: ⌈length·up / down⌉ after reducing.
    public static func resampleLength(length: Int, up: Int, down: Int) throws(FilterError) -> Int {
        let (u, d) = try reduced(up: up, down: down)
        guard length >= 0, length <= IIRFilter.maxSamples / u else {
            throw FilterError("the signal length \(length) × up \(u) is too long")
        }
        let total = length * u
        return total / d + (total % d != 0 ? 1 : 0)
    }

    /// The filter resample_poly applies (scipy's design: firwin of 2·10·max(up, down) + 1 taps,
    /// cutoff 1/max(up, down)) times up, and half its length.
    static func resampleFilter(up: Int, down: Int, window: ResampleWindow) throws(FilterError) -> (h: [Double], half: Int) {
        switch window {
        case .taps(let taps):
            guard !taps.isEmpty, taps.count <= FIRDesign.maxTaps else {
                throw FilterError("window must have from 1 to \(FIRDesign.maxTaps) coefficients, not \(taps.count)")
            }
            return (taps.map { $0 * Double(up) }, (taps.count - 1) / 2)
        case .design(let shape):
            let rate = max(up, down)
            let half = 10 * rate
            guard 2 * half + 1 <= FIRDesign.maxTaps else {
                throw FilterError("up and down (\(up), \(down)) need a filter of \(2 * half + 1) taps, more than \(FIRDesign.maxTaps)")
            }
            do {
                let h = try FIRDesign.firwin(taps: 2 * half + 1, cutoff: [1.0 / Double(rate)], window: shape)
                return (h.map { $0 * Double(up) }, half)
            } catch {
                throw FilterError(error.description)
            }
        }
    }

    /// scipy.signal.resample_poly along the layout's axis: `y` holds outer × resampleLength ×
    /// inner values. `mode` and `cval` extend the signal (scipy's padtype of upfirdn's modes).
    @discardableResult
    public static func resamplePoly(
        x: UnsafePointer<Double>, y: UnsafeMutablePointer<Double>, layout: FilterLayout, up: Int, down: Int,
        window: ResampleWindow = .design(.kaiser(beta: 5)), mode: ExtensionMode = .constant,
        cval: Double = 0
    ) throws(FilterError) -> FilterLayout {
        try IIRFilter.checkLayout(layout)
        let (u, d) = try reduced(up: up, down: down)
        let nOut = try resampleLength(length: layout.length, up: u, down: d)
        let out = try outputLayout(layout, length: nOut)
        if u == 1 && d == 1 {
            for line in 0..<layout.lines {
                let xs = x + layout.start(line), ys = y + out.start(line)
                for k in 0..<layout.length { ys[k * out.inner] = xs[k * layout.inner] }
            }
            return out
        }
        var (h, half) = try resampleFilter(up: u, down: d, window: window)
        guard nOut > 0, layout.lines > 0 else { return out }
        let prePad = d - half % d
        let preRemove = (half + prePad) / d
        var postPad = 0
        while try upfirdnLength(taps: h.count + prePad + postPad, length: layout.length, up: u, down: d) < nOut + preRemove {
            postPad += 1
        }
        h = [Double](repeating: 0, count: prePad) + h + [Double](repeating: 0, count: postPad)
        let full = try upfirdnLength(taps: h.count, length: layout.length, up: u, down: d)
        try checkMode(mode, length: layout.length)
        let hf = polyphase(h, up: u), perPhase = hf.count / u
        // The first preRemove outputs (the filter's delay) are computed and dropped, the rest
        // written in place.
        let outCount = min(full, preRemove + nOut)
        hf.withUnsafeBufferPointer { hp in
            upfirdnLines(
                x, layout: layout, hf: hp.baseAddress!, perPhase: perPhase, up: u, down: d, mode: mode, cval: cval, y: y, out: out,
                outCount: outCount, skip: preRemove)
        }
        // Outputs past the filtered signal (when full < preRemove + nOut) are zeros.
        if outCount - preRemove < nOut {
            for line in 0..<layout.lines {
                for k in max(outCount - preRemove, 0)..<nOut { y[out.start(line) + k * out.inner] = 0 }
            }
        }
        return out
    }

    // MARK: decimate

    /// The samples decimate returns along the axis: ⌈length / q⌉.
    public static func decimateLength(length: Int, q: Int) throws(FilterError) -> Int {
        try checkFactor(q, "q")
        guard length >= 0 else { throw FilterError("the signal length must not be negative") }
        return length / q + (length % q != 0 ? 1 : 0)
    }

    /// decimate's IIR filter: cheby1(n, 0.05, 0.8 / q) as second-order sections (n default 8).
    public static func decimationSections(q: Int, order: Int? = nil) throws(FilterError) -> SecondOrderSections {
        try checkFactor(q, "q")
        let n = order ?? 8
        guard n >= 1, n <= 500 else { throw FilterError("n (the filter order) must be from 1 to 500 for ftype='iir', not \(n)") }
        do {
            return try FilterDesign.iirSOS(order: n, frequencies: [0.8 / Double(q)], band: .lowpass, family: .chebyshev1(ripple: 0.05))
        } catch {
            throw FilterError(error.description)
        }
    }

    /// decimate's FIR filter: firwin(n + 1, 1 / q, window='hamming') (n default 20·q).
    public static func decimationTaps(q: Int, order: Int? = nil) throws(FilterError) -> [Double] {
        try checkFactor(q, "q")
        let n = order ?? 20 * q
        guard n >= 0, n < FIRDesign.maxTaps else {
            throw FilterError("n (the filter order) must be from 0 to \(FIRDesign.maxTaps - 1) for ftype='fir', not \(n)")
        }
        guard q >= 2 else { throw FilterError("q must be at least 2 for ftype='fir' (its cutoff 1/q must be below Nyquist), not \(q)") }
        do {
            return try FIRDesign.firwin(taps: n + 1, cutoff: [1.0 / Double(q)], window: .hamming)
        } catch {
            throw FilterError(error.description)
        }
    }

    /// scipy.signal.decimate along the layout's axis: the anti-aliasing filter, then every q-th
    /// sample from the first. `y` holds outer × decimateLength × inner values. `order` is scipy's
    /// n; `zeroPhase` filters forward and backward (IIR: sosfiltfilt; FIR: resample_poly's centred
    /// filter), else forward only (sosfilt; upfirdn).
    @discardableResult
    public static func decimate(
        x: UnsafePointer<Double>, y: UnsafeMutablePointer<Double>, layout: FilterLayout, q: Int, order: Int? = nil,
        filter: DecimationFilter = .iir, zeroPhase: Bool = true
    ) throws(FilterError) -> FilterLayout {
        try IIRFilter.checkLayout(layout)
        let nOut = try decimateLength(length: layout.length, q: q)
        let out = try outputLayout(layout, length: nOut)
        switch filter {
        case .iir:
            let sos = try decimationSections(q: q, order: order)
            if zeroPhase {
                // sosfiltfilt keeping every q-th output only.
                try ZeroPhaseSections(sos, layout: layout, padding: .odd, padlen: nil).run(x: x, y: y, every: q)
                return out
            }
            var filtered = [Double](repeating: 0, count: layout.count)
            try filtered.withUnsafeMutableBufferPointer { (f: inout UnsafeMutableBufferPointer<Double>) throws(FilterError) in
                guard let fp = f.baseAddress else { return }
                try IIRFilter.sosfilt(sos, x: x, y: fp, layout: layout, initial: nil, final: nil)
                for line in 0..<layout.lines {
                    let fs = fp + layout.start(line), ys = y + out.start(line)
                    for k in 0..<nOut { ys[k * out.inner] = fs[k * q * layout.inner] }
                }
            }
        case .fir:
            let b = try decimationTaps(q: q, order: order)
            if zeroPhase {
                try resamplePoly(x: x, y: y, layout: layout, up: 1, down: q, window: .taps(b))
            } else {
                // upfirdn's first ⌈length / q⌉ outputs: only those are computed.
                _ = try upfirdnLength(taps: b.count, length: layout.length, up: 1, down: q)
                b.withUnsafeBufferPointer { hp in
                    let flipped = Array(hp.reversed())
                    flipped.withUnsafeBufferPointer { fp in
                        ParallelWork.run(pieces: layout.lines, samples: layout.count) { line in
                            upfirdnLine(
                                x + layout.start(line), xs: layout.inner, n: layout.length, hf: fp.baseAddress!, perPhase: b.count,
                                up: 1, down: q, mode: .constant, cval: 0, y: y + out.start(line), ys: out.inner, outCount: nOut)
                        }
                    }
                }
            }
        }
        return out
    }
}
