import Foundation

/// The clock synchronisation pyxdf's `load_xdf(synchronize_clocks=True)` applies to a stream's
/// timestamps, with its defaults (pyxdf 1.17: `handle_clock_resets=True`, reset thresholds 5 s /
/// 5 MADs on the offsets' times and 1 s / 10 MADs on their values, `winsor_threshold` 1e-4 s), so
/// that an import puts samples and markers where pyxdf puts them (docs/FORMATS.md, XDF import):
/// - the ClockOffset chunks are cut into ranges at clock resets: where their collection time goes
///   backwards, or where both the step in time and the step in value are outliers (more than the
///   thresholds from the median step, in seconds and in median absolute deviations);
/// - per range a line `value = a + b · time` is fitted robustly (Huber loss, 1 000 ADMM iterations,
///   pyxdf's `_robust_fit`); a range of one offset gives the constant `a` = that value; a range whose
///   fit has no solution (all its times equal) gives no correction;
/// - the timestamps are corrected in order, `t + (a + b · t)` with the line of the current range; the
///   next range starts at the first timestamp nearer the next range's first collection time than the
///   current range's last one (a range that no timestamp falls in is skipped).
public struct XDFClockSync: Sendable {
    /// One range of clock offsets: its line and the collection times at its ends.
    struct Range: Sendable {
        var intercept: Double
        var slope: Double
        var firstTime: Double
        var lastTime: Double
    }

    let ranges: [Range]
    private var current = 0
    /// Whether a range's line is not a finite number (offsets whose scaled times or sums overflow):
    /// pyxdf then applies nothing; an import refuses the file instead of guessing.
    public let isUnusable: Bool

    /// The correction of the offsets `times` / `values` (collection times and values, seconds, in file
    /// order); none when there are none.
    public init(times: [Double], values: [Double]) {
        let count = min(times.count, values.count)
        guard count > 0 else {
            ranges = []
            isUnusable = false
            return
        }
        let segments = count > 1 ? Self.resetSegments(Array(times.prefix(count)), Array(values.prefix(count))) : [0...0]
        var unusable = false
        ranges = segments.map { r in
            var line = (values[r.lowerBound], 0.0)
            if r.count > 1 {
                switch Self.robustLine(Array(times[r]), Array(values[r])) {
                case .fitted(let a, let b): line = (a, b)
                case .singular: line = (0, 0)
                case .notFinite:
                    unusable = true
                    line = (.nan, .nan)
                }
            }
            return Range(intercept: line.0, slope: line.1, firstTime: times[r.lowerBound], lastTime: times[r.upperBound])
        }
        isUnusable = unusable
    }

    /// The lines of the ranges, for messages: "a s + b × t" each.
    public var lines: String { ranges.map { "\($0.intercept) s + \($0.slope) × t" }.joined(separator: ", ") }

    /// The largest magnitude of its lines' slopes (0 for none).
    public var maxSlope: Double { ranges.map { abs($0.slope) }.max() ?? 0 }

    /// Whether any offset applies.
    public var isEmpty: Bool { ranges.isEmpty }

    /// The clock segments (between resets): with one, a correction does not depend on the order of the timestamps.
    public var segmentCount: Int { ranges.count }

    /// Corrects the next timestamp of the stream (timestamps must be given in the stream's order,
    /// each once).
    public mutating func correct(_ t: Double) -> Double {
        guard !ranges.isEmpty else { return t }
        while current + 1 < ranges.count, !(abs(t - ranges[current].lastTime) < abs(t - ranges[current + 1].firstTime)) {
            current += 1
        }
        let r = ranges[current]
        return t + (r.intercept + r.slope * t)
    }

    /// Every timestamp of a stream, corrected.
    public static func corrected(_ timestamps: [Double], times: [Double], values: [Double]) -> [Double] {
        var sync = XDFClockSync(times: times, values: values)
        guard !sync.isEmpty else { return timestamps }
        return timestamps.map { sync.correct($0) }
    }

    // MARK: pyxdf's reset detection and robust fit

    static let resetTimeStds = 5.0, resetTimeSeconds = 5.0, resetValueStds = 10.0, resetValueSeconds = 1.0
    static let winsor = 0.0001

    /// The inclusive index ranges between clock resets (pyxdf `_detect_clock_resets`).
    static func resetSegments(_ times: [Double], _ values: [Double]) -> [ClosedRange<Int>] {
        let timeSteps = zip(times.dropFirst(), times).map { $0 - $1 }
        let valueSteps = zip(values.dropFirst(), values).map { $0 - $1 }
        let timeGlitch = glitches(timeSteps, stds: resetTimeStds, seconds: resetTimeSeconds)
        let valueGlitch = glitches(valueSteps, stds: resetValueStds, seconds: resetValueSeconds)
        var segments: [ClosedRange<Int>] = []
        var start = 0
        for k in timeSteps.indices where timeSteps[k] < 0 || (timeGlitch[k] && valueGlitch[k]) {
            segments.append(start...k)
            start = k + 1
        }
        segments.append(start...times.count - 1)
        return segments
    }

    /// Steps that are outliers: more than `stds` median absolute deviations and more than `seconds`
    /// from the median step (pyxdf `_segment_clock_diff`).
    static func glitches(_ steps: [Double], stds: Double, seconds: Double) -> [Bool] {
        let m = median(steps)
        let mad = median(steps.map { abs($0 - m) }) + Double.ulpOfOne
        return steps.map { abs(($0 - m) / mad) > stds && abs($0 - m) > seconds }
    }

    /// numpy's median: the middle value, or the mean of the two middle ones.
    static func median(_ v: [Double]) -> Double {
        let s = v.sorted()
        guard !s.isEmpty else { return .nan }
        let n = s.count
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2
    }

    /// A fitted line, or why there is none.
    enum Line: Equatable {
        /// Intercept and slope in seconds.
        case fitted(Double, Double)
        /// The normal equations have no Cholesky factor (all times equal): numpy raises LinAlgError
        /// and pyxdf applies nothing.
        case singular
        /// The scaled times or values, or the line, are not finite numbers.
        case notFinite
    }

    /// pyxdf's `_robust_fit` of `values` against `times` as `_clock_sync` calls it (both scaled by
    /// 1 / winsor, the times' minimum taken out).
    static func robustLine(_ times: [Double], _ values: [Double], rho: Double = 1, iterations: Int = 1000) -> Line {
        let n = times.count
        let scaled = times.map { $0 / winsor }
        let origin = scaled.min() ?? 0
        let a1 = scaled.map { $0 - origin }
        let y = values.map { $0 / winsor }
        guard a1.allSatisfy(\.isFinite), y.allSatisfy(\.isFinite) else { return .notFinite }
        // AᵀA = [[n, Σa], [Σa, Σa²]], its Cholesky factor L = [[l00, 0], [l10, l11]].
        var s1 = 0.0, s2 = 0.0, ty0 = 0.0, ty1 = 0.0
        for i in 0..<n {
            s1 += a1[i]
            s2 += a1[i] * a1[i]
            ty0 += y[i]
            ty1 += a1[i] * y[i]
        }
        let l00 = Double(n).squareRoot()
        let l10 = s1 / l00
        let d = s2 - l10 * l10
        guard d.isFinite, s2.isFinite, ty1.isFinite else { return .notFinite }
        guard d > 0 else { return .singular }
        let l11 = d.squareRoot()
        var z = [Double](repeating: 0, count: n), u = z
        var x0 = 0.0, x1 = 0.0
        for _ in 0..<iterations {
            // x = U⁻¹ L⁻¹ (Aᵀy + Aᵀ(z − u))
            var b0 = ty0, b1 = ty1
            for i in 0..<n {
                let w = z[i] - u[i]
                b0 += w
                b1 += a1[i] * w
            }
            let w0 = b0 / l00
            let w1 = (b1 - l10 * w0) / l11
            x1 = w1 / l11
            x0 = (w0 - l10 * x1) / l00
            for i in 0..<n {
                let di = x0 + a1[i] * x1 - y[i] + u[i]
                let inverse = di != 0 ? 1 / di : 0
                let keep = max(0, 1 - (1 + 1 / rho) * abs(inverse))
                z[i] = rho / (1 + rho) * di + 1 / (1 + rho) * keep * di
                u[i] = di - z[i]
            }
        }
        x0 -= x1 * origin
        let intercept = x0 * winsor, slope = x1
        guard intercept.isFinite, slope.isFinite else { return .notFinite }
        return .fitted(intercept, slope)
    }
}
