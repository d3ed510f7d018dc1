import CKernels
import CLinearPredictor
import Foundation

/// Affine grids of float samples (`offset + gain × k`): found from the data, and the samples
/// turned into counts and bit differences from it.
extension NumericCodec {
    /// Writes the counts `k` to `latents` and the bit differences from the grid to `adjustments`;
    /// returns whether any difference is not zero.
    func toGrid(_ values: UnsafeRawPointer, count n: Int, float32: Bool, offset: Double, gain: Double) -> Bool {
        let v = latents.base, adj = adjustments.base
        let inverse = 1 / gain
        var any: Int64 = 0
        if float32 {
            let x = values.assumingMemoryBound(to: UInt32.self)
            for i in 0..<n {
                let bits = UInt32(littleEndian: x[i])
                let k = Self.count(Double(Float(bitPattern: bits)), offset: offset, inverse: inverse)
                let y = Float(offset + gain * Double(k))
                let d = Int64(Int32(bitPattern: bits &- y.bitPattern))
                v[i] = k
                adj[i] = d
                any |= d
            }
        } else {
            // The C kernel computes `toGridReference64` (eight samples at a time with AVX-512).
            return tributary_to_grid64(values.assumingMemoryBound(to: UInt64.self), v, adj, n, offset, gain, inverse) != 0
        }
        return any != 0
    }

    /// The binary64 branch of `toGrid` in Swift (the kernel's reference in the tests): latents to
    /// `k`, bit differences to `adj`; returns their OR.
    static func toGridReference64(
        _ x: UnsafePointer<UInt64>, k: UnsafeMutablePointer<Int64>, adj: UnsafeMutablePointer<Int64>,
        count n: Int, offset: Double, gain: Double
    ) -> Int64 {
        let inverse = 1 / gain
        var any: Int64 = 0
        for i in 0..<n {
            let bits = UInt64(littleEndian: x[i])
            let count = Self.count(Double(bitPattern: bits), offset: offset, inverse: inverse)
            let y = offset + gain * Double(count)
            let d = Int64(bitPattern: bits &- y.bitPattern)
            k[i] = count
            adj[i] = d
            any |= d
        }
        return any
    }

    @inline(__always) static func count(_ x: Double, offset: Double, inverse: Double) -> Int64 {
        let q = (x - offset) * inverse
        // Round to nearest by the 1.5 × 2^52 trick (no libm call); NaN and far values give 0.
        return abs(q) <= 0x1p50 ? Int64((q + 0x1.8p52) - 0x1.8p52) : 0
    }

    @inline(__always) private static func reproduces(_ x: Double, offset: Double, gain: Double, float32: Bool) -> Bool {
        let k = count(x, offset: offset, inverse: 1 / gain)
        let y = offset + gain * Double(k)
        return float32 ? Float(y).bitPattern == Float(x).bitPattern : y.bitPattern == x.bitPattern
    }

    /// An affine grid `offset + gain × k` that reproduces the segment's samples (most of them bit
    /// for bit), or nil when the samples show no grid.
    func findGrid(_ values: UnsafeRawPointer, count n: Int, float32: Bool) -> (offset: Double, gain: Double)? {
        guard n >= 2 else { return nil }
        let testCount = gridTestValues(values, count: n, float32: float32)
        guard testCount >= 2 else { return nil }
        // A grid from an earlier segment that fits about as well as it did.
        for known in knownGrids
        where Double(gridScore(known.offset, known.gain, testCount: testCount, limit: testCount, float32: float32)) >= (known.fit - 0.1)
            * Double(testCount)
        {
            return (known.offset, known.gain)
        }
        guard let distinct = sortedDistinctSample(values, count: n, float32: float32),
            let gain = estimateGain(distinct: distinct, float32: float32)
        else { return nil }
        let best = exactGrid(gain: gain, distinct: distinct, testCount: testCount, float32: float32)
        let (chosen, chosenScore) = settleOffset(best, testCount: testCount, float32: float32)
        // Remembered with how well it fitted (a float32 or rounded grid fits only most values).
        if chosenScore * 2 >= testCount {
            knownGrids.insert((chosen.offset, chosen.gain, Double(chosenScore) / Double(testCount)), at: 0)
            if knownGrids.count > 16 { knownGrids.removeLast() }
        }
        return chosen
    }

    @inline(__always) private static func value(_ values: UnsafeRawPointer, _ i: Int, float32: Bool) -> Double {
        float32 ? Double(values.load(fromByteOffset: 4 * i, as: Float.self)) : values.load(fromByteOffset: 8 * i, as: Double.self)
    }

    /// Test values spread over the segment, to `gridTests`; returns how many.
    private func gridTestValues(_ values: UnsafeRawPointer, count n: Int, float32: Bool) -> Int {
        let tests = gridTests.base
        var testCount = 0
        for j in Swift.stride(from: 0, to: n, by: max(1, n / 64)) where testCount < 128 {
            let x = Self.value(values, j, float32: float32)
            if x.isFinite { tests[testCount] = x; testCount += 1 }
        }
        return testCount
    }

    /// How many of the first `limit` test values the grid reproduces.
    private func gridScore(_ offset: Double, _ gain: Double, testCount: Int, limit: Int, float32: Bool) -> Int {
        let tests = gridTests.base
        var s = 0
        for t in 0..<min(limit, testCount) where Self.reproduces(tests[t], offset: offset, gain: gain, float32: float32) { s += 1 }
        return s
    }

    /// The sorted distinct finite values of up to 2048 samples spread over the segment, to
    /// `gridSample`; returns how many, or nil when fewer than 2.
    private func sortedDistinctSample(_ values: UnsafeRawPointer, count n: Int, float32: Bool) -> Int? {
        let m = min(n, 2048), stride = n / m
        let sample = gridSample.base
        var count = 0
        for j in 0..<m {
            let x = Self.value(values, j * stride, float32: float32)
            if x.isFinite { sample[count] = x; count += 1 }
        }
        guard count >= 2 else { return nil }
        // Sorted distinct values.
        RadixSort.sort(sample, count: count, scratch: gridKeys.base, counts: gridCounts.base)
        var distinct = 1
        for i in 1..<count where sample[i] != sample[distinct - 1] { sample[distinct] = sample[i]; distinct += 1 }
        guard distinct >= 2 else { return nil }
        return distinct
    }

    /// The grid's gain, approximately, from the `distinct` sorted values in `gridSample`; nil when
    /// they show no grid.
    private func estimateGain(distinct: Int, float32: Bool) -> Double? {
        let sample = gridSample.base
        let lowest = sample[0], highest = sample[distinct - 1]
        let maxAbs = max(abs(lowest), abs(highest))
        // float32 values beyond the grid's precision are rounded off it: the gain is sought among
        // the small values (|x| ≤ max/16), which float32 holds exactly, when there are enough.
        var first = 0, last = distinct - 1
        if float32 {
            let limit = maxAbs / 16
            var a = 0, b = distinct - 1
            while a < distinct && sample[a] < -limit { a += 1 }
            while b >= 0 && sample[b] > limit { b -= 1 }
            if b - a >= 16 { first = a; last = b }
        }
        let ulp = maxAbs.ulp
        let floor = 64 * ulp
        var g = Double.infinity
        for i in (first + 1)...last { g = min(g, sample[i] - sample[i - 1]) }
        guard g > floor else { return nil }
        // Tolerant Euclid over up to 256 differences: the GCD of values that are multiples of the
        // gain give or take a few ulps.
        for i in Swift.stride(from: first + 1, to: last + 1, by: max(1, (last - first) / 256)) {
            let d = sample[i] - sample[i - 1]
            var a = max(d, g), b = min(d, g)
            var found = false
            for _ in 0..<40 {
                let q = (a / b).rounded()
                let r = abs(a - q * b)
                if r <= 8 * ulp * (1 + q) { found = true; break }
                (a, b) = (b, r)
                if b <= floor { break }
            }
            guard found, b > floor else { return nil }
            g = b
        }
        // Refine the gain over the whole span of (exact) values.
        let span = sample[last] - sample[first]
        let steps = (span / g).rounded()
        guard steps >= 1, steps < 0x1p40 else { return nil }
        let gain = span / steps
        // Most values must sit on the grid (float32: within their own rounding of it).
        var near = 0
        for i in 0..<distinct {
            let q = (sample[i] - sample[first]) / gain
            let tolerance = float32 ? max(0.01, 0.01 + 0.5 * Double(Float(sample[i]).ulp) / gain) : 0.01
            if abs(q - q.rounded()) < tolerance { near += 1 }
        }
        guard near * 10 >= distinct * 9 else { return nil }
        return gain
    }

    /// The offset for an origin: taken at the sampled value (of the `distinct` in `sample`) nearest
    /// to it, where `gain × k` is smallest, so that it is exact to about that value's ulp.
    private static func gridOffset(_ approximate: Double, _ g: Double, sample: UnsafePointer<Double>, distinct: Int) -> Double {
        var lo = 0, hi = distinct - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if sample[mid] < approximate { lo = mid + 1 } else { hi = mid }
        }
        let nearest = lo > 0 && abs(sample[lo - 1] - approximate) < abs(sample[lo] - approximate) ? sample[lo - 1] : sample[lo]
        return nearest - g * ((nearest - approximate) / g).rounded()
    }

    /// The exact gain (a few ulps around the estimate) and the origin of k: candidates in order
    /// of the smallest offset, kept when every probe (the first 16 tests) is reproduced bit for bit.
    private func exactGrid(gain: Double, distinct: Int, testCount: Int, float32: Bool) -> (offset: Double, gain: Double, score: Int) {
        let sample = gridSample.base, tests = gridTests.base
        let lowest = sample[0]
        let c0 = (lowest / gain).rounded()
        var best: (offset: Double, gain: Double, score: Int) = (lowest - gain * c0, gain, -1)
        search: for j in 0..<2049 {
            let c = c0 + Double(j % 2 == 0 ? j / 2 : -(j + 1) / 2)
            var g = gain
            for u in 0..<10 {
                if u < 7 {
                    // gain, +1 ulp, −1 ulp, +2 ulps, …
                    g = gain
                    for _ in 0..<((u + 1) / 2) { g = u % 2 == 1 ? g.nextUp : g.nextDown }
                } else {
                    // A gain of 24 significant bits (range / 2^bits and most written constants are):
                    // the span of float32 values cannot pin the last bits of a binary64 gain.
                    let rounded = Float(gain)
                    g = Double(u == 7 ? rounded : (u == 8 ? rounded.nextUp : rounded.nextDown))
                }
                let o = Self.gridOffset(lowest - g * c, g, sample: sample, distinct: distinct)
                var hits = 0, misses = 0
                for t in 0..<min(16, testCount) {
                    if Self.reproduces(tests[t], offset: o, gain: g, float32: float32) {
                        hits += 1
                    } else {
                        misses += 1; if misses > 3 { break }
                    }
                }
                if hits > best.score { best = (o, g, hits) }
                if misses == 0 { break search }
            }
        }
        return best
    }

    /// Settles the offset's last bits: the candidates `x − gain × k` of the tested values, and the
    /// ulps around the best so far. Returns the grid and how many test values it reproduces.
    private func settleOffset(
        _ best: (offset: Double, gain: Double, score: Int), testCount: Int,
        float32: Bool
    ) -> ((offset: Double, gain: Double), Int) {
        let tests = gridTests.base
        func score(_ offset: Double, _ gain: Double) -> Int {
            gridScore(offset, gain, testCount: testCount, limit: testCount, float32: float32)
        }
        var chosen = (offset: best.offset, gain: best.gain), chosenScore = score(best.offset, best.gain)
        for t in 0..<testCount where chosenScore < testCount {
            let k = Double(Self.count(tests[t], offset: best.offset, inverse: 1 / best.gain))
            let candidate = tests[t] - best.gain * k
            let s = score(candidate, best.gain)
            if s > chosenScore { chosen = (candidate, best.gain); chosenScore = s }
        }
        var above = chosen.offset, below = chosen.offset
        for _ in 0..<16 where chosenScore < testCount {
            above = above.nextUp
            below = below.nextDown
            for candidate in [above, below] {
                let s = score(candidate, best.gain)
                if s > chosenScore { chosen = (candidate, best.gain); chosenScore = s }
            }
        }
        return (chosen, chosenScore)
    }
}
