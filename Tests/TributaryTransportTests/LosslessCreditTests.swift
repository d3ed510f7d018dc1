import Testing

@testable import TributaryTransport

/// A session's lossless credit, without sockets: it saturates when granted and never goes below zero.
@Suite struct LosslessCreditTests {
    @Test func creditIsTakenOneFrameAtATimeAndNeverGoesNegative() {
        var credit = LosslessCredit()
        #expect(credit.isEmpty)
        let v1 = credit.take()
        #expect(!v1)
        #expect(credit.available == 0)
        credit.grant(2)
        let v2 = credit.take()
        #expect(v2)
        let v3 = credit.take()
        #expect(v3)
        let v4 = credit.take()
        #expect(!v4)
        #expect(credit.available == 0 && credit.isEmpty)
    }

    @Test func grantsWithoutEndSaturate() {
        var credit = LosslessCredit()
        for _ in 0..<4 { credit.grant(.max) }
        #expect(credit.available == 4 * UInt64(UInt32.max))
        var nearlyFull = LosslessCredit(available: .max - 1)
        nearlyFull.grant(5)
        #expect(nearlyFull.available == .max)
        let v5 = nearlyFull.take()
        #expect(v5)
        #expect(nearlyFull.available == UInt64.max - 1)
    }
}
