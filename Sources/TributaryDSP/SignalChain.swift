import Foundation

/// What `tributary process` does to each channel of a stream, in this order: an IIR filter
/// (second-order sections, sosfilt), a notch (iirnotch, lfilter), then decimate by q
/// (zero_phase=False: decimate's Chebyshev I anti-aliasing filter, every q-th sample) or
/// resample_poly by up / down (padtype 'constant'; `finish` gives its last outputs). Each stage's
/// state carries from one block to the next, so a stream processed in blocks equals its stages
/// applied in turn to the whole stream (scipy's sosfilt, lfilter, decimate), to the last bit.
public struct SignalChain: Sendable {
    public let channels: Int
    private var filter: SOSStream?
    private var notch: TransferStream?
    private var decimator: DecimatorStream?
    private var resampler: ResamplerStream?
    /// Samples of each channel processed since the start.
    public private(set) var position: [Int]

    /// A chain at rest for `channels` channels; nil stages are left out.
    public init(
        filter: SecondOrderSections?, notch: TransferFunction?, decimate q: Int?, resample: (up: Int, down: Int)? = nil, channels: Int
    ) throws(FilterError) {
        guard q == nil || resample == nil else { throw FilterError("decimate and resample exclude each other") }
        guard channels >= 1, channels <= 1 << 20 else { throw FilterError("channels must be from 1 to \(1 << 20), not \(channels)") }
        self.channels = channels
        self.filter = try filter.map { s throws(FilterError) in try SOSStream(sections: s, channels: channels) }
        self.notch = try notch.map { f throws(FilterError) in try TransferStream(function: f, channels: channels) }
        self.decimator = try q.map { q throws(FilterError) in try DecimatorStream(q: q, channels: channels) }
        self.resampler = try resample.map { r throws(FilterError) in try ResamplerStream(up: r.up, down: r.down, channels: channels) }
        position = [Int](repeating: 0, count: channels)
    }

    /// The decimation factor (1 without decimation).
    public var q: Int { decimator?.q ?? 1 }

    /// The index, within the next block of `channel`, of the first sample that gives an output
    /// (the block's outputs are that sample's and every q-th after it); it may lie past the block.
    public func firstKept(channel: Int = 0) -> Int { (q - position[channel] % q) % q }

    /// Processes the next block of `channel`, returning its outputs (⌈…⌉ of the block's length / q).
    public mutating func process(_ input: [Double], channel: Int = 0) -> [Double] {
        precondition(channel >= 0 && channel < channels)
        var x = input
        if filter != nil { x = filter!.filter(x, channel: channel) }
        if notch != nil { x = notch!.filter(x, channel: channel) }
        position[channel] += input.count
        if decimator != nil { return decimator!.process(x, channel: channel) }
        if resampler != nil { return resampler!.process(x, channel: channel) }
        return x
    }

    /// True when outputs trail the input (resampling) and `finish` may give more.
    public var trails: Bool { resampler != nil }

    /// The outputs of `channel` given so far.
    public func produced(channel: Int = 0) -> Int { resampler?.produced(channel: channel) ?? 0 }

    /// The last outputs of `channel` at the end of its stream (resampling; none otherwise).
    public mutating func finish(channel: Int = 0) -> [Double] {
        resampler == nil ? [] : resampler!.finish(channel: channel)
    }
}
