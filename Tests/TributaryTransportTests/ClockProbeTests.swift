import Foundation
import Testing
import TributaryWire

@testable import TributaryTransport

/// Clock probes (docs/PROTOCOL.md §4.9): the frames' bytes, the four-timestamp arithmetic and its
/// sign, and the estimator's least-delay choice.
@Suite struct ClockProbeTests {
    @Test func probeAndReplyPayloadsRoundTripAndRejectOtherSizes() {
        let probe = TimeProbe(probeID: 0x0102_0304_0506_0708, t0: -7)
        var bytes = [UInt8](repeating: 0xEE, count: 16)
        bytes.withUnsafeMutableBytes { probe.encode(into: $0.baseAddress!) }
        #expect(bytes == [8, 7, 6, 5, 4, 3, 2, 1] + [0xF9] + [UInt8](repeating: 0xFF, count: 7))
        #expect(bytes.withUnsafeBytes { TimeProbe.decode($0) } == probe)
        #expect((bytes + [0]).withUnsafeBytes { TimeProbe.decode($0) } == nil)
        let reply = TimeReply(echoing: TimeProbe(probeID: 9, t0: 1), t1: 2, t2: Int64.max)
        var replyBytes = [UInt8](repeating: 0, count: 32)
        replyBytes.withUnsafeMutableBytes { reply.encode(into: $0.baseAddress!) }
        #expect(replyBytes.withUnsafeBytes { TimeReply.decode($0) } == reply)
        #expect(Array(replyBytes[0..<24]).withUnsafeBytes { TimeReply.decode($0) } == nil)
    }

    @Test func sampleSignIsPublisherMinusSubscriber() throws {
        // Publisher 1.5 s ahead; 100 µs each way; the publisher takes 50 µs to answer.
        let t0: Int64 = 1_000_000_000_000
        let t1 = t0 + 100_000 + 1_500_000_000
        let t2 = t1 + 50_000
        let t3 = t0 + 250_000
        let sample = try #require(ClockSample(t0: t0, t1: t1, t2: t2, t3: t3))
        #expect(sample.offsetNs == 1_500_000_000)
        #expect(sample.rttNs == 200_000)
        #expect(sample.midpointNs == t0 + 125_000)
    }

    @Test func inconsistentOrOverflowingTimestampsAreDiscarded() {
        #expect(ClockSample(t0: 0, t1: 10, t2: 5, t3: 20) == nil)  // sent before received
        #expect(ClockSample(t0: 10, t1: 0, t2: 0, t3: 5) == nil)  // reply before probe
        #expect(ClockSample(t0: 0, t1: 0, t2: 100, t3: 50) == nil)  // negative round trip
        #expect(ClockSample(t0: Int64.min + 1, t1: Int64.max, t2: Int64.max, t3: Int64.min + 2) == nil)
        #expect(ClockSample(t0: 0, t1: Int64.min, t2: Int64.max, t3: 0) == nil)
    }

    /// Runs one burst against a publisher `offset` ahead, each probe delayed `delays[k]` on the way out.
    private func burst(
        _ estimator: inout ClockEstimator, offset: Int64, delays: [Int64], start: UInt64 = 0
    ) -> ClockEstimate? {
        var now = start
        var wall: Int64 = 5_000_000_000
        var sent: [TimeProbe] = []
        for _ in delays {
            if let probe = estimator.probeDue(now: now, wallNs: wall) { sent.append(probe) }
            now += 20_000_000
            wall += 20_000_000
        }
        #expect(estimator.probeDue(now: now, wallNs: wall) == nil)  // the burst is sent
        for (probe, delay) in zip(sent, delays) {
            let t1 = probe.t0 + delay + offset
            estimator.receive(
                TimeReply(echoing: probe, t1: t1, t2: t1 + 10_000), t3: probe.t0 + delay + 10_000 + 100_000)
        }
        return estimator.completedEstimate(now: now)
    }

    @Test func estimateIsTheLeastDelaySampleOfTheBurst() throws {
        var estimator = ClockEstimator()
        // Queueing delays of 0.1-5 ms on the way out, 0.1 ms back: only the 0.1 ms probe is symmetric.
        let delays: [Int64] = [5_000_000, 2_000_000, 100_000, 3_000_000, 400_000, 900_000, 1_000_000, 4_000_000]
        let result = burst(&estimator, offset: -1_500_000_000, delays: delays)
        let estimate = try #require(result)
        #expect(estimate.offsetNs == -1_500_000_000)
        #expect(estimate.rttNs == 200_000)
        #expect(estimate.samples == 8)
        #expect(estimate.serial == 1)
        #expect(estimator.completedEstimate(now: 10_000_000_000) == nil)  // one estimate per burst
    }

    @Test func repliesThatMatchNoProbeAreIgnoredAndAResetForgetsTheOldSession() throws {
        var estimator = ClockEstimator()
        let first = estimator.probeDue(now: 0, wallNs: 1_000)
        let probe = try #require(first)
        estimator.receive(TimeReply(echoing: TimeProbe(probeID: probe.probeID &+ 99, t0: probe.t0), t1: 5_000, t2: 5_000), t3: 2_000)
        estimator.receive(TimeReply(echoing: TimeProbe(probeID: probe.probeID, t0: probe.t0 + 1), t1: 5_000, t2: 5_000), t3: 2_000)
        for k in 1..<ClockEstimator.burstSize { _ = estimator.probeDue(now: UInt64(k) * 20_000_000, wallNs: 1_000) }
        #expect(estimator.completedEstimate(now: 5_000_000_000) == nil)  // nothing valid came back
        estimator.reset()
        estimator.receive(TimeReply(echoing: probe, t1: 5_000, t2: 5_000), t3: 2_000)
        #expect(estimator.completedEstimate(now: 6_000_000_000) == nil)  // a probe of the previous session
        // After the reset a burst starts at once, and the next one 5 s later.
        let result = burst(&estimator, offset: 1_000, delays: Array(repeating: 100_000, count: 8), start: 7_000_000_000)
        let fresh = try #require(result)
        #expect(fresh.offsetNs == 1_000)
        #expect(estimator.probeDue(now: 7_000_000_000 + 4_000_000_000, wallNs: 0) == nil)
        #expect(estimator.probeDue(now: 7_000_000_000 + 5_000_000_000, wallNs: 0) != nil)
    }

    @Test func aBurstSlowerThanThePreviousOneIsExtended() throws {
        var estimator = ClockEstimator()
        let quick: [Int64] = Array(repeating: 100_000, count: 8)  // rtt 0.2 ms
        let first = burst(&estimator, offset: 0, delays: quick)
        #expect(first?.rttNs == 200_000)
        // 5 s later every probe waits 3 ms on its way out (rtt 3.1 ms > 2 × 0.2 ms and > 0.5 ms): no estimate yet.
        let slow = burst(&estimator, offset: 0, delays: Array(repeating: 3_000_000, count: 8), start: 5_000_000_000)
        #expect(slow == nil)
        // The extension: 8 more probes at once, one of them quick; its offset wins.
        var extended = Array(repeating: 3_000_000 as Int64, count: 8)
        extended[5] = 100_000
        let result = burst(&estimator, offset: 0, delays: extended, start: 5_200_000_000)
        let estimate = try #require(result)
        #expect(estimate.rttNs == 200_000 && estimate.offsetNs == 0)
        #expect(estimate.samples == 16)
        // Slow twice more (the limit): the third burst of 8 gives its estimate anyway.
        _ = burst(&estimator, offset: 0, delays: Array(repeating: 3_000_000, count: 8), start: 10_200_000_000)
        _ = burst(&estimator, offset: 0, delays: Array(repeating: 3_000_000, count: 8), start: 10_400_000_000)
        let last = burst(&estimator, offset: 0, delays: Array(repeating: 3_000_000, count: 8), start: 10_600_000_000)
        #expect(last?.rttNs == 3_100_000)
        #expect(last?.samples == 24)
    }

    @Test func aPartlyAnsweredBurstCompletesAfterTheReplyWindow() throws {
        var estimator = ClockEstimator()
        var probes: [TimeProbe] = []
        for k in 0..<ClockEstimator.burstSize {
            let probe = estimator.probeDue(now: UInt64(k) * 20_000_000, wallNs: Int64(k) * 20_000_000)
            probes.append(try #require(probe))
        }
        let p = probes[3]
        estimator.receive(TimeReply(echoing: p, t1: p.t0 + 7, t2: p.t0 + 7), t3: p.t0 + 10)
        #expect(estimator.completedEstimate(now: 200_000_000) == nil)  // others may still answer
        let completed = estimator.completedEstimate(now: 140_000_000 + ClockEstimator.replyWindowNs)
        let estimate = try #require(completed)
        #expect(estimate.samples == 1)
        #expect(estimate.offsetNs == 2)  // ((7) + (7 - 10)) / 2
    }

    @Test(arguments: [false, true])
    func replyFramesDecodeInTheSplitAndCompactForms(compact: Bool) throws {
        let context = try ZMQContext()
        let pull = try testSocket(context, .pair), push = try testSocket(context, .pair)
        defer { push.close(); pull.close() }
        try pull.bind("inproc://clock-reply-\(compact)")
        try push.connect("inproc://clock-reply-\(compact)")
        let reply = TimeReply(echoing: TimeProbe(probeID: 42, t0: 1), t1: 2, t2: 3)
        var payload = [UInt8](repeating: 0, count: 32)
        payload.withUnsafeMutableBytes { reply.encode(into: $0.baseAddress!) }
        try payload.withUnsafeBytes {
            try MessageFraming.sendExtension(
                kind: TransportKind.timeReply, sequence: 7, timestampNs: 3, payload: $0, routingID: nil, compact: compact, on: push)
        }
        let parts = try pull.receiveMultipart()
        #expect(parts.count == 2)
        #expect(parts.first?.bytes.count == (compact ? 32 : 40))
        let header = try #require(parts.first?.bytes), body = try #require(parts.last?.bytes)
        let inbound = try header.withUnsafeBytes { h in
            try MessageFraming.decode(
                header: h, payload: body.withUnsafeBytes { FrameBuffer(copying: $0) }, extraParts: 0, maxFrameSize: 1 << 20,
                acceptCompact: compact)
        }
        guard case .timeReply(let decoded) = inbound else {
            Issue.record("decoded as \(inbound)")
            return
        }
        #expect(decoded == reply)
        // The one-part form (header and payload in one part) decodes too; a wrong payload size is skipped.
        if !compact {
            let whole = header + body
            let one = try whole.withUnsafeBytes {
                try MessageFraming.decode(header: $0, payload: nil, extraParts: 0, maxFrameSize: 1 << 20)
            }
            guard case .timeReply(let same) = one else {
                Issue.record("one-part form decoded as \(one)")
                return
            }
            #expect(same == reply)
            var short = header
            short[12] = 24  // payload_length 24: a reply of the wrong size
            let odd = try (short + body.prefix(24)).withUnsafeBytes {
                try MessageFraming.decode(header: $0, payload: nil, extraParts: 0, maxFrameSize: 1 << 20)
            }
            guard case .ignorable(let kind) = odd else {
                Issue.record("a 24-byte reply decoded as \(odd)")
                return
            }
            #expect(kind == TransportKind.timeReply)
        }
    }
}
