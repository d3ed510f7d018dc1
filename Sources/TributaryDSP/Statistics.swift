/// Summary statistics of one channel, computed by `StatisticsAccumulator`.
public struct Statistics: Sendable, Equatable {
    /// Number of samples.
    public var count: Int
    /// Smallest sample (the negative peak); NaN when the data holds a NaN or is empty.
    public var min: Double
    /// Largest sample (the positive peak); NaN when the data holds a NaN or is empty.
    public var max: Double
    /// Arithmetic mean.
    public var mean: Double
    /// Population variance (divides by n; numpy's `var` default).
    public var variance: Double
    /// Sample variance (divides by n - 1); NaN for fewer than two samples.
    public var sampleVariance: Double
    /// Root mean square, sqrt(mean^2 + population variance).
    public var rms: Double

    /// Population standard deviation (numpy's `std` default, ddof = 0).
    public var standardDeviation: Double { variance.squareRoot() }
    /// Sample standard deviation (ddof = 1).
    public var sampleStandardDeviation: Double { sampleVariance.squareRoot() }
    /// The positive peak (= max).
    public var positivePeak: Double { max }
    /// The negative peak (= min).
    public var negativePeak: Double { min }
    /// max - min.
    public var peakToPeak: Double { max - min }
}

/// Streaming, mergeable statistics of one channel: count, min, max, mean and the sum of squared
/// deviations (M2), from which variance, standard deviation and RMS follow.
///
/// Data is consumed in L1-sized blocks: a SIMD pass gives the block's min, max and sum, a second
/// SIMD pass over the still-cached block gives the squared deviations from the block's own mean,
/// and blocks are merged with Chan et al.'s pairwise formula. Memory is read once, and the result
/// is as stable as the two-pass algorithm. Merging two accumulators is exact in the algebraic sense
/// (the same formula), so chunks can be processed in parallel or over batches and combined.
public struct StatisticsAccumulator: Sendable, Equatable {
    /// Samples seen.
    public private(set) var count: Int = 0
    /// Running mean.
    public private(set) var mean: Double = 0
    /// Sum of squared deviations from the mean.
    public private(set) var m2: Double = 0
    /// Smallest sample so far (+inf when empty).
    public private(set) var minimum: Double = .infinity
    /// Largest sample so far (-inf when empty).
    public private(set) var maximum: Double = -.infinity
    /// True once a NaN was seen (min/max then report NaN, like numpy).
    public private(set) var sawNaN = false

    /// Samples per block: 2048 doubles = 16 KiB, half of a 32 KiB L1 data cache.
    static let blockSize = 2048

    public init() {}

    /// Merges the statistics of another chunk into these (Chan et al.).
    public mutating func merge(_ other: StatisticsAccumulator) {
        merge(count: other.count, mean: other.mean, m2: other.m2, min: other.minimum, max: other.maximum)
        sawNaN = sawNaN || other.sawNaN
    }

    @inline(__always)
    mutating func merge(count nb: Int, mean mb: Double, m2 m2b: Double, min lo: Double, max hi: Double) {
        guard nb > 0 else { return }
        if count == 0 {
            count = nb; mean = mb; m2 = m2b
        } else {
            let na = Double(count), nbd = Double(nb)
            let n = na + nbd
            let delta = mb - mean
            mean += delta * (nbd / n)
            m2 += m2b + delta * delta * (na * nbd / n)
            count += nb
        }
        if lo < minimum { minimum = lo }
        if hi > maximum { maximum = hi }
    }

    /// Adds samples.
    public mutating func add(_ values: UnsafeBufferPointer<Double>) {
        guard var p = values.baseAddress else { return }
        var remaining = values.count
        while remaining > 0 {
            let n = Swift.min(remaining, Self.blockSize)
            addBlock(p, n)
            p += n
            remaining -= n
        }
    }

    /// Adds samples.
    public mutating func add(_ values: [Double]) {
        values.withUnsafeBufferPointer { add($0) }
    }

    /// Adds float32 samples (accumulated in double precision).
    public mutating func add(_ values: UnsafeBufferPointer<Float>) {
        addConverted(values) { Double($0) }
    }

    /// Adds int16 samples scaled by `scale` (1 gives the raw counts).
    public mutating func add(_ values: UnsafeBufferPointer<Int16>, scale: Double = 1) {
        addConverted(values) { Double($0) * scale }
    }

    private mutating func addConverted<S>(_ values: UnsafeBufferPointer<S>, _ convert: (S) -> Double) {
        // Convert one block at a time into a stack-sized buffer so that nothing is allocated per call
        // beyond one block of scratch.
        withUnsafeTemporaryAllocation(of: Double.self, capacity: Self.blockSize) { block in
            var start = 0
            while start < values.count {
                let n = Swift.min(values.count - start, Self.blockSize)
                for i in 0..<n { block[i] = convert(values[start + i]) }
                addBlock(block.baseAddress!, n)
                start += n
            }
        }
    }

    /// One block: SIMD min/max/sum, then squared deviations from the block mean while cached.
    @inline(__always)
    mutating func addBlock(_ p: UnsafePointer<Double>, _ n: Int) {
        let raw = UnsafeRawPointer(p)
        // Eight samples per step as four SSE2-sized vectors, combined pairwise before they meet the
        // accumulators: two independent chains each for sum, min and max keep the adders busy
        // without needing more vector registers than baseline x86-64 has (no spills).
        var s0 = SIMD2<Double>(), s1 = SIMD2<Double>()
        var lo0 = SIMD2<Double>(repeating: .infinity), lo1 = lo0
        var hi0 = SIMD2<Double>(repeating: -.infinity), hi1 = hi0
        let vectorEnd = n & ~7
        var i = 0
        while i < vectorEnd {
            let a0 = raw.loadUnaligned(fromByteOffset: i * 8, as: SIMD2<Double>.self)
            let a1 = raw.loadUnaligned(fromByteOffset: i * 8 + 16, as: SIMD2<Double>.self)
            let a2 = raw.loadUnaligned(fromByteOffset: i * 8 + 32, as: SIMD2<Double>.self)
            let a3 = raw.loadUnaligned(fromByteOffset: i * 8 + 48, as: SIMD2<Double>.self)
            s0 += a0 + a1
            s1 += a2 + a3
            // x.replacing(with: y, where: y .< x) is minpd(y, x): one instruction on SSE2.
            let m01 = a0.replacing(with: a1, where: a1 .< a0), m23 = a2.replacing(with: a3, where: a3 .< a2)
            let x01 = a0.replacing(with: a1, where: a1 .> a0), x23 = a2.replacing(with: a3, where: a3 .> a2)
            lo0 = lo0.replacing(with: m01, where: m01 .< lo0)
            lo1 = lo1.replacing(with: m23, where: m23 .< lo1)
            hi0 = hi0.replacing(with: x01, where: x01 .> hi0)
            hi1 = hi1.replacing(with: x23, where: x23 .> hi1)
            i += 8
        }
        var sum = (s0 + s1).sum()
        let loV = lo0.replacing(with: lo1, where: lo1 .< lo0)
        let hiV = hi0.replacing(with: hi1, where: hi1 .> hi0)
        var lo = Swift.min(loV[0], loV[1])
        var hi = Swift.max(hiV[0], hiV[1])
        while i < n {
            let x = p[i]
            sum += x
            if x < lo { lo = x }
            if x > hi { hi = x }
            i += 1
        }
        let blockMean = sum / Double(n)
        let m = SIMD4<Double>(repeating: blockMean)
        var q0 = SIMD4<Double>(), q1 = SIMD4<Double>()
        i = 0
        while i < vectorEnd {
            let a = raw.loadUnaligned(fromByteOffset: i * 8, as: SIMD4<Double>.self) - m
            let b = raw.loadUnaligned(fromByteOffset: i * 8 + 32, as: SIMD4<Double>.self) - m
            q0 += a * a; q1 += b * b
            i += 8
        }
        var sq = (q0 + q1).sum()
        while i < n {
            let d = p[i] - blockMean
            sq += d * d
            i += 1
        }
        // No correction term for the rounding of blockMean: an error e in the mean adds only n e^2
        // to M2 (the cross term vanishes), i.e. a relative (e / std)^2, below 1e-14 even for an
        // offset 1e9 times the spread; leaving it out saves a quarter of the second pass.
        if sum.isNaN { sawNaN = true }
        merge(count: n, mean: blockMean, m2: sq, min: lo, max: hi)
    }

    /// The statistics of everything added and merged so far.
    public var statistics: Statistics {
        let n = Double(count)
        let variance = count > 0 ? m2 / n : .nan
        let nan = sawNaN || count == 0
        return Statistics(
            count: count,
            min: nan ? .nan : minimum,
            max: nan ? .nan : maximum,
            mean: count > 0 ? mean : .nan,
            variance: sawNaN ? .nan : variance,
            sampleVariance: count > 1 && !sawNaN ? m2 / (n - 1) : .nan,
            rms: count > 0 && !sawNaN ? (mean * mean + variance).squareRoot() : .nan)
    }
}

extension Statistics {
    /// The statistics of one buffer (one pass).
    public init(_ values: UnsafeBufferPointer<Double>) {
        var accumulator = StatisticsAccumulator()
        accumulator.add(values)
        self = accumulator.statistics
    }

    /// The statistics of an array (one pass).
    public init(_ values: [Double]) {
        self = values.withUnsafeBufferPointer { Statistics($0) }
    }
}

/// Streaming statistics for several channels fed channel-major blocks of any length.
public struct MultichannelStatistics: Sendable {
    /// One accumulator per channel.
    public private(set) var channels: [StatisticsAccumulator]

    /// Creates accumulators for `channelCount` channels.
    public init(channelCount: Int) {
        channels = Array(repeating: StatisticsAccumulator(), count: channelCount)
    }

    /// Adds a channel-major block: `samplesPerChannel` samples of channel 0, then of channel 1, ...
    public mutating func add(block: UnsafeBufferPointer<Double>, samplesPerChannel: Int) {
        precondition(block.count >= samplesPerChannel * channels.count, "block shorter than channels x samples")
        for c in channels.indices {
            channels[c].add(UnsafeBufferPointer(rebasing: block[(c * samplesPerChannel)..<((c + 1) * samplesPerChannel)]))
        }
    }

    /// Merges another set of accumulators over the same channels.
    public mutating func merge(_ other: MultichannelStatistics) {
        precondition(other.channels.count == channels.count, "merging statistics of different channel counts")
        for c in channels.indices { channels[c].merge(other.channels[c]) }
    }
}
