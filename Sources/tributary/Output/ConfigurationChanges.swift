import TributaryText
import TributaryWire

/// A source's configuration changing during a recording: when, to what, and what differs from the
/// configuration before it (what `inspect` lists under the source).
struct ConfigurationChange {
    /// The `timestamp_ns` and `sequence` of the configuration frame that made the change.
    var timeNs: Int64
    var sequence: UInt64
    /// The configuration from then on.
    var configuration: Configuration
    /// What differs, one phrase each: rate, channels added or removed, names, units, ranges, device.
    var changes: [String]

    /// The changes in the configuration frames of one source, in recording order: each frame that
    /// differs from the one before it (a configuration sent again unchanged, as at each welcome, is none).
    static func list(_ frames: [(timeNs: Int64, sequence: UInt64, configuration: Configuration)]) -> [ConfigurationChange] {
        var out: [ConfigurationChange] = []
        for (before, after) in zip(frames, frames.dropFirst()) {
            let changes = differences(before.configuration, after.configuration)
            if !changes.isEmpty {
                out.append(
                    ConfigurationChange(
                        timeNs: after.timeNs, sequence: after.sequence, configuration: after.configuration, changes: changes))
            }
        }
        return out
    }

    /// The one sampling rate of a configuration's channels, or nil (none, or several).
    static func rate(_ c: Configuration) -> Double? {
        guard let first = c.channels.first?.samplingRate else { return nil }
        return c.channels.allSatisfy({ same($0.samplingRate, first) }) ? first : nil
    }

    /// Equal, or both NaN (a value read from a file may be NaN; it has not changed).
    private static func same(_ a: Double, _ b: Double) -> Bool { a == b || (a.isNaN && b.isNaN) }

    private static func hz(_ rate: Double) -> String { "\(rate) Hz" }

    private static func quoted(_ text: String) -> String { "\"\(text.terminalSafe)\"" }

    /// What differs between two configurations of one source, in words.
    static func differences(_ a: Configuration, _ b: Configuration) -> [String] {
        var out: [String] = []
        if a.deviceName != b.deviceName { out.append("device name \(quoted(a.deviceName)) -> \(quoted(b.deviceName))") }
        if a.deviceType != b.deviceType { out.append("device type \(quoted(a.deviceType)) -> \(quoted(b.deviceType))") }
        let rateA = rate(a), rateB = rate(b)
        let oneRate = rateA != nil && rateB != nil
        if let rateA, let rateB, !same(rateA, rateB) { out.append("rate \(hz(rateA)) -> \(hz(rateB))") }
        let old = Dictionary(a.channels.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
        let new = Dictionary(b.channels.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
        let describe = { (c: ChannelConfiguration) in "\(c.index) \(quoted(c.description)) [\(c.unit.terminalSafe)]" }
        let added = b.channels.filter { old[$0.index] == nil }, removed = a.channels.filter { new[$0.index] == nil }
        if !added.isEmpty || !removed.isEmpty || a.channels.map(\.index) != b.channels.map(\.index) {
            var text =
                "channels \(indexRanges(Set(a.channels.map(\.index)))) -> \(indexRanges(Set(b.channels.map(\.index))))"
                + " (\(a.channels.count) -> \(b.channels.count))"
            if !added.isEmpty { text += ", added " + added.map(describe).joined(separator: ", ") }
            if !removed.isEmpty { text += ", removed " + removed.map(describe).joined(separator: ", ") }
            out.append(text)
        }
        for c in b.channels {
            guard let o = old[c.index] else { continue }
            if o.description != c.description { out.append("channel \(c.index) name \(quoted(o.description)) -> \(quoted(c.description))") }
            if o.unit != c.unit { out.append("channel \(c.index) unit \(quoted(o.unit)) -> \(quoted(c.unit))") }
            if !oneRate, !same(o.samplingRate, c.samplingRate) {
                out.append("channel \(c.index) rate \(hz(o.samplingRate)) -> \(hz(c.samplingRate))")
            }
            if !same(o.minValue, c.minValue) || !same(o.maxValue, c.maxValue) {
                out.append("channel \(c.index) range \(o.minValue)...\(o.maxValue) -> \(c.minValue)...\(c.maxValue)")
            }
            if o.direction != c.direction { out.append("channel \(c.index) direction \(o.direction) -> \(c.direction)") }
        }
        if a.lines != b.lines { out.append("digital lines \(a.lines.count) -> \(b.lines.count)") }
        return out
    }
}
