import Foundation

/// How a Bessel prototype is normalised (scipy's `norm`).
public enum BesselNorm: String, Sendable, CaseIterable {
    /// The phase response is -N·π/4 at 1 rad/s: the asymptotes of a Butterworth (scipy's default).
    case phase
    /// Group delay 1 s at DC.
    case delay
}

/// The largest Bessel order designed (the roots of its polynomial are found in double precision).
public let maxBesselOrder = 14

extension FilterDesign {
    /// The Bessel–Thomson prototype: poles 1/x for the roots x of the ordinary Bessel polynomial
    /// y_N(x) = Σ (N+k)!/((N-k)! k!) (x/2)^k, found by Aberth's method from Campos and Calderón's
    /// starting points, polished by Newton's method, conjugate pairs averaged (as scipy's besselap).
    public static func besselPrototype(order n: Int, norm: BesselNorm = .phase) throws(FilterDesignError) -> ZPK {
        guard n >= 0, n <= maxBesselOrder else {
            throw FilterDesignError("Bessel filter order must be from 0 to \(maxBesselOrder), not \(n)")
        }
        if n == 0 { return ZPK(zeros: [], poles: [], gain: 1) }
        // Coefficients of y_N, lowest power first: c_0 = 1, c_k = c_{k-1}·(N+k)(N-k+1)/(2k).
        var c = [1.0]
        for k in 1...n { c.append(c[k - 1] * Double((n + k) * (n - k + 1)) / Double(2 * k)) }
        func value(_ x: Complex) -> (f: Complex, fp: Complex) {
            var f = Complex(c[n]), fp = Complex.zero
            for k in stride(from: n - 1, through: 0, by: -1) {
                fp = fp.unfusedTimes(x) + f
                f = f.unfusedTimes(x) + Complex(c[k])
            }
            return (f, fp)
        }
        var x = besselStartingPoints(n)
        var converged = false
        for _ in 0..<100 {
            var largest = 0.0
            var next = x
            for k in 0..<n {
                let (f, fp) = value(x[k])
                let alpha = -(f / fp)
                var beta = Complex.zero
                for j in 0..<n where j != k { beta = beta + Complex.one / (x[k] - x[j]) }
                next[k] = x[k] + alpha / (Complex.one + alpha.unfusedTimes(beta))
                largest = max(largest, alpha.magnitude)
            }
            x = next
            guard x.allSatisfy({ $0.re.isFinite && $0.im.isFinite }) else { throw FilterDesignError("Bessel root finding failed") }
            if largest <= 1e-15 { converged = true; break }
        }
        // Rounding in y_N's evaluation may keep the last step above 1e-15; Newton's polish below
        // settles the roots, and anything worse than 1e-9 is a failure.
        if !converged {
            let residual = x.map { (value($0).f / value($0).fp).magnitude }.max() ?? 0
            guard residual <= 1e-9 else { throw FilterDesignError("Bessel zeros failed to converge") }
        }
        for k in 0..<n {
            for _ in 0..<5 {
                let (f, fp) = value(x[k])
                if f == .zero || fp == .zero { break }
                let step = f / fp
                x[k] = x[k] - step
                if step.magnitude <= 1e-17 * x[k].magnitude { break }
            }
        }
        // Average each root with the conjugate of its mirror, so pairs are exactly conjugate.
        let mirrored = x.reversed().map(\.conjugate)
        x = zip(x, mirrored).map { Complex(($0.re + $1.re) / 2, ($0.im + $1.im) / 2) }
        var poles = x.map { Complex.one / $0 }
        var aLast = 1.0
        for k in (n + 1)...(2 * n) { aLast *= Double(k) }
        aLast /= pow(2, Double(n))
        switch norm {
        case .phase:
            let factor = pow(10, -log10(aLast) / Double(n))
            poles = poles.map { $0 * Complex(factor) }
            return ZPK(zeros: [], poles: poles, gain: 1)
        case .delay:
            return ZPK(zeros: [], poles: poles, gain: aLast)
        }
    }

    /// Campos and Calderón's approximations of the roots of y_N (scipy's _campos_zeros).
    static func besselStartingPoints(_ n: Int) -> [Complex] {
        if n == 1 { return [Complex(-1, 0)] }
        let m = Double(n)
        func poly(_ x: Double, _ coefficients: [Double]) -> Double {
            var v = 0.0
            for c in coefficients.reversed() { v = v * x + c }
            return v
        }
        let s = poly(m, [0, 0, 2, 0, -3, 1])
        let b3 = poly(m, [16, -8]) / s
        let b2 = poly(m, [-24, -12, 12]) / s
        let b1 = poly(m, [8, 24, -12, -2]) / s
        let b0 = poly(m, [0, -6, 0, 5, -1]) / s
        let r = poly(m, [0, 0, 2, 1])
        let a1 = poly(m, [-6, -6]) / r
        let a2 = 6 / r
        return (1...n).map { k in
            let kd = Double(k)
            return Complex(poly(kd, [0, a1, a2]), poly(kd, [b0, b1, b2, b3]))
        }
    }
}
