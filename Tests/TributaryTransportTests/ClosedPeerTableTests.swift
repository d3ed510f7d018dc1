import Testing
import TributaryWire

@testable import TributaryTransport

/// The table of peers the publisher refused or ended, without sockets: one answer a second per
/// peer, a minute's memory, and a bounded size.
@Suite struct ClosedPeerTableTests {
    func key(_ n: Int) -> RoutingKey {
        withUnsafeBytes(of: UInt32(n).littleEndian) { RoutingKey($0) }
    }

    @Test func aPeerIsAnsweredAtMostOnceASecond() throws {
        var table = ClosedPeerTable()
        let t0: UInt64 = 10_000_000_000
        table.remember(key(1), ErrorReport(.wrongAPIKey, "bad key"), now: t0, answered: true)
        #expect(!table.mayAnswer(key(1), now: t0 + 999_999_999))
        #expect(table.mayAnswer(key(1), now: t0 + 1_000_000_000))
        let v1 = table.answered(key(1), now: t0 + 1_000_000_000)
        let told = try #require(v1)
        #expect(told.code == .wrongAPIKey && told.message == "bad key")
        #expect(!table.mayAnswer(key(1), now: t0 + 1_500_000_000))
        #expect(!table.mayAnswer(key(2), now: t0 + 5_000_000_000))  // unknown: no answer from here
        let v2 = table.answered(key(2), now: t0)
        #expect(v2 == nil)
    }

    @Test func aPeerWhoseErrorDidNotLeaveMayBeAnsweredAtOnce() {
        var table = ClosedPeerTable()
        let t0: UInt64 = 10_000_000_000
        table.remember(key(1), ErrorReport(.publisherFull), now: t0, answered: false)
        #expect(table.mayAnswer(key(1), now: t0 + 1))
    }

    @Test func peersAreForgottenAfterAMinuteOrWhenTheyOpenASession() {
        var table = ClosedPeerTable()
        table.remember(key(1), ErrorReport(.wrongAPIKey), now: 0, answered: true)
        table.remember(key(2), ErrorReport(.wrongAPIKey), now: 30_000_000_000, answered: true)
        table.remember(key(3), ErrorReport(.wrongAPIKey), now: 30_000_000_000, answered: true)
        table.forget(key(3))
        table.expire(now: ClosedPeerTable.lifetimeNs)
        #expect(table[key(1)] == nil)
        #expect(table[key(2)] != nil)
        #expect(table[key(3)] == nil)
        #expect(table.count == 1)
    }

    @Test func aFullTableDropsTheHalfThatExpiresFirst() {
        var table = ClosedPeerTable()
        for n in 0..<ClosedPeerTable.capacity {
            table.remember(key(n), ErrorReport(.wrongAPIKey), now: UInt64(n), answered: true)
        }
        #expect(table.count == ClosedPeerTable.capacity)
        table.remember(key(99_999), ErrorReport(.wrongAPIKey), now: 1_000_000, answered: true)
        #expect(table.count == ClosedPeerTable.capacity / 2 + 1)
        #expect(table[key(0)] == nil)
        #expect(table[key(ClosedPeerTable.capacity / 2 - 1)] == nil)
        #expect(table[key(ClosedPeerTable.capacity / 2)] != nil)
        #expect(table[key(99_999)] != nil)
    }
}
