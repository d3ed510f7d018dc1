import Foundation
import Synchronization

/// The window functions of the analysis, all sums of cosines (general cosine windows).
public enum WindowKind: String, Sendable, CaseIterable {
    case rectangular
    /// Hann: 0.5 - 0.5 cos.
    case hann
    /// Hamming: 0.54 - 0.46 cos.
    case hamming
    /// Blackman: 0.42, 0.50, 0.08.
    case blackman
    /// Exact Blackman: 7938, 9240, 1430 over 18608 (zeros at the third and fourth sidelobes).
    case exactBlackman = "exact-blackman"
    /// 4-term Blackman-Harris (-92 dB sidelobes), scipy's `blackmanharris`.
    case blackmanHarris = "blackman-harris"
    /// 7-term Blackman-Harris (about -180 dB sidelobes), NI's definition; for distortion measurements.
    case blackmanHarris7 = "blackman-harris-7"
    /// Flat top, scipy's 5-term coefficients: amplitude error below 0.01 dB wherever a tone falls.
    case flatTop = "flattop"

    /// The cosine coefficients a0, a1, ... of w[n] = sum_k (-1)^k a_k cos(2 pi k n / D).
    public var coefficients: [Double] {
        switch self {
        case .rectangular: [1]
        case .hann: [0.5, 0.5]
        case .hamming: [0.54, 0.46]
        case .blackman: [0.42, 0.50, 0.08]
        case .exactBlackman: [7938.0 / 18608.0, 9240.0 / 18608.0, 1430.0 / 18608.0]
        case .blackmanHarris: [0.35875, 0.48829, 0.14128, 0.01168]
        case .blackmanHarris7:
            [
                0.27105140069342, 0.43329793923448, 0.21812299954311, 0.06592544638803,
                0.01081174209837, 0.00077658482522, 0.00001388721735,
            ]
        case .flatTop: [0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368]
        }
    }

    /// Half-width of the main lobe in bins (its first zero), used to sum a tone's power.
    public var mainLobeHalfWidth: Int {
        switch self {
        case .rectangular: 1
        default: coefficients.count
        }
    }

    /// Parses a window name: the raw values above plus common aliases (hanning, blackmanharris, bh7, flat-top...).
    public init?(name: String) {
        let key = name.lowercased().replacingOccurrences(of: "_", with: "-")
        if let kind = WindowKind(rawValue: key) { self = kind; return }
        switch key {
        case "rect", "boxcar", "none", "uniform": self = .rectangular
        case "hanning": self = .hann
        case "exactblackman": self = .exactBlackman
        case "blackmanharris", "bh4", "blackman-harris-4": self = .blackmanHarris
        case "blackmanharris7", "bh7", "blackman-harris7": self = .blackmanHarris7
        case "flat-top", "flattop": self = .flatTop
        default: return nil
        }
    }
}

/// A window of a given length with its normalisation constants.
public struct Window: Sendable, Equatable {
    /// Which window.
    public var kind: WindowKind
    /// Periodic ("DFT-even", scipy's `fftbins=True`, used for spectral analysis) or symmetric.
    public var periodic: Bool
    /// The window values.
    public var values: [Double]

    /// Creates a window of `count` values; scipy's `get_window(kind, count, fftbins=periodic)`.
    public init(_ kind: WindowKind, count: Int, periodic: Bool = true) {
        self.kind = kind
        self.periodic = periodic
        let coefficients = kind.coefficients
        // Periodic: the first `count` values of a symmetric window of count + 1 points.
        let denominator = Double(periodic ? count : count - 1)
        if count == 1 {
            values = [1]
        } else {
            values = (0..<Swift.max(count, 0)).map { n in
                var w = 0.0
                for (k, a) in coefficients.enumerated() {
                    let term = a * cos(2 * Double.pi * Double(k) * Double(n) / denominator)
                    w += k % 2 == 0 ? term : -term
                }
                return w
            }
        }
    }

    /// The window of `init(_:count:periodic:)`, computed once per process and shared (its values
    /// are copy-on-write): an analysis makes one estimator per channel, and each used to compute
    /// the same cosines again. Up to `sharedLimit` windows are kept; beyond that the cache starts over.
    public static func shared(_ kind: WindowKind, count: Int, periodic: Bool = true) -> Window {
        let key = SharedKey(kind: kind, count: count, periodic: periodic)
        if let window = sharedWindows.withLock({ $0[key] }) { return window }
        let window = Window(kind, count: count, periodic: periodic)
        sharedWindows.withLock { cache in
            if cache.count >= sharedLimit { cache.removeAll() }
            cache[key] = window
        }
        return window
    }

    /// How many windows `shared` keeps.
    public static let sharedLimit = 32
    private struct SharedKey: Hashable { var kind: WindowKind, count: Int, periodic: Bool }
    private static let sharedWindows = Mutex<[SharedKey: Window]>([:])

    /// Number of values.
    public var count: Int { values.count }
    /// Sum of the values.
    public var sum: Double { values.reduce(0, +) }
    /// Sum of the squared values.
    public var sumOfSquares: Double { values.reduce(0) { $0 + $1 * $1 } }
    /// Coherent gain: mean of the values (a tone's amplitude is multiplied by it).
    public var coherentGain: Double { sum / Double(count) }
    /// Equivalent noise bandwidth in bins: N sum(w^2) / (sum w)^2 (1 for rectangular, 1.5 for Hann).
    public var equivalentNoiseBandwidth: Double { Double(count) * sumOfSquares / (sum * sum) }
}
