#if canImport(TributaryWire)
    import TributaryWire
#endif

extension ErrorReport {
    /// The start of the message of the error 5 a Subject reports when the publisher closed the session
    /// with code 0 (it is stopping, or its replay has ended).
    static let publisherClosedPrefix = "the publisher closed the session"

    /// True when this is how a Subject reports a normal end of the session by the publisher (a close
    /// with code 0: it stopped, or its replay ended), as opposed to a broken connection or a refusal.
    /// Both are error 5 (lost connection) in SCCT's terms; applications that record or print a stream
    /// use this to end without reporting a failure.
    public var isNormalCloseByPublisher: Bool {
        code == .lostConnection && message.hasPrefix(Self.publisherClosedPrefix)
    }

    /// The close a normal end by the publisher stands for (code 0 with the publisher's reason), or nil
    /// when this is not one: what applications print or store instead of an error 5.
    public var publisherClose: Close? {
        guard isNormalCloseByPublisher else { return nil }
        var reason = message.dropFirst(Self.publisherClosedPrefix.count)
        if reason.hasPrefix(": ") { reason = reason.dropFirst(2) }
        return Close(reason: String(reason))
    }
}
