import Foundation
import TributaryText
import TributaryTransport
import TributaryWire

/// One point of a `tributary bench` sweep, measured.
struct BenchPoint {
    var sourceID: UInt32
    var sourceDescription: String
    /// Loopback: samples per channel per frame and the offered rate (nil: unpaced).
    var samplesPerChannel: Int?
    var offeredRate: Double?
    var seconds: Double
    var windowStartUnix: Double
    var windowEndUnix: Double
    /// One entry per subscriber.
    var subscribers: [BenchCounts]
    /// Loopback only: frames the publisher dropped for the subscribers (whole sessions) and frames the
    /// live source could not hand to the publisher.
    var publisherDropped: UInt64?
    var handOffRefused: UInt64?
    /// Sequence numbers that never arrived and that no gap notice covered, over every subscriber.
    var unaccounted: UInt64
    /// The first session error a subscriber saw during the point, if any (a normal close is none).
    var error: String?
    /// The publisher closed the sessions before the window's end (a replay ended): `seconds` runs to
    /// the last frame counted.
    var publisherClosed = false
    /// The publisher's clock at the window's end (docs/PROTOCOL.md §4.9): of the subscribers' latest
    /// estimates, the one with the least round trip; nil when none has one yet (or the publisher
    /// answers no clock probes).
    var clock: ClockEstimate?

    var sampleBytesPerFrame: Int { subscribers.map(\.sampleBytesPerFrame).max() ?? 0 }
    var deliveredRates: [Double] { subscribers.map { Double($0.frames) / seconds } }
    var deliveredRate: Double { BenchPoint.median(deliveredRates) }
    var deliveredMBps: Double { BenchPoint.median(subscribers.map { Double($0.bytes) / seconds / 1e6 }) }
    var totalMBps: Double { subscribers.reduce(0) { $0 + Double($1.bytes) } / seconds / 1e6 }
    /// Frames the publisher produced for a subscriber, as seen by it: delivered + announced lost.
    var arrivedRate: Double { BenchPoint.median(subscribers.map { Double($0.frames + $0.announcedMissing) / seconds }) }
    var announcedLost: UInt64 { subscribers.reduce(0) { $0 + $1.announcedMissing } }
    var latency: LatencyHistogram {
        var all = LatencyHistogram()
        for s in subscribers { all.merge(s.latency) }
        return all
    }

    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let s = values.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }
}

/// Runs the points of a sweep: opens `subscribers` sessions, waits until they are started, counts
/// what arrives during `seconds` after a short warm-up, and closes them.
struct BenchRunner {
    var subscribers: Int
    var seconds: Double
    /// When the first point's window starts (Unix seconds), to align several bench processes; nil: after the warm-up.
    var startAt: Double?
    /// Seconds between the sessions' start and the window's (frames before it are not counted).
    var warmup: Double
    /// Observers called on each Subject's socket thread (`CallbackQueue.Executor.inline`) instead of
    /// a callback thread.
    var inline = false

    /// Loopback: an in-process publisher on tcp://127.0.0.1 with one `BenchSource`.
    func loopback(samples: Int, rate: Double?, delivery: SourceDelivery) throws -> BenchPoint {
        let source = BenchSource(samples: samples, rate: rate, delivery: delivery)
        let apiKey = "tributary-bench"
        let publisher: Publisher
        do {
            publisher = try Publisher(
                configuration: PublisherConfiguration(
                    endpoint: "tcp://127.0.0.1:0", apiKey: apiKey,
                    description: "tributary bench (loopback)"),
                sources: [source])
        } catch { throw CommandError("loopback publisher: \(error)") }
        defer {
            source.startGate.signal()
            publisher.stop(drain: .milliseconds(200))
        }
        guard let port = publisher.port else { throw CommandError("loopback publisher: no port bound") }
        let context = try sessionContext()
        let sessions = try (0..<subscribers).map { i in
            try openSession(
                host: "127.0.0.1", port: port, apiKey: apiKey, description: "tributary bench \(i + 1)",
                timeout: 10, curve: nil, request: SubscriptionRequest(), context: context)
        }
        defer { for (subject, _) in sessions { subject.close() } }
        let deadline = Date().addingTimeInterval(10)
        while publisher.subscribers().filter(\.isStarted).count < subscribers {
            guard Date() < deadline else { throw CommandError("loopback: the \(subscribers) sessions did not start within 10 s") }
            usleep(1_000)
        }
        source.startGate.signal()
        var point = try measure(sessions, sourceID: source.info.id, description: source.info.description, startAt: nil)
        point.samplesPerChannel = samples
        point.offeredRate = rate
        point.publisherDropped = publisher.subscribers().reduce(0) { $0 + $1.framesDropped }
        point.handOffRefused = source.refused.load(ordering: .relaxed)
        return point
    }

    /// Against a running publisher: the sessions select source `sourceID` only; `aligned`: the window
    /// starts at `startAt`.
    func remote(_ options: SubscriptionOptions, source: SourceInfo, aligned: Bool = false) throws -> BenchPoint {
        let context = try sessionContext()
        // The source alone, with the command's analog and array filters (no signal filter: bench measures the stream).
        let request = SubscriptionRequest(
            sources: [source.id], analogFilter: options.request.analogFilter, arrayFilters: options.request.arrayFilters)
        let sessions = try (0..<subscribers).map { i in
            try openSession(
                host: options.host, port: options.port, apiKey: options.apiKey,
                description: options.description + (subscribers > 1 ? " \(i + 1)" : ""), timeout: options.timeout,
                curve: options.curve, request: request, context: context)
        }
        defer { for (subject, _) in sessions { subject.close() } }
        return try measure(sessions, sourceID: source.id, description: source.description, startAt: aligned ? startAt : nil)
    }

    /// The sources a running publisher lists in its welcome (a session opened and closed, never started).
    static func probe(_ options: SubscriptionOptions) throws -> Welcome {
        let subject: Subject
        subject = try Subject(options: SubjectOptions(curve: options.curve))
        defer { subject.close() }
        do {
            return try subject.open(
                address: options.host, port: options.port, apiKey: options.apiKey,
                description: options.description + " (probe)", timeout: options.timeout)
        } catch {
            throw CommandError("error \(error.code): \(error.message.terminalSafe)")
        }
    }

    /// The libzmq context of a point's sessions, shared by them with an I/O thread per core at most
    /// (pyzmq's subscriber peer shares one among its sockets too): 32 sessions in one process then
    /// add no 32 I/O threads of their own to compete for the cores with the callbacks being timed.
    private func sessionContext() throws -> ZMQContext {
        let threads = Int32(max(1, min(subscribers, ProcessInfo.processInfo.activeProcessorCount)))
        do { return try ZMQContext(ioThreads: threads) } catch { throw CommandError("libzmq context for the sessions: \(error)") }
    }

    private func openSession(
        host: String, port: Int, apiKey: String, description: String, timeout: Double, curve: SubjectCurve?,
        request: SubscriptionRequest, context: ZMQContext
    ) throws -> (Subject, BenchObserver) {
        let subject: Subject
        subject = try Subject(
            options: SubjectOptions(curve: curve), callbackQueue: inline ? CallbackQueue(executor: .inline) : nil,
            context: context)
        let observer = BenchObserver()
        subject.register(observer)
        do {
            _ = try subject.open(address: host, port: port, apiKey: apiKey, description: description, timeout: timeout, request: request)
        } catch {
            subject.close()
            throw CommandError("error \(error.code): \(error.message.terminalSafe)")
        }
        return (subject, observer)
    }

    private func measure(
        _ sessions: [(Subject, BenchObserver)], sourceID: UInt32, description: String,
        startAt: Double?
    ) throws -> BenchPoint {
        let offset = Date().timeIntervalSince1970 - Double(BenchClock.monotonic()) / 1e9
        var start = BenchClock.monotonic() + UInt64(warmup * 1e9)
        if let startAt {
            let wanted = (startAt - offset) * 1e9
            guard wanted >= Double(BenchClock.monotonic()) else {
                throw CommandError(
                    String(
                        format: "--start-at: the sessions were started %.2f s after it; give a later time",
                        Date().timeIntervalSince1970 - startAt))
            }
            start = UInt64(wanted)
        }
        let end = start + UInt64(seconds * 1e9)
        for (_, observer) in sessions { observer.setWindow(start: start, end: end) }
        // A publisher that closes every session (a replay's end) before the window's end: the window
        // runs from the first frame counted to the last.
        while BenchClock.monotonic() < end + 20_000_000 && !sessions.allSatisfy({ $0.1.closedAt != nil }) { usleep(20_000) }
        var measured = seconds
        let closed = sessions.compactMap { $0.1.closedAt }
        if closed.count == sessions.count, closed.max()! < end {
            let firsts: [UInt64] = sessions.map { $0.1.firstCounted }.filter { $0 > 0 }
            let lasts: [UInt64] = sessions.map { $0.1.lastCounted }
            let first: UInt64 = firsts.min() ?? 0
            let last: UInt64 = lasts.max() ?? 0
            if first > 0 && last > first {
                start = first
                measured = Double(last - first) / 1e9
            }
        }
        let counts = sessions.map { $0.1.counts }
        let unaccounted = sessions.reduce(UInt64(0)) { $0.addingSaturated($1.0.statistics().unaccountedLoss) }
        let error = sessions.lazy.compactMap { $0.1.firstError }.first.map { "error \($0.code): \($0.message.terminalSafe)" }
        return BenchPoint(
            sourceID: sourceID, sourceDescription: description, seconds: measured,
            windowStartUnix: offset + Double(start) / 1e9, windowEndUnix: offset + Double(start) / 1e9 + measured,
            subscribers: counts, unaccounted: unaccounted, error: error,
            publisherClosed: closed.count == sessions.count && measured < seconds,
            clock: sessions.compactMap { $0.0.clockEstimate }.min { $0.rttNs < $1.rttNs })
    }
}
