import TributaryWire

/// The publisher's `digitalOnChangeOnly`: remembers, per source, the last state of each digital
/// line sent, and tells whether a digital frame changes any of them (a frame that does not is not
/// sent). Socket-free; lives on the publisher's loop thread.
struct DigitalChangeFilter {
    /// Per source: the last state of each line.
    private(set) var lastStates: [UInt32: [Bool]] = [:]

    /// Whether `frame` (digital) changes any line relative to the last one of its source, and
    /// remembers its last states. A frame whose payload does not decode, or whose line count differs
    /// from the last one's (the first frame of a source included), counts as a change.
    mutating func changes(_ frame: Frame) -> Bool {
        guard case .digital(let view)? = try? frame.payload() else { return true }
        let source = frame.header.sourceID
        var previous = lastStates[source] ?? []
        var changed = previous.count != view.lineCount
        if changed { previous = [Bool](repeating: false, count: view.lineCount) }
        for line in 0..<view.lineCount where view.sampleCount > 0 {
            var state = previous[line]
            for sample in 0..<view.sampleCount {
                let bit = view.state(line: line, sample: sample)
                if bit != state || (changed && sample == 0) { changed = true }
                state = bit
            }
            previous[line] = state
        }
        lastStates[source] = previous
        return changed
    }
}
