/// Where each analog row of a chunk goes in its numeric stream (docs/CAPTURE.md §4.3): the rows of
/// a stream are grouped by channel index, groups in increasing channel index, and within a group
/// in the order the rows were walked (frame order, then row order). Each channel's samples are then
/// contiguous for the whole chunk, so delta coding and bit-shuffle see one long smooth signal per
/// channel instead of short runs that change amplitude every few hundred samples.
///
/// Writer and reader both feed it the rows in walk order and get the same offsets back. Storage is
/// kept across `reset`, so a steady stream of similar chunks allocates nothing.
struct StreamGrouping {
    /// One analog row with samples, in walk order.
    struct Row {
        /// `format << 32 | channel_index`: sorting by it gives format, then channel index.
        var key: UInt64
        /// Bytes of the row's samples (> 0).
        var length: Int
        /// Caller's position for the row (writer: offset in the frame-order stream; reader: offset in the frames).
        var position: Int
        /// Offset of the row in its format's grouped stream, set by `finish`.
        var grouped: Int
    }

    private struct Group {
        var key: UInt64
        var bytes: Int
        var next: Int
    }

    private(set) var rows: [Row] = []
    private var groups: [Group] = []
    /// Each row's group, as numbered in walk order by `finish`'s first pass.
    private var rowGroup: [Int32] = []
    /// A group's place once the groups are sorted, by its walk-order number, and the walk-order keys.
    private var sortedPlace: [Int32] = []
    private var walkKeys: [UInt64] = []
    /// The group of (format, channel) for channels below `directChannels`, by `format × directChannels
    /// + channel` (-1: none yet); `touched` lists the slots to clear. Rows are thousands a chunk and
    /// groups a handful: a hash lookup per row was a few per cent of reading a 1 KiB-frame capture.
    private var direct: [Int32] = []
    private var touched: [Int] = []
    /// The groups of channels at or above `directChannels`.
    private var groupOf: [UInt64: Int32] = [:]
    private static let directChannels = 1_024
    /// Bytes of each format's stream (index `SampleFormat.rawValue - 1`).
    private(set) var totals = [0, 0, 0, 0]

    mutating func reset() {
        rows.removeAll(keepingCapacity: true)
        groups.removeAll(keepingCapacity: true)
        groupOf.removeAll(keepingCapacity: true)
        clearDirect()
        for f in totals.indices { totals[f] = 0 }
    }

    private mutating func clearDirect() {
        for slot in touched { direct[slot] = -1 }
        touched.removeAll(keepingCapacity: true)
    }

    /// Adds a row (rows of no samples may be passed; they are ignored).
    /// - Parameter format: the sample format's raw value (1 … 4).
    @inline(__always)
    mutating func add(format: UInt8, channel: UInt32, length: Int, position: Int) {
        guard length > 0 else { return }
        rows.append(Row(key: UInt64(format) << 32 | UInt64(channel), length: length, position: position, grouped: 0))
    }

    /// Bytes of each channel group of a format's stream, in stream order (after `finish`): the
    /// segments the entropy coder models separately.
    func groupLengths(format: UInt8) -> [Int] {
        groups.filter { $0.key >> 32 == UInt64(format) }.map(\.bytes)
    }

    /// Each channel group of a format's stream, in stream order (after `finish`): its key, and the
    /// byte range it occupies in the stream.
    func groupRanges(format: UInt8) -> [(key: UInt64, start: Int, bytes: Int)] {
        var start = 0
        return groups.filter { $0.key >> 32 == UInt64(format) }.map { group in
            defer { start += group.bytes }
            return (group.key, start, group.bytes)
        }
    }

    /// Computes every row's `grouped` offset and the per-format totals.
    mutating func finish() {
        for f in totals.indices { totals[f] = 0 }
        groups.removeAll(keepingCapacity: true)
        groupOf.removeAll(keepingCapacity: true)
        clearDirect()
        guard !rows.isEmpty else { return }
        if direct.isEmpty { direct = [Int32](repeating: -1, count: 5 * Self.directChannels) }
        rowGroup.removeAll(keepingCapacity: true)
        rowGroup.reserveCapacity(rows.count)
        for row in rows {
            let format = Int(row.key >> 32), channel = Int(row.key & 0xFFFF_FFFF)
            let g: Int32
            if format < 5 && channel < Self.directChannels {
                let slot = format * Self.directChannels + channel
                if direct[slot] >= 0 {
                    g = direct[slot]
                } else {
                    g = Int32(groups.count)
                    direct[slot] = g
                    touched.append(slot)
                    groups.append(Group(key: row.key, bytes: 0, next: 0))
                }
            } else if let known = groupOf[row.key] {
                g = known
            } else {
                g = Int32(groups.count)
                groupOf[row.key] = g
                groups.append(Group(key: row.key, bytes: 0, next: 0))
            }
            groups[Int(g)].bytes += row.length
            rowGroup.append(g)
        }
        // Groups are few (distinct channels per format), rows many: sort the groups, renumber them.
        walkKeys.removeAll(keepingCapacity: true)
        for group in groups { walkKeys.append(group.key) }
        groups.sort { $0.key < $1.key }
        sortedPlace.removeAll(keepingCapacity: true)
        sortedPlace.append(contentsOf: repeatElement(0, count: groups.count))
        for g in groups.indices {
            let format = Int(groups[g].key >> 32) - 1
            groups[g].next = totals[format]
            totals[format] += groups[g].bytes
        }
        for (old, key) in walkKeys.enumerated() {
            // Keys are distinct, so the sorted place of each is found by binary search.
            var low = 0, high = groups.count - 1
            while low < high {
                let middle = (low + high) / 2
                if groups[middle].key < key { low = middle + 1 } else { high = middle }
            }
            sortedPlace[old] = Int32(low)
        }
        for i in rows.indices {
            let g = Int(sortedPlace[Int(rowGroup[i])])
            rows[i].grouped = groups[g].next
            groups[g].next += rows[i].length
        }
    }
}
