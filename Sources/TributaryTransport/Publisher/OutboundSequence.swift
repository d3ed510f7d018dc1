import TributaryWire

/// One session's numbering of what the publisher sends it (docs/PROTOCOL.md §4.4): the next
/// sequence number, the frames sent and dropped, and the run of dropped frames not yet announced by
/// a gap notice. A dropped frame consumes its number, is counted once, and joins the pending gap;
/// the gap notice, once queued, consumes a number of its own. Socket-free: `Session` asks it the
/// number to send under and tells it what became of the send.
struct OutboundSequence {
    /// Sequence number of the next frame sent (consumed also by dropped frames).
    private(set) var next: UInt64 = 0
    private(set) var framesSent: UInt64 = 0
    private(set) var framesDropped: UInt64 = 0
    /// The run of dropped frames not yet announced: first sequence number and count (0: none).
    private(set) var gapFirst: UInt64 = 0
    private(set) var gapCount: UInt64 = 0

    /// The gap notice to send before the next frame, if frames were dropped since the last one.
    var pendingGap: Gap? { gapCount > 0 ? Gap(firstMissingSequence: gapFirst, missingCount: gapCount) : nil }

    /// A frame went out under `next`. - Parameter consumesNumber: false for frames that carry the
    /// next number without consuming it (a properties frame, docs/PROTOCOL.md §5.19).
    mutating func sent(consumesNumber: Bool = true) {
        if consumesNumber { next &+= 1 }
        framesSent &+= 1
    }

    /// The pending gap's notice went out under `next`: the gap is announced.
    mutating func gapAnnounced() {
        next &+= 1
        framesSent &+= 1
        gapCount = 0
    }

    /// A frame was dropped (the subscriber's queue was full): its number is consumed and it joins
    /// the pending gap.
    mutating func dropped() {
        if gapCount == 0 { gapFirst = next }
        gapCount &+= 1
        next &+= 1
        framesDropped &+= 1
    }
}
