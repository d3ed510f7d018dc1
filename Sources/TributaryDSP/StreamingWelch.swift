/// A Welch accumulator fed channel-major blocks of any length: the same segments as batch Welch over
/// the concatenated stream, with memory bounded by one segment per channel (mean averaging only,
/// since a median needs every periodogram).
public final class StreamingWelch {
    /// The parameters (`average` must be `.mean`).
    public let configuration: WelchConfiguration
    /// Sampling rate in Hz.
    public let sampleRate: Double
    /// Channels per block.
    public let channelCount: Int
    let core: SegmentPeriodogram<Double>
    let step: Int
    /// Per channel: samples waiting for the next segment (at most segmentLength).
    private var pending: [Double]
    private var pendingCount: Int = 0
    private var sums: [Double]
    /// Segments accumulated so far (the same for every channel).
    public private(set) var segments: Int = 0
    /// Samples per channel consumed so far.
    public private(set) var samplesPerChannel: Int = 0

    /// Creates an accumulator.
    /// - Throws: `SpectralParameterError` for median averaging, a bad segment geometry or sample rate.
    public init(configuration: WelchConfiguration, sampleRate: Double, channelCount: Int) throws {
        guard configuration.average == .mean else {
            throw SpectralParameterError("average", "streaming Welch supports mean averaging only (a median needs every segment)")
        }
        guard sampleRate > 0, sampleRate.isFinite else { throw SpectralParameterError("sample rate", "must be positive and finite") }
        guard channelCount > 0 else { throw SpectralParameterError("channels", "must be at least 1") }
        // The geometry of a signal at least one segment long.
        let g = try WelchGeometry(configuration: configuration, signalLength: Swift.max(configuration.segmentLength, 1))
        self.configuration = configuration
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        core = try SegmentPeriodogram<Double>(
            segmentLength: g.segmentLength, fftLength: g.fftLength,
            window: configuration.window, detrend: configuration.detrend, rigor: configuration.rigor)
        step = g.step
        pending = [Double](repeating: 0, count: g.segmentLength * channelCount)
        sums = [Double](repeating: 0, count: core.binCount * channelCount)
    }

    /// Consumes a channel-major block (`samplesPerChannel` samples of channel 0, then channel 1, ...).
    /// Allocates nothing. Segments that lie wholly inside the block are transformed where they are;
    /// only a segment that straddles blocks is assembled in `pending`, and the tail of the block that
    /// the next segment needs is kept there.
    public func add(block: UnsafeBufferPointer<Double>, samplesPerChannel n: Int) {
        precondition(block.count >= n * channelCount, "block shorter than channels x samples")
        guard n > 0 else { return }
        let L = core.segmentLength, bins = core.binCount
        let x = block.baseAddress!
        pending.withUnsafeMutableBufferPointer { p in
            sums.withUnsafeMutableBufferPointer { s in
                let p = p.baseAddress!, s = s.baseAddress!
                // `pending` holds the pendingCount stream samples from the next segment's start; `used`
                // samples of the block have been appended to it.
                var used = 0
                while pendingCount > used {
                    let take = Swift.min(L - pendingCount, n - used)
                    for c in 0..<channelCount {
                        (p + c * L + pendingCount).update(from: x + c * n + used, count: take)
                    }
                    pendingCount += take
                    used += take
                    guard pendingCount == L else { return }  // the block ended inside this segment
                    for c in 0..<channelCount { accumulate(p + c * L, into: s + c * bins) }
                    segments += 1
                    // Keep the overlap for the next segment.
                    pendingCount = L - step
                    for c in 0..<channelCount {
                        let row = p + c * L
                        row.update(from: row + step, count: pendingCount)
                    }
                }
                // The next segment starts inside the block (the pending samples, if any, are the block's
                // samples before `used`): transform in place, then keep the tail.
                var start = used - pendingCount
                while start + L <= n {
                    for c in 0..<channelCount { accumulate(x + c * n + start, into: s + c * bins) }
                    segments += 1
                    start += step
                }
                pendingCount = n - start
                for c in 0..<channelCount {
                    (p + c * L).update(from: x + c * n + start, count: pendingCount)
                }
            }
        }
        samplesPerChannel += n
    }

    @inline(__always)
    private func accumulate(_ segment: UnsafePointer<Double>, into sums: UnsafeMutablePointer<Double>) {
        core.transform(segment)
        core.accumulatePower(into: sums)
    }

    /// The estimate of channel `channel` so far (nil before the first complete segment).
    public func estimate(channel: Int) -> PowerSpectralDensity? {
        guard segments > 0 else { return nil }
        let bins = core.binCount
        let df = sampleRate / Double(core.fftLength)
        let inverse = 1 / Double(segments)
        let values = (0..<bins).map { k in
            sums[channel * bins + k] * inverse * core.scale(bin: k, sampleRate: sampleRate, scaling: configuration.scaling)
        }
        return PowerSpectralDensity(frequencies: (0..<bins).map { Double($0) * df }, values: values, segments: segments)
    }

    /// Starts a new average at this point of the stream: the segments so far are forgotten, the samples
    /// the next segment needs are kept (so the segments of the stream stay those of batch Welch).
    public func restartAverage() {
        segments = 0
        sums.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
    }

    /// Forgets everything consumed (keeps plans and buffers).
    public func reset() {
        pendingCount = 0
        segments = 0
        samplesPerChannel = 0
        sums.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
    }
}
