import Foundation
import Synchronization

/// A publisher's side of discovery (docs/PROTOCOL.md §9): a thread that listens on the group for
/// queries and answers each one its description matches, unicast to the querier, at most
/// `answersPerSecond` a second (a burst of `answerBurst`); queries that do not parse are ignored.
/// A publisher bound to loopback answers on loopback only: only queries sent from this host (from
/// 127.0.0.0/8 or one of its own addresses; its answers go back to that address, so never leave it).
public final class DiscoveryAnnouncer: Sendable {
    /// The answers' rate limit: a token bucket of `answerBurst`, refilled at this rate.
    public static let answersPerSecond = 10.0
    public static let answerBurst = 20.0

    private let state: Mutex<PublisherDescription>
    private let stopping = Atomic<Bool>(false)
    private let answered = Atomic<Int>(0)
    private let ignored = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    /// Queries answered and ignored (malformed, not matching, from outside loopback, over the rate limit).
    public var counts: (answered: Int, ignored: Int) { (answered.load(ordering: .relaxed), ignored.load(ordering: .relaxed)) }

    /// Starts answering.
    /// - Throws: `DiscoverySocketError` when the socket cannot be made or bound (the port is taken
    ///   by a program that does not share it), or the group cannot be joined on any interface.
    public init(settings: DiscoverySettings, loopbackOnly: Bool, description: PublisherDescription) throws(DiscoverySocketError) {
        state = Mutex(description)
        let socket = try DiscoverySocket()
        try socket.set(SOL_SOCKET, SO_REUSEADDR, 1)
        try socket.set(Int32(IPPROTO_IP), IP_MULTICAST_ALL, 0)
        try socket.set(Int32(IPPROTO_IP), IP_MULTICAST_TTL, Int32(settings.ttl))
        guard let group = DiscoverySocket.ipv4(settings.group) else { throw DiscoverySocketError("bad group \(settings.group)") }
        // Bound to the group: unicast datagrams to the port are not taken.
        try socket.bind(address: group, port: settings.port)
        var joined = Set<DiscoverySocket.Interface>()
        Self.join(socket, group, &joined)
        guard !joined.isEmpty else { throw DiscoverySocketError("no interface that is up carries multicast") }
        let joinedAtStart = joined
        started.store(true, ordering: .releasing)
        Thread.detachNewThread { [self] in
            nameCurrentThread("tributary-announce")
            self.serve(socket, group, loopbackOnly, joinedAtStart)
            self.finished.signal()
        }
    }

    deinit { stop() }

    /// Replaces the description (a publisher whose sources change).
    public func update(_ description: PublisherDescription) { state.withLock { $0 = description } }

    /// Stops answering (waits for the thread, at most a second).
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing), started.load(ordering: .acquiring) else { return }
        _ = finished.wait(timeout: .now() + 1)
    }

    private static func join(_ socket: DiscoverySocket, _ group: in_addr, _ joined: inout Set<DiscoverySocket.Interface>) {
        for interface in DiscoverySocket.multicastInterfaces() where !joined.contains(interface) {
            if socket.join(group, on: interface) { joined.insert(interface) }
        }
    }

    private func serve(_ socket: DiscoverySocket, _ group: in_addr, _ loopbackOnly: Bool, _ joinedAtStart: Set<DiscoverySocket.Interface>) {
        var joined = joinedAtStart
        var tokens = Self.answerBurst
        var last = ContinuousClock.now
        var lastJoin = last
        var ownAddresses = DiscoverySocket.ownAddresses()
        while !stopping.load(ordering: .acquiring) {
            let now = ContinuousClock.now
            // Interfaces that came up since are joined every few seconds.
            if now - lastJoin > .seconds(5) {
                lastJoin = now
                Self.join(socket, group, &joined)
                ownAddresses = DiscoverySocket.ownAddresses()
            }
            guard let (bytes, from) = socket.receive(limit: DiscoveryLimits.maxQueryBytes, milliseconds: 200) else { continue }
            let elapsed = ContinuousClock.now - last
            last = ContinuousClock.now
            tokens = min(
                Self.answerBurst,
                tokens + (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18) * Self.answersPerSecond)
            guard !loopbackOnly || DiscoverySocket.isLoopback(from.sin_addr) || ownAddresses.contains(from.sin_addr.s_addr),
                let query = try? DiscoveryQuery(datagram: bytes)
            else {
                ignored.add(1, ordering: .relaxed)
                continue
            }
            let description = state.withLock { $0 }
            guard query.match?.matches(description) ?? true, tokens >= 1 else {
                ignored.add(1, ordering: .relaxed)
                continue
            }
            tokens -= 1
            if socket.send(DiscoveryAnswer(queryID: query.id, publisher: description).encoded(), to: from) {
                answered.add(1, ordering: .relaxed)
            }
        }
    }
}

extension DiscoveryAnnouncer {
    /// Starts answering for a publisher bound to `endpoint`, as `serve` and the C and Python publishers
    /// do: on loopback only when the endpoint is a loopback address (PROTOCOL.md §9).
    /// - Returns: the announcer and whether it answers on loopback only; nil when `endpoint` is not a
    ///   tcp:// endpoint other hosts could reach (ipc://, inproc://).
    /// - Throws: `DiscoverySocketError` as `init`.
    public static func announcing(
        endpoint: String, name: String, authentication: DiscoveryAuthentication, sources: [DiscoveredSource],
        settings: DiscoverySettings
    ) throws(DiscoverySocketError) -> (announcer: DiscoveryAnnouncer, loopbackOnly: Bool)? {
        guard let bound = PublisherAddress.tcpHostPort(endpoint) else { return nil }
        let loopback = bound.host == "localhost" || bound.host.hasPrefix("127.") || bound.host == "::1"
        let description = PublisherDescription(
            name: name, host: PublisherDescription.localHostName(), address: endpoint, authentication: authentication,
            sources: sources)
        return (try DiscoveryAnnouncer(settings: settings, loopbackOnly: loopback, description: description), loopback)
    }

    /// Replaces the sources of the description (a publisher that adds or reconfigures sources).
    public func update(sources: [DiscoveredSource]) {
        state.withLock { $0.sources = sources }
    }
}
