import Testing

@testable import TributaryTransport

/// A session's flood and backlog guards, without sockets: frames per window, and how far the peer
/// gets ahead of the publisher's reading.
@Suite struct FloodGuardTests {
    let limits = FloodGuard.Limits(framesPerWindow: 3, maxUnreadBytes: 10_000)

    @Test func theFrameAfterTheLimitWithinAWindowTrips() {
        var guardian = FloodGuard()
        let start: UInt64 = 1_000_000_000
        for k in 0..<3 {
            let tripped = guardian.frameRead(wireBytes: 10, now: start + UInt64(k), limits: limits)
            #expect(!tripped)
        }
        let v1 = guardian.frameRead(wireBytes: 10, now: start + 3, limits: limits)
        #expect(v1)
        #expect(guardian.bytesRead == 40)
    }

    @Test func aNewWindowStartsTheCountAgain() {
        var guardian = FloodGuard()
        var now: UInt64 = 1_000_000_000
        for _ in 0..<10 {
            for _ in 0..<3 {
                let tripped = guardian.frameRead(wireBytes: 1, now: now, limits: limits)
                #expect(!tripped)
            }
            now += FloodGuard.Limits.windowNs
        }
    }

    @Test func theBacklogIsWhatArrivedLessWhatWasReadLessTheSlackNeverBelowZero() {
        var guardian = FloodGuard()
        // The first check sets the baseline only.
        let v2 = guardian.backlogExceeded(received: 1_000_000, limits: limits)
        #expect(!v2)
        #expect(guardian.unreadBytes == 0)
        // 6 000 bytes arrive, 1 000 are read: 5 000 - 4 096 slack ahead.
        _ = guardian.frameRead(wireBytes: 1_000, now: 0, limits: limits)
        let v3 = guardian.backlogExceeded(received: 1_006_000, limits: limits)
        #expect(!v3)
        #expect(guardian.unreadBytes == 5_000 - FloodGuard.Limits.slackPerCheck)
        // More read than arrived (what was ahead is caught up): zero, not negative.
        _ = guardian.frameRead(wireBytes: 50_000, now: 0, limits: limits)
        let v4 = guardian.backlogExceeded(received: 1_006_000, limits: limits)
        #expect(!v4)
        #expect(guardian.unreadBytes == 0)
        // Nothing read while 20 000 arrive: over the bound.
        let v5 = guardian.backlogExceeded(received: 1_026_000, limits: limits)
        #expect(v5)
        #expect(guardian.unreadBytes == 20_000 - FloodGuard.Limits.slackPerCheck)
    }

    @Test func hostileCountsSaturateInsteadOfTrapping() {
        var guardian = FloodGuard()
        _ = guardian.backlogExceeded(received: 0, limits: limits)
        let v6 = guardian.backlogExceeded(received: .max, limits: limits)
        #expect(v6)
        _ = guardian.frameRead(wireBytes: .max, now: 0, limits: limits)
        _ = guardian.frameRead(wireBytes: .max, now: 0, limits: limits)
        #expect(guardian.bytesRead == .max)
        let v7 = guardian.backlogExceeded(received: 0, limits: limits)
        #expect(!v7)
        #expect(guardian.unreadBytes == 0)
    }

    @Test func limitsFromTheConfiguration() {
        var configuration = PublisherConfiguration(endpoint: "inproc://x", apiKey: "k")
        configuration.maxInboundFramesPerSecond = 5
        configuration.maxUnreadBytesPerSession = 1
        configuration.maxInboundFrameSize = 4_096
        let limits = FloodGuard.Limits(configuration)
        #expect(limits.framesPerWindow == 1)  // never 0: 5 a second is below one per 100 ms window
        #expect(limits.maxUnreadBytes == 8_192)  // at least two frames of the largest size
        configuration.maxInboundFrameSize = .max
        #expect(FloodGuard.Limits(configuration).maxUnreadBytes == .max)
    }

    @Test(arguments: [(0, false, 2), (255, false, 257), (256, false, 265), (222, true, 257), (223, true, 265)])
    func wireBytesCountZMTPFraming(size: Int, curve: Bool, expected: Int64) {
        #expect(FloodGuard.wireBytes(ofPart: size, curve: curve) == expected)
    }
}
