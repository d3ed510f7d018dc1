import Foundation

// The elliptic (Cauer) analog prototype as scipy's ellipap computes it: the complete elliptic
// integral K by the arithmetic-geometric mean, the Jacobi functions sn, cn, dn by the descending
// Landen/AGM recurrence (Cephes' method), the degree equation by its nome series, and the inverse of
// sc by Landen transformations.

enum Elliptic {
    /// K(1 - p), the complete elliptic integral of the first kind of parameter 1 - p (scipy's
    /// ellipkm1): π / (2·AGM(1, √p)), exact for p near 0 where 1 - p would lose digits.
    static func completeKm1(_ p: Double) -> Double {
        if p == 0 { return .infinity }
        var a = 1.0, b = p.squareRoot()
        for _ in 0..<64 {
            if abs(a - b) <= 4 * Double.ulpOfOne * a { break }
            (a, b) = (0.5 * (a + b), (a * b).squareRoot())
        }
        return Double.pi / (a + b)
    }

    /// K(m) (scipy's ellipk).
    static func complete(_ m: Double) -> Double { completeKm1(1 - m) }

    /// sn, cn, dn of u for parameter m in [0, 1] (scipy's ellipj, Cephes' ellpj).
    static func jacobi(_ u: Double, _ m: Double) -> (sn: Double, cn: Double, dn: Double) {
        if m < 1e-9 {
            let t = sin(u), b = cos(u)
            let ai = 0.25 * m * (u - t * b)
            return (t - ai * b, b + ai * t, 1.0 - 0.5 * m * t * t)
        }
        if m >= 0.9999999999 {
            var ai = 0.25 * (1.0 - m)
            let b = cosh(u), t = tanh(u), phi = 1.0 / b, twon = b * sinh(u)
            let sn = t + ai * (twon - u) / (b * b)
            ai *= t * phi
            return (sn, phi - ai * (twon - u), phi + ai * (twon + u))
        }
        var a = [Double](repeating: 0, count: 10), c = [Double](repeating: 0, count: 10)
        a[0] = 1
        var b = (1.0 - m).squareRoot()
        c[0] = m.squareRoot()
        var twon = 1.0
        var i = 0
        while abs(c[i] / a[i]) > Double.ulpOfOne / 2 {
            if i > 7 { break }
            let ai = a[i]
            i += 1
            c[i] = (ai - b) / 2.0
            let t = (ai * b).squareRoot()
            a[i] = (ai + b) / 2.0
            b = t
            twon *= 2.0
        }
        var phi = twon * a[i] * u
        var last = phi
        repeat {
            let t = c[i] * sin(phi) / a[i]
            last = phi
            phi = (asin(t) + phi) / 2.0
            i -= 1
        } while i > 0
        let t = cos(phi)
        return (sin(phi), t, t / cos(phi - last))
    }

    /// The modulus parameter m of the order-n elliptic filter for the selectivity parameter m1
    /// (the degree equation, by the nome q = q1^(1/n) and its series to q^64).
    static func degree(_ n: Int, _ m1: Double) -> Double {
        let k1 = complete(m1), k1p = completeKm1(m1)
        let q1 = exp(-Double.pi * k1p / k1)
        let q = pow(q1, 1.0 / Double(n))
        var num = 0.0, den = 0.0
        for j in 0...7 { num += pow(q, Double(j * (j + 1))) }
        for j in 1...8 { den += pow(q, Double(j * j)) }
        den = 1 + 2 * den
        return 16 * q * pow(num / den, 4)
    }

    /// The real v with sc(v, m) = w, i.e. Im of the inverse sn at iw (scipy's _arc_jac_sc1), by
    /// Landen transformations of the modulus down to zero.
    static func inverseSC(_ w: Double, _ m: Double) throws(FilterDesignError) -> Double {
        let k = m.squareRoot()
        guard k < 1 else { throw FilterDesignError("cannot design an elliptic filter for these rp and rs (modulus \(k))") }
        func complement(_ x: Double) -> Double { ((1 - x) * (1 + x)).squareRoot() }
        var ks = [k]
        while ks.last! != 0 {
            let kp = complement(ks.last!)
            ks.append((1 - kp) / (1 + kp))
            if ks.count > 11 { throw FilterDesignError("Landen transformation not converging") }
        }
        var capK = 1.0
        for kn in ks.dropFirst() { capK *= 1 + kn }
        capK *= Double.pi / 2
        // w is imaginary throughout: y stands for i·y, and (1 - (k·iy)²) = 1 + (k·y)².
        var y = w
        for (kn, next) in zip(ks, ks.dropFirst()) {
            y = 2 * y / ((1 + next) * (1 + (1 + (kn * y) * (kn * y)).squareRoot()))
        }
        return capK * (2 / Double.pi * asinh(y))
    }
}

extension FilterDesign {
    /// The elliptic (Cauer) prototype: `ripple` dB in the pass band, `attenuation` dB in the stop band.
    public static func ellipticPrototype(order n: Int, ripple rp: Double, attenuation rs: Double) throws(FilterDesignError) -> ZPK {
        if n == 0 { return ZPK(zeros: [], poles: [], gain: pow(10, -rp / 20)) }
        let ln10 = log(10.0)
        if n == 1 {
            let p = -(1.0 / expm1(ln10 * 0.1 * rp)).squareRoot()
            return ZPK(zeros: [], poles: [Complex(p)], gain: -p)
        }
        let epsSquared = expm1(ln10 * 0.1 * rp)
        let eps = epsSquared.squareRoot()
        let ck1Squared = epsSquared / expm1(ln10 * 0.1 * rs)
        guard ck1Squared > 0, ck1Squared < 1 else {
            throw FilterDesignError("Cannot design a filter with given rp and rs specifications.")
        }
        let k0 = Elliptic.complete(ck1Squared)
        let m = Elliptic.degree(n, ck1Squared)
        let capK = Elliptic.complete(m)
        let js = Array(stride(from: 1 - n % 2, to: n, by: 2))
        let functions = js.map { Elliptic.jacobi(Double($0) * capK / Double(n), m) }
        let epsilon = 2e-16
        var zeros = functions.filter { abs($0.sn) > epsilon }.map { Complex(0, 1) * Complex(1.0 / (m.squareRoot() * $0.sn)) }
        zeros += zeros.map(\.conjugate)
        let r = try Elliptic.inverseSC(1.0 / eps, ck1Squared)
        let v0 = capK * r / (Double(n) * k0)
        let (sv, cv, dv) = Elliptic.jacobi(v0, 1 - m)
        var poles = functions.map { f -> Complex in
            let numerator = Complex(f.cn * f.dn * sv * cv) + Complex(0, 1) * Complex(f.sn * dv)
            let ds = f.dn * sv
            return -(numerator / Complex(1 - ds * ds))
        }
        if n % 2 == 1 {
            let size = poles.reduce(0.0) { $0 + ($1 * $1.conjugate).re }.squareRoot()
            poles += poles.filter { abs($0.im) > epsilon * size }.map(\.conjugate)
        } else {
            poles += poles.map(\.conjugate)
        }
        var gain = (poles.map { -$0 }.product / zeros.map { -$0 }.product).re
        if n % 2 == 0 { gain = gain / (1 + epsSquared).squareRoot() }
        return ZPK(zeros: zeros, poles: poles, gain: gain)
    }
}
