import Foundation
import Synchronization
import TributaryWire

/// An estimate of the publisher's clock against the subscriber's (docs/PROTOCOL.md §4.9), from the
/// least-delay probe of a burst.
public struct ClockEstimate: Sendable, Equatable {
    /// Publisher's wall clock minus the subscriber's, in nanoseconds: a publisher timestamp minus
    /// `offsetNs` is the same instant on the subscriber's clock. A publisher 1.5 s ahead gives +1.5e9.
    public var offsetNs: Int64
    /// The round-trip time of the probe the offset comes from (its four timestamps: (t3 − t0) − (t2 − t1)).
    public var rttNs: Int64
    /// When it was measured, on the subscriber's wall clock (ns since 1970): the midpoint of that
    /// probe's send and receive times.
    public var measuredAtNs: Int64
    /// Replies the burst received (the estimate is the one of them with the least round-trip time).
    public var samples: Int
    /// Counts the estimates of this Subject, from 1: a new value means a new estimate.
    public var serial: UInt64
}

/// One probe's four timestamps turned into an offset and a round-trip time, or nil when they are
/// inconsistent (the publisher's send before its receive, a negative round trip) or overflow: `t1`
/// and `t2` come from the peer, so every step is checked.
public struct ClockSample: Sendable, Equatable {
    public var offsetNs: Int64
    public var rttNs: Int64
    public var midpointNs: Int64

    public init?(t0: Int64, t1: Int64, t2: Int64, t3: Int64) {
        guard t2 >= t1, t3 >= t0 else { return nil }
        let (toPublisher, o1) = t1.subtractingReportingOverflow(t0)
        let (fromPublisher, o2) = t2.subtractingReportingOverflow(t3)
        let (sum, o3) = toPublisher.addingReportingOverflow(fromPublisher)
        let (turnaround, o4) = t2.subtractingReportingOverflow(t1)
        let (roundTrip, o5) = t3.subtractingReportingOverflow(t0)
        let (rtt, o6) = roundTrip.subtractingReportingOverflow(turnaround)
        guard !(o1 || o2 || o3 || o4 || o5 || o6), rtt >= 0 else { return nil }
        offsetNs = sum / 2
        rttNs = rtt
        midpointNs = t0 + roundTrip / 2
    }
}

/// The subscriber's probe schedule and estimator, socket-free: a burst of `burstSize` probes (one per
/// housekeeping tick), the replies matched to what was sent, and when every reply is in or
/// `replyWindowNs` after the last probe, the sample with the least round-trip time becomes the
/// estimate. A burst starts when the session opens (and after a reconnection) and every `intervalNs`.
/// A burst whose best round trip is more than twice the previous estimate's (and over 0.5 ms: a
/// loaded host or link) is extended by another `burstSize` probes, at most twice, before it gives
/// its estimate: the offset's error is bounded by half the round trip.
struct ClockEstimator {
    static let burstSize = 8
    static let intervalNs: UInt64 = 5_000_000_000
    static let replyWindowNs: UInt64 = 1_000_000_000
    static let maxExtensions = 2

    private var outstanding: [UInt64: Int64] = [:]
    private var samples: [ClockSample] = []
    private var sentInBurst = 0
    private var burstStartNs: UInt64?
    private var lastSendNs: UInt64 = 0
    private var nextProbeID = UInt64.random(in: 1...(UInt64(1) << 48))
    private(set) var estimates: UInt64 = 0
    private var extensions = 0
    private var previousRttNs: Int64?

    /// A new session: the next tick starts a burst; replies to the old session's probes no longer count.
    mutating func reset() {
        outstanding.removeAll()
        samples.removeAll()
        sentInBurst = 0
        burstStartNs = nil
        extensions = 0
    }

    /// The probe to send at `now` (monotonic), if one is due; `wallNs` is its `t0`.
    mutating func probeDue(now: UInt64, wallNs: Int64) -> TimeProbe? {
        if burstStartNs.map({ sentInBurst >= Self.burstSize && now &- $0 >= Self.intervalNs }) ?? true {
            burstStartNs = now
            sentInBurst = 0
        }
        guard sentInBurst < Self.burstSize else { return nil }
        let probe = TimeProbe(probeID: nextProbeID, t0: wallNs)
        nextProbeID &+= 1
        sentInBurst += 1
        lastSendNs = now
        // A reply that never comes (an old publisher) must not grow this: only the burst's probes wait.
        if outstanding.count >= Self.burstSize * 2 { outstanding.removeAll() }
        outstanding[probe.probeID] = probe.t0
        return probe
    }

    /// A probe could not be sent (full queue): forget it.
    mutating func notSent(_ probe: TimeProbe) { outstanding[probe.probeID] = nil }

    /// Takes a reply received at `t3` (wall clock); nil unless it answers a probe of this session
    /// (same id, same `t0`) and its timestamps are consistent.
    mutating func receive(_ reply: TimeReply, t3: Int64) {
        guard let t0 = outstanding.removeValue(forKey: reply.probe.probeID), t0 == reply.probe.t0,
            let sample = ClockSample(t0: t0, t1: reply.t1, t2: reply.t2, t3: t3)
        else { return }
        samples.append(sample)
    }

    /// The burst's estimate once it is complete (every probe sent and answered, or the reply window
    /// over) and not extended, else nil. Each burst gives at most one estimate; a burst without
    /// replies gives none.
    mutating func completedEstimate(now: UInt64) -> ClockEstimate? {
        guard sentInBurst >= Self.burstSize, !samples.isEmpty else { return nil }
        guard outstanding.isEmpty || now &- lastSendNs >= Self.replyWindowNs else { return nil }
        let best = Self.leastDelay(samples)!
        if extensions < Self.maxExtensions, let previous = previousRttNs, best.rttNs / 2 > previous, best.rttNs > 500_000 {
            extensions += 1
            sentInBurst = 0  // the next ticks send another burstSize probes; these samples stay
            return nil
        }
        extensions = 0
        previousRttNs = best.rttNs
        outstanding.removeAll()
        let count = samples.count
        samples.removeAll()
        estimates += 1
        return ClockEstimate(offsetNs: best.offsetNs, rttNs: best.rttNs, measuredAtNs: best.midpointNs, samples: count, serial: estimates)
    }

    /// The sample with the least round-trip time (the first of equals): the one whose offset the
    /// queueing delays disturbed least.
    static func leastDelay(_ samples: [ClockSample]) -> ClockSample? {
        samples.min { $0.rttNs < $1.rttNs }
    }
}

/// The latest estimate, written by the Subject's socket thread and read by any thread.
final class ClockEstimateBox: Sendable {
    private let value = Mutex<ClockEstimate?>(nil)
    var current: ClockEstimate? { value.withLock { $0 } }
    func set(_ estimate: ClockEstimate) { value.withLock { $0 = estimate } }
}

extension SubjectEngine {
    /// From the housekeeping tick of an open session: sends the next probe of a burst when due, and
    /// publishes a completed burst's estimate.
    func probeClock(now: UInt64) {
        if let estimate = clockEstimator.completedEstimate(now: now) { delivery.clockEstimate.set(estimate) }
        guard let dealer, let probe = clockEstimator.probeDue(now: now, wallNs: wallClockNanoseconds()) else { return }
        do throws(ZMQError) {
            try withUnsafeTemporaryAllocation(byteCount: TimeProbe.payloadLength, alignment: 8) { (bytes) throws(ZMQError) in
                probe.encode(into: bytes.baseAddress!)
                try MessageFraming.sendExtension(
                    kind: TransportKind.timeProbe, sequence: sendSequence, timestampNs: probe.t0,
                    payload: UnsafeRawBufferPointer(bytes), routingID: nil, compact: sendsCompact, on: dealer)
            }
            lastSentNs = now
        } catch {
            clockEstimator.notSent(probe)
        }
    }

    /// An extension frame that is not a known frame: a probe reply is taken (its `t3` is now).
    func receivedExtension(_ inbound: InboundFrame) {
        guard case .timeReply(let reply) = inbound, isOpen else { return }
        clockEstimator.receive(reply, t3: wallClockNanoseconds())
        if let estimate = clockEstimator.completedEstimate(now: monotonicNanoseconds()) { delivery.clockEstimate.set(estimate) }
    }
}
