/// The publisher's lossless frames that wait (docs/PROTOCOL.md §4.5): those waiting for every
/// eligible subscriber to have credit, oldest first, and the count of those the sessions hold for
/// their full queues (`Session.heldLossless`, sent before anything else lossless goes to them).
/// Socket-free: the engine decides who is eligible and sends; this keeps the order and the counts
/// that `HandOffQueue.setLosslessBacklog` hands back to the sources.
struct LosslessBacklog {
    /// Past this many sent frames the queue's storage is compacted even if frames still wait.
    static let compactionThreshold = 1_024

    private var items: [HandOffItem] = []
    /// The first waiting frame in `items` (those before it were sent).
    private var head = 0
    /// Frames the sessions hold for a full queue, all sessions together.
    private(set) var heldFrames = 0

    /// - Parameter capacity: the hand-off queue's capacity (reserved: no allocation on the path of
    ///   a lossless frame).
    init(capacity: Int) {
        items.reserveCapacity(capacity)
    }

    /// Lossless work is waiting: frames for credit, or held frames for room.
    var isWaiting: Bool { head < items.count || heldFrames > 0 }
    /// Frames waiting for credit.
    var waitingForCredit: Int { items.count - head }
    /// Everything lossless not yet queued for a subscriber.
    var total: Int { waitingForCredit + heldFrames }

    /// Queues a lossless frame behind the others.
    mutating func append(_ item: HandOffItem) {
        items.append(item)
    }

    /// The oldest frame waiting for credit.
    var first: HandOffItem? { head < items.count ? items[head] : nil }

    /// The oldest frame was sent to every eligible session.
    mutating func removeFirst() {
        precondition(head < items.count, "no lossless frame waits")
        head += 1
    }

    /// Lets go of the storage of frames already sent, when enough of them accumulated or none waits.
    mutating func compact() {
        guard head > Self.compactionThreshold || head == items.count else { return }
        items.removeFirst(head)
        head = 0
    }

    /// A session held `count` more frames for its full queue.
    mutating func held(_ count: Int) { heldFrames += count }

    /// `count` held frames were sent, or their session went.
    mutating func released(_ count: Int) {
        precondition(count <= heldFrames, "more held frames released than held")
        heldFrames -= count
    }
}
