import Testing

@testable import TributaryTransport

/// The publisher-wide budget for replies to peers without a session (a token bucket), without sockets.
@Suite struct ReplyBudgetTests {
    @Test func aBurstIsAllowedThenRepliesAreSuppressedAndCounted() {
        var budget = ReplyBudget()
        let now: UInt64 = 5_000_000_000
        for _ in 0..<Int(ReplyBudget.burst) {
            let taken = budget.take(now: now)
            #expect(taken)
        }
        let v1 = budget.take(now: now)
        #expect(!v1)
        let v2 = budget.take(now: now)
        #expect(!v2)
        #expect(budget.suppressed == 2)
    }

    @Test func theBudgetRefillsAtItsRateAndNoFurtherThanTheBurst() {
        var budget = ReplyBudget()
        var now: UInt64 = 1_000_000_000
        while budget.take(now: now) {}
        // 1/16 s later: one more reply, not two.
        now += 62_500_000
        let v3 = budget.take(now: now)
        #expect(v3)
        let v4 = budget.take(now: now)
        #expect(!v4)
        // An hour idle refills to the burst only.
        now += 3_600_000_000_000
        var taken = 0
        while budget.take(now: now) { taken += 1 }
        #expect(taken == Int(ReplyBudget.burst))
    }
}
