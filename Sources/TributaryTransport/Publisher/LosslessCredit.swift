import TributaryWire

/// One session's credit for lossless frames (docs/PROTOCOL.md §4.5): what its subscriber granted and
/// the publisher has not used yet. Grants saturate (a peer may grant without end, and the count is
/// the peer's); a frame is sent only on credit taken here, so it never goes below zero.
struct LosslessCredit {
    /// Frames the publisher may still send the session.
    private(set) var available: UInt64

    init(available: UInt64 = 0) {
        self.available = available
    }

    var isEmpty: Bool { available == 0 }

    /// The subscriber granted `count` more frames.
    mutating func grant(_ count: UInt32) {
        available = available.addingSaturated(UInt64(count))
    }

    /// Uses one credit for a frame. - Returns: false (and nothing changes) when there is none.
    mutating func take() -> Bool {
        guard available > 0 else { return false }
        available -= 1
        return true
    }
}
