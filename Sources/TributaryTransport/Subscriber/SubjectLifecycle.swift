import TributaryWire

/// A Subject's session state machine, without sockets: opening → open → (ended) → waiting to
/// reconnect → opening again, or closed; the application's blocked `open` while the first attempt
/// runs; the deadlines of an attempt, of a reconnection's delay and of a new connection for a hello
/// that was lost. `SubjectEngine` tells it what happened and carries out what it answers (sockets,
/// callbacks); the reconnect policy decides whether and when to try again.
struct SubjectLifecycle {
    enum Phase {
        case closed
        /// Hello sent; `waiter` is the blocked `open` call (nil for a reconnection attempt).
        case opening(deadline: UInt64, waiter: OpenWaiter?, attempt: Int)
        case open
        case waitingToReconnect(until: UInt64, attempt: Int)
    }

    /// What follows a session's end or a failed opening attempt.
    enum Next: Equatable {
        /// The blocked `open` fails with the error (the lifecycle is closed).
        case failOpen(OpenWaiter)
        /// A reconnection is scheduled.
        case reconnecting
        /// No more attempts: closed. `announceError`: a reconnection attempt failed (the error that
        /// ended the session was delivered already; this one was not).
        case ended(announceError: Bool)

        static func == (a: Next, b: Next) -> Bool {
            switch (a, b) {
            case (.failOpen(let x), .failOpen(let y)): x === y
            case (.reconnecting, .reconnecting): true
            case (.ended(let x), .ended(let y)): x == y
            default: false
            }
        }
    }

    /// What the housekeeping has to do now.
    enum Due: Equatable {
        case nothing
        /// The attempt's deadline passed without a welcome.
        case openingTimedOut
        /// Open a new connection for the attempt (its first one closed before the welcome).
        case reopen
        /// The session is open: liveness, credit, probes.
        case open
        /// A reconnection's delay passed: the new attempt began (connect now).
        case attempt
    }

    let policy: ReconnectPolicy?
    private(set) var phase = Phase.closed
    /// When to open a new connection for an attempt whose connection closed before the welcome.
    private(set) var reopenAtNs: UInt64?

    init(policy: ReconnectPolicy?) {
        self.policy = policy
    }

    var isOpen: Bool { if case .open = phase { true } else { false } }
    var isOpening: Bool { if case .opening = phase { true } else { false } }
    /// The application's blocked `open`, while its attempt runs.
    var waiter: OpenWaiter? { if case .opening(_, let waiter, _) = phase { waiter } else { nil } }

    /// The application opens: the first attempt, due within `timeoutNs`.
    mutating func open(waiter: OpenWaiter, now: UInt64, timeoutNs: UInt64) {
        phase = .opening(deadline: now &+ timeoutNs, waiter: waiter, attempt: 0)
    }

    /// A new connection is made for the attempt: any pending reopen is done.
    mutating func connecting() {
        reopenAtNs = nil
    }

    /// The attempt's connection closed before the welcome: a new one at `at`.
    mutating func reopen(at: UInt64) {
        reopenAtNs = at
    }

    /// The welcome arrived while opening: the session is open. - Returns: the blocked `open` to
    /// complete, `.some(nil)` for a reconnection, nil when not opening (nothing changes).
    mutating func welcomed() -> OpenWaiter?? {
        guard case .opening(_, let waiter, _) = phase else { return nil }
        phase = .open
        return .some(waiter)
    }

    /// Closed without further attempts (the application's close, an abandoned open).
    mutating func close() {
        phase = .closed
    }

    /// The attempt in progress failed with `error`. - Returns: nil when none is in progress.
    mutating func attemptFailed(_ error: ErrorReport, now: UInt64) -> Next? {
        guard case .opening(_, let waiter, let attempt) = phase else { return nil }
        if let waiter {
            phase = .closed
            return .failOpen(waiter)
        }
        return schedule(after: error, attempt: attempt + 1, now: now)
    }

    /// The session ended (`error` nil: the application closed it). `reconnect`: the error allows a
    /// new session, if the policy agrees.
    mutating func sessionEnded(_ error: ErrorReport?, reconnect: Bool, now: UInt64) -> Next {
        if reconnect, let error, policy != nil { return schedule(after: error, attempt: 1, now: now) }
        phase = .closed
        return .ended(announceError: false)
    }

    /// What is due at `now`; starts the reconnection attempt whose delay passed (due within
    /// `attemptTimeoutNs`; nil: no open parameters, nothing starts).
    mutating func tick(now: UInt64, attemptTimeoutNs: UInt64?) -> Due {
        switch phase {
        case .closed:
            return .nothing
        case .opening(let deadline, _, _):
            if now > deadline { return .openingTimedOut }
            guard let at = reopenAtNs, now >= at else { return .nothing }
            reopenAtNs = nil
            return .reopen
        case .open:
            return .open
        case .waitingToReconnect(let until, let attempt):
            guard now >= until, let attemptTimeoutNs else { return .nothing }
            phase = .opening(deadline: now &+ attemptTimeoutNs, waiter: nil, attempt: attempt)
            return .attempt
        }
    }

    private mutating func schedule(after error: ErrorReport, attempt: Int, now: UInt64) -> Next {
        guard let policy, policy.maxAttempts.map({ attempt <= $0 }) ?? true, policy.shouldReconnect(error, attempt) else {
            phase = .closed
            return .ended(announceError: attempt > 1)
        }
        phase = .waitingToReconnect(until: now &+ policy.delayNanoseconds(attempt: attempt), attempt: attempt)
        return .reconnecting
    }
}
