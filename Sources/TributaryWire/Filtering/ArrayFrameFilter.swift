/// Applies an array filter to an array frame, producing exactly the frame docs/PROTOCOL.md §6
/// specifies (shared by the publisher and subscribers).
public enum ArrayFrameFilter {
    /// The kept index range of a dimension of `count` elements, or nil when it is empty.
    static func kept(_ range: IndexRange, count: Int) -> Range<Int>? {
        let from = Int(range.from)
        let to = min(Int(range.to), count - 1)
        guard from <= to else { return nil }
        return from..<(to + 1)
    }

    /// The frame to send for `request` (id `filterID`) given the array frame `view`, or nil when the
    /// filter does not apply to the element type or selects nothing. The output's origin is the
    /// input's origin plus the first kept row and column.
    public static func apply(_ request: ArrayFilterRequest, filterID: UInt32, to view: ArrayView, of frame: Frame) -> Frame? {
        guard request.elementType == view.elementType,
            let rows = kept(request.rows, count: view.rowCount),
            let columns = kept(request.columns, count: view.columnCount)
        else { return nil }
        var header = frame.header
        header.filterID = filterID
        if rows.count == view.rowCount && columns.count == view.columnCount {
            return frame.withHeader(header)
        }
        let elements: ArrayElements
        func pick<T: ArrayElementValue>(_ type: T.Type) -> [T] {
            view.withElements(type) { all in
                var out: [T] = []
                out.reserveCapacity(rows.count * columns.count)
                for r in rows {
                    out.append(contentsOf: all[(r * view.columnCount + columns.lowerBound)..<(r * view.columnCount + columns.upperBound)])
                }
                return out
            }
        }
        switch view.elementType {
        case .double: elements = .double(pick(Double.self))
        case .float: elements = .float(pick(Float.self))
        case .int32: elements = .int32(pick(Int32.self))
        case .int16: elements = .int16(pick(Int16.self))
        case .int64: elements = .int64(pick(Int64.self))
        case .bool: elements = .bool(pick(UInt8.self).map { $0 != 0 })
        case .string:
            var strings: [String] = []
            strings.reserveCapacity(rows.count * columns.count)
            for r in rows { for c in columns { strings.append(view.string(row: r, column: c)) } }
            elements = .string(strings)
        }
        let array = Array2D(
            rowCount: rows.count, columnCount: columns.count,
            rowOrigin: view.rowOrigin &+ UInt32(rows.lowerBound),
            columnOrigin: view.columnOrigin &+ UInt32(columns.lowerBound), elements: elements)
        return Frame(encoding: .array(array), header: header)
    }
}
