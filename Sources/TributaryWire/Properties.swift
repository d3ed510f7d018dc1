/// One free-form key/value property of a source or a channel (a sensor's serial number, a
/// calibration date, a subject id: LSL's `desc`, TDMS custom properties).
public struct Property: Sendable, Hashable {
    public var key: String
    public var value: String

    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}

/// The properties of one channel, named by its index in the source's configuration.
public struct ChannelProperties: Sendable, Hashable {
    public var index: UInt32
    public var properties: [Property]

    public init(index: UInt32, properties: [Property]) {
        self.index = index
        self.properties = properties
    }
}

/// The properties of one source and of its channels: the payload of a properties frame (extension
/// kind 129, docs/PROTOCOL.md §5.19), sent right after each configuration frame of a source that has
/// properties. Bounded (`PropertyLimits`); keys are unique within the source and within each channel.
public struct SourceProperties: Sendable, Hashable {
    /// The source's own properties, in the publisher's order.
    public var source: [Property]
    /// Properties of channels, in increasing channel index, each index at most once; channels
    /// without properties are left out.
    public var channels: [ChannelProperties]

    public init(source: [Property] = [], channels: [ChannelProperties] = []) {
        self.source = source
        self.channels = channels
    }

    /// No property at all.
    public var isEmpty: Bool { source.isEmpty && channels.allSatisfy(\.properties.isEmpty) }

    /// The properties of the channel with configuration index `index` (empty if none).
    public func channel(_ index: UInt32) -> [Property] {
        channels.first { $0.index == index }?.properties ?? []
    }

    /// The same properties with channels sorted by index and empty channel entries left out (the
    /// form that is sent).
    public var normalized: SourceProperties {
        SourceProperties(source: source, channels: channels.filter { !$0.properties.isEmpty }.sorted { $0.index < $1.index })
    }

    /// Checks the bounds of `PropertyLimits`, unique keys and unique channel indexes.
    /// - Returns: nil when they hold, else what is wrong and where ("channel 3: key \"x\" …").
    public func violation() -> String? {
        if let problem = Self.violation(source) { return "source: " + problem }
        guard channels.count <= PropertyLimits.maxChannelEntries else {
            return "\(channels.count) channels with properties; at most \(PropertyLimits.maxChannelEntries)"
        }
        var seen = Set<UInt32>()
        for entry in channels {
            guard seen.insert(entry.index).inserted else { return "channel \(entry.index) has two entries" }
            if let problem = Self.violation(entry.properties) { return "channel \(entry.index): " + problem }
        }
        let total = contentLength
        guard total <= PropertyLimits.maxTotalBytes else {
            return "the properties take \(total) bytes encoded; at most \(PropertyLimits.maxTotalBytes)"
        }
        return nil
    }

    static func violation(_ list: [Property]) -> String? {
        guard list.count <= PropertyLimits.maxPerObject else {
            return "\(list.count) properties; at most \(PropertyLimits.maxPerObject)"
        }
        var keys = Set<String>()
        for p in list {
            let keyBytes = p.key.utf8.count
            guard keyBytes >= 1, keyBytes <= PropertyLimits.maxKeyBytes else {
                return "key \"\(p.key.prefix(40))\" has \(keyBytes) bytes; keys have 1 to \(PropertyLimits.maxKeyBytes)"
            }
            guard p.value.utf8.count <= PropertyLimits.maxValueBytes else {
                return "the value of \"\(p.key)\" has \(p.value.utf8.count) bytes; at most \(PropertyLimits.maxValueBytes)"
            }
            guard keys.insert(p.key).inserted else { return "key \"\(p.key)\" appears twice" }
        }
        return nil
    }

    var contentLength: Int {
        Self.listLength(source) + 4 + channels.reduce(0) { $0 + 4 + Self.listLength($1.properties) }
    }

    private static func listLength(_ list: [Property]) -> Int {
        list.reduce(4) { $0 + encodedSize($1.key) + encodedSize($1.value) }
    }

    func write(_ w: inout PayloadWriter) {
        Self.write(source, &w)
        w.write(UInt32(channels.count))
        for entry in channels {
            w.write(entry.index)
            Self.write(entry.properties, &w)
        }
    }

    private static func write(_ list: [Property], _ w: inout PayloadWriter) {
        w.write(UInt32(list.count))
        for p in list {
            w.write(string: p.key)
            w.write(string: p.value)
        }
    }

    static func read(_ r: inout PayloadReader) throws(WireError) -> SourceProperties {
        guard r.remaining - 7 <= PropertyLimits.maxTotalBytes else {
            throw WireError(
                .countTooLarge, field: "properties.payload_length", offset: r.absolutePosition,
                detail: "\(r.remaining) bytes; properties take at most \(PropertyLimits.maxTotalBytes)")
        }
        let source = try readList(&r, "properties.source")
        // Each channel entry takes at least 8 bytes (index and an empty count).
        let count = try r.readCount("properties.channel_count", elementSize: 8, limit: PropertyLimits.maxChannelEntries)
        var channels: [ChannelProperties] = []
        channels.reserveCapacity(count)
        var previous: UInt32? = nil
        for _ in 0..<count {
            let at = r.absolutePosition
            let index = try r.read(UInt32.self, "properties.channel.index")
            if let previous, index <= previous {
                throw WireError(
                    .invalidValue, field: "properties.channel.index", offset: at,
                    detail: "channel \(index) after channel \(previous); entries are in increasing index")
            }
            previous = index
            channels.append(ChannelProperties(index: index, properties: try readList(&r, "properties.channel")))
        }
        return SourceProperties(source: source, channels: channels)
    }

    private static func readList(_ r: inout PayloadReader, _ field: String) throws(WireError) -> [Property] {
        // Each property takes at least 9 bytes (two lengths and a one-byte key).
        let count = try r.readCount(field + ".count", elementSize: 9, limit: PropertyLimits.maxPerObject)
        var list: [Property] = []
        list.reserveCapacity(count)
        var keys = Set<String>()
        for _ in 0..<count {
            let at = r.absolutePosition
            let key = try r.readString(field + ".key", limit: PropertyLimits.maxKeyBytes)
            guard !key.isEmpty else { throw WireError(.invalidValue, field: field + ".key", offset: at, detail: "an empty key") }
            guard keys.insert(key).inserted else {
                throw WireError(.invalidValue, field: field + ".key", offset: at, detail: "key \"\(key)\" appears twice")
            }
            let value = try r.readString(field + ".value", limit: PropertyLimits.maxValueBytes)
            list.append(Property(key, value))
        }
        return list
    }
}

/// The bounds on properties (docs/PROTOCOL.md §5.19), checked by senders and receivers alike.
public enum PropertyLimits {
    /// Properties of the source, or of one channel.
    public static let maxPerObject = 1_024
    /// Bytes of UTF-8 in a key (a key is never empty).
    public static let maxKeyBytes = 256
    /// Bytes of UTF-8 in a value.
    public static let maxValueBytes = 16_384
    /// Channel entries in one properties frame (the channel limit of a configuration).
    public static let maxChannelEntries = WireLimits.maxChannels
    /// Bytes of the encoded properties (the payload before padding): 1 MiB.
    public static let maxTotalBytes = 1 << 20
}

extension SourceProperties {
    /// These properties with `other`'s set over them: a key `other` gives replaces this one's (in
    /// place), a new key is added after the others; channels likewise, by index.
    public func setting(_ other: SourceProperties) -> SourceProperties {
        var result = self
        result.source = Self.merge(source, other.source)
        for entry in other.channels {
            if let k = result.channels.firstIndex(where: { $0.index == entry.index }) {
                result.channels[k].properties = Self.merge(result.channels[k].properties, entry.properties)
            } else {
                result.channels.append(entry)
            }
        }
        return result.normalized
    }

    private static func merge(_ base: [Property], _ over: [Property]) -> [Property] {
        var result = base
        for p in over {
            if let k = result.firstIndex(where: { $0.key == p.key }) { result[k].value = p.value } else { result.append(p) }
        }
        return result
    }
}
