/// Applies an analog filter to an analog frame, producing exactly the frame docs/PROTOCOL.md §6
/// specifies. The publisher (server side) and subscribers (client side) both call this, so a
/// subscriber can reproduce locally what the publisher sends.
public enum AnalogFrameFilter {
    /// The rows of `view` that `selection` keeps, in output order.
    public static func selectedRows(_ selection: ChannelSelection, in view: AnalogView) -> [Int] {
        switch selection {
        case .all:
            return Array(0..<view.channelCount)
        case .range(let from, let to):
            return (0..<view.channelCount).filter { (from...to).contains(view.channelIndex($0)) }
        case .list(let indexes):
            var rows: [Int] = []
            rows.reserveCapacity(indexes.count)
            for index in indexes {
                if let row = (0..<view.channelCount).first(where: { view.channelIndex($0) == index }) { rows.append(row) }
            }
            return rows
        }
    }

    /// Whether the filter applies to frames of `sourceID`.
    public static func applies(_ request: AnalogFilterRequest, toSource sourceID: UInt32) -> Bool {
        request.sources.isEmpty || request.sources.contains(sourceID)
    }

    /// The frame to send for `request` (id `filterID`) given the analog frame `view`, or nil when
    /// the filter selects no channel of it. Source matching is the caller's (see `applies`).
    ///
    /// When every row is kept in its order the payload is shared, not copied; otherwise the selected
    /// rows are copied once into a new frame. The header keeps the input's timestamp, source, flags
    /// and sequence, with `filter_id` set.
    public static func apply(_ request: AnalogFilterRequest, filterID: UInt32, to view: AnalogView, of frame: Frame) -> Frame? {
        let rows = selectedRows(request.channels, in: view)
        guard !rows.isEmpty else { return nil }
        var header = frame.header
        header.filterID = filterID
        if rows.count == view.channelCount && rows.enumerated().allSatisfy({ $0.offset == $0.element }) {
            return frame.withHeader(header)
        }
        let layout = AnalogLayout(channelCount: rows.count, sampleCount: view.sampleCount, format: view.format)
        let rowBytes = view.sampleCount * view.format.size
        return view.withSampleBytes { samples in
            Frame.analog(header: header, layout: layout, firstSample: view.firstSample) { writer in
                for (out, row) in rows.enumerated() {
                    writer.setChannelIndex(out, view.channelIndex(row))
                    if view.format.isCounts { writer.setScale(out, scale: view.scale(row), offset: view.offset(row)) }
                    if rowBytes > 0 {
                        writer.samples(channel: out).copyMemory(
                            from: UnsafeRawBufferPointer(rebasing: samples[(row * rowBytes)..<((row + 1) * rowBytes)]))
                    }
                }
            }
        }
    }
}
