import CKernels
import Foundation

// Applying IIR filters as scipy.signal applies them: sosfilt (cascaded sections, each in direct
// form II transposed), lfilter (one transfer function, direct form II transposed), and the
// forward-backward filtfilt / sosfiltfilt with scipy's edge padding. The kernels work on one line
// of samples with a stride, so an n-d array is filtered along any axis in place of memory: an
// array seen as (outer, length, inner) has sample k of line (o, i) at (o·length + k)·inner + i.

/// An n-d array filtered along one axis, seen as (outer, length, inner) in C order.
public struct FilterLayout: Equatable, Sendable {
    public var outer: Int
    public var length: Int
    public var inner: Int

    public init(outer: Int, length: Int, inner: Int) {
        self.outer = outer
        self.length = length
        self.inner = inner
    }

    /// A single line of `length` samples.
    public init(length: Int) { self.init(outer: 1, length: length, inner: 1) }

    public var lines: Int { outer * inner }
    public var count: Int { outer * length * inner }
    /// The first sample of line `line` (o·inner + i).
    public func start(_ line: Int) -> Int { (line / inner) * length * inner + line % inner }
}

/// How sosfiltfilt and filtfilt extend the signal at both ends before filtering (scipy's padtype).
public enum FilterPadding: String, CaseIterable, Sendable {
    /// Point reflection about the end sample (2·x[0] - x[k]), scipy's default.
    case odd
    /// Mirror reflection (x[k]).
    case even
    /// The end sample repeated.
    case constant
    /// No extension (padtype=None).
    case none
}

extension FilterPadding {
    /// scipy's padding of one line of `n` samples (odd_ext, even_ext, const_ext): the `edge` values
    /// before it into `left` (in order), those after it into `right`.
    func pad(
        _ x: UnsafePointer<Double>, stride: Int, length n: Int, edge: Int,
        left: UnsafeMutablePointer<Double>, right: UnsafeMutablePointer<Double>
    ) {
        guard edge > 0 else { return }
        let first = x[0], last = x[(n - 1) * stride]
        for k in 1...edge {
            let before = x[k * stride], after = x[(n - 1 - k) * stride]
            switch self {
            case .odd:
                left[edge - k] = 2 * first - before
                right[k - 1] = 2 * last - after
            case .even:
                left[edge - k] = before
                right[k - 1] = after
            case .constant:
                left[edge - k] = first
                right[k - 1] = last
            case .none:
                break
            }
        }
    }
}

public enum IIRKernel {
    /// Filters `count` samples through the sections (six coefficients each, a0 = 1), each section
    /// in direct form II transposed with its two state values in `state`, exactly as scipy's
    /// _sosfilt: y = b0·x + z0; z0 = b1·x - a1·y + z1; z1 = b2·x - a2·y.
    @inlinable
    public static func sos(
        _ sos: UnsafePointer<Double>, sections: Int, x: UnsafePointer<Double>, xStride: Int,
        y: UnsafeMutablePointer<Double>, yStride: Int, count: Int, state: UnsafeMutablePointer<Double>
    ) {
        var xp = x, yp = y
        for _ in 0..<count {
            var current = xp.pointee
            var c = sos, z = state
            for _ in 0..<sections {
                let next = c[0] * current + z[0]
                z[0] = c[1] * current - c[4] * next + z[1]
                z[1] = c[2] * current - c[5] * next
                current = next
                c += 6
                z += 2
            }
            yp.pointee = current
            xp += xStride
            yp += yStride
        }
    }

    /// Filters `count` samples through b/a (both `taps` long, normalized so a[0] = 1) in direct
    /// form II transposed, as scipy's lfilter, with the taps - 1 state values in `state`. With
    /// `fir` the a terms are left out (so a NaN or infinity in y never enters the state through a
    /// zero a coefficient: the FIR path of lfilter is a convolution).
    @inlinable
    public static func transfer(
        b: UnsafePointer<Double>, a: UnsafePointer<Double>, taps: Int, fir: Bool,
        x: UnsafePointer<Double>, xStride: Int, y: UnsafeMutablePointer<Double>, yStride: Int,
        count: Int, state z: UnsafeMutablePointer<Double>
    ) {
        var xp = x, yp = y
        if taps == 1 {
            for _ in 0..<count {
                yp.pointee = xp.pointee * b[0]
                xp += xStride
                yp += yStride
            }
            return
        }
        for _ in 0..<count {
            let xn = xp.pointee
            let yn = z[0] + b[0] * xn
            if fir {
                for n in 0..<(taps - 2) { z[n] = z[n + 1] + xn * b[n + 1] }
                z[taps - 2] = xn * b[taps - 1]
            } else {
                for n in 0..<(taps - 2) { z[n] = z[n + 1] + xn * b[n + 1] - yn * a[n + 1] }
                z[taps - 2] = xn * b[taps - 1] - yn * a[taps - 1]
            }
            yp.pointee = yn
            xp += xStride
            yp += yStride
        }
    }
}

/// The filters applied to whole arrays along an axis (scipy's sosfilt, lfilter, sosfiltfilt, filtfilt).
public enum IIRFilter {
    /// The largest array (in samples) filtered in one call.
    public static let maxSamples = Int.max / 16

    static func checkLayout(_ layout: FilterLayout) throws(FilterError) {
        guard layout.outer >= 0, layout.length >= 0, layout.inner >= 0 else { throw FilterError("array dimensions must not be negative") }
        let (lines, o1) = layout.outer.multipliedReportingOverflow(by: layout.inner)
        let (total, o2) = lines.multipliedReportingOverflow(by: layout.length)
        guard !o1, !o2, total <= maxSamples else {
            throw FilterError("the array is too large (\(layout.outer) × \(layout.length) × \(layout.inner))")
        }
    }

    /// sosfilt along the layout's axis. `initial` is the state, shaped as scipy's zi (sections,
    /// outer, 2, inner) in C order, or nil for zeros; the final state (same shape) goes to `final`
    /// when given. `x` and `y` may be the same memory. Lines go four at a time through the C
    /// kernel (`tributary_sos4`, each line exactly as `IIRKernel.sos`), groups of four on the cores.
    public static func sosfilt(
        _ sos: SecondOrderSections, x: UnsafePointer<Double>, y: UnsafeMutablePointer<Double>,
        layout: FilterLayout, initial: UnsafePointer<Double>?, final: UnsafeMutablePointer<Double>?
    ) throws(FilterError) {
        try sos.validate()
        try checkLayout(layout)
        let sections = sos.count, lines = layout.lines
        func stateIndex(_ line: Int, _ s: Int, _ j: Int) -> Int {
            ((s * layout.outer + line / layout.inner) * 2 + j) * layout.inner + line % layout.inner
        }
        sos.coefficients.withUnsafeBufferPointer { c in
            ParallelWork.run(pieces: (lines + 3) / 4, samples: layout.count) { group in
                let first = 4 * group, lanes = min(4, lines - first)
                var state = [Double](repeating: 0, count: sections * 8)
                var xs = [UnsafePointer<Double>?](repeating: x + layout.start(first), count: 4)
                var ys = [UnsafeMutablePointer<Double>?](repeating: y + layout.start(first), count: 4)
                for l in 0..<lanes {
                    xs[l] = x + layout.start(first + l)
                    ys[l] = y + layout.start(first + l)
                    if let initial {
                        for s in 0..<sections { for j in 0..<2 { state[(2 * s + j) * 4 + l] = initial[stateIndex(first + l, s, j)] } }
                    }
                }
                tributary_sos4(c.baseAddress!, sections, xs, layout.inner, ys, layout.inner, layout.length, lanes, &state)
                if let final {
                    for l in 0..<lanes {
                        for s in 0..<sections { for j in 0..<2 { final[stateIndex(first + l, s, j)] = state[(2 * s + j) * 4 + l] } }
                    }
                }
            }
        }
    }

    /// lfilter along the layout's axis. `initial` is the state shaped as scipy's zi (outer,
    /// K - 1, inner) with K = max(len b, len a), or nil for zeros; the final state goes to `final`.
    public static func lfilter(
        _ f: TransferFunction, x: UnsafePointer<Double>, y: UnsafeMutablePointer<Double>,
        layout: FilterLayout, initial: UnsafePointer<Double>?, final: UnsafeMutablePointer<Double>?
    ) throws(FilterError) {
        let (b, a) = try f.normalized()
        try checkLayout(layout)
        let taps = b.count, m = taps - 1
        let fir = f.a.count == 1
        var state = [Double](repeating: 0, count: max(m, 1))
        b.withUnsafeBufferPointer { bp in
            a.withUnsafeBufferPointer { ap in
                state.withUnsafeMutableBufferPointer { z in
                    for line in 0..<layout.lines {
                        let o = line / layout.inner, i = line % layout.inner
                        func stateIndex(_ j: Int) -> Int { (o * m + j) * layout.inner + i }
                        for j in 0..<m { z[j] = initial.map { $0[stateIndex(j)] } ?? 0 }
                        let start = layout.start(line)
                        IIRKernel.transfer(
                            b: bp.baseAddress!, a: ap.baseAddress!, taps: taps, fir: fir, x: x + start, xStride: layout.inner,
                            y: y + start, yStride: layout.inner, count: layout.length, state: z.baseAddress!)
                        if let final { for j in 0..<m { final[stateIndex(j)] = z[j] } }
                    }
                }
            }
        }
    }

    /// The padding length scipy uses: `padlen` when given (0 with no padding), else 3 × taps.
    static func edge(padding: FilterPadding, padlen: Int?, taps: Int, length: Int) throws(FilterError) -> Int {
        let edge = padding == .none ? 0 : (padlen ?? 3 * taps)
        guard edge >= 0 else { throw FilterError("padlen must not be negative, not \(edge)") }
        guard length > edge else {
            throw FilterError("The length of the input vector x must be greater than padlen, which is \(edge).")
        }
        return edge
    }

    /// One line extended by `edge` samples at each end (scipy's odd_ext, even_ext, const_ext).
    static func extend(
        _ x: UnsafePointer<Double>, stride: Int, length n: Int, edge: Int, padding: FilterPadding,
        into ext: UnsafeMutablePointer<Double>
    ) {
        for k in 0..<n { ext[edge + k] = x[k * stride] }
        padding.pad(x, stride: stride, length: n, edge: edge, left: ext, right: ext + edge + n)
    }

    /// sosfiltfilt along the layout's axis: forward then backward through the sections, each pass
    /// started in the steady state of its first sample (sosfilt_zi scaled), after padding. Lines go
    /// four at a time through the C kernel (as in `sosfilt`), groups of four on the cores, each line
    /// filtered where it lies in `y` (only the padding is copied).
    public static func sosfiltfilt(
        _ sos: SecondOrderSections, x: UnsafePointer<Double>, y: UnsafeMutablePointer<Double>,
        layout: FilterLayout, padding: FilterPadding = .odd, padlen: Int? = nil
    ) throws(FilterError) {
        try ZeroPhaseSections(sos, layout: layout, padding: padding, padlen: padlen).run(x: x, y: y, every: 1)
    }

    /// filtfilt (method 'pad') along the layout's axis: forward then backward through b/a, each
    /// pass started in the steady state of its first sample (lfilter_zi scaled), after padding.
    public static func filtfilt(
        _ f: TransferFunction, x: UnsafePointer<Double>, y: UnsafeMutablePointer<Double>,
        layout: FilterLayout, padding: FilterPadding = .odd, padlen: Int? = nil
    ) throws(FilterError) {
        let (b, a) = try f.normalized()
        try checkLayout(layout)
        let edge = try edge(padding: padding, padlen: padlen, taps: max(f.a.count, f.b.count), length: layout.length)
        let zi = try InitialState.lfilter(f)
        let taps = b.count, m = taps - 1, fir = f.a.count == 1
        let total = layout.length + 2 * edge
        var ext = [Double](repeating: 0, count: total)
        var state = [Double](repeating: 0, count: max(m, 1))
        b.withUnsafeBufferPointer { bp in
            a.withUnsafeBufferPointer { ap in
                ext.withUnsafeMutableBufferPointer { e in
                    state.withUnsafeMutableBufferPointer { z in
                        let e = e.baseAddress!, z = z.baseAddress!
                        for line in 0..<layout.lines {
                            let start = layout.start(line)
                            extend(x + start, stride: layout.inner, length: layout.length, edge: edge, padding: padding, into: e)
                            let x0 = e[0]
                            for j in 0..<m { z[j] = zi[j] * x0 }
                            IIRKernel.transfer(
                                b: bp.baseAddress!, a: ap.baseAddress!, taps: taps, fir: fir, x: e, xStride: 1, y: e, yStride: 1,
                                count: total, state: z)
                            let y0 = e[total - 1]
                            for j in 0..<m { z[j] = zi[j] * y0 }
                            IIRKernel.transfer(
                                b: bp.baseAddress!, a: ap.baseAddress!, taps: taps, fir: fir, x: e + (total - 1), xStride: -1,
                                y: e + (total - 1), yStride: -1, count: total, state: z)
                            for k in 0..<layout.length { y[start + k * layout.inner] = e[edge + k] }
                        }
                    }
                }
            }
        }
    }
}
