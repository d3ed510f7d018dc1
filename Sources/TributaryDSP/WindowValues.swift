import Foundation

/// Windows named as `scipy.signal.get_window` names them, for the short-time transforms and
/// cross-spectra (which take any window's values): the cosine sums of `WindowKind`, boxcar,
/// Bartlett and Tukey (with its optional taper fraction).
public enum SpectralWindow {
    /// The scipy names understood, each with its aliases.
    public static let names = [
        "boxcar (box, ones, rect, rectangular)", "hann (han)", "hamming (hamm, ham)", "blackman (black, blk)",
        "blackmanharris (blackharr, bkh)", "flattop (flat, flt)", "bartlett (bart, brt)",
        "tukey (tuk; optional alpha, default 0.5)",
    ]

    /// The values of `scipy.signal.get_window(name, count, fftbins: !symmetric)` (a `_periodic` or
    /// `_symmetric` suffix of the name overrides `symmetric`, as scipy's).
    /// - Parameters:
    ///   - name: the window's name.
    ///   - parameters: the tuple's parameters after the name (only tukey takes one).
    ///   - count: the number of values, 1 ... `SpectralLimits.maxTransformLength`.
    ///   - symmetric: symmetric (filter design) rather than periodic (spectral analysis).
    /// - Throws: `SpectralParameterError` naming the window for an unknown name, bad parameters or count.
    public static func values(name: String, parameters: [Double] = [], count: Int, symmetric: Bool = false) throws -> [Double] {
        guard (1...SpectralLimits.maxTransformLength).contains(count) else {
            throw SpectralParameterError("window", "length must be in 1...\(SpectralLimits.maxTransformLength), not \(count)")
        }
        var base = name
        var symmetric = symmetric
        if base.hasSuffix("_symmetric") {
            symmetric = true
            base.removeLast("_symmetric".count)
        } else if base.hasSuffix("_periodic") {
            symmetric = false
            base.removeLast("_periodic".count)
        }
        let kind: WindowKind?
        switch base {
        case "boxcar", "box", "ones", "rect", "rectangular": kind = .rectangular
        case "hann", "han": kind = .hann
        case "hamming", "hamm", "ham": kind = .hamming
        case "blackman", "black", "blk": kind = .blackman
        case "blackmanharris", "blackharr", "bkh": kind = .blackmanHarris
        case "flattop", "flat", "flt": kind = .flatTop
        case "bartlett", "bart", "brt", "tukey", "tuk": kind = nil
        default:
            throw SpectralParameterError("window", "'\(name)' is not one of \(names.joined(separator: ", ")) (or pass the window's values)")
        }
        let takesParameter = base == "tukey" || base == "tuk"
        guard parameters.count <= (takesParameter ? 1 : 0) else {
            throw SpectralParameterError(
                "window", "'\(base)' takes \(takesParameter ? "at most one parameter" : "no parameters"), not \(parameters.count)")
        }
        guard parameters.allSatisfy(\.isFinite) else {
            throw SpectralParameterError("window", "'\(base)' parameters must be finite numbers")
        }
        if count == 1 { return [1] }
        if let kind {
            if kind == .rectangular { return [Double](repeating: 1, count: count) }
            return Window(kind, count: count, periodic: !symmetric).values
        }
        // Periodic: the first `count` values of the symmetric window of count + 1.
        let m = symmetric ? count : count + 1
        var w: [Double]
        if base.hasPrefix("b") {
            // scipy's bartlett: 2n/(M-1) up to the middle, 2 - 2n/(M-1) after it.
            w = (0..<m).map { n in
                let t = Double(n)
                return n <= (m - 1) / 2 ? 2 * t / Double(m - 1) : 2 - 2 * t / Double(m - 1)
            }
        } else {
            let alpha = parameters.first ?? 0.5
            if alpha <= 0 { return [Double](repeating: 1, count: count) }
            if alpha >= 1 { return Window(.hann, count: count, periodic: !symmetric).values }
            let width = Int((alpha * Double(m - 1) / 2).rounded(.down))
            w = (0..<m).map { n in
                let t = Double(n)
                if n <= width { return 0.5 * (1 + cos(Double.pi * (-1 + 2 * t / alpha / Double(m - 1)))) }
                if n >= m - width - 1 { return 0.5 * (1 + cos(Double.pi * (-2 / alpha + 1 + 2 * t / alpha / Double(m - 1)))) }
                return 1
            }
        }
        if !symmetric { w.removeLast() }
        return w
    }
}
