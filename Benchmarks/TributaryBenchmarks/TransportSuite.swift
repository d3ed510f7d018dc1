import Foundation
import Synchronization
import TributaryTransport
import TributaryWire

/// Publisher → Subject over tcp://127.0.0.1: throughput of 64 KiB analog frames (MB/s of sample
/// payload) against raw pyzmq DEALER/ROUTER measured in the same run, and the callback latency
/// (publisher timestamp → observer callback) against offered rate.
let transportSuite = Suite(
    name: "transport",
    run: { context in
        let frames = 4_096, runs = 5
        var rows: [BenchRow] = []
        var pyzmqVersion = "?"
        var losslessMBps: [Double] = []
        // Each round measures, back to back: raw pyzmq, the project's raw libzmq wrapper with a zero-copy
        // send per message (`zmqRawRun`: one context with one I/O thread, the receiver counting on its
        // own thread: the ceiling for this path through libzmq), and Tributary in three set-ups:
        //  - the defaults: publisher and Subject each with its own context (so two libzmq I/O threads),
        //    callbacks on the callback queue's thread;
        //  - one context shared by both (one I/O thread, as the raw wrapper has), callbacks on their thread;
        //  - one context and inline delivery (`CallbackQueue(executor: .inline)`: callbacks on the
        //    Subject's socket thread), the raw wrapper's thread layout exactly.
        // Ratios are medians of per-round ratios: on a shared machine the load drifts, and figures
        // measured seconds apart compare different machines.
        let setups: [(label: String, sharedContext: Bool, inline: Bool)] = [
            ("defaults (two contexts, callback thread)", false, false),
            ("one context, callback thread", true, false),
            ("one context, inline delivery", true, true),
        ]
        for delivery in [SourceDelivery.lossless, .live] {
            for setup in setups {  // warm-up
                _ = try transportThroughputRun(frames: frames, delivery: delivery, inline: setup.inline, sharedContext: setup.sharedContext)
            }
            var results = [[TransportThroughput]](repeating: [], count: setups.count)
            var ratios = [[Double]](repeating: [], count: setups.count), rawRatios = [[Double]](repeating: [], count: setups.count)
            var peerRuns: [Double] = [], rawRuns: [Double] = []
            for _ in 0..<runs {
                let peer = try context.runPeer(
                    "zmq_raw_peer.py", ["--messages", "\(frames)", "--size", "65536", "--runs", "1", "--warmup", "1"])
                guard let peerMBps = peer["mb_per_s_median"] as? Double else { throw BenchError("zmq_raw_peer.py: no mb_per_s_median") }
                pyzmqVersion = "\(peer["pyzmq"] ?? "?")"
                let rawMBps = try zmqRawRun(mode: .zeroCopy, messages: frames, size: 65_536)
                peerRuns.append(peerMBps)
                rawRuns.append(rawMBps)
                for (index, setup) in setups.enumerated() {
                    let result = try transportThroughputRun(
                        frames: frames, delivery: delivery, inline: setup.inline,
                        sharedContext: setup.sharedContext)
                    results[index].append(result)
                    ratios[index].append(result.mbPerSecond / peerMBps)
                    rawRatios[index].append(result.mbPerSecond / rawMBps)
                }
            }
            func spread(_ values: [Double]) -> String {
                "\(fmt(median(values))) (rounds \(fmt(values.min() ?? 0))-\(fmt(values.max() ?? 0)))"
            }
            if delivery == .lossless { losslessMBps = results[0].map(\.mbPerSecond) }
            let label = delivery == .lossless ? "lossless (credit)" : "live (drop and count)"
            rows.append(
                BenchRow(
                    name: "64 KiB analog, \(label): raw pyzmq / raw wrapper [MB/s]", tributary: "-",
                    peer: "\(fmt(median(peerRuns), 0)) / \(fmt(median(rawRuns), 0))", ratio: "-"))
            for (index, setup) in setups.enumerated() {
                rows.append(
                    BenchRow(
                        name: "  \(setup.label) [MB/s samples]", tributary: fmt(median(results[index].map(\.mbPerSecond)), 0),
                        peer: "-", ratio: "pyzmq \(spread(ratios[index])), raw wrapper \(spread(rawRatios[index]))"))
            }
            let all = results.flatMap { $0 }
            let dropped = all.map(\.dropped).reduce(0, +), missing = all.map(\.missing).reduce(0, +)
            let unaccounted = all.map(\.unaccounted).reduce(0, +)
            rows.append(
                BenchRow(
                    name: "  \(label): allocations per frame, whole process",
                    tributary: fmt(median(results[0].map(\.allocationsPerFrame)), 3),
                    peer: "-", ratio: "-"))
            rows.append(
                BenchRow(
                    name: "  \(label): dropped / announced in gaps / unaccounted", tributary: "\(dropped) / \(missing) / \(unaccounted)",
                    peer: "-", ratio: dropped == missing && unaccounted == 0 ? "exact" : "MISMATCH"))
        }
        // The same peer with the allocator settings this process uses (AllocatorTuning), for fairness.
        let tuned = GLIBCTunables.streaming
        var tunedPeer: [Double] = []
        for _ in 0..<3 {
            let peer = try context.runPeer(
                "zmq_raw_peer.py", ["--messages", "\(frames)", "--size", "65536", "--runs", "1", "--warmup", "1"],
                environment: ["GLIBC_TUNABLES": tuned])
            if let value = peer["mb_per_s_median"] as? Double { tunedPeer.append(value) }
        }
        if !tunedPeer.isEmpty {
            rows.append(
                BenchRow(
                    name: "raw pyzmq with the same allocator settings [MB/s]", tributary: "-", peer: fmt(median(tunedPeer), 0),
                    ratio: "lossless \(fmt(median(losslessMBps) / median(tunedPeer)))x of it"))
        }
        printTable(
            "Transport throughput vs raw pyzmq \(pyzmqVersion) and the raw libzmq wrapper, DEALER->ROUTER, tcp loopback, \(runs) interleaved rounds",
            rows)

        var latencyRows: [BenchRow] = []
        for rate in [100, 1_000, 10_000, 50_000, 0] {
            let result = try transportLatencyRun(rate: rate, count: rate == 0 ? 50_000 : max(1_000, min(rate * 2, 50_000)))
            latencyRows.append(
                BenchRow(
                    name: rate == 0 ? "unpaced (\(fmt(result.achievedRate, 0)) frames/s)" : "\(rate) frames/s",
                    tributary:
                        "p50 \(fmt(result.p50 / 1e3, 0)) µs  p99 \(fmt(result.p99 / 1e3, 0)) µs  p99.9 \(fmt(result.p999 / 1e3, 0)) µs",
                    peer: "n=\(result.count) lost=\(result.lost)", ratio: "-"))
        }
        printTable("Callback latency, publisher timestamp -> observer callback (8 ch x 16 float64 frames)", latencyRows)
    })

struct TransportThroughput {
    var mbPerSecond: Double
    /// Heap allocations per frame of the whole process (publisher, subscriber, libzmq) while streaming.
    var allocationsPerFrame: Double = 0
    /// The same after the run's first `steadyStateAfter` frames (nil: not measured apart).
    var steadyAllocationsPerFrame: Double? = nil
    var dropped: UInt64
    var missing: UInt64
    var unaccounted: UInt64
}

/// Counts sample bytes and the time of the first and last analog frame (on the callback queue).
final class ThroughputObserver: Observer, @unchecked Sendable {
    // `@unchecked Sendable`: written on the callback queue only, read after `done` is signalled.
    var first: UInt64 = 0
    var last: UInt64 = 0
    var frames = 0
    var bytes = 0
    var missing: UInt64 = 0
    /// Frames received or announced missing so far, readable from any thread while the run goes on.
    let progress = Atomic<Int>(0)
    let expected: Int
    let done = DispatchSemaphore(value: 0)
    init(expected: Int) { self.expected = expected }

    func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) {
        let now = nowNanoseconds()
        if frames == 0 { first = now }
        frames += 1
        bytes += data.channelCount * data.sampleCount * data.format.size
        last = now
        checkDone()
    }

    func didReceiveGap(_ gap: Gap, header: FrameHeader) {
        missing += gap.missingCount
        checkDone()
    }

    private func checkDone() {
        progress.store(frames + Int(missing), ordering: .relaxed)
        if frames + Int(missing) == expected { done.signal() }
    }
}

/// A lossless or live source that publishes one prebuilt 64 KiB analog frame `count` times, as fast as
/// the publisher takes it (the payload is shared: `withHeader` changes only the header).
final class RepeatingSource: Source {
    let info = SourceInfo(id: 1, description: "repeat")
    let configuration = Configuration(deviceName: "repeat", deviceType: "benchmark")
    let delivery: SourceDelivery
    let template: Frame
    let count: Int
    /// Frames per second to offer (nil: as fast as the publisher takes them).
    let rate: Double?
    /// Frames after which the source signals `paused` and waits for `resumeGate` (nil: no pause).
    let pauseAfter: Int?
    let startGate = DispatchSemaphore(value: 0)
    let paused = DispatchSemaphore(value: 0)
    let resumeGate = DispatchSemaphore(value: 0)

    init(delivery: SourceDelivery, count: Int, rate: Double? = nil, pauseAfter: Int? = nil) {
        self.delivery = delivery
        self.count = count
        self.rate = rate
        self.pauseAfter = pauseAfter
        let layout = AnalogLayout(channelCount: 8, sampleCount: 1_024, format: .float64)
        template = Frame.analog(header: FrameHeader(kind: .analog), layout: layout, firstSample: 0) { writer in
            for row in 0..<8 {
                writer.setChannelIndex(row, UInt32(row))
                let samples = writer.samples(channel: row)
                for i in 0..<(samples.count / 8) { samples.storeBytes(of: Double(i), toByteOffset: i * 8, as: Double.self) }
            }
        }
    }

    func run(_ sink: SourceSink) {
        startGate.wait()
        let start = nowNanoseconds()
        for index in 0..<count where !sink.isCancelled {
            if index == pauseAfter {
                paused.signal()
                resumeGate.wait()
            }
            if let rate {
                let due = start + UInt64(Double(index) * 1e9 / rate)
                let now = nowNanoseconds()
                if due > now { usleep(UInt32((due - now) / 1_000)) }
            }
            var header = template.header
            header.timestampNs = Int64(index)
            let frame = template.withHeader(header)
            while !sink.publish(frame) && !sink.isCancelled { sched_yield() }
        }
    }
}

/// One publisher → Subject run over TCP loopback; `inline` delivers on the Subject's socket thread,
/// `sharedContext` gives both one libzmq context (one I/O thread) instead of one each.
/// `steadyStateAfter` pauses the source after that many frames until the subscriber has had them all
/// and nothing moves, then counts the allocations of the remaining frames apart (the steady state,
/// without the run's first-use allocations); the pause makes the run's MB/s meaningless.
func transportThroughputRun(
    frames: Int, delivery: SourceDelivery, inline: Bool = false, sharedContext: Bool = false,
    steadyStateAfter: Int? = nil
) throws -> TransportThroughput {
    let source = RepeatingSource(delivery: delivery, count: frames, pauseAfter: steadyStateAfter)
    let context = sharedContext ? try ZMQContext() : nil
    let publisher = try Publisher(
        configuration: PublisherConfiguration(endpoint: "tcp://127.0.0.1:0", apiKey: "bench"),
        sources: [source], context: context)
    defer { publisher.stop() }
    let subject = try inline ? Subject(callbackQueue: CallbackQueue(executor: .inline), context: context) : Subject(context: context)
    let observer = ThroughputObserver(expected: frames)
    // The session must be started on the publisher before the source begins.
    try startSession(subject, observer: observer, publisher: publisher)
    let allocationsBefore = allocationCount()
    source.startGate.signal()
    var steadyBefore: UInt64?
    if let warm = steadyStateAfter {
        guard source.paused.wait(timeout: .now() + 60) == .success else {
            throw BenchError("transport throughput: the source did not pause")
        }
        // Quiescent: the progress has not moved for 60 ms (a live stream's last drops are announced
        // only by the next frame, so "all warm frames seen" cannot be waited for).
        var last = -1, still = 0
        let deadline = nowNanoseconds() + 5_000_000_000
        while still < 3 && nowNanoseconds() < deadline {
            usleep(20_000)
            let now = observer.progress.load(ordering: .relaxed)
            still = now == last ? still + 1 : 0
            last = now
        }
        guard last <= warm else { throw BenchError("transport throughput: \(last) frames seen before the pause at \(warm)") }
        steadyBefore = allocationCount()
        source.resumeGate.signal()
    }
    guard observer.done.wait(timeout: .now() + 60) == .success else { throw BenchError("transport throughput: timed out") }
    let end = allocationCount()
    let allocations = Double(end - allocationsBefore) / Double(frames)
    let steady = steadyBefore.map { Double(end - $0) / Double(frames - steadyStateAfter!) }
    let stats = subject.statistics()
    let dropped = publisher.subscribers().first?.framesDropped ?? 0
    subject.close()
    let seconds = Double(observer.last - observer.first) / 1e9
    let bytesAfterFirst = Double(observer.bytes) * Double(observer.frames - 1) / Double(observer.frames)
    return TransportThroughput(
        mbPerSecond: bytesAfterFirst / seconds / 1e6, allocationsPerFrame: allocations,
        steadyAllocationsPerFrame: steady, dropped: dropped,
        missing: stats.framesMissing, unaccounted: stats.unaccountedLoss)
}

struct TransportLatency {
    var p50: Double
    var p99: Double
    var p999: Double
    var count: Int
    var lost: UInt64
    var achievedRate: Double
}

/// Records publisher timestamp → callback latencies (wall clock, same host).
final class LatencyObserver: Observer, @unchecked Sendable {
    // `@unchecked Sendable`: written on the callback queue only, read after `done` is signalled.
    var latencies: [Int64]
    var missing: UInt64 = 0
    let expected: Int
    let done = DispatchSemaphore(value: 0)
    init(expected: Int) {
        self.expected = expected
        latencies = []
        latencies.reserveCapacity(expected)
    }

    func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) {
        latencies.append(wallClockNanoseconds() - header.timestampNs)
        if latencies.count + Int(missing) == expected { done.signal() }
    }

    func didReceiveGap(_ gap: Gap, header: FrameHeader) {
        missing += gap.missingCount
        if latencies.count + Int(missing) == expected { done.signal() }
    }
}

/// Publishes `count` small frames at `rate` frames/s (0: unpaced) from this thread.
func transportLatencyRun(rate: Int, count: Int) throws -> TransportLatency {
    let publisher = try Publisher(configuration: PublisherConfiguration(endpoint: "tcp://127.0.0.1:0", apiKey: "bench"))
    defer { publisher.stop() }
    let subject = try Subject()
    let observer = LatencyObserver(expected: count)
    try startSession(subject, observer: observer, publisher: publisher)
    let layout = AnalogLayout(channelCount: 8, sampleCount: 16, format: .float64)
    let template = Frame.analog(header: FrameHeader(kind: .analog, sourceID: 1), layout: layout, firstSample: 0) { writer in
        for row in 0..<8 { writer.setChannelIndex(row, UInt32(row)) }
    }
    let start = nowNanoseconds()
    var sent = 0
    while sent < count {
        let due = rate == 0 ? count : min(count, Int(Double(nowNanoseconds() - start) * Double(rate) / 1e9) + 1)
        while sent < due {
            var header = template.header
            header.timestampNs = wallClockNanoseconds()
            if publisher.publish(template.withHeader(header)) { sent += 1 } else { sched_yield() }
        }
        if rate != 0 && sent < count {
            let next = start + UInt64(Double(sent) * 1e9 / Double(rate))
            let now = nowNanoseconds()
            if next > now + 60_000 { usleep(UInt32((next - now - 50_000) / 1_000)) }
        }
    }
    let elapsed = Double(nowNanoseconds() - start) / 1e9
    guard observer.done.wait(timeout: .now() + 30) == .success else { throw BenchError("transport latency: timed out at rate \(rate)") }
    subject.close()
    let sorted = observer.latencies.sorted().map(Double.init)
    func q(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(p * Double(sorted.count)))] }
    return TransportLatency(
        p50: q(0.5), p99: q(0.99), p999: q(0.999), count: sorted.count, lost: observer.missing,
        achievedRate: Double(count) / elapsed)
}

/// glibc tunables equal to `AllocatorTuning.keepFreedMemoryForStreaming()`'s defaults, for peers.
enum GLIBCTunables {
    static let streaming =
        "glibc.malloc.trim_threshold=\(256 << 20):glibc.malloc.top_pad=\(64 << 20):glibc.malloc.mmap_threshold=\(32 << 20)"
}
