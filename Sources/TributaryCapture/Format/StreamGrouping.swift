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
    private var groupOf: [UInt64: Int32] = [:]
    /// Bytes of each format's stream (index `SampleFormat.rawValue - 1`).
    private(set) var totals = [0, 0, 0]

    mutating func reset() {
        rows.removeAll(keepingCapacity: true)
        groups.removeAll(keepingCapacity: true)
        groupOf.removeAll(keepingCapacity: true)
        for f in totals.indices { totals[f] = 0 }
    }

    /// Adds a row (rows of no samples may be passed; they are ignored).
    /// - Parameter format: the sample format's raw value (1 … 3).
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
        guard !rows.isEmpty else { return }
        for row in rows {
            if let g = groupOf[row.key] {
                groups[Int(g)].bytes += row.length
            } else {
                groupOf[row.key] = Int32(groups.count)
                groups.append(Group(key: row.key, bytes: row.length, next: 0))
            }
        }
        // Groups are few (distinct channels per format), rows many: sort the groups, renumber them.
        groups.sort { $0.key < $1.key }
        for g in groups.indices {
            groupOf[groups[g].key] = Int32(g)
            let format = Int(groups[g].key >> 32) - 1
            groups[g].next = totals[format]
            totals[format] += groups[g].bytes
        }
        for i in rows.indices {
            let g = Int(groupOf[rows[i].key]!)
            rows[i].grouped = groups[g].next
            groups[g].next += rows[i].length
        }
    }
}
