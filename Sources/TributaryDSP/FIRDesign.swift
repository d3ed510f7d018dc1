import Foundation

/// The windows firwin accepts (scipy's get_window names, symmetric: fftbins=False).
public enum FIRWindow: Equatable, Sendable {
    case hamming, hann, blackman, boxcar
    /// Kaiser with shape parameter beta.
    case kaiser(beta: Double)

    /// The window named as scipy names it (`beta` for kaiser).
    public init?(name: String, beta: Double? = nil) {
        switch name.lowercased() {
        case "hamming", "hamm", "ham": self = .hamming
        case "hann", "han": self = .hann
        case "blackman", "black", "blk": self = .blackman
        case "boxcar", "box", "ones", "rect", "rectangular": self = .boxcar
        case "kaiser", "ksr":
            guard let beta, beta.isFinite else { return nil }
            self = .kaiser(beta: beta)
        default: return nil
        }
    }

    /// The symmetric window of `m` points.
    public func values(_ m: Int) -> [Double] {
        if m <= 1 { return [Double](repeating: 1, count: max(m, 0)) }
        switch self {
        case .boxcar: return [Double](repeating: 1, count: m)
        case .hamming: return FIRWindow.generalCosine(m, [0.54, 1 - 0.54])
        case .hann: return FIRWindow.generalCosine(m, [0.5, 1 - 0.5])
        case .blackman: return FIRWindow.generalCosine(m, [0.42, 0.50, 0.08])
        case .kaiser(let beta):
            let alpha = Double(m - 1) / 2.0
            let denominator = FIRWindow.besselI0(beta)
            return (0..<m).map { n in
                let r = (Double(n) - alpha) / alpha
                return FIRWindow.besselI0(beta * (1 - r * r).squareRoot()) / denominator
            }
        }
    }

    /// Σ a_k cos(k·φ) with φ from -π to π in m steps (numpy.linspace).
    static func generalCosine(_ m: Int, _ a: [Double]) -> [Double] {
        let step = (Double.pi - -Double.pi) / Double(m - 1)
        let phi = (0..<m).map { $0 == m - 1 ? Double.pi : Double($0) * step + -Double.pi }
        var w = [Double](repeating: 0, count: m)
        for (k, ak) in a.enumerated() {
            for i in 0..<m { w[i] += ak * cos(Double(k) * phi[i]) }
        }
        return w
    }

    /// The modified Bessel function of the first kind, order 0, by its power series.
    static func besselI0(_ x: Double) -> Double {
        let q = x * x / 4
        var term = 1.0, sum = 1.0, k = 1.0
        while term > sum * 1e-18 {
            term *= q / (k * k)
            sum += term
            k += 1
        }
        return sum
    }
}

public enum FIRDesign {
    /// The largest number of taps designed.
    public static let maxTaps = 1 << 24

    /// The Kaiser window's beta for a transition `width` (a fraction of Nyquist) with `taps` taps
    /// (scipy's kaiser_atten then kaiser_beta).
    public static func kaiserBeta(taps: Int, width: Double) -> Double {
        let attenuation = 2.285 * Double(taps - 1) * Double.pi * width + 7.95
        if attenuation > 50 { return 0.1102 * (attenuation - 8.7) }
        if attenuation > 21 { return 0.5842 * pow(attenuation - 21, 0.4) + 0.07886 * (attenuation - 21) }
        return 0
    }

    /// A linear-phase FIR filter by the window method (scipy.signal.firwin): `cutoff` as fractions
    /// of Nyquist, strictly increasing in (0, 1); `passZero` whether DC is in the pass band; with
    /// `scale`, unit gain at the centre of the first pass band.
    public static func firwin(
        taps: Int, cutoff: [Double], window: FIRWindow = .hamming, passZero: Bool = true,
        scale: Bool = true
    ) throws(FilterDesignError) -> [Double] {
        guard taps >= 1, taps <= maxTaps else { throw FilterDesignError("numtaps must be an integer from 1 to \(maxTaps), not \(taps)") }
        guard !cutoff.isEmpty else { throw FilterDesignError("At least one cutoff frequency must be given.") }
        guard cutoff.allSatisfy({ $0 > 0 && $0 < 1 }) else {
            throw FilterDesignError("Invalid cutoff frequency: frequencies must be greater than 0 and less than fs/2.")
        }
        guard zip(cutoff, cutoff.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw FilterDesignError("Invalid cutoff frequencies: the frequencies must be strictly increasing.")
        }
        let passNyquist = (cutoff.count % 2 == 1) != passZero
        if passNyquist && taps % 2 == 0 {
            throw FilterDesignError("A filter with an even number of coefficients must have zero response at the Nyquist frequency.")
        }
        let edges = (passZero ? [0.0] : []) + cutoff + (passNyquist ? [1.0] : [])
        let alpha = 0.5 * Double(taps - 1)
        let m = (0..<taps).map { Double($0) - alpha }
        func sinc(_ x: Double) -> Double {
            let y = Double.pi * (x == 0 ? 1.0e-20 : x)
            return sin(y) / y
        }
        var h = [Double](repeating: 0, count: taps)
        for band in stride(from: 0, to: edges.count, by: 2) {
            let left = edges[band], right = edges[band + 1]
            for i in 0..<taps { h[i] += right * sinc(right * m[i]) }
            for i in 0..<taps { h[i] -= left * sinc(left * m[i]) }
        }
        let w = window.values(taps)
        for i in 0..<taps { h[i] *= w[i] }
        if scale {
            let left = edges[0], right = edges[1]
            let frequency = left == 0 ? 0.0 : right == 1 ? 1.0 : 0.5 * (left + right)
            var s = 0.0
            for i in 0..<taps { s += h[i] * cos(Double.pi * m[i] * frequency) }
            for i in 0..<taps { h[i] /= s }
        }
        return h
    }
}
