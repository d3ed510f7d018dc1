/// The publisher's frames handed over ahead of their time (`HandOffItem.due`): held until due, each
/// source's in hand-off order (a source's later frame waits for its earlier one even when due first),
/// and at most `capacity` at once (the oldest goes early beyond that). The engine asks it what to
/// send now and when to wake next; it holds no socket and no clock of its own.
struct DueTimeSchedule {
    /// The most frames held at once (the hand-off queue's capacity).
    let capacity: Int
    private var scheduled: [HandOffItem] = []
    /// Scratch that keeps its capacity: no allocation on the path of a paced frame.
    private var releasing: [HandOffItem] = []
    private var heldSources: [UInt32] = []

    init(capacity: Int, sources: Int) {
        self.capacity = capacity
        scheduled.reserveCapacity(capacity)
        releasing.reserveCapacity(capacity)
        heldSources.reserveCapacity(max(1, sources))
    }

    var isEmpty: Bool { scheduled.isEmpty }
    var count: Int { scheduled.count }

    /// Whether `item` must wait: it is due later, or an earlier frame of its source still waits.
    func mustWait(_ item: HandOffItem, now: UInt64) -> Bool {
        item.due > now || (!scheduled.isEmpty && scheduled.contains { $0.frame.header.sourceID == item.frame.header.sourceID })
    }

    /// Keeps `item` until its time. - Returns: the oldest held frame when the schedule was full (to
    /// be sent now), else nil.
    mutating func hold(_ item: HandOffItem) -> HandOffItem? {
        let evicted = scheduled.count >= capacity ? scheduled.removeFirst() : nil
        scheduled.append(item)
        return evicted
    }

    /// Hands `send` every held frame that is due at `now`, each source's in order; the rest stay.
    mutating func release(now: UInt64, _ send: (HandOffItem) -> Void) {
        swap(&scheduled, &releasing)
        heldSources.removeAll(keepingCapacity: true)
        for item in releasing {
            let source = item.frame.header.sourceID
            if item.due > now || heldSources.contains(source) {
                scheduled.append(item)
                if !heldSources.contains(source) { heldSources.append(source) }
            } else {
                send(item)
            }
        }
        releasing.removeAll(keepingCapacity: true)
    }

    /// When the first held frame of some source is due (a source's later frames wait for its first,
    /// so only the first of each counts), or nil when none is held.
    mutating func earliestDue() -> UInt64? {
        heldSources.removeAll(keepingCapacity: true)
        var earliest: UInt64?
        for item in scheduled where !heldSources.contains(item.frame.header.sourceID) {
            heldSources.append(item.frame.header.sourceID)
            earliest = min(earliest ?? .max, item.due)
        }
        return earliest
    }
}
