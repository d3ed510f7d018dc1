import CSocketControl
import Foundation

/// The TCP connections of the publisher's ROUTER, as its socket monitor reports them, and what each
/// has done: opened a session, been refused, or nothing yet. Lives on the publisher's loop thread.
///
/// libzmq 4.3 gives a ROUTER no way to drop one peer, and holds for every connection whatever that
/// peer sends, authenticated or not (the ROUTER reads without a high-water mark: see
/// `ZMQRouterSettings.receiveHighWaterMark`). This table is how the publisher bounds that
/// (docs/PROTOCOL.md §4.8): it counts the connections without a session and closes the excess at
/// once; closes those that send no acceptable hello in time, that were refused, that keep sending
/// after a refusal, or that send more bytes than a hello may take; and tells the engine when a
/// session's connection is gone so that the session goes with it.
///
/// A connection is closed by making the kernel drop whatever its peer still sends (a socket filter)
/// and `shutdown(2)` on its descriptor: libzmq reads what was already queued, sees the end of the
/// stream and tears the connection down itself (the descriptor stays libzmq's to close). The
/// descriptor is only touched while the table knows it to be open — the monitor reports a
/// disconnection before libzmq closes the descriptor, and the table reads every pending event
/// before it acts — and only if the descriptor's peer is still the one recorded when it was
/// accepted, so a descriptor number reused by a newer connection is never shut down by mistake.
final class PeerConnections {
    enum State: Equatable {
        /// Connected, no session yet.
        case pending
        /// A session is open on this connection.
        case session(UInt64)
        /// Its hello was refused (or it broke the protocol without a session): closed at `closeAtNs`,
        /// once the error and close frames had time to leave.
        case refused(closeAtNs: UInt64)
    }

    struct Connection {
        let fd: Int32
        let peer: String
        let acceptedNs: UInt64
        var state: State
        /// The connection's received-byte count when it last became sessionless (what it sends
        /// without a session is measured from here).
        var bytesBaseline: Int64 = 0
        /// Messages read from it since it was refused.
        var messagesAfterRefusal = 0
        /// Whether the kernel drops what its peer sends (`silence`).
        var silenced = false
    }

    private(set) var connections: [Int32: Connection] = [:]
    let maxPending: Int
    let helloDeadlineNs: UInt64
    /// What a connection may send while it has no session (a hello, or whatever comes before its
    /// refusal is read); beyond it the connection is closed at the next `closeOverdue`.
    let maxBytesWithoutSession: Int64
    /// How long a refused connection stays open for its error and close frames to leave.
    static let refusalGraceNs: UInt64 = 500_000_000
    /// Messages a refused peer may still send (frames it had in flight) before it is closed at once.
    static let messagesAfterRefusalAllowed = 64

    init(maxPending: Int, helloDeadlineNs: UInt64, maxBytesWithoutSession: Int64) {
        self.maxPending = maxPending
        self.helloDeadlineNs = helloDeadlineNs
        self.maxBytesWithoutSession = maxBytesWithoutSession
    }

    /// Connections without a session (pending or refused).
    var pendingCount: Int {
        var count = 0
        for connection in connections.values where !connection.hasSession { count += 1 }
        return count
    }

    /// A connection was accepted (monitor event). Closes it at once when the pending limit is reached.
    func accepted(fd: Int32, now: UInt64) {
        let peer = Self.peerName(of: fd) ?? ""
        if pendingCount >= maxPending {
            Self.shutDown(fd, expectedPeer: peer)
            // Left out of the table: its disconnection event will find nothing to forget.
            return
        }
        connections[fd] = Connection(fd: fd, peer: peer, acceptedNs: now, state: .pending)
    }

    /// A connection closed (monitor event): returns the session that was open on it, if any.
    func disconnected(fd: Int32) -> UInt64? {
        guard let connection = connections.removeValue(forKey: fd) else { return nil }
        if case .session(let id) = connection.state { return id }
        return nil
    }

    /// The state of the connection a message arrived on (nil: not a known TCP connection, e.g. inproc).
    func state(of fd: Int32?) -> State? {
        guard let fd else { return nil }
        return connections[fd]?.state
    }

    func openedSession(_ id: UInt64, on fd: Int32?) {
        guard let fd, connections[fd] != nil else { return }
        connections[fd]!.state = .session(id)
    }

    /// The session on `fd` ended while the connection stays (a close, an error): the connection is
    /// pending again and must open a new session within the hello deadline, counted from now.
    func endedSession(on fd: Int32?, refused: Bool, now: UInt64) {
        guard let fd, let old = connections[fd] else { return }
        connections[fd] = Connection(
            fd: fd, peer: old.peer, acceptedNs: now,
            state: refused ? .refused(closeAtNs: now + Self.refusalGraceNs) : .pending,
            bytesBaseline: max(0, tributary_tcp_bytes_received(fd)))
    }

    /// A message from a refused connection: true when it has now sent more than it may have had in
    /// flight at its refusal (it is not waiting for its answer), and was silenced.
    func messageAfterRefusal(on fd: Int32?, now: UInt64) -> Bool {
        guard let fd, connections[fd] != nil else { return false }
        connections[fd]!.messagesAfterRefusal += 1
        guard connections[fd]!.messagesAfterRefusal > Self.messagesAfterRefusalAllowed else { return false }
        silence(fd, now: now)
        return true
    }

    /// A flooding peer: from now on the kernel drops what it sends, and the connection is refused
    /// (closed after the grace period, so that the error and close already queued can still leave).
    func silence(_ fd: Int32?, now: UInt64) {
        guard let fd, let connection = connections[fd], !connection.silenced else { return }
        guard !connection.peer.isEmpty, Self.peerName(of: fd) == connection.peer else { return }
        _ = tributary_drop_input(fd)
        connections[fd]!.silenced = true
        if case .refused = connection.state { return }
        connections[fd]!.state = .refused(closeAtNs: now + Self.refusalGraceNs)
    }

    /// Marks a connection without a session as refused: it is closed after a short grace period.
    func refused(_ fd: Int32?, now: UInt64) {
        guard let fd, let connection = connections[fd], !connection.hasSession else { return }
        if case .refused = connection.state { return }
        connections[fd]!.state = .refused(closeAtNs: now + Self.refusalGraceNs)
    }

    /// Closes refused connections whose grace has passed, pending ones past the hello deadline, and
    /// any without a session that received more than `maxBytesWithoutSession`. Call only after every
    /// queued monitor event has been read.
    func closeOverdue(now: UInt64) {
        var overdue: [Connection] = []
        for connection in connections.values where !connection.hasSession {
            // Bytes the kernel received, whether or not libzmq has handed them to the publisher yet
            // (a peer whose messages libzmq does not deliver, e.g. under a duplicate routing id).
            let flooding = tributary_tcp_bytes_received(connection.fd) - connection.bytesBaseline > maxBytesWithoutSession
            switch connection.state {
            case .session: continue
            case .pending:
                if flooding || now &- connection.acceptedNs > helloDeadlineNs { overdue.append(connection) }
            case .refused(let closeAt):
                if flooding || now >= closeAt { overdue.append(connection) }
            }
        }
        for connection in overdue {
            // Forgotten now; the disconnection event that follows finds nothing.
            connections[connection.fd] = nil
            Self.shutDown(connection.fd, expectedPeer: connection.peer)
        }
    }

    /// "address:port" of the peer of a TCP socket, nil when the descriptor is not a connected socket.
    static func peerName(of fd: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var port = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let ok = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo(
                    $0, length, &host, socklen_t(host.count), &port, socklen_t(port.count),
                    NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard ok == 0 else { return nil }
        func text(_ c: [CChar]) -> String { String(decoding: c.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return text(host) + ":" + text(port)
    }

    /// Shuts a connection down if its descriptor still leads to `expectedPeer`. Without the filter a
    /// peer that keeps sending would keep the connection open: Linux queues data that arrives after
    /// `shutdown`, and libzmq goes on reading and decoding it.
    static func shutDown(_ fd: Int32, expectedPeer: String) {
        guard !expectedPeer.isEmpty, peerName(of: fd) == expectedPeer else { return }
        _ = tributary_drop_input(fd)
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }
}

extension PeerConnections.Connection {
    var hasSession: Bool {
        if case .session = state { return true }
        return false
    }
}
