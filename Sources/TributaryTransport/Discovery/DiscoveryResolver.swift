import Foundation

/// A publisher that answered a query.
public struct DiscoveredPublisher: Sendable, Hashable {
    /// Its description, with `address` completed: a wildcard host replaced by `answeredFrom`.
    public var description: PublisherDescription
    /// The IPv4 address the answer came from.
    public var answeredFrom: String

    /// The host and port of `description.address`.
    public var hostAndPort: (host: String, port: Int)? { PublisherAddress.tcpHostPort(description.address) }
}

/// What a resolution found: the publishers, and the answers refused (malformed) with why.
public struct DiscoveryResult: Sendable {
    public var publishers: [DiscoveredPublisher]
    public var refusedAnswers: [String]
}

/// A resolver's side of discovery (docs/PROTOCOL.md §9): multicasts a query on every interface that
/// carries multicast (three times, at 0, 0.1 and 0.3 s, against loss) and gathers the answers until
/// the timeout.
public enum DiscoveryResolver {
    /// The waves of a query, in seconds from the start.
    static let waves: [Double] = [0, 0.1, 0.3]

    /// Asks the publishers on the group and returns those that answer within `timeout` seconds
    /// (0.05...3600) and match `match`, one per publisher (name, host and port), sorted by name and address.
    /// - Throws: `DiscoverySocketError` when no socket can be made or no interface can send the query.
    public static func resolve(
        _ match: DiscoveryMatch?, settings: DiscoverySettings = .standard,
        timeout: Double = 1
    ) throws(DiscoverySocketError) -> DiscoveryResult {
        guard timeout.isFinite, timeout >= 0.05, timeout <= 3_600 else {
            throw DiscoverySocketError("the timeout \(timeout) s is not in [0.05, 3600] s")
        }
        let socket = try DiscoverySocket()
        try socket.set(Int32(IPPROTO_IP), IP_MULTICAST_TTL, Int32(settings.ttl))
        try socket.set(Int32(IPPROTO_IP), IP_MULTICAST_LOOP, 1)
        try socket.bind(address: in_addr(s_addr: 0), port: 0)
        guard let group = DiscoverySocket.ipv4(settings.group) else { throw DiscoverySocketError("bad group \(settings.group)") }
        var id = UInt64.random(in: 1...UInt64.max)
        if id == 0 { id = 1 }
        let query = DiscoveryQuery(id: id, match: match).encoded()

        let start = ContinuousClock.now
        let end = start + .nanoseconds(Int64(timeout * 1e9))
        var pendingWaves = waves.filter { $0 < timeout }
        var found: [String: DiscoveredPublisher] = [:]
        var refused: [String] = []
        while true {
            let now = ContinuousClock.now
            if let wave = pendingWaves.first, now >= start + .nanoseconds(Int64(wave * 1e9)) {
                pendingWaves.removeFirst()
                let interfaces = DiscoverySocket.multicastInterfaces()
                var sent = 0
                for interface in interfaces where socket.sendMulticast(via: interface) {
                    if socket.send(query, to: group, port: settings.port) { sent += 1 }
                }
                if sent == 0 && found.isEmpty && wave == 0 {
                    throw DiscoverySocketError(
                        interfaces.isEmpty
                            ? "no interface that is up carries multicast: the query cannot be sent"
                            : "the query could not be sent on any interface (\(interfaces.map(\.name).joined(separator: ", ")))")
                }
            }
            guard now < end else { break }
            var untilNext = end - now
            if let wave = pendingWaves.first { untilNext = min(untilNext, start + .nanoseconds(Int64(wave * 1e9)) - now) }
            let ms = milliseconds(untilNext)
            guard let (bytes, from) = socket.receive(limit: DiscoveryLimits.maxAnswerBytes, milliseconds: max(1, ms)) else { continue }
            let sender = DiscoverySocket.dotted(from.sin_addr)
            let answer: DiscoveryAnswer
            do { answer = try DiscoveryAnswer(datagram: bytes) } catch {
                if refused.count < 100 { refused.append("answer from \(sender): \(error)") }
                continue
            }
            guard answer.queryID == id else { continue }
            var description = answer.publisher
            guard let (host, port) = PublisherAddress.tcpHostPort(description.address), (1...65_535).contains(port) else {
                if refused.count < 100 {
                    refused.append("answer from \(sender): the address '\(description.address)' is not tcp://HOST:PORT")
                }
                continue
            }
            if ["*", "0.0.0.0", "::", ""].contains(host) { description.address = "tcp://\(sender):\(port)" }
            guard match?.matches(description) ?? true else { continue }
            let key = "\(description.host)\u{0}\(description.name)\u{0}\(port)"
            if found[key] == nil { found[key] = DiscoveredPublisher(description: description, answeredFrom: sender) }
        }
        let publishers = found.values.sorted {
            ($0.description.name, $0.description.address) < ($1.description.name, $1.description.address)
        }
        return DiscoveryResult(publishers: publishers, refusedAnswers: refused)
    }
}
