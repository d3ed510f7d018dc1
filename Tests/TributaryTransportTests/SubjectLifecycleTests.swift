import Testing
import TributaryWire

@testable import TributaryTransport

/// A Subject's session state machine without sockets: the first open, the end of a session, the
/// reconnection attempts and their delays, the policy's limits, and the deadlines.
@Suite struct SubjectLifecycleTests {
    let lost = ErrorReport(.lostConnection, "broke down")
    let policy = ReconnectPolicy(initialDelay: .milliseconds(100), maxDelay: .milliseconds(250), multiplier: 2, maxAttempts: 3)
    let timeout: UInt64 = 1_000_000_000

    /// A lifecycle whose first open succeeded at `t = 0`.
    func opened(_ policy: ReconnectPolicy?) -> SubjectLifecycle {
        var lifecycle = SubjectLifecycle(policy: policy)
        lifecycle.open(waiter: OpenWaiter(), now: 0, timeoutNs: timeout)
        _ = lifecycle.welcomed()
        return lifecycle
    }

    @Test func theFirstOpenCompletesItsWaiterAndAReconnectionHasNone() throws {
        var lifecycle = SubjectLifecycle(policy: policy)
        let v1 = lifecycle.welcomed()
        #expect(v1 == nil)  // not opening: nothing changes
        let waiter = OpenWaiter()
        lifecycle.open(waiter: waiter, now: 0, timeoutNs: timeout)
        #expect(lifecycle.isOpening && lifecycle.waiter === waiter)
        let v2 = lifecycle.welcomed()
        let welcomed = try #require(v2)
        #expect(welcomed === waiter && lifecycle.isOpen && lifecycle.waiter == nil)
        let v3 = lifecycle.sessionEnded(lost, reconnect: true, now: 1_000)
        #expect(v3 == .reconnecting)
        let v4 = lifecycle.tick(now: 1_000 + 100_000_000, attemptTimeoutNs: timeout)
        #expect(v4 == .attempt)
        let v5 = lifecycle.welcomed()
        let again = try #require(v5)
        #expect(again == nil && lifecycle.isOpen)
    }

    @Test func aFailedFirstOpenFailsItsWaiterAndIsNotRetried() {
        var lifecycle = SubjectLifecycle(policy: policy)
        let waiter = OpenWaiter()
        lifecycle.open(waiter: waiter, now: 0, timeoutNs: timeout)
        let v6 = lifecycle.attemptFailed(lost, now: 5)
        #expect(v6 == .failOpen(waiter))
        guard case .closed = lifecycle.phase else { Issue.record("not closed: \(lifecycle.phase)"); return }
        let v7 = lifecycle.attemptFailed(lost, now: 6)
        #expect(v7 == nil)
    }

    @Test func attemptsBackOffUpToTheMaximumDelayAndStopAfterTheLimit() {
        var lifecycle = opened(policy)
        var now: UInt64 = 1_000
        let v8 = lifecycle.sessionEnded(lost, reconnect: true, now: now)
        #expect(v8 == .reconnecting)
        // Attempt 1 after 100 ms, 2 after 200 ms, 3 after 250 ms (the maximum); then no 4th.
        for (attempt, delay) in [(1, 100_000_000), (2, 200_000_000), (3, 250_000_000)] as [(Int, UInt64)] {
            guard case .waitingToReconnect(let until, let a) = lifecycle.phase else {
                Issue.record("attempt \(attempt): \(lifecycle.phase)")
                return
            }
            #expect(a == attempt && until == now + delay)
            let v9 = lifecycle.tick(now: until - 1, attemptTimeoutNs: timeout)
            #expect(v9 == .nothing)
            let v10 = lifecycle.tick(now: until, attemptTimeoutNs: timeout)
            #expect(v10 == .attempt)
            now = until + 10
            let next = lifecycle.attemptFailed(lost, now: now)
            #expect(next == (attempt < 3 ? .reconnecting : .ended(announceError: true)))
        }
        guard case .closed = lifecycle.phase else { Issue.record("not closed: \(lifecycle.phase)"); return }
    }

    @Test func aRefusalIsNotRetriedByTheDefaultPolicy() {
        var lifecycle = opened(ReconnectPolicy())
        let v11 = lifecycle.sessionEnded(ErrorReport(.wrongAPIKey), reconnect: true, now: 0)
        #expect(v11 == .ended(announceError: false))
        #expect(!lifecycle.isOpen)
    }

    @Test func withoutAPolicyOrAnErrorOrReconnectASessionEnds() {
        var noPolicy = opened(nil)
        let v12 = noPolicy.sessionEnded(lost, reconnect: true, now: 0)
        #expect(v12 == .ended(announceError: false))
        var applicationClose = opened(policy)
        let v13 = applicationClose.sessionEnded(nil, reconnect: true, now: 0)
        #expect(v13 == .ended(announceError: false))
        var notAllowed = opened(policy)
        let v14 = notAllowed.sessionEnded(lost, reconnect: false, now: 0)
        #expect(v14 == .ended(announceError: false))
    }

    @Test func anAttemptTimesOutAfterItsDeadlineAndAReopenIsDueOnce() {
        var lifecycle = SubjectLifecycle(policy: policy)
        lifecycle.open(waiter: OpenWaiter(), now: 0, timeoutNs: timeout)
        let v15 = lifecycle.tick(now: 10, attemptTimeoutNs: timeout)
        #expect(v15 == .nothing)
        lifecycle.reopen(at: 100)
        let v16 = lifecycle.tick(now: 99, attemptTimeoutNs: timeout)
        #expect(v16 == .nothing)
        let v17 = lifecycle.tick(now: 100, attemptTimeoutNs: timeout)
        #expect(v17 == .reopen)
        let v18 = lifecycle.tick(now: 101, attemptTimeoutNs: timeout)
        #expect(v18 == .nothing)
        lifecycle.reopen(at: 200)
        lifecycle.connecting()  // a connection was made otherwise: the reopen is done
        let v19 = lifecycle.tick(now: 300, attemptTimeoutNs: timeout)
        #expect(v19 == .nothing)
        let v20 = lifecycle.tick(now: timeout, attemptTimeoutNs: timeout)
        #expect(v20 == .nothing)
        let v21 = lifecycle.tick(now: timeout + 1, attemptTimeoutNs: timeout)
        #expect(v21 == .openingTimedOut)
    }

    @Test func aWaitingReconnectionStartsOnlyWithOpenParameters() {
        var lifecycle = opened(policy)
        _ = lifecycle.sessionEnded(lost, reconnect: true, now: 0)
        let v22 = lifecycle.tick(now: 1_000_000_000, attemptTimeoutNs: nil)
        #expect(v22 == .nothing)
        let v23 = lifecycle.tick(now: 1_000_000_000, attemptTimeoutNs: timeout)
        #expect(v23 == .attempt)
        guard case .opening(let deadline, let waiter, let attempt) = lifecycle.phase else {
            Issue.record("not opening: \(lifecycle.phase)")
            return
        }
        #expect(deadline == 2_000_000_000 && waiter == nil && attempt == 1)
        let v24 = lifecycle.tick(now: 1_000_000_000, attemptTimeoutNs: timeout)
        #expect(v24 == .nothing)
    }

    @Test func delaysFromAnyPolicyAreNumbersAndNeverTrap() {
        let nan = ReconnectPolicy(initialDelay: .milliseconds(100), maxDelay: .seconds(1), multiplier: .nan)
        #expect(nan.delayNanoseconds(attempt: 2) == 1_000_000_000)
        let negative = ReconnectPolicy(initialDelay: .milliseconds(100), maxDelay: .seconds(1), multiplier: -3)
        #expect(negative.delayNanoseconds(attempt: 2) == 0)
        let huge = ReconnectPolicy(initialDelay: .zero, maxDelay: .seconds(Int64.max), multiplier: .infinity)
        #expect(huge.delayNanoseconds(attempt: 3) == UInt64.max)
        let backwards = ReconnectPolicy(initialDelay: .seconds(1), maxDelay: .seconds(-5))
        #expect(backwards.delayNanoseconds(attempt: 1) == 0)
        #expect(policy.delayNanoseconds(attempt: 1) == 100_000_000)
        #expect(policy.delayNanoseconds(attempt: Int.max) == 250_000_000)
    }
}
