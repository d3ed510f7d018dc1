/// The capture's source ids in a recording of several publishers (docs/CAPTURE.md §6, source origin,
/// "Numbering"; `tributary record A B …`):
/// each publisher's source keeps its own id unless an earlier publisher (in the order the addresses
/// were given) has it; then it gets the lowest id ≥ 1 that no source of the capture has. Source 0 (a
/// publisher's packages of no source) stays 0 for every publisher.
public struct CaptureSourceNumbering: Sendable {
    public struct Key: Hashable, Sendable {
        /// The publisher's position among the addresses.
        public var publisher: Int
        /// The publisher's id for the source.
        public var source: UInt32

        public init(publisher: Int, source: UInt32) {
            self.publisher = publisher
            self.source = source
        }
    }

    public private(set) var ids: [Key: UInt32] = [:]
    private var used: Set<UInt32> = [0]
    /// No id below it is free (where the search for the lowest free id starts).
    private var lowestFree: UInt32 = 1

    /// Numbers the sources the publishers' welcomes list (`welcomed[p]`: publisher p's source ids, in
    /// its welcome's order). First every id that no earlier publisher has is kept; then, in address
    /// order and each publisher's welcome order, each colliding one gets the lowest free id.
    /// - Returns: the numbering, and the keys in the order their origins are to be recorded (address
    ///   order, then welcome order).
    public static func plan(welcomed: [[UInt32]]) -> (CaptureSourceNumbering, [Key]) {
        var numbering = CaptureSourceNumbering()
        var order: [Key] = []
        var seen = Set<Key>()
        for (p, sources) in welcomed.enumerated() {
            for source in sources where source != 0 && seen.insert(Key(publisher: p, source: source)).inserted {
                order.append(Key(publisher: p, source: source))
                if numbering.used.insert(source).inserted { numbering.ids[Key(publisher: p, source: source)] = source }
            }
        }
        for key in order where numbering.ids[key] == nil {
            // Cannot fail here: at most 65,535 sources per welcome, far from 2^32 ids.
            if let id = numbering.takeFree() { numbering.ids[key] = id }
        }
        return (numbering, order)
    }

    /// The capture's id for publisher `publisher`'s source `source` (0 for 0); `isNew` when it was
    /// numbered just now (a source the welcome did not list). Nil when no id is free (2^32 − 1 sources).
    public mutating func id(publisher: Int, source: UInt32) -> (id: UInt32, isNew: Bool)? {
        guard source != 0 else { return (0, false) }
        let key = Key(publisher: publisher, source: source)
        if let id = ids[key] { return (id, false) }
        guard let id = used.insert(source).inserted ? source : takeFree() else { return nil }
        ids[key] = id
        return (id, true)
    }

    /// The capture ids of `publisher`'s sources numbered so far, ascending.
    public func captureIDs(publisher: Int) -> [UInt32] {
        ids.filter { $0.key.publisher == publisher }.map(\.value).sorted()
    }

    /// The lowest id ≥ 1 no source has, marked as used; nil when every id is taken.
    private mutating func takeFree() -> UInt32? {
        var candidate = lowestFree
        while used.contains(candidate) {
            guard candidate < UInt32.max else { return nil }
            candidate += 1
        }
        used.insert(candidate)
        lowestFree = candidate
        return candidate
    }
}
