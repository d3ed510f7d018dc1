import Foundation

/// A complex number for filter design (poles and zeros). Its arithmetic is the textbook one that
/// numpy's complex128 uses, operation for operation, so that a design follows scipy's rounding:
/// a real operand is a complex one with a zero imaginary part (as numpy promotes it), and division
/// is Smith's scaled algorithm (numpy's), not the naive formula.
public struct Complex: Equatable, Sendable, CustomStringConvertible {
    public var re: Double
    public var im: Double

    public init(_ re: Double, _ im: Double = 0) {
        self.re = re
        self.im = im
    }

    public static let zero = Complex(0, 0)
    public static let one = Complex(1, 0)

    public var conjugate: Complex { Complex(re, -im) }
    /// |z| as numpy's (vectorised) abs: the larger part times sqrt(1 + q²), q the smaller over the
    /// larger, with 1 + q² fused. Its last bit decides ties in zpk2sos, so it follows numpy's.
    public var magnitude: Double {
        let a = abs(re), b = abs(im)
        if a.isNaN || b.isNaN { return a.isInfinite || b.isInfinite ? .infinity : .nan }
        let large = max(a, b), small = min(a, b)
        if large == 0 { return 0 }
        if large.isInfinite { return .infinity }
        let q = small / large
        return large * (1.0).addingProduct(q, q).squareRoot()
    }
    /// numpy.isreal: the imaginary part is exactly zero.
    public var isReal: Bool { im == 0 }

    public var description: String { "(\(re)\(im.sign == .minus ? "-" : "+")\(abs(im))j)" }

    public static prefix func - (z: Complex) -> Complex { Complex(-z.re, -z.im) }
    public static func + (a: Complex, b: Complex) -> Complex { Complex(a.re + b.re, a.im + b.im) }
    public static func - (a: Complex, b: Complex) -> Complex { Complex(a.re - b.re, a.im - b.im) }
    /// The product as numpy's element-wise multiply computes it (fused: re = ar·br - (ai·bi) with
    /// one rounding of the first product, im = ar·bi + (ai·br) likewise).
    public static func * (a: Complex, b: Complex) -> Complex {
        Complex((-(a.im * b.im)).addingProduct(a.re, b.re), (a.im * b.re).addingProduct(a.re, b.im))
    }

    /// The product as numpy's reductions (numpy.prod) compute it: the textbook formula, unfused.
    public func unfusedTimes(_ b: Complex) -> Complex {
        Complex(re * b.re - im * b.im, re * b.im + im * b.re)
    }

    /// Smith's division, as numpy divides complex128 values.
    public static func / (a: Complex, b: Complex) -> Complex {
        let absRe = abs(b.re), absIm = abs(b.im)
        if absRe >= absIm {
            if absRe == 0 && absIm == 0 {
                return Complex(a.re / absRe, a.im / absIm)
            }
            let ratio = b.im / b.re
            let scale = 1.0 / (b.re + b.im * ratio)
            return Complex((a.re + a.im * ratio) * scale, (a.im - a.re * ratio) * scale)
        }
        let ratio = b.re / b.im
        let scale = 1.0 / (b.im + b.re * ratio)
        return Complex((a.re * ratio + a.im) * scale, (a.im * ratio - a.re) * scale)
    }

    /// z * z as numpy's square (the real part fused).
    public var squared: Complex { Complex((-(im * im)).addingProduct(re, re), re * im + im * re) }

    /// The principal square root (branch cut on the negative real axis, the sign of a zero
    /// imaginary part choosing the side, as C's csqrt).
    public var squareRoot: Complex {
        if re == 0 && im == 0 { return Complex(0, im) }
        let t = (0.5 * (abs(re) + hypot(re, im))).squareRoot()
        if re >= 0 { return Complex(t, im / (2 * t)) }
        return Complex(abs(im) / (2 * t), im.sign == .minus ? -t : t)
    }

    /// e^z.
    public static func exp(_ z: Complex) -> Complex {
        let e = Foundation.exp(z.re)
        return Complex(e * cos(z.im), e * sin(z.im))
    }

    /// sinh(z) = sinh(x) cos(y) + i cosh(x) sin(y).
    public static func sinh(_ z: Complex) -> Complex {
        Complex(Foundation.sinh(z.re) * cos(z.im), Foundation.cosh(z.re) * sin(z.im))
    }
}

extension Array where Element == Complex {
    /// The product of the elements, left to right (numpy.prod); 1 for none.
    var product: Complex {
        guard var result = first else { return .one }
        for z in dropFirst() { result = result.unfusedTimes(z) }
        return result
    }
}
