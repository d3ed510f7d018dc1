import Foundation

/// A filter that cannot be applied as given (bad coefficients, state of the wrong size, a signal
/// too short for its padding): the message says what and why.
public struct FilterError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Second-order sections: rows of six coefficients b0 b1 b2 a0 a1 a2 (scipy's `sos`, shape
/// (n_sections, 6)), each section H(z) = (b0 + b1 z⁻¹ + b2 z⁻²) / (a0 + a1 z⁻¹ + a2 z⁻²).
public struct SecondOrderSections: Equatable, Sendable {
    /// Row-major, six per section.
    public var coefficients: [Double]

    public init(coefficients: [Double]) {
        self.coefficients = coefficients
    }

    public var count: Int { coefficients.count / 6 }

    public subscript(section: Int, column: Int) -> Double { coefficients[section * 6 + column] }

    /// Checks the sections can be applied as scipy's sosfilt applies them: at least one, whole
    /// rows, and every a0 exactly 1.
    public func validate() throws(FilterError) {
        guard !coefficients.isEmpty, coefficients.count % 6 == 0 else {
            throw FilterError("sos must be shape (n_sections, 6) with at least one section, not \(coefficients.count) values")
        }
        for s in 0..<count where self[s, 3] != 1 {
            throw FilterError("sos[\(s), 3] must be 1 (sos[:, 3] should be all ones), not \(self[s, 3])")
        }
    }

    /// The taps scipy's sosfiltfilt counts for its default padding: 2·sections + 1, less the
    /// sections that are really first order (b2 and a2 both zero, counted as the smaller count).
    public var paddingTaps: Int {
        let zeroB2 = (0..<count).filter { self[$0, 2] == 0 }.count
        let zeroA2 = (0..<count).filter { self[$0, 5] == 0 }.count
        return 2 * count + 1 - min(zeroB2, zeroA2)
    }
}

/// A transfer function b(z)/a(z), coefficients highest power of z first (scipy's `b, a`).
public struct TransferFunction: Equatable, Sendable {
    public var b: [Double]
    public var a: [Double]

    public init(b: [Double], a: [Double]) {
        self.b = b
        self.a = a
    }

    /// The coefficients as lfilter applies them: both padded to one length K = max(len b, len a)
    /// and divided by a[0], which must not be zero.
    public func normalized() throws(FilterError) -> (b: [Double], a: [Double]) {
        guard !b.isEmpty else { throw FilterError("b must be a non-empty 1-D array") }
        guard !a.isEmpty else { throw FilterError("a must be a non-empty 1-D array") }
        guard a[0] != 0 else { throw FilterError("a[0] must not be zero") }
        let k = max(b.count, a.count)
        let a0 = a[0]
        let nb = (b + Array(repeating: 0, count: k - b.count)).map { $0 / a0 }
        let na = (a + Array(repeating: 0, count: k - a.count)).map { $0 / a0 }
        return (nb, na)
    }

    /// The length of lfilter's state: max(len b, len a) - 1.
    public var stateCount: Int { max(b.count, a.count) - 1 }
}

public enum InitialState {
    /// The state of lfilter for the steady state of the step response (scipy.signal.lfilter_zi):
    /// zi solves zi = A·zi + B for the companion matrix A of the normalized a.
    public static func lfilter(_ f: TransferFunction) throws(FilterError) -> [Double] {
        guard !f.b.isEmpty else { throw FilterError("b must be a non-empty 1-D array") }
        var a = f.a
        while a.count > 1 && a[0] == 0 { a.removeFirst() }
        guard !a.isEmpty, a[0] != 0 else { throw FilterError("There must be at least one nonzero `a` coefficient.") }
        var b = f.b
        if a[0] != 1.0 {
            let a0 = a[0]
            b = b.map { $0 / a0 }
            a = a.map { $0 / a0 }
        }
        let n = max(a.count, b.count)
        a += Array(repeating: 0, count: n - a.count)
        b += Array(repeating: 0, count: n - b.count)
        let m = n - 1
        // As scipy (whose companion matrix needs two coefficients): a filter without state has none.
        guard m >= 1 else { throw FilterError("lfilter_zi needs max(len(a), len(b)) >= 2: a filter of order 0 has no state") }
        // I - companion(a)ᵀ: first column 1 + a1, a2, …; -1 above the diagonal.
        var matrix = [Double](repeating: 0, count: m * m)
        for i in 0..<m {
            matrix[i * m + i] = 1
            matrix[i * m] = (i == 0 ? 1 : 0) - (-a[i + 1])
            if i + 1 < m { matrix[i * m + i + 1] = -1 }
        }
        var rhs = (0..<m).map { b[$0 + 1] - a[$0 + 1] * b[0] }
        try solve(&matrix, &rhs, m)
        return rhs
    }

    /// Solves matrix·x = rhs in place (x into rhs) by LU with partial pivoting, as LAPACK's dgesv.
    static func solve(_ matrix: inout [Double], _ rhs: inout [Double], _ m: Int) throws(FilterError) {
        var pivots = [Int](repeating: 0, count: m)
        for k in 0..<m {
            var p = k
            for i in (k + 1)..<max(m, k + 1) where abs(matrix[i * m + k]) > abs(matrix[p * m + k]) { p = i }
            pivots[k] = p
            if p != k {
                for j in 0..<m { matrix.swapAt(k * m + j, p * m + j) }
            }
            let pivot = matrix[k * m + k]
            guard pivot != 0 else { throw FilterError("the filter's steady state is singular (a has a root at z = 1)") }
            let reciprocal = 1 / pivot
            for i in (k + 1)..<max(m, k + 1) {
                matrix[i * m + k] *= reciprocal
                let l = matrix[i * m + k]
                if l != 0 {
                    for j in (k + 1)..<m { matrix[i * m + j] -= l * matrix[k * m + j] }
                }
            }
        }
        for k in 0..<m where pivots[k] != k { rhs.swapAt(k, pivots[k]) }
        for i in 0..<m {
            var s = rhs[i]
            for j in 0..<i { s -= matrix[i * m + j] * rhs[j] }
            rhs[i] = s
        }
        for i in stride(from: m - 1, through: 0, by: -1) {
            var s = rhs[i]
            for j in (i + 1)..<max(m, i + 1) { s -= matrix[i * m + j] * rhs[j] }
            rhs[i] = s / matrix[i * m + i]
        }
    }

    /// The state of sosfilt for the steady state of the step response (scipy.signal.sosfilt_zi):
    /// each section's lfilter_zi scaled by the DC gain of the sections before it. Sections × 2.
    public static func sos(_ sos: SecondOrderSections) throws(FilterError) -> [Double] {
        guard !sos.coefficients.isEmpty, sos.coefficients.count % 6 == 0 else {
            throw FilterError("sos must be shape (n_sections, 6), not \(sos.coefficients.count) values")
        }
        var zi = [Double](repeating: 0, count: sos.count * 2)
        var scale = 1.0
        for s in 0..<sos.count {
            let b = (0..<3).map { sos[s, $0] }, a = (3..<6).map { sos[s, $0] }
            let section = try lfilter(TransferFunction(b: b, a: a))
            zi[2 * s] = scale * section[0]
            zi[2 * s + 1] = scale * section[1]
            scale *= (b[0] + b[1] + b[2]) / (a[0] + a[1] + a[2])
        }
        return zi
    }
}
