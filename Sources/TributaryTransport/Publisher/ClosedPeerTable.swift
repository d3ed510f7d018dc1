import TributaryWire

/// Why each recently refused or ended peer has no session, to tell it again if it keeps talking:
/// at most once a second per peer (`mayAnswer`), for a minute, and at most `capacity` peers (when
/// full, the half that expires first goes; its peers are answered again, still within the
/// publisher-wide `ReplyBudget`). Socket-free; lives on the publisher's loop thread.
struct ClosedPeerTable {
    struct ClosedPeer: Equatable {
        var code: ErrorCode
        var reason: String
        var lastAnsweredNs: UInt64
        var expiresNs: UInt64
    }

    /// The most peers remembered.
    static let capacity = 4_096
    /// How long a peer is remembered.
    static let lifetimeNs: UInt64 = 60_000_000_000
    /// The least time between two answers to the same peer.
    static let answerIntervalNs: UInt64 = 1_000_000_000

    private(set) var peers: [RoutingKey: ClosedPeer] = [:]

    var isEmpty: Bool { peers.isEmpty }
    var count: Int { peers.count }

    subscript(_ key: RoutingKey) -> ClosedPeer? { peers[key] }

    /// Remembers why `key` has no session (`answered`: whether the error just went out; if it did
    /// not, the next frame from the peer may be answered at once).
    mutating func remember(_ key: RoutingKey, _ report: ErrorReport, now: UInt64, answered: Bool) {
        if peers.count >= Self.capacity {
            let sorted = peers.sorted { $0.value.expiresNs < $1.value.expiresNs }
            for (old, _) in sorted.prefix(Self.capacity / 2) { peers[old] = nil }
        }
        peers[key] = ClosedPeer(
            code: report.code, reason: report.message, lastAnsweredNs: answered ? now : 0,
            expiresNs: now &+ Self.lifetimeNs)
    }

    /// Whether `key` may be answered again at `now` (its last answer is a second old).
    func mayAnswer(_ key: RoutingKey, now: UInt64) -> Bool {
        guard let peer = peers[key] else { return false }
        return now &- peer.lastAnsweredNs >= Self.answerIntervalNs
    }

    /// `key` was answered at `now`: returns what it was told (nil when the table does not know it).
    mutating func answered(_ key: RoutingKey, now: UInt64) -> ErrorReport? {
        guard peers[key] != nil else { return nil }
        peers[key]!.lastAnsweredNs = now
        return ErrorReport(peers[key]!.code, peers[key]!.reason)
    }

    /// A session opened for `key`: nothing to remember any more.
    mutating func forget(_ key: RoutingKey) { peers[key] = nil }

    /// Drops the peers whose time has passed (the housekeeping's occasional sweep).
    mutating func expire(now: UInt64) {
        if !peers.isEmpty { peers = peers.filter { $0.value.expiresNs > now } }
    }
}
