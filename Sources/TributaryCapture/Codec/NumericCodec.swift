import Foundation

/// The entropy-coded numeric transform (`ChunkTransforms.coded`, docs/CAPTURE.md §5.1): a stream of
/// int16, int32, float32 or float64 samples cut into segments (one per channel group, at most
/// `maxSegment` samples), each turned into integer latents and entropy coded by `LatentCoder`.
///
/// Per segment, chosen by measurement:
/// - the **mode**: integers are their own latents; floats on an exact or affine grid
///   (`offset + gain × k`, found from the data) become the counts `k` plus a second latent, the
///   difference in bits between the sample and the grid value (zero on an exact grid, a few ulps
///   where the writer rounded differently, anything for NaN, −0.0 …: lossless whatever it is);
///   other floats become their order-preserving bit patterns;
/// - the **predictor**: none, delta, delta of delta, or a linear predictor of order 2, 4 or 8
///   (fixed-point coefficients fitted by least squares: cancels tones that delta only shrinks).
///
/// Owns its scratch buffers (grown to the largest stream, then reused): one per thread.
final class NumericCodec {
    static let version: UInt8 = 1
    static let maxSegment = 1 << 16
    static let streamHeaderSize = 16

    private let latents = Scratch<Int64>()
    private let adjustments = Scratch<Int64>()
    private let symbols = Scratch<UInt8>()
    private let words = Scratch<UInt16>()
    private let output = Scratch<UInt8>()
    private let histogram = Scratch<Int>()
    private let alternative = Scratch<UInt8>()
    /// Bits of a fixed-point latent below the largest value of its segment (float64): small enough
    /// that linear prediction does not overflow, the finer bits go to the adjustments.
    static let fixedPointBits = 36
    private let coefficients: Scratch<Int64> = { let c = Scratch<Int64>(); c.reserve(8); return c }()
    private var tables = LatentCoder.Tables()
    /// Grids found in earlier segments, tried first (a channel keeps its scaling from chunk to chunk).
    private var knownGrids: [(offset: Double, gain: Double)] = []

    /// When set, `entropyBits` accumulates the empirical order-0 entropy of the coded latents.
    var measureEntropy = false
    private(set) var entropyBits = 0.0
    func resetEntropy() { entropyBits = 0 }

    init() {}

    /// Bytes the coded form of `count` elements can take at most (the encoder gives up beyond the caller's capacity).
    static func workingSize(elementCount n: Int) -> Int {
        streamHeaderSize + 20 * n + (n / maxSegment + 1) * 2 * 1400 + 64
    }

    // MARK: Encoding

    /// Encodes `raw` (whole elements of `elementType`, not `.bytes`).
    /// - Parameters:
    ///   - segments: element counts of the channel groups, in order (summing to the element count);
    ///     nil cuts the stream into `maxSegment` pieces.
    ///   - out: where the coded stream goes when it fits in `capacity` bytes.
    /// - Returns: the coded size, or nil when it would not be smaller than `capacity`.
    func encode(_ raw: UnsafeRawBufferPointer, elementType: ChunkElementType, segments: [Int]? = nil,
                into out: UnsafeMutableRawPointer, capacity: Int) -> Int? {
        let size = elementType.size
        let n = raw.count / size
        latents.reserve(n)
        adjustments.reserve(n)
        symbols.reserve(n)
        words.reserve(n + 2)
        histogram.reserve(LatentCoder.histogramSize)
        output.reserve(Self.workingSize(elementCount: n))
        let o = UnsafeMutableRawPointer(output.base)
        var lengths: [Int] = []
        for group in segments ?? [n] {
            var left = group
            while left > 0 { lengths.append(min(left, Self.maxSegment)); left -= min(left, Self.maxSegment) }
        }
        o.storeBytes(of: Self.version, toByteOffset: 0, as: UInt8.self)
        o.storeBytes(of: elementType.rawValue, toByteOffset: 1, as: UInt8.self)
        o.storeBytes(of: UInt16(0), toByteOffset: 2, as: UInt16.self)
        o.storeBytes(of: UInt32(lengths.count).littleEndian, toByteOffset: 4, as: UInt32.self)
        o.storeBytes(of: UInt64(n).littleEndian, toByteOffset: 8, as: UInt64.self)
        var p = Self.streamHeaderSize
        var first = 0
        for length in lengths {
            p += encodeSegment(raw.baseAddress! + first * size, count: length, elementType: elementType, into: o + p)
            first += length
            if p >= capacity { return nil }
        }
        precondition(first == n, "segments do not add up to the stream")
        out.copyMemory(from: o, byteCount: p)
        return p
    }

    /// How a float segment becomes latents.
    private enum FloatChoice { case detect, fixedPoint, bits }

    private func encodeSegment(_ values: UnsafeRawPointer, count n: Int, elementType: ChunkElementType,
                               into out: UnsafeMutableRawPointer) -> Int {
        guard elementType == .float32 || elementType == .float64 else {
            return encodeSegment(values, count: n, elementType: elementType, choice: .detect, into: out)
        }
        if let size = encodeSegment(values, count: n, elementType: elementType, choice: .detect, into: out) as Int?, size > 0 {
            return size
        }
        // No grid: a fixed-point grid (a power-of-two gain; the bits below it go to the adjustments,
        // and prediction works on values) or the bit patterns, whichever codes smaller.
        let fixed = encodeSegment(values, count: n, elementType: elementType, choice: .fixedPoint, into: out)
        alternative.reserve(Self.workingSize(elementCount: n))
        let bits = encodeSegment(values, count: n, elementType: elementType, choice: .bits, into: alternative.base)
        if bits < fixed {
            out.copyMemory(from: alternative.base, byteCount: bits)
            return bits
        }
        return fixed
    }

    /// Encodes one segment; with `.detect`, returns 0 for a float segment that shows no grid.
    private func encodeSegment(_ values: UnsafeRawPointer, count n: Int, elementType: ChunkElementType, choice: FloatChoice,
                               into out: UnsafeMutableRawPointer) -> Int {
        let v = latents.base, adj = adjustments.base
        var mode: UInt8 = 0
        var grid: (offset: Double, gain: Double)?
        var hasAdjustments = false
        switch elementType {
        case .int16:
            let x = values.assumingMemoryBound(to: Int16.self)
            for i in 0..<n { v[i] = Int64(Int16(littleEndian: x[i])) }
        case .int32:
            let x = values.assumingMemoryBound(to: Int32.self)
            for i in 0..<n { v[i] = Int64(Int32(littleEndian: x[i])) }
        case .float64, .float32:
            let float32 = elementType == .float32
            switch choice {
            case .detect:
                grid = findGrid(values, count: n, float32: float32)
                if grid == nil { return 0 }
            case .fixedPoint:
                var largest = 0.0
                for i in 0..<n {
                    let x = float32 ? Double(values.load(fromByteOffset: 4 * i, as: Float.self)) : values.load(fromByteOffset: 8 * i, as: Double.self)
                    if x.isFinite && abs(x) > largest { largest = abs(x) }
                }
                let exponent = largest > 0 ? Int(largest.exponent) : 0
                grid = (0, Double(sign: .plus, exponent: exponent - (float32 ? 23 : Self.fixedPointBits), significand: 1))
            case .bits:
                grid = nil
            }
            if let (offset, gain) = grid {
                mode = 1
                hasAdjustments = toGrid(values, count: n, float32: float32, offset: offset, gain: gain)
            } else {
                mode = 2
                if float32 {
                    let x = values.assumingMemoryBound(to: UInt32.self)
                    for i in 0..<n { v[i] = Self.ordered32(Int64(Int32(bitPattern: UInt32(littleEndian: x[i])))) }
                } else {
                    let x = values.assumingMemoryBound(to: UInt64.self)
                    for i in 0..<n { v[i] = Self.ordered(Int64(bitPattern: UInt64(littleEndian: x[i]))) }
                }
            }
        case .bytes:
            preconditionFailure("bytes are not coded")
        }
        let predictor = choosePredictor(v, count: n)
        if predictor.coefficients.isEmpty {
            Self.predict(v, count: n, order: predictor.order)
        } else {
            Self.predictLinear(v, count: n, coefficients: predictor.coefficients)
        }
        out.storeBytes(of: UInt32(n).littleEndian, toByteOffset: 0, as: UInt32.self)
        out.storeBytes(of: mode, toByteOffset: 4, as: UInt8.self)
        out.storeBytes(of: UInt8(predictor.coefficients.isEmpty ? predictor.order : 3), toByteOffset: 5, as: UInt8.self)
        out.storeBytes(of: UInt8(hasAdjustments ? 1 : 0), toByteOffset: 6, as: UInt8.self)
        out.storeBytes(of: UInt8(0), toByteOffset: 7, as: UInt8.self)
        var p = 8
        if let (offset, gain) = grid {
            out.storeBytes(of: offset.bitPattern.littleEndian, toByteOffset: 8, as: UInt64.self)
            out.storeBytes(of: gain.bitPattern.littleEndian, toByteOffset: 16, as: UInt64.self)
            p = 24
        }
        if !predictor.coefficients.isEmpty {
            out.storeBytes(of: UInt8(predictor.coefficients.count), toByteOffset: p, as: UInt8.self)
            out.storeBytes(of: UInt8(Self.linearShift), toByteOffset: p + 1, as: UInt8.self)
            p += 2
            for c in predictor.coefficients {
                out.storeBytes(of: UInt64(bitPattern: c).littleEndian, toByteOffset: p, as: UInt64.self)
                p += 8
            }
        }
        p += block(v, count: n, into: out + p)
        if hasAdjustments { p += block(adj, count: n, into: out + p) }
        return p
    }

    private func block(_ r: UnsafeMutablePointer<Int64>, count n: Int, into out: UnsafeMutableRawPointer) -> Int {
        let plan = LatentCoder.plan(r, count: n, histogram: histogram.base)
        if measureEntropy { entropyBits += Self.entropy(r, count: n) }
        return LatentCoder.encode(r, count: n, plan: plan, symbols: symbols.base, words: words.base, into: out)
    }

    /// Empirical order-0 entropy (bits) of `n` values.
    static func entropy(_ r: UnsafePointer<Int64>, count n: Int) -> Double {
        guard n > 0 else { return 0 }
        var sorted = Array(UnsafeBufferPointer(start: r, count: n))
        sorted.sort()
        var bits = 0.0, run = 1
        let total = Double(n)
        for i in 1...n {
            if i < n && sorted[i] == sorted[i - 1] { run += 1; continue }
            bits += Double(run) * log2(total / Double(run))
            run = 1
        }
        return bits
    }

    /// Order-preserving map of a float's bit pattern (sign-extended) to an integer; its own inverse.
    @inline(__always) static func ordered(_ bits: Int64) -> Int64 { bits >= 0 ? bits : bits ^ Int64.max }
    @inline(__always) static func ordered32(_ bits: Int64) -> Int64 { bits >= 0 ? bits : bits ^ Int64(Int32.max) }

    /// Replaces `v` by its residuals of the given order (0 none, 1 delta, 2 delta of delta), from 0.
    static func predict(_ v: UnsafeMutablePointer<Int64>, count n: Int, order: Int) {
        for _ in 0..<order {
            var i = n - 1
            while i > 0 { v[i] = v[i] &- v[i - 1]; i -= 1 }
        }
    }

    /// Undoes `predict`.
    static func integrate(_ v: UnsafeMutablePointer<Int64>, count n: Int, order: Int) {
        if order == 1 {
            var s: Int64 = 0
            for i in 0..<n { s = s &+ v[i]; v[i] = s }
        } else if order == 2 {
            var s: Int64 = 0, d: Int64 = 0
            for i in 0..<n { d = d &+ v[i]; s = s &+ d; v[i] = s }
        }
    }

    /// Fractional bits of the linear predictor's coefficients.
    static let linearShift = 20

    /// Residuals of the linear predictor `(Σ c[j] × v[i−1−j] + 2^(shift−1)) >> shift` (wrapping
    /// 64-bit arithmetic; missing history counts as 0), written in place from the end.
    static func predictLinear(_ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: [Int64]) {
        let p = c.count
        let half: Int64 = 1 << (Int64(linearShift) - 1)
        var i = n - 1
        while i >= 0 {
            var sum = half
            for j in 0..<min(p, i) { sum = sum &+ c[j] &* v[i - 1 - j] }
            v[i] = v[i] &- (sum >> Int64(linearShift))
            i -= 1
        }
    }

    /// Undoes `predictLinear` in place.
    static func integrateLinear(_ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>, order p: Int, shift: Int) {
        let half: Int64 = 1 << (Int64(shift) - 1)
        for i in 0..<min(p, n) {
            var sum = half
            for j in 0..<i { sum = sum &+ c[j] &* v[i - 1 - j] }
            v[i] = v[i] &+ (sum >> Int64(shift))
        }
        guard n > p else { return }
        if p == 2 {
            let c0 = c[0], c1 = c[1]
            for i in 2..<n { v[i] = v[i] &+ ((half &+ c0 &* v[i - 1] &+ c1 &* v[i - 2]) >> Int64(shift)) }
        } else if p == 4 {
            let c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3]
            for i in 4..<n {
                let sum = half &+ c0 &* v[i - 1] &+ c1 &* v[i - 2] &+ c2 &* v[i - 3] &+ c3 &* v[i - 4]
                v[i] = v[i] &+ (sum >> Int64(shift))
            }
        } else {
            for i in p..<n {
                var sum = half
                for j in 0..<p { sum = sum &+ c[j] &* v[i - 1 - j] }
                v[i] = v[i] &+ (sum >> Int64(shift))
            }
        }
    }

    /// Least-squares linear predictors of orders 2, 4 and 8 fitted on `x`, as fixed-point coefficients.
    static func fitLinear(_ x: UnsafePointer<Int64>, count m: Int) -> [[Int64]] {
        let maxOrder = 8
        guard m > 4 * maxOrder else { return [] }
        var mean = 0.0
        for i in 0..<m { mean += Double(x[i]) }
        mean /= Double(m)
        var r = [[Double]](repeating: [Double](repeating: 0, count: maxOrder), count: maxOrder)
        var b = [Double](repeating: 0, count: maxOrder)
        var lag = [Double](repeating: 0, count: maxOrder + 1)
        for i in maxOrder..<m {
            for j in 0...maxOrder { lag[j] = Double(x[i - j]) - mean }
            for j in 0..<maxOrder {
                b[j] += lag[0] * lag[j + 1]
                for k in j..<maxOrder { r[j][k] += lag[j + 1] * lag[k + 1] }
            }
        }
        for j in 0..<maxOrder { for k in 0..<j { r[j][k] = r[k][j] } }
        var result: [[Int64]] = []
        for order in [2, 4, 8] {
            var a = (0..<order).map { Array(r[$0][0..<order]) + [b[$0]] }
            let ridge = 1e-9 * (0..<order).map { a[$0][$0] }.reduce(0, +) / Double(order) + 1e-300
            for j in 0..<order { a[j][j] += ridge }
            // Gaussian elimination with partial pivoting.
            var ok = true
            for col in 0..<order {
                var pivot = col
                for row in col..<order where abs(a[row][col]) > abs(a[pivot][col]) { pivot = row }
                guard abs(a[pivot][col]) > 0 else { ok = false; break }
                a.swapAt(col, pivot)
                for row in (col + 1)..<order {
                    let f = a[row][col] / a[col][col]
                    for k in col...order { a[row][k] -= f * a[col][k] }
                }
            }
            guard ok else { continue }
            var coefficients = [Double](repeating: 0, count: order)
            for row in stride(from: order - 1, through: 0, by: -1) {
                var v = a[row][order]
                for k in (row + 1)..<order { v -= a[row][k] * coefficients[k] }
                coefficients[row] = v / a[row][row]
            }
            guard coefficients.allSatisfy({ $0.isFinite && abs($0) < 1024 }) else { continue }
            result.append(coefficients.map { Int64(($0 * Double(1 << linearShift)).rounded()) })
        }
        return result
    }

    /// The predictor whose residuals cost least on runs sampled over the segment: an order of
    /// differences (0 … 2) or linear coefficients.
    private func choosePredictor(_ v: UnsafePointer<Int64>, count n: Int) -> (order: Int, coefficients: [Int64]) {
        guard n >= 16 else { return (0, []) }
        let run = min(n, 1024), runs = min(4, n / run)
        var best: (order: Int, coefficients: [Int64]) = (0, []), bestBits = Double.infinity
        var sample = [Int64](repeating: 0, count: run * runs)
        var candidates: [(order: Int, coefficients: [Int64])] = [(0, []), (1, []), (2, [])]
        candidates += Self.fitLinear(v, count: min(n, 8192)).map { (0, $0) }
        for candidate in candidates {
            for j in 0..<runs {
                let start = (n - run) / max(1, runs - 1) * j
                for i in 0..<run { sample[j * run + i] = v[start + i] }
            }
            let skip = candidate.coefficients.isEmpty ? candidate.order : candidate.coefficients.count
            let bits: Double = sample.withUnsafeMutableBufferPointer { s in
                for j in 0..<runs {
                    if candidate.coefficients.isEmpty {
                        Self.predict(s.baseAddress! + j * run, count: run, order: candidate.order)
                    } else {
                        Self.predictLinear(s.baseAddress! + j * run, count: run, coefficients: candidate.coefficients)
                    }
                }
                // The first residuals of a run lack history: not representative.
                for j in 0..<runs { for i in 0..<skip { s[j * run + i] = s[j * run + skip] } }
                return LatentCoder.plan(s.baseAddress!, count: s.count, histogram: histogram.base).bits
                    + Double(candidate.coefficients.count * 64) * Double(s.count) / Double(n)
            }
            if bits < bestBits * 0.995 { best = candidate; bestBits = bits }
        }
        return best
    }

    // MARK: Grids

    /// Writes the counts `k` to `latents` and the bit differences from the grid to `adjustments`;
    /// returns whether any difference is not zero.
    private func toGrid(_ values: UnsafeRawPointer, count n: Int, float32: Bool, offset: Double, gain: Double) -> Bool {
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
            let x = values.assumingMemoryBound(to: UInt64.self)
            for i in 0..<n {
                let bits = UInt64(littleEndian: x[i])
                let k = Self.count(Double(bitPattern: bits), offset: offset, inverse: inverse)
                let y = offset + gain * Double(k)
                let d = Int64(bitPattern: bits &- y.bitPattern)
                v[i] = k
                adj[i] = d
                any |= d
            }
        }
        return any != 0
    }

    @inline(__always) static func count(_ x: Double, offset: Double, inverse: Double) -> Int64 {
        let q = ((x - offset) * inverse).rounded()
        return abs(q) <= 0x1p52 ? Int64(q) : 0
    }

    @inline(__always) private static func reproduces(_ x: Double, offset: Double, gain: Double, float32: Bool) -> Bool {
        let k = count(x, offset: offset, inverse: 1 / gain)
        let y = offset + gain * Double(k)
        return float32 ? Float(y).bitPattern == Float(x).bitPattern : y.bitPattern == x.bitPattern
    }

    /// An affine grid `offset + gain × k` that reproduces the segment's samples (most of them bit
    /// for bit), or nil when the samples show no grid.
    private func findGrid(_ values: UnsafeRawPointer, count n: Int, float32: Bool) -> (offset: Double, gain: Double)? {
        guard n >= 2 else { return nil }
        let m = min(n, 2048), stride = n / m
        var sample: [Double] = []
        sample.reserveCapacity(m)
        for j in 0..<m {
            let x = float32 ? Double(values.load(fromByteOffset: 4 * j * stride, as: Float.self))
                            : values.load(fromByteOffset: 8 * j * stride, as: Double.self)
            if x.isFinite { sample.append(x) }
        }
        guard sample.count >= 2 else { return nil }
        // A grid from an earlier segment that fits (nearly) every sampled value.
        let tests = Swift.stride(from: 0, to: sample.count, by: max(1, sample.count / 64)).map { sample[$0] }
        for known in knownGrids {
            if tests.filter({ Self.reproduces($0, offset: known.offset, gain: known.gain, float32: float32) }).count * 10 >= tests.count * 9 {
                return known
            }
        }
        let sorted = Array(Set(sample)).sorted()
        guard sorted.count >= 2 else { return nil }
        let maxAbs = max(abs(sorted.first!), abs(sorted.last!))
        let ulp = float32 ? Double(Float(maxAbs).ulp) : maxAbs.ulp
        let floor = 64 * ulp
        var differences: [Double] = []
        for i in 1..<sorted.count { differences.append(sorted[i] - sorted[i - 1]) }
        var g = differences.min()!
        guard g > floor else { return nil }
        // Tolerant Euclid over up to 256 differences: the GCD of values that are multiples of the
        // gain give or take a few ulps.
        for d in Swift.stride(from: 0, to: differences.count, by: max(1, differences.count / 256)).map({ differences[$0] }) {
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
        // Refine the gain over the whole span of values.
        let span = sorted.last! - sorted.first!
        let steps = (span / g).rounded()
        guard steps >= 1, steps < 0x1p40 else { return nil }
        let gain = span / steps
        // Most values must sit on the grid.
        var near = 0
        for x in sorted {
            let q = (x - sorted.first!) / gain
            if abs(q - q.rounded()) < 0.01 { near += 1 }
        }
        guard near * 10 >= sorted.count * 9 else { return nil }
        // The exact gain (a few ulps around the estimate) and the origin of k: candidates in order
        // of the smallest offset, kept when every test value is reproduced bit for bit.
        var gains = [gain]
        var up = gain, down = gain
        for _ in 0..<3 { up = up.nextUp; down = down.nextDown; gains += [up, down] }
        let first = sorted.first!
        let c0 = (first / gain).rounded()
        let probe = Array(tests.prefix(16))
        /// The offset for an origin: taken at the sampled value nearest to it, where `gain × k` is
        /// smallest, so that it is exact to about that value's ulp.
        func offset(_ approximate: Double, _ g: Double) -> Double {
            var lo = 0, hi = sorted.count - 1
            while lo < hi {
                let mid = (lo + hi) / 2
                if sorted[mid] < approximate { lo = mid + 1 } else { hi = mid }
            }
            let near = lo > 0 && abs(sorted[lo - 1] - approximate) < abs(sorted[lo] - approximate) ? sorted[lo - 1] : sorted[lo]
            return near - g * ((near - approximate) / g).rounded()
        }
        var best: (offset: Double, gain: Double, score: Int) = (first - gain * c0, gain, -1)
        search: for j in 0..<2049 {
            let c = c0 + Double(j % 2 == 0 ? j / 2 : -(j + 1) / 2)
            for g in gains {
                let o = offset(first - g * c, g)
                var score = 0, misses = 0
                for x in probe {
                    if Self.reproduces(x, offset: o, gain: g, float32: float32) { score += 1 } else { misses += 1; if misses > 3 { break } }
                }
                if score > best.score { best = (o, g, score) }
                if misses == 0 { break search }
            }
        }
        // Settle the offset's last bits: the candidates `x − gain × k` of the tested values, the
        // smallest |k| (the most exact) first.
        var offsets = [best.offset]
        let byCount = tests.map { ($0, Double(Self.count($0, offset: best.offset, inverse: 1 / best.gain))) }.sorted { abs($0.1) < abs($1.1) }
        for (x, k) in byCount.prefix(8) { offsets.append(x - best.gain * k) }
        // And the few ulps around the first (rounding in `x − gain × k` leaves it that close).
        var above = best.offset, below = best.offset
        for _ in 0..<16 { above = above.nextUp; below = below.nextDown; offsets += [above, below] }
        var chosen = (offset: best.offset, gain: best.gain), chosenScore = -1
        for offset in offsets {
            let score = tests.filter { Self.reproduces($0, offset: offset, gain: best.gain, float32: float32) }.count
            if score > chosenScore { chosen = (offset, best.gain); chosenScore = score }
        }
        if chosenScore * 10 >= tests.count * 9 {
            knownGrids.insert(chosen, at: 0)
            if knownGrids.count > 16 { knownGrids.removeLast() }
        }
        return chosen
    }

    // MARK: Decoding

    /// The element count a coded stream declares (nil when its header is malformed).
    static func elementCount(of stored: UnsafeRawBufferPointer, elementType: ChunkElementType) -> Int? {
        guard stored.count >= streamHeaderSize, stored[0] == version, stored[1] == elementType.rawValue,
              stored[2] == 0, stored[3] == 0 else { return nil }
        let n = UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        guard n <= UInt64(Int.max / 8) else { return nil }
        return Int(n)
    }

    /// Decodes a coded stream into `destination`, whose size must be the stream's element count × size.
    func decode(_ stored: UnsafeRawBufferPointer, elementType: ChunkElementType,
                into destination: UnsafeMutableRawBufferPointer) throws(NumericTransform.Failure) {
        guard elementType != .bytes, let n = Self.elementCount(of: stored, elementType: elementType) else { throw .storedSize }
        let size = elementType.size
        guard n * size == destination.count else { throw .storedSize }
        let segments = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        // Every segment holds at least one sample and at most maxSegment.
        guard segments <= n, n <= segments * Self.maxSegment else { throw .storedSize }
        latents.reserve(min(n, Self.maxSegment))
        adjustments.reserve(min(n, Self.maxSegment))
        var p = Self.streamHeaderSize
        var done = 0
        for _ in 0..<segments {
            guard stored.count - p >= 8 else { throw .storedSize }
            let count = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: p, as: UInt32.self)))
            let mode = stored[p + 4], predictor = Int(stored[p + 5]), flags = stored[p + 6]
            guard count >= 1, count <= Self.maxSegment, count <= n - done, predictor <= 3, flags <= 1, stored[p + 7] == 0 else {
                throw .storedSize
            }
            let isFloat = elementType == .float32 || elementType == .float64
            guard isFloat ? (mode == 1 || mode == 2) : mode == 0, flags == 0 || mode == 1 else { throw .invalidTransforms }
            p += 8
            var offset = 0.0, gain = 0.0
            if mode == 1 {
                guard stored.count - p >= 16 else { throw .storedSize }
                offset = Double(bitPattern: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: p, as: UInt64.self)))
                gain = Double(bitPattern: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: p + 8, as: UInt64.self)))
                p += 16
            }
            var order = 0, shift = 0
            if predictor == 3 {
                guard stored.count - p >= 2 else { throw .storedSize }
                order = Int(stored[p])
                shift = Int(stored[p + 1])
                guard order >= 1, order <= 8, shift >= 1, shift <= 62, stored.count - p - 2 >= 8 * order else { throw .storedSize }
                for j in 0..<order {
                    coefficients.base[j] = Int64(bitPattern: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: p + 2 + 8 * j, as: UInt64.self)))
                }
                p += 2 + 8 * order
            }
            let v = latents.base, adj = adjustments.base
            do {
                p += try LatentCoder.decode(UnsafeRawBufferPointer(rebasing: stored[p...]), count: count, tables: &tables, into: v)
                if flags == 1 {
                    p += try LatentCoder.decode(UnsafeRawBufferPointer(rebasing: stored[p...]), count: count, tables: &tables, into: adj)
                }
            } catch { throw .storedSize }
            if predictor == 3 {
                Self.integrateLinear(v, count: count, coefficients: coefficients.base, order: order, shift: shift)
            } else {
                Self.integrate(v, count: count, order: predictor)
            }
            let out = destination.baseAddress! + done * size
            switch (elementType, mode) {
            case (.int16, _):
                let d = out.assumingMemoryBound(to: Int16.self)
                for i in 0..<count { d[i] = Int16(truncatingIfNeeded: v[i]).littleEndian }
            case (.int32, _):
                let d = out.assumingMemoryBound(to: Int32.self)
                for i in 0..<count { d[i] = Int32(truncatingIfNeeded: v[i]).littleEndian }
            case (.float64, 1):
                let d = out.assumingMemoryBound(to: UInt64.self)
                if flags == 1 {
                    for i in 0..<count { d[i] = ((offset + gain * Double(v[i])).bitPattern &+ UInt64(bitPattern: adj[i])).littleEndian }
                } else {
                    for i in 0..<count { d[i] = (offset + gain * Double(v[i])).bitPattern.littleEndian }
                }
            case (.float32, 1):
                let d = out.assumingMemoryBound(to: UInt32.self)
                if flags == 1 {
                    for i in 0..<count {
                        d[i] = (Float(offset + gain * Double(v[i])).bitPattern &+ UInt32(truncatingIfNeeded: adj[i])).littleEndian
                    }
                } else {
                    for i in 0..<count { d[i] = Float(offset + gain * Double(v[i])).bitPattern.littleEndian }
                }
            case (.float64, _):
                let d = out.assumingMemoryBound(to: UInt64.self)
                for i in 0..<count { d[i] = UInt64(bitPattern: Self.ordered(v[i])).littleEndian }
            default:
                let d = out.assumingMemoryBound(to: UInt32.self)
                for i in 0..<count { d[i] = UInt32(truncatingIfNeeded: Self.ordered32(v[i])).littleEndian }
            }
            done += count
        }
        guard done == n, p == stored.count else { throw .storedSize }
    }
}

/// A growable scratch array of trivial elements (no initialisation; contents are the caller's).
final class Scratch<T> {
    private(set) var base: UnsafeMutablePointer<T> = .allocate(capacity: 1)
    private var capacity = 1

    deinit { base.deallocate() }

    func reserve(_ count: Int) {
        guard count > capacity else { return }
        base.deallocate()
        capacity = max(count, capacity * 3 / 2)
        base = .allocate(capacity: capacity)
    }
}
