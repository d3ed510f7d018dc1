import TributaryWire

/// The text form of properties in the C API (`tributary_publisher_set_properties`): one property
/// per line, `KEY=VALUE` for the source, `CH:KEY=VALUE` for the channel whose index is CH (digits).
enum PropertyLines {
    /// - Throws: `APIError(.argument)` naming the line and what is wrong.
    static func parse(_ text: String) throws(APIError) -> SourceProperties {
        var properties = SourceProperties()
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            if line.isEmpty { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw APIError(.argument, "properties line \(number + 1): no '='; expected KEY=VALUE or CH:KEY=VALUE")
            }
            var key = line[..<equals]
            let value = String(line[line.index(after: equals)...])
            var channel: UInt32?
            if let colon = key.firstIndex(of: ":"), !key[..<colon].isEmpty, key[..<colon].allSatisfy({ $0.isASCII && $0.isNumber }) {
                guard let index = UInt32(key[..<colon]), Int(index) < WireLimits.maxChannels else {
                    throw APIError(.argument, "properties line \(number + 1): channel index '\(key[..<colon])' is not in 0...65534")
                }
                channel = index
                key = key[key.index(after: colon)...]
            }
            guard !key.isEmpty else { throw APIError(.argument, "properties line \(number + 1): an empty key") }
            let item = Property(String(key), value)
            let one =
                channel.map { SourceProperties(channels: [ChannelProperties(index: $0, properties: [item])]) }
                ?? SourceProperties(source: [item])
            properties = properties.setting(one)
        }
        return properties
    }
}
