import Foundation

// IIR filter design as scipy.signal designs it (docs/SIGNAL.md): an analog low-pass prototype in
// zeros, poles and gain (buttap, cheb1ap, cheb2ap), moved to the band asked for (lp2lp, lp2hp,
// lp2bp, lp2bs), mapped to the z-plane by the bilinear transform with the critical frequencies
// pre-warped, then grouped into second-order sections (zpk2sos, pairing 'nearest') or multiplied
// out into one transfer function (zpk2tf). Each step follows scipy's arithmetic in the same order,
// so the coefficients agree with scipy's to rounding.

/// A filter design that cannot be made: the message says which argument and why.
public struct FilterDesignError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A filter in zeros, poles and gain.
public struct ZPK: Equatable, Sendable {
    public var zeros: [Complex]
    public var poles: [Complex]
    public var gain: Double

    public init(zeros: [Complex], poles: [Complex], gain: Double) {
        self.zeros = zeros
        self.poles = poles
        self.gain = gain
    }
}

/// The band of a filter, with the spellings scipy accepts for `btype`.
public enum FilterBand: String, CaseIterable, Sendable {
    case lowpass, highpass, bandpass, bandstop

    public init?(name: String) {
        switch name.lowercased() {
        case "lowpass", "low", "lp", "l": self = .lowpass
        case "highpass", "high", "hp", "h": self = .highpass
        case "bandpass", "band", "pass", "bp": self = .bandpass
        case "bandstop", "stop", "bands", "bs": self = .bandstop
        default: return nil
        }
    }

    /// Band-pass and band-stop take two critical frequencies, the others one.
    public var frequencyCount: Int { self == .lowpass || self == .highpass ? 1 : 2 }
}

/// The analog prototypes (scipy's `ftype`).
public enum FilterFamily: Sendable, Equatable {
    case butterworth
    /// Chebyshev type I with `ripple` dB of pass-band ripple.
    case chebyshev1(ripple: Double)
    /// Chebyshev type II with `attenuation` dB of stop-band attenuation.
    case chebyshev2(attenuation: Double)
    /// Elliptic (Cauer): `ripple` dB in the pass band, `attenuation` dB in the stop band.
    case elliptic(ripple: Double, attenuation: Double)
    /// Bessel–Thomson, normalised as `norm`.
    case bessel(norm: BesselNorm)
}

/// The largest filter order designed (the design is O(order²); a bigger one is certainly a mistake).
public let maxFilterOrder = 500

public enum FilterDesign {
    // MARK: - Analog prototypes (cutoff 1 rad/s)

    /// Butterworth: no zeros, N poles evenly on the left half of the unit circle.
    public static func butterworthPrototype(order n: Int) -> ZPK {
        ZPK(zeros: [], poles: unitCirclePoles(n), gain: 1)
    }

    /// -exp(iπm/(2N)) for m = -N+1, -N+3, …, N-1. The angle is πm times 1/(2N), as numpy's complex
    /// division by a real computes it (by the reciprocal), which differs from πm/(2N) in the last bit.
    static func unitCirclePoles(_ n: Int) -> [Complex] {
        stride(from: -n + 1, to: n, by: 2).map { m in
            let theta = (Double.pi * Double(m)) * (1.0 / Double(2 * n))
            return -Complex.exp(Complex(0, theta))
        }
    }

    /// Chebyshev type I with `ripple` dB of pass-band ripple.
    public static func chebyshev1Prototype(order n: Int, ripple rp: Double) -> ZPK {
        if n == 0 { return ZPK(zeros: [], poles: [], gain: pow(10, -rp / 20)) }
        let eps = (pow(10, 0.1 * rp) - 1.0).squareRoot()
        let mu = 1.0 / Double(n) * asinh(1 / eps)
        let poles = stride(from: -n + 1, to: n, by: 2).map { m in
            let theta = Double.pi * Double(m) / Double(2 * n)
            return -Complex.sinh(Complex(mu, theta))
        }
        var gain = poles.map { -$0 }.product.re
        if n % 2 == 0 { gain = gain / (1 + eps * eps).squareRoot() }
        return ZPK(zeros: [], poles: poles, gain: gain)
    }

    /// Chebyshev type II with `attenuation` dB of stop-band attenuation.
    public static func chebyshev2Prototype(order n: Int, attenuation rs: Double) -> ZPK {
        if n == 0 { return ZPK(zeros: [], poles: [], gain: 1) }
        let de = 1.0 / (pow(10, 0.1 * rs) - 1).squareRoot()
        let mu = asinh(1.0 / de) / Double(n)
        let ms: [Int] =
            n % 2 == 1
            ? Array(stride(from: -n + 1, to: 0, by: 2)) + Array(stride(from: 2, to: n, by: 2))
            : Array(stride(from: -n + 1, to: n, by: 2))
        let zeros = ms.map { m -> Complex in
            Complex(0, 1) / Complex(sin(Double(m) * Double.pi / Double(2 * n)))
        }
        // The poles of a Butterworth filter warped into Chebyshev II: -1 / sinh(mu + iθ).
        let poles = stride(from: -n + 1, to: n, by: 2).map { m -> Complex in
            let theta = Double.pi * Double(m) / Double(2 * n)
            return Complex(-1) / Complex.sinh(Complex(mu, theta))
        }
        let gain = (poles.map { -$0 }.product / zeros.map { -$0 }.product).re
        return ZPK(zeros: zeros, poles: poles, gain: gain)
    }

    // MARK: - Frequency transformations (analog, in zpk)

    static func relativeDegree(_ f: ZPK) throws(FilterDesignError) -> Int {
        let degree = f.poles.count - f.zeros.count
        if degree < 0 { throw FilterDesignError("improper transfer function: must have at least as many poles as zeros") }
        return degree
    }

    /// Low-pass to low-pass with cutoff `wo` rad/s.
    public static func lowpassToLowpass(_ f: ZPK, wo: Double) throws(FilterDesignError) -> ZPK {
        let degree = try relativeDegree(f)
        let w = Complex(wo)
        return ZPK(zeros: f.zeros.map { w * $0 }, poles: f.poles.map { w * $0 }, gain: f.gain * pow(wo, Double(degree)))
    }

    /// Low-pass to high-pass with cutoff `wo` rad/s.
    public static func lowpassToHighpass(_ f: ZPK, wo: Double) throws(FilterDesignError) -> ZPK {
        let degree = try relativeDegree(f)
        let w = Complex(wo)
        let zeros = f.zeros.map { w / $0 } + Array(repeating: Complex.zero, count: degree)
        let gain = f.gain * (f.zeros.map { -$0 }.product / f.poles.map { -$0 }.product).re
        return ZPK(zeros: zeros, poles: f.poles.map { w / $0 }, gain: gain)
    }

    /// Each root r of the low-pass becomes r·bw/2 ± sqrt((r·bw/2)² - wo²).
    private static func bandRoots(_ scaled: [Complex], wo: Double) -> [Complex] {
        let wo2 = Complex(wo * wo)
        let roots = scaled.map { ($0.squared - wo2).squareRoot }
        return zip(scaled, roots).map { $0 + $1 } + zip(scaled, roots).map { $0 - $1 }
    }

    /// Low-pass to band-pass centred on `wo` rad/s, `bw` rad/s wide.
    public static func lowpassToBandpass(_ f: ZPK, wo: Double, bw: Double) throws(FilterDesignError) -> ZPK {
        let degree = try relativeDegree(f)
        let b = Complex(bw), two = Complex(2)
        let zeros = bandRoots(f.zeros.map { $0 * b / two }, wo: wo) + Array(repeating: Complex.zero, count: degree)
        let poles = bandRoots(f.poles.map { $0 * b / two }, wo: wo)
        return ZPK(zeros: zeros, poles: poles, gain: f.gain * pow(bw, Double(degree)))
    }

    /// Low-pass to band-stop centred on `wo` rad/s, `bw` rad/s wide.
    public static func lowpassToBandstop(_ f: ZPK, wo: Double, bw: Double) throws(FilterDesignError) -> ZPK {
        let degree = try relativeDegree(f)
        let half = Complex(bw / 2)
        var zeros = bandRoots(f.zeros.map { half / $0 }, wo: wo)
        zeros += Array(repeating: Complex(0, wo), count: degree)
        zeros += Array(repeating: Complex(0, -wo), count: degree)
        let poles = bandRoots(f.poles.map { half / $0 }, wo: wo)
        let gain = f.gain * (f.zeros.map { -$0 }.product / f.poles.map { -$0 }.product).re
        return ZPK(zeros: zeros, poles: poles, gain: gain)
    }

    /// The bilinear transform s = 2·fs·(z-1)/(z+1); zeros at infinity go to z = -1.
    public static func bilinear(_ f: ZPK, fs: Double) throws(FilterDesignError) -> ZPK {
        let degree = try relativeDegree(f)
        let fs2 = Complex(2.0 * fs)
        let zeros = f.zeros.map { (fs2 + $0) / (fs2 - $0) } + Array(repeating: Complex(-1), count: degree)
        let poles = f.poles.map { (fs2 + $0) / (fs2 - $0) }
        let gain = f.gain * (f.zeros.map { fs2 - $0 }.product / f.poles.map { fs2 - $0 }.product).re
        return ZPK(zeros: zeros, poles: poles, gain: gain)
    }

    // MARK: - The digital design (scipy.signal.iirfilter)

    /// A digital IIR filter of `order` for the critical frequencies `frequencies` (one, or two for
    /// band-pass and band-stop), as fractions of Nyquist, or in Hz when `fs` is given.
    public static func iirZPK(
        order: Int, frequencies: [Double], band: FilterBand, family: FilterFamily,
        fs: Double? = nil
    ) throws(FilterDesignError) -> ZPK {
        guard order >= 0, order <= maxFilterOrder else {
            throw FilterDesignError("Filter order must be a nonnegative integer (at most \(maxFilterOrder)), not \(order)")
        }
        if let fs, !(fs > 0 && fs.isFinite) {
            throw FilterDesignError("fs must be a positive finite number, not \(fs)")
        }
        guard frequencies.count == band.frequencyCount else {
            throw FilterDesignError(
                band.frequencyCount == 1
                    ? "Must specify a single critical frequency Wn for lowpass or highpass filter (got \(frequencies.count))"
                    : "Wn must specify start and stop frequencies for bandpass or bandstop filter (got \(frequencies.count))")
        }
        let wn = frequencies.map { f in fs.map { 2 * f / $0 } ?? f }
        guard wn.allSatisfy({ $0 > 0 && $0 < 1 }) else {
            if let fs {
                throw FilterDesignError(
                    "Digital filter critical frequencies must be 0 < Wn < fs/2 (fs=\(fs) -> fs/2=\(fs / 2)), not \(frequencies)")
            }
            throw FilterDesignError("Digital filter critical frequencies must be 0 < Wn < 1, not \(frequencies)")
        }
        if wn.count == 2, !(wn[0] < wn[1]) { throw FilterDesignError("Wn[0] must be less than Wn[1]") }
        let prototype: ZPK
        switch family {
        case .butterworth:
            prototype = butterworthPrototype(order: order)
        case .chebyshev1(let rp):
            guard rp > 0, rp.isFinite else {
                throw FilterDesignError("passband ripple (rp) must be a positive finite number of dB, not \(rp)")
            }
            prototype = chebyshev1Prototype(order: order, ripple: rp)
        case .chebyshev2(let rs):
            guard rs > 0, rs.isFinite else {
                throw FilterDesignError("stopband attenuation (rs) must be a positive finite number of dB, not \(rs)")
            }
            prototype = chebyshev2Prototype(order: order, attenuation: rs)
        case .elliptic(let rp, let rs):
            guard rp > 0, rp.isFinite else {
                throw FilterDesignError("passband ripple (rp) must be a positive finite number of dB, not \(rp)")
            }
            guard rs > 0, rs.isFinite else {
                throw FilterDesignError("stopband attenuation (rs) must be a positive finite number of dB, not \(rs)")
            }
            prototype = try ellipticPrototype(order: order, ripple: rp, attenuation: rs)
        case .bessel(let norm):
            prototype = try besselPrototype(order: order, norm: norm)
        }
        return try digital(prototype, wn: wn, band: band)
    }

    /// A prototype moved to the band (pre-warped) and through the bilinear transform at fs = 2.
    static func digital(_ prototype: ZPK, wn: [Double], band: FilterBand) throws(FilterDesignError) -> ZPK {
        let fs = 2.0
        let warped = wn.map { 2 * fs * tan(Double.pi * $0 / fs) }
        let analog: ZPK
        switch band {
        case .lowpass: analog = try lowpassToLowpass(prototype, wo: warped[0])
        case .highpass: analog = try lowpassToHighpass(prototype, wo: warped[0])
        case .bandpass, .bandstop:
            let bw = warped[1] - warped[0]
            let wo = (warped[0] * warped[1]).squareRoot()
            analog =
                band == .bandpass
                ? try lowpassToBandpass(prototype, wo: wo, bw: bw)
                : try lowpassToBandstop(prototype, wo: wo, bw: bw)
        }
        return try bilinear(analog, fs: fs)
    }

    /// The design as second-order sections (scipy's `output='sos'`).
    public static func iirSOS(
        order: Int, frequencies: [Double], band: FilterBand, family: FilterFamily,
        fs: Double? = nil
    ) throws(FilterDesignError) -> SecondOrderSections {
        try sections(iirZPK(order: order, frequencies: frequencies, band: band, family: family, fs: fs))
    }

    /// The design as one transfer function (scipy's `output='ba'`).
    public static func iirBA(
        order: Int, frequencies: [Double], band: FilterBand, family: FilterFamily,
        fs: Double? = nil
    ) throws(FilterDesignError) -> TransferFunction {
        transferFunction(try iirZPK(order: order, frequencies: frequencies, band: band, family: family, fs: fs))
    }

    // MARK: - Notch (scipy.signal.iirnotch)

    /// A second-order notch at `w0` (a fraction of Nyquist, or Hz with `fs`) with quality factor `q`
    /// (w0 over the -3 dB bandwidth).
    public static func notch(w0 frequency: Double, q: Double, fs: Double = 2.0) throws(FilterDesignError) -> TransferFunction {
        guard fs > 0, fs.isFinite else { throw FilterDesignError("fs must be a positive finite number, not \(fs)") }
        guard q > 0, q.isFinite else { throw FilterDesignError("Q must be a positive finite number, not \(q)") }
        let w0 = 2 * frequency / fs
        guard w0 > 0, w0 < 1 else { throw FilterDesignError("w0 should be such that 0 < w0 < fs/2 (fs=\(fs)), not \(frequency)") }
        let bw = w0 / q * Double.pi
        let w = w0 * Double.pi
        let beta = tan(bw / 2.0)
        let gain = 1.0 / (1.0 + beta)
        let b = [gain * 1.0, gain * (-2.0 * cos(w)), gain * 1.0]
        let a = [1.0, -2.0 * gain * cos(w), 2.0 * gain - 1.0]
        return TransferFunction(b: b, a: a)
    }

    // MARK: - zpk to coefficients

    /// The coefficients of ∏(x - r) for the roots, highest power first (numpy.poly), real parts.
    static func polynomial(_ roots: [Complex]) -> [Complex] {
        var c: [Complex] = [.one]
        for r in roots {
            let v = -r
            var next = c + [.zero]
            for i in stride(from: c.count, through: 1, by: -1) {
                next[i] = c[i - 1] * v + (i < c.count ? c[i] : .zero)
            }
            c = next
        }
        return c
    }

    /// The transfer function b/a of a zpk (scipy.signal.zpk2tf), real.
    public static func transferFunction(_ f: ZPK) -> TransferFunction {
        let b = polynomial(f.zeros).map { f.gain * $0.re }
        let a = polynomial(f.poles).map(\.re)
        return TransferFunction(b: b, a: a)
    }

    /// One section's six coefficients from up to two zeros and two poles (unit gain).
    private static func section(zeros: [Complex], poles: [Complex]) -> [Double] {
        var s = [Double](repeating: 0, count: 6)
        let b = polynomial(zeros).map(\.re), a = polynomial(poles).map(\.re)
        for (i, v) in b.enumerated() { s[3 - b.count + i] = v }
        for (i, v) in a.enumerated() { s[6 - a.count + i] = v }
        return s
    }

    /// Complex roots as one of each conjugate pair (positive imaginary part, averaged with its
    /// partner) and the real roots, sorted as scipy's _cplxreal sorts them.
    static func conjugatePairsAndReals(_ roots: [Complex]) throws(FilterDesignError) -> (pairs: [Complex], reals: [Double]) {
        if roots.isEmpty { return ([], []) }
        let tol = 100 * Double.ulpOfOne
        let sorted = roots.enumerated().sorted { x, y in
            if x.element.re != y.element.re { return x.element.re < y.element.re }
            if abs(x.element.im) != abs(y.element.im) { return abs(x.element.im) < abs(y.element.im) }
            return x.offset < y.offset
        }.map(\.element)
        let isRealRoot = sorted.map { abs($0.im) <= tol * $0.magnitude }
        let reals = zip(sorted, isRealRoot).filter(\.1).map(\.0.re)
        let complex = zip(sorted, isRealRoot).filter { !$0.1 }.map(\.0)
        var positive = complex.filter { $0.im > 0 }
        var negative = complex.filter { $0.im < 0 }
        guard positive.count == negative.count else {
            throw FilterDesignError("a complex root has no matching conjugate")
        }
        // Runs of (nearly) the same real part are sorted by the size of the imaginary part.
        var start = 0
        while start < positive.count {
            var stop = start
            while stop + 1 < positive.count, positive[stop + 1].re - positive[stop].re <= tol * positive[stop].magnitude { stop += 1 }
            if stop > start {
                for which in 0..<2 {
                    let run = which == 0 ? Array(positive[start...stop]) : Array(negative[start...stop])
                    let ordered = run.enumerated().sorted { x, y in
                        abs(x.element.im) != abs(y.element.im) ? abs(x.element.im) < abs(y.element.im) : x.offset < y.offset
                    }.map(\.element)
                    if which == 0 {
                        positive.replaceSubrange(start...stop, with: ordered)
                    } else {
                        negative.replaceSubrange(start...stop, with: ordered)
                    }
                }
            }
            start = stop + 1
        }
        for (p, n) in zip(positive, negative) where (p - n.conjugate).magnitude > tol * n.magnitude {
            throw FilterDesignError("a complex root has no matching conjugate")
        }
        let pairs = zip(positive, negative).map { ($0 + $1.conjugate) / Complex(2) }
        return (pairs, reals)
    }

    /// The second-order sections of a digital zpk (scipy.signal.zpk2sos, pairing 'nearest'): poles
    /// nearest the unit circle go last, each paired with its nearest zeros.
    public static func sections(_ f: ZPK) throws(FilterDesignError) -> SecondOrderSections {
        var z = f.zeros, p = f.poles
        if z.isEmpty && p.isEmpty {
            return SecondOrderSections(coefficients: [f.gain, 0, 0, 1, 0, 0])
        }
        p += Array(repeating: .zero, count: max(z.count - p.count, 0))
        z += Array(repeating: .zero, count: max(p.count - z.count, 0))
        let count = (max(p.count, z.count) + 1) / 2
        if p.count % 2 == 1 {
            p.append(.zero)
            z.append(.zero)
        }
        let zs = try conjugatePairsAndReals(z), ps = try conjugatePairsAndReals(p)
        z = zs.pairs + zs.reals.map { Complex($0) }
        p = ps.pairs + ps.reals.map { Complex($0) }

        // The root nearest the unit circle (the first of equals, as numpy.argmin). Designs whose
        // poles are mirror-symmetric (band edges summing to Nyquist) have pairs at the same
        // distance to rounding: which comes first is decided by the last bit, as in scipy.
        func worst(_ roots: [Complex], among indices: [Int]) -> Int {
            var best = indices[0], bestDistance = abs(1 - roots[best].magnitude)
            for i in indices.dropFirst() {
                let d = abs(1 - roots[i].magnitude)
                if d < bestDistance { best = i; bestDistance = d }
            }
            return best
        }
        enum Kind { case real, complex, any }
        func nearest(_ from: [Complex], _ to: Complex, _ kind: Kind) -> Int {
            let order = from.indices.sorted { i, j in
                let di = (from[i] - to).magnitude, dj = (from[j] - to).magnitude
                return di != dj ? di < dj : i < j
            }
            switch kind {
            case .any: return order[0]
            case .real: return order.first { from[$0].isReal }!
            case .complex: return order.first { !from[$0].isReal }!
            }
        }

        var rows = [[Double]](repeating: [], count: count)
        for si in stride(from: count - 1, through: 0, by: -1) {
            let p1 = p.remove(at: worst(p, among: Array(p.indices)))
            let realPolesLeft = p.filter(\.isReal).count
            if p1.isReal && realPolesLeft == 0 {
                // The last real pole: with the nearest real zero.
                let z1 = z.remove(at: nearest(z, p1, .real))
                rows[si] = section(zeros: [z1, .zero], poles: [p1, .zero])
            } else if p.count + 1 == z.count && !p1.isReal && realPolesLeft == 1 && z.filter(\.isReal).count == 1 {
                // One real pole and one real zero left: this complex pole must take a complex zero.
                let z1 = z.remove(at: nearest(z, p1, .complex))
                rows[si] = section(zeros: [z1, z1.conjugate], poles: [p1, p1.conjugate])
            } else {
                let p2: Complex
                if p1.isReal {
                    p2 = p.remove(at: worst(p, among: p.indices.filter { p[$0].isReal }))
                } else {
                    p2 = p1.conjugate
                }
                if !z.isEmpty {
                    let z1 = z.remove(at: nearest(z, p1, .any))
                    if !z1.isReal {
                        rows[si] = section(zeros: [z1, z1.conjugate], poles: [p1, p2])
                    } else if !z.isEmpty {
                        let z2 = z.remove(at: nearest(z, p1, .real))
                        rows[si] = section(zeros: [z1, z2], poles: [p1, p2])
                    } else {
                        rows[si] = section(zeros: [z1], poles: [p1, p2])
                    }
                } else {
                    rows[si] = section(zeros: [], poles: [p1, p2])
                }
            }
        }
        for i in 0..<3 { rows[0][i] *= f.gain }
        return SecondOrderSections(coefficients: rows.flatMap { $0 })
    }
}
