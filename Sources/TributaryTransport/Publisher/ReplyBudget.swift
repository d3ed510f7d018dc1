/// The publisher-wide budget for replies to peers without a session (refusals and the answers to
/// whatever such a peer keeps sending): a token bucket of `burst` replies refilled at `rate` a
/// second, so that nothing a peer sends before it has a session is amplified (docs/PROTOCOL.md
/// §4.3). Socket-free; lives on the publisher's loop thread.
struct ReplyBudget {
    /// The most replies in a burst.
    static let burst = 32.0
    /// Replies a second, for all peers without a session together.
    static let rate = 16.0

    private(set) var tokens = Self.burst
    private var updatedNs: UInt64 = 0
    /// Replies the budget refused.
    private(set) var suppressed: UInt64 = 0

    /// Takes one reply from the budget at `now` (monotonic nanoseconds). - Returns: false when the
    /// budget is spent (counted in `suppressed`).
    mutating func take(now: UInt64) -> Bool {
        let elapsed = Double(now &- updatedNs) / 1e9
        updatedNs = now
        tokens = min(Self.burst, tokens + elapsed * Self.rate)
        guard tokens >= 1 else {
            suppressed &+= 1
            return false
        }
        tokens -= 1
        return true
    }
}
