import Foundation
import Synchronization
import TributaryTransport
import TributaryWire

/// Callback latencies counted in fixed bins, so that recording one costs no allocation whatever the
/// rate or the duration: 1 µs bins up to 10 ms, 100 µs bins up to 1 s, one bin above (its maximum kept).
struct LatencyHistogram: Sendable {
    static let fineBins = 10_000  // [0, 10 ms) in 1 µs
    static let coarseBins = 9_900  // [10 ms, 1 s) in 100 µs
    private(set) var bins = [UInt32](repeating: 0, count: fineBins + coarseBins + 1)
    private(set) var count: UInt64 = 0
    /// Latencies below zero (a publisher clock ahead of this one, across machines); counted in bin 0.
    private(set) var negative: UInt64 = 0
    private(set) var maxNs: Int64 = 0

    mutating func add(_ ns: Int64) {
        count += 1
        if ns < 0 { negative += 1 }
        if ns > maxNs { maxNs = ns }
        let us = max(0, ns / 1_000)
        let index =
            us < Int64(Self.fineBins)
            ? Int(us)
            : us < 1_000_000 ? Self.fineBins + Int((us - Int64(Self.fineBins)) / 100) : bins.count - 1
        bins[index] &+= 1
    }

    mutating func merge(_ other: LatencyHistogram) {
        for i in bins.indices { bins[i] &+= other.bins[i] }
        count += other.count
        negative += other.negative
        maxNs = max(maxNs, other.maxNs)
    }

    /// The latency (ns) below which a fraction `q` of the recorded ones lie: the upper edge of its bin
    /// (exact to 1 µs below 10 ms, to 100 µs below 1 s; the maximum above). Nil when nothing was recorded.
    func quantile(_ q: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = UInt64((q * Double(count)).rounded(.up))
        var seen: UInt64 = 0
        for (i, n) in bins.enumerated() {
            seen += UInt64(n)
            if seen >= max(rank, 1) {
                if i < Self.fineBins { return Double(i + 1) * 1_000 }
                if i < bins.count - 1 { return Double(Self.fineBins * 1_000 + (i - Self.fineBins + 1) * 100_000) }
                return Double(maxNs)
            }
        }
        return Double(maxNs)
    }
}

/// What one subscriber saw during the measurement window of a step.
struct BenchCounts: Sendable {
    var frames: UInt64 = 0
    var bytes: UInt64 = 0
    /// Frames the publisher announced as dropped (gap notices) for this subscriber.
    var announcedMissing: UInt64 = 0
    var latency = LatencyHistogram()
    /// Frames whose latency was not measured: replayed frames keep their recorded timestamps.
    var replayedFrames: UInt64 = 0
    /// Sample bytes of the last frame received (channels x samples x sample size).
    var sampleBytesPerFrame = 0
}

/// An observer that counts analog frames, their bytes and their callback latency inside a time window
/// (monotonic clock), and the frames gap notices announce. Callback latency is the wall-clock time of
/// the callback minus the wall-clock time the frame's last sample was taken: the header timestamp (its
/// first sample) plus the frame's duration (samples / the source's sampling rate from its configuration).
final class BenchObserver: Observer, Sendable {
    private struct State {
        var counts = BenchCounts()
        var samplingRates: [UInt32: Double] = [:]
        var windowStart: UInt64 = .max
        var windowEnd: UInt64 = .max
        var firstError: ErrorReport?
        /// Monotonic time of the last frame counted, and of a normal close by the publisher (a replay's end).
        var firstCounted: UInt64 = 0
        var lastCounted: UInt64 = 0
        var closedAt: UInt64?
    }
    private let state = Mutex(State())

    /// Counts only what arrives in [start, end) (monotonic nanoseconds).
    func setWindow(start: UInt64, end: UInt64) {
        state.withLock {
            $0.windowStart = start; $0.windowEnd = end
        }
    }

    var counts: BenchCounts { state.withLock { $0.counts } }
    var firstError: ErrorReport? { state.withLock { $0.firstError } }
    var firstCounted: UInt64 { state.withLock { $0.firstCounted } }
    var lastCounted: UInt64 { state.withLock { $0.lastCounted } }
    var closedAt: UInt64? { state.withLock { $0.closedAt } }

    func didReceiveConfiguration(_ configuration: Configuration, header: FrameHeader) {
        let rate = configuration.channels.first?.samplingRate ?? 0
        state.withLock { $0.samplingRates[header.sourceID] = rate }
    }

    func didReceiveError(_ error: ErrorReport) {
        let now = BenchClock.monotonic()
        state.withLock { s in
            if error.isNormalCloseByPublisher {
                if s.closedAt == nil { s.closedAt = now }
            } else if s.firstError == nil {
                s.firstError = error
            }
        }
    }

    func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) {
        let wall = wallClockNanoseconds()
        let now = BenchClock.monotonic()
        let bytes = data.channelCount * data.sampleCount * data.format.size
        state.withLock { s in
            guard now >= s.windowStart && now < s.windowEnd else { return }
            s.counts.frames += 1
            s.counts.bytes += UInt64(bytes)
            if s.counts.frames == 1 { s.firstCounted = now }
            s.lastCounted = now
            s.counts.sampleBytesPerFrame = bytes
            if header.flags.contains(.replayed) {
                s.counts.replayedFrames += 1
            } else {
                let rate = s.samplingRates[header.sourceID] ?? 0
                // Saturating: the rate and the timestamp are the publisher's.
                let duration = rate > 0 ? Int64(saturating: Double(data.sampleCount) / rate * 1e9) ?? 0 : 0
                s.counts.latency.add(wall.subtractingSaturated(header.timestampNs.addingSaturated(duration)))
            }
        }
    }

    func didReceiveGap(_ gap: Gap, header: FrameHeader) {
        let now = BenchClock.monotonic()
        state.withLock { s in
            guard now >= s.windowStart && now < s.windowEnd else { return }
            s.counts.announcedMissing = s.counts.announcedMissing.addingSaturated(gap.missingCount)
        }
    }
}

enum BenchClock {
    static func monotonic() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

/// The loopback publisher's source: one prebuilt 8-channel float64 frame of `samples` samples per
/// channel, published `rate` times a second (nil: as fast as the publisher takes them), live (a
/// full hand-off queue or a slow subscriber loses frames, announced in gap notices) or lossless
/// (credit: nothing is dropped, the source waits). Its timestamp is that of the first sample of a
/// block that ends when the frame is published, so `BenchObserver`'s latency is publish → callback.
final class BenchSource: Source {
    let info = SourceInfo(id: 1, description: "tributary bench")
    let configuration: Configuration
    let delivery: SourceDelivery
    let rate: Double?
    private let template: Frame
    private let blockNs: Int64
    /// Opened once every subscriber's session is started.
    let startGate = DispatchSemaphore(value: 0)
    /// Frames handed to the publisher, and refused at the hand-off (live only).
    let published = Atomic<UInt64>(0)
    let refused = Atomic<UInt64>(0)

    static let channels = 8

    init(samples: Int, rate: Double?, delivery: SourceDelivery) {
        self.rate = rate
        self.delivery = delivery
        // Unpaced: a nominal rate of one frame per microsecond for the configuration and the timestamps.
        let samplingRate = (rate ?? 1e6) * Double(samples)
        blockNs = Int64(1e9 / (rate ?? 1e6))
        configuration = Configuration(
            deviceName: "tributary bench", deviceType: "benchmark",
            channels: (0..<Self.channels).map {
                ChannelConfiguration(index: UInt32($0), description: "ch\($0)", samplingRate: samplingRate)
            })
        let layout = AnalogLayout(channelCount: Self.channels, sampleCount: samples, format: .float64)
        template = Frame.analog(header: FrameHeader(kind: .analog), layout: layout, firstSample: 0) { writer in
            for row in 0..<Self.channels {
                writer.setChannelIndex(row, UInt32(row))
                let bytes = writer.samples(channel: row)
                for i in 0..<(bytes.count / 8) {
                    bytes.storeBytes(of: sin(Double(i) * 0.01 * Double(row + 1)), toByteOffset: i * 8, as: Double.self)
                }
            }
        }
    }

    func run(_ sink: SourceSink) {
        startGate.wait()
        let start = BenchClock.monotonic()
        var index: UInt64 = 0
        while !sink.isCancelled {
            if let rate { sink.sleep(untilMonotonicNanoseconds: start + UInt64(Double(index + 1) * 1e9 / rate)) }
            if sink.isCancelled { return }
            var header = template.header
            header.timestampNs = wallClockNanoseconds() - blockNs
            let frame = template.withHeader(header)
            if delivery == .lossless || rate == nil {
                while !sink.publish(frame) {
                    if sink.isCancelled { return }
                    sched_yield()
                }
                published.add(1, ordering: .relaxed)
            } else if sink.publish(frame) {
                published.add(1, ordering: .relaxed)
            } else {
                refused.add(1, ordering: .relaxed)
            }
            index += 1
        }
    }
}
