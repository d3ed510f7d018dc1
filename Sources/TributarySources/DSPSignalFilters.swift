import TributaryDSP
import TributaryTransport
import TributaryWire

/// The publisher's signal filters (docs/PROTOCOL.md §6.2) made of TributaryDSP: the same stages,
/// designs and segment rules as `tributary process --filter butter:ORDER:lowpass:HZ --decimate Q`
/// (sosfilt, then decimate with zero_phase=False), so that a recording of a filtered subscription
/// equals `process` of the full-rate recording. Injected through `PublisherConfiguration.signalFilters`.
public struct DSPSignalFilters: SignalFilterFactory {
    public init() {}

    public func makeTransform(_ request: SignalFilterRequest, configuration: Configuration) throws(SignalFilterRefusal)
        -> any SignalFrameTransform
    {
        let transform = DSPSignalTransform(request)
        try transform.reconfigure(configuration)
        return transform
    }
}

/// One source's low-pass and decimation in one session. Its buffers are kept from frame to frame:
/// a frame costs the output frame's buffer and nothing else once they have grown to the frames' size.
final class DSPSignalTransform: SignalFrameTransform {
    let request: SignalFilterRequest
    /// The source's configuration in force, and its designs for the rate of its channels.
    private var configured: [UInt32: Double] = [:]
    private var lowpass: SOSStream?
    private var decimator: DecimatorStream?
    /// The segment: its rate, channels, the input sample that continues it, the next output number,
    /// the samples of each channel processed in it.
    private var started = false
    private var rate = 0.0
    private var indexes: [UInt32] = []
    private var nextSample: UInt64 = 0
    private var nextOutput: UInt64 = 0
    private var position = 0
    private var scratch: [Double] = []
    private var outputs: [Double] = []

    init(_ request: SignalFilterRequest) { self.request = request }

    var q: Int { request.decimate == 0 ? 1 : Int(request.decimate) }

    /// Operations per input sample of one channel: 5 multiply-adds per second-order section (the
    /// low-pass's and decimate's IIR filter), or decimate's FIR taps once every q samples.
    var operationsPerSample: Double {
        var ops = 0.0
        if request.lowpassOrder != 0 { ops += 5 * Double((Int(request.lowpassOrder) + 1) / 2) }
        if request.decimate != 0 {
            let q = Int(request.decimate), n = Int(request.decimationOrder)
            switch request.decimationKind {
            case .iir: ops += 5 * Double(((n == 0 ? 8 : n) + 1) / 2)
            case .fir: ops += Double((n == 0 ? 20 * q : n) + 1) / Double(q)
            }
        }
        return ops
    }

    func cost(_ configuration: Configuration) -> Double {
        operationsPerSample * configuration.channels.reduce(0) { $0 + max($1.samplingRate, 0) }
    }

    func announced(_ configuration: Configuration) -> Configuration {
        var announced = configuration
        for i in announced.channels.indices { announced.channels[i].samplingRate *= request.rateFactor }
        return announced
    }

    func reconfigure(_ configuration: Configuration) throws(SignalFilterRefusal) {
        let rates = Set(configuration.channels.map(\.samplingRate))
        guard rates.count == 1, let rate = rates.first, rate > 0, rate.isFinite else {
            throw SignalFilterRefusal(
                rates.isEmpty
                    ? "the source has no analog channel" : "the source's channels have no single sampling rate (\(rates.sorted()))")
        }
        if request.lowpassOrder != 0, !(request.lowpassCutoff < rate / 2) {
            throw SignalFilterRefusal("the low-pass cutoff \(request.lowpassCutoff) Hz is not below half the rate, \(rate / 2) Hz")
        }
        do throws(FilterError) { _ = try design(rate: rate, channels: 1) } catch { throw SignalFilterRefusal("\(error)") }
        configured = Dictionary(configuration.channels.map { ($0.index, $0.samplingRate) }, uniquingKeysWith: { a, _ in a })
    }

    /// The stages at rest for `channels` channels at `rate` (the designs of `process`).
    private func design(rate: Double, channels: Int) throws(FilterError) -> (SOSStream?, DecimatorStream?) {
        var sos: SOSStream?
        if request.lowpassOrder != 0 {
            let sections: SecondOrderSections
            do {
                sections = try FilterDesign.iirSOS(
                    order: Int(request.lowpassOrder), frequencies: [request.lowpassCutoff], band: .lowpass, family: .butterworth, fs: rate)
            } catch { throw FilterError("low-pass \(request.lowpassCutoff) Hz at \(rate) Hz: \(error)") }
            sos = try SOSStream(sections: sections, channels: channels)
        }
        var decimator: DecimatorStream?
        if request.decimate != 0 {
            decimator = try DecimatorStream(
                q: Int(request.decimate), order: request.decimationOrder == 0 ? nil : Int(request.decimationOrder),
                filter: request.decimationKind == .iir ? .iir : .fir, channels: channels)
        }
        return (sos, decimator)
    }

    /// The one rate the configuration gives the frame's channels, or nil (as `process` requires).
    private func rate(of view: AnalogView) -> Double? {
        var found: Double?
        for c in 0..<view.channelCount {
            guard let r = configured[view.channelIndex(c)], r > 0, r.isFinite, found == nil || found == r else { return nil }
            found = r
        }
        return found
    }

    private func continues(_ view: AnalogView, rate: Double) -> Bool {
        guard started, view.firstSample == nextSample, rate == self.rate, view.channelCount == indexes.count else { return false }
        for c in 0..<indexes.count where view.channelIndex(c) != indexes[c] { return false }
        return true
    }

    func process(_ frame: Frame, _ view: AnalogView, emit: (Frame) -> Void) {
        // Channels without one known rate cannot be filtered: such a frame is not sent (process stops there).
        guard view.channelCount > 0, let rate = rate(of: view) else { return }
        if !continues(view, rate: rate) {
            // A new segment, every filter at rest; its output numbering leaves a hole after the last one.
            guard let (sos, decimator) = try? design(rate: rate, channels: view.channelCount) else { return }
            let first = UInt64(min((Double(view.firstSample) * request.rateFactor).rounded(.up), Double(UInt64.max >> 1)))
            nextOutput = started && first <= nextOutput ? nextOutput &+ 1 : first
            (lowpass, self.decimator) = (sos, decimator)
            indexes = view.channelIndexes
            self.rate = rate
            position = 0
            started = true
        }
        let n = view.sampleCount
        nextSample = view.firstSample &+ UInt64(n)
        let offset = (q - position % q) % q
        position += n
        let count = decimator?.outputCount(n, channel: 0) ?? n
        if scratch.count < n { scratch = [Double](repeating: 0, count: n) }
        if outputs.count < count * indexes.count { outputs = [Double](repeating: 0, count: count * indexes.count) }
        for c in 0..<indexes.count { filter(view, channel: c, count: count) }
        guard count > 0 else { return }
        var header = frame.header
        // The time of the first kept sample, as `process` gives it.
        header.timestampNs = header.timestampNs.addingSaturated(Int64(saturating: (Double(offset) * 1e9 / rate).rounded()) ?? 0)
        let layout = AnalogLayout(channelCount: indexes.count, sampleCount: count, format: .float64)
        let out = Frame.analog(header: header, layout: layout, firstSample: nextOutput) { writer in
            outputs.withUnsafeBytes { all in
                for c in 0..<indexes.count {
                    writer.setChannelIndex(c, indexes[c])
                    writer.samples(channel: c).copyMemory(
                        from: UnsafeRawBufferPointer(rebasing: all[(c * count * 8)..<((c + 1) * count * 8)]))
                }
            }
        }
        nextOutput = nextOutput &+ UInt64(count)
        emit(out)
    }

    /// One channel of the frame as Double (int16 counts scaled, as `AnalogView.values`), low-passed,
    /// decimated into its row of `outputs`.
    private func filter(_ view: AnalogView, channel c: Int, count: Int) {
        let n = view.sampleCount
        scratch.withUnsafeMutableBufferPointer { x in
            view.copyValues(channel: c, into: x)
            let block = UnsafeMutableBufferPointer(rebasing: x[0..<n])
            if lowpass != nil { lowpass!.filter(UnsafeBufferPointer(block), channel: c, into: block) }
            outputs.withUnsafeMutableBufferPointer { o in
                let row = UnsafeMutableBufferPointer(rebasing: o[(c * count)..<((c + 1) * count)])
                if decimator != nil {
                    decimator!.process(UnsafeBufferPointer(block), channel: c, into: row)
                } else {
                    for i in 0..<count { row[i] = block[i] }
                }
            }
        }
    }
}
