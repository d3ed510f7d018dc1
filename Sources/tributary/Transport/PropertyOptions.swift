import TributaryText
import TributaryWire

/// `serve --property ID:KEY=VALUE` and `--property ID:CH:KEY=VALUE`: free-form properties of a
/// source and of its channels, by source id (docs/PROTOCOL.md §5.19).
enum PropertyOptions {
    /// Parses every --property into properties by source id, in the order given (a key given twice
    /// for one source or channel: the last value).
    /// - Throws: `UsageError` naming the option, what is wrong and the bounds.
    static func parse(_ texts: [String]) throws -> [UInt32: SourceProperties] {
        var result: [UInt32: SourceProperties] = [:]
        for text in texts {
            let (id, channel, property) = try parseOne(text)
            let item =
                channel.map { SourceProperties(channels: [ChannelProperties(index: $0, properties: [property])]) }
                ?? SourceProperties(source: [property])
            result[id] = (result[id] ?? SourceProperties()).setting(item)
        }
        for (id, properties) in result {
            if let problem = properties.violation() { throw UsageError("option --property: source \(id): \(problem)") }
        }
        return result
    }

    private static func parseOne(_ text: String) throws -> (UInt32, UInt32?, Property) {
        func fail(_ why: String) -> UsageError {
            UsageError("option --property '\(String(text.prefix(80)).terminalSafe)': \(why); expected ID:KEY=VALUE or ID:CH:KEY=VALUE")
        }
        guard let equals = text.firstIndex(of: "=") else { throw fail("no '='") }
        let value = String(text[text.index(after: equals)...])
        var target = text[..<equals]
        guard let colon = target.firstIndex(of: ":"), let id = UInt32(target[..<colon]), id > 0 else {
            throw fail("no source id (1 to \(UInt32.max)) before the first ':'")
        }
        target = target[target.index(after: colon)...]
        var channel: UInt32?
        if let second = target.firstIndex(of: ":"), !target[..<second].isEmpty, target[..<second].allSatisfy(\.isASCIIDigit) {
            guard let index = UInt32(target[..<second]), Int(index) < WireLimits.maxChannels else {
                throw fail("channel index '\(target[..<second])' is not in 0...\(WireLimits.maxChannels - 1)")
            }
            channel = index
            target = target[target.index(after: second)...]
        }
        guard !target.isEmpty else { throw fail("an empty key") }
        return (id, channel, Property(String(target), value))
    }

    /// Checks that each source given properties exists and that their channel indexes are its channels'.
    static func check(_ properties: [UInt32: SourceProperties], against configurations: [UInt32: Configuration]) throws {
        for id in properties.keys.sorted() {
            guard let configuration = configurations[id] else {
                let known = configurations.keys.sorted().map(String.init).joined(separator: ", ")
                throw UsageError("option --property: there is no source \(id) (sources: \(known.isEmpty ? "none" : known))")
            }
            let indexes = Set(configuration.channels.map(\.index))
            for entry in properties[id]!.channels where !indexes.contains(entry.index) {
                throw UsageError("option --property: source \(id) has no channel with index \(entry.index)")
            }
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
