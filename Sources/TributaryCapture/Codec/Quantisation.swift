/// Recognises float64 samples that are really ADC counts times a constant step (`x == Double(k) * step`
/// exactly, bit for bit, with `k` an Int16), so they can be stored as 2-byte counts: 4 times fewer
/// bytes before compression, and no loss — every value is checked.
public enum Quantisation {
    /// A step that might reproduce the samples: the floating-point GCD of differences between
    /// neighbouring samples taken at up to 512 places spread over the buffer. Differences of multiples
    /// of the step are exact multiples of it, and `fmod` is exact, so Euclid's algorithm ends on the step.
    /// - Parameter values: the samples.
    /// - Returns: a positive finite candidate, or nil when the samples show no common step.
    public static func candidateStep(_ values: UnsafeBufferPointer<Double>) -> Double? {
        let n = values.count
        guard n >= 2 else { return nil }
        let probes = min(512, n - 1)
        let stride = (n - 1) / probes
        var step = 0.0
        for p in 0..<probes {
            let i = p * stride
            let a = values[i], b = values[i + 1]
            guard a.isFinite, b.isFinite else { return nil }
            let d = abs(b - a)
            if d == 0 { continue }
            step = step == 0 ? d : gcd(step, d)
            guard step > 0 else { return nil }
            // Int16 counts reach at most 32 768 steps from zero, and the step only shrinks from here:
            // a probe beyond that can never be reproduced, so data that is not quantised (a computed
            // sine, say) is rejected after one or two probes instead of 512 rounds of `fmod`.
            guard Swift.max(abs(a), abs(b)) <= 32_768 * step else { return nil }
        }
        if step == 0 {
            // Constant over every probe: any value is a multiple of itself.
            let v = abs(values[0])
            return v > 0 && v.isFinite ? v : nil
        }
        return step
    }

    /// Converts `values` to counts `k` with `Double(k) * step == value` bit for bit.
    /// - Parameters:
    ///   - values: the samples.
    ///   - step: the quantisation step (positive, finite).
    ///   - counts: at least `values.count` elements; contents are unspecified when the result is false.
    /// - Returns: true when every sample is reproduced exactly by an Int16 count (so `-0.0`, NaN,
    ///   infinities, values off the grid or beyond ±32767 steps all give false).
    public static func toCounts(
        _ values: UnsafeBufferPointer<Double>, step: Double,
        into counts: UnsafeMutableBufferPointer<Int16>
    ) -> Bool {
        precondition(counts.count >= values.count, "quantisation destination too small")
        guard step > 0, step.isFinite else { return false }
        let inverse = 1 / step
        guard let src = values.baseAddress, let dst = counts.baseAddress else { return true }
        // One flag accumulated without branches keeps each block's loop simple for the vectoriser; it
        // is tested after every block, so samples that are not on the grid (the usual case for
        // computed data) cost one block, not a pass over the whole buffer.
        var start = 0
        while start < values.count {
            let end = Swift.min(start + 512, values.count)
            var mismatch: UInt64 = 0
            for i in start..<end {
                let x = src[i]
                let r = (x * inverse).rounded(.toNearestOrEven)
                let inRange = r >= -32768 && r <= 32767
                let k = Int16(inRange ? r : 0)
                dst[i] = k
                mismatch |= (Double(k) * step).bitPattern ^ x.bitPattern
                mismatch |= inRange ? 0 : 1
            }
            if mismatch != 0 { return false }
            start = end
        }
        return true
    }

    /// Rebuilds samples from counts: `values[i] = Double(counts[i]) * step` (one IEEE multiplication).
    public static func fromCounts(
        _ counts: UnsafeBufferPointer<Int16>, step: Double,
        into values: UnsafeMutableBufferPointer<Double>
    ) {
        precondition(values.count >= counts.count, "quantisation destination too small")
        guard let src = counts.baseAddress, let dst = values.baseAddress else { return }
        for i in 0..<counts.count { dst[i] = Double(src[i]) * step }
    }

    private static func gcd(_ x: Double, _ y: Double) -> Double {
        var a = max(x, y), b = min(x, y)
        // Non-multiples walk down towards the rounding noise; 64 rounds is far more than exact
        // multiples of one step need (the ratios are at most 2^16 here), so stop and report failure.
        for _ in 0..<64 {
            if b == 0 { return a }
            (a, b) = (b, a.truncatingRemainder(dividingBy: b))
        }
        return 0
    }
}
