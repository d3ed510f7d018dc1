import TributaryWire

/// Whether a hello opens a session: its API key, its timeout, its sender's clock and the session
/// table's room, checked in that order (the first failure is the refusal the peer is told), and the
/// session's timeout, bounded by the publisher's maximum. Socket-free: the engine passes what it
/// read (the key comparison, the clocks, the open sessions) and carries out the verdict.
struct HelloAdmission {
    /// The most the subscriber's clock may differ from the publisher's (nil: not checked).
    let maxClockSkew: Duration?
    /// The most sessions open at once.
    let maxSessions: Int
    /// The longest timeout a session gets, whatever its hello asks for.
    let maxTimeoutNs: UInt64

    init(maxClockSkew: Duration?, maxSessions: Int, maxSessionTimeout: Duration) {
        self.maxClockSkew = maxClockSkew
        self.maxSessions = maxSessions
        maxTimeoutNs = Self.nanoseconds(maxSessionTimeout)
    }

    init(_ configuration: PublisherConfiguration) {
        self.init(
            maxClockSkew: configuration.maxClockSkew, maxSessions: configuration.maxSessions,
            maxSessionTimeout: configuration.maxSessionTimeout)
    }

    /// - Parameters:
    ///   - keyAccepted: whether the hello's API key is the publisher's (`PublisherCore.acceptsAPIKey`).
    ///   - sentAtNs: the hello's timestamp (the subscriber's wall clock, ns since 1970).
    ///   - wallClockNs: the publisher's wall clock now.
    ///   - openSessions: the sessions open now.
    /// - Returns: the session's timeout in nanoseconds, or the error that refuses the hello.
    func admit(
        _ hello: Hello, keyAccepted: Bool, sentAtNs: Int64, wallClockNs: Int64, openSessions: Int
    ) -> Result<UInt64, ErrorReport> {
        if !keyAccepted { return .failure(ErrorReport(.wrongAPIKey, "the API key is incorrect")) }
        guard hello.timeoutSeconds.isFinite, hello.timeoutSeconds > 1 else {
            return .failure(
                ErrorReport(.wrongTimeout, "the timeout \(hello.timeoutSeconds) s is not a finite number of seconds above 1"))
        }
        if let skew = maxClockSkew {
            let difference = (Double(wallClockNs) - Double(sentAtNs)) / 1e9
            let bound = Double(skew.components.seconds) + Double(skew.components.attoseconds) / 1e18
            if abs(difference) > bound {
                return .failure(
                    ErrorReport(.wrongTimestamp, "the client's clock is \(difference) s from the publisher's; the bound is \(bound) s"))
            }
        }
        if openSessions >= maxSessions {
            return .failure(ErrorReport(.publisherFull, "the publisher has \(openSessions) sessions, its limit; try again later"))
        }
        // Lowered to the maximum before it becomes an integer: a hello may ask for 1e308 s (finite, > 1 here).
        let askedNs = hello.timeoutSeconds * 1e9
        return .success(askedNs < Double(maxTimeoutNs) ? UInt64(askedNs) : maxTimeoutNs)
    }

    /// A duration in nanoseconds, 0 when negative and `UInt64.max` when it does not fit.
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        // Checked on the whole duration: a negative one under a second has seconds 0 and negative attoseconds.
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? UInt64.max : whole &+ UInt64(attoseconds / 1_000_000_000)
    }
}
