import Foundation
import TributaryWire

/// Why a discovery datagram (a query or an answer, docs/PROTOCOL.md §9) was refused: what, and where.
public struct DiscoveryFormatError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The bounds of discovery datagrams (docs/PROTOCOL.md §9.4). Every field read from the network is
/// checked against them before it is kept.
public enum DiscoveryLimits {
    /// The largest query datagram read or sent, in bytes.
    public static let maxQueryBytes = 1_024
    /// The largest answer datagram read or sent, in bytes (a description that does not fit is shortened).
    public static let maxAnswerBytes = 16_384
    /// The longest text field (name, host, address, device, type, unit, channel name), in bytes once decoded.
    public static let maxTextBytes = 256
    /// The longest query text, in bytes once decoded.
    public static let maxMatchBytes = 512
    /// The most sources one answer describes.
    public static let maxSources = 256
    /// The most channels a source may declare (the count; names and units are listed only if they fit).
    public static let maxChannels = 65_535
    /// The most lines in one datagram.
    public static let maxLines = maxSources + 2
}

/// A discovery query: a resolver's question, multicast to every publisher (docs/PROTOCOL.md §9.2).
public struct DiscoveryQuery: Sendable, Hashable {
    /// Chosen at random by the resolver; answers carry it back.
    public var id: UInt64
    /// What the publisher must match to answer (nil: every publisher answers).
    public var match: DiscoveryMatch?

    public init(id: UInt64, match: DiscoveryMatch?) {
        self.id = id
        self.match = match
    }

    static let magic = "TRIBUTARY-QUERY 1"

    /// The datagram.
    public func encoded() -> [UInt8] {
        var fields = [("id", String(id))]
        if let match { fields.append(("match", match.text)) }
        return Array((Self.magic + "\n" + DiscoveryText.line("query", fields)).utf8)
    }

    /// Reads a query datagram; every field is checked.
    public init(datagram: some Collection<UInt8>) throws(DiscoveryFormatError) {
        let lines = try DiscoveryText.lines(datagram, limit: DiscoveryLimits.maxQueryBytes, magic: Self.magic, what: "query")
        guard lines.count == 1, lines[0].record == "query" else {
            throw DiscoveryFormatError("query: expected one 'query' line after the first, got \(lines.count) line(s)")
        }
        let fields = lines[0]
        id = try fields.unsigned("id", line: 2)
        if let text = try fields.text("match", line: 2, limit: DiscoveryLimits.maxMatchBytes) {
            do { match = try DiscoveryMatch(text) } catch { throw DiscoveryFormatError("query line 2: field 'match': \(error)") }
        } else {
            match = nil
        }
    }
}

/// How subscribers authenticate with a publisher.
public enum DiscoveryAuthentication: String, Sendable, Hashable, CaseIterable {
    /// The API key alone (its value is never announced).
    case key
    /// CURVE encryption and client keys, then the API key.
    case curve
}

/// One source of a publisher, as its answer describes it.
public struct DiscoveredSource: Sendable, Hashable {
    public var id: UInt32
    /// The device name (the configuration's `device_name`).
    public var device: String
    /// The device type, e.g. EEG (the configuration's `device_type`).
    public var type: String
    /// Samples per second per channel (the first analog channel's; 0 when it has none).
    public var rate: Double
    /// Analog channels.
    public var channelCount: Int
    /// The channels' names, or empty when they did not fit the answer.
    public var channelNames: [String]
    /// Each channel's unit, or empty when they did not fit the answer.
    public var units: [String]
    /// The wire's sample format (float64, float32, int16, int32), or nil when the publisher does not say.
    public var sampleType: SampleFormat?

    public init(
        id: UInt32, device: String, type: String, rate: Double, channelCount: Int, channelNames: [String],
        units: [String], sampleType: SampleFormat?
    ) {
        self.id = id
        self.device = device
        self.type = type
        self.rate = rate
        self.channelCount = channelCount
        self.channelNames = channelNames
        self.units = units
        self.sampleType = sampleType
    }

    /// The description of a publisher's source.
    public init(_ source: any Source) {
        let configuration = source.configuration
        self.init(
            id: source.info.id, device: configuration.deviceName, type: configuration.deviceType,
            rate: configuration.channels.first?.samplingRate ?? 0, channelCount: configuration.channels.count,
            channelNames: configuration.channels.map(\.description), units: configuration.channels.map(\.unit),
            sampleType: source.sampleFormat)
    }

    /// The unit every channel shares, or nil when they differ (or are not listed).
    public var unit: String? {
        guard let first = units.first, units.allSatisfy({ $0 == first }) else { return nil }
        return first
    }
}

/// What a publisher says about itself in an answer: nothing secret (no key, no subscriber).
public struct PublisherDescription: Sendable, Hashable {
    /// The publisher's name (`serve --description`).
    public var name: String
    /// The host name of its machine.
    public var host: String
    /// The endpoint to connect to, `tcp://HOST:PORT`. A wildcard host (`0.0.0.0`, `*`, `::`) stands for
    /// the address the answer came from, which the resolver puts in its place.
    public var address: String
    public var authentication: DiscoveryAuthentication
    public var sources: [DiscoveredSource]
    /// Whether the description was shortened to fit an answer (channel names and units, or sources, left out).
    public var truncated = false

    /// This machine's host name (gethostname: no resolver asked).
    public static func localHostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An answer: the description of a publisher, sent back to the resolver that asked (docs/PROTOCOL.md §9.3).
public struct DiscoveryAnswer: Sendable, Hashable {
    /// The query's id.
    public var queryID: UInt64
    public var publisher: PublisherDescription

    public init(queryID: UInt64, publisher: PublisherDescription) {
        self.queryID = queryID
        self.publisher = publisher
    }

    static let magic = "TRIBUTARY-ANSWER 1"

    /// The datagram, at most `DiscoveryLimits.maxAnswerBytes`: texts are cut to their bound, and a
    /// description too large keeps its channel counts but not the names and units, then fewer sources
    /// (`truncated=1`).
    public func encoded() -> [UInt8] {
        var description = publisher
        description.sources = Array(description.sources.prefix(DiscoveryLimits.maxSources))
        if description.sources.count < publisher.sources.count { description.truncated = true }
        var bytes = Self.encode(queryID, description)
        if bytes.count > DiscoveryLimits.maxAnswerBytes {
            description.truncated = true
            for i in description.sources.indices {
                description.sources[i].channelNames = []
                description.sources[i].units = []
            }
            bytes = Self.encode(queryID, description)
            while bytes.count > DiscoveryLimits.maxAnswerBytes, !description.sources.isEmpty {
                description.sources.removeLast()
                bytes = Self.encode(queryID, description)
            }
        }
        return bytes
    }

    private static func encode(_ queryID: UInt64, _ p: PublisherDescription) -> [UInt8] {
        var text = magic + "\n"
        var fields = [
            ("query", String(queryID)), ("name", DiscoveryText.cut(p.name)), ("host", DiscoveryText.cut(p.host)),
            ("address", DiscoveryText.cut(p.address)), ("auth", p.authentication.rawValue),
        ]
        if p.truncated { fields.append(("truncated", "1")) }
        text += DiscoveryText.line("publisher", fields)
        for s in p.sources {
            var fields = [
                ("id", String(s.id)), ("device", DiscoveryText.cut(s.device)), ("type", DiscoveryText.cut(s.type)),
                ("rate", s.rate.isFinite && s.rate >= 0 ? "\(s.rate)" : "0"),
                ("channels", String(min(max(s.channelCount, 0), DiscoveryLimits.maxChannels))),
            ]
            if let sampleType = s.sampleType { fields.append(("sample", sampleType.description)) }
            if !s.channelNames.isEmpty, s.channelNames.count == s.channelCount {
                fields.append(("names", s.channelNames.map { DiscoveryText.encode(DiscoveryText.cut($0)) }.joined(separator: ",")))
            }
            if !s.units.isEmpty, s.units.count == s.channelCount {
                fields.append(("units", s.units.map { DiscoveryText.encode(DiscoveryText.cut($0)) }.joined(separator: ",")))
            }
            text += DiscoveryText.line("source", fields, listFields: ["names", "units"])
        }
        return Array(text.utf8)
    }

    /// Reads an answer datagram; every field is checked against `DiscoveryLimits`.
    public init(datagram: some Collection<UInt8>) throws(DiscoveryFormatError) {
        let lines = try DiscoveryText.lines(datagram, limit: DiscoveryLimits.maxAnswerBytes, magic: Self.magic, what: "answer")
        guard let first = lines.first, first.record == "publisher" else {
            throw DiscoveryFormatError("answer line 2: expected the 'publisher' line")
        }
        queryID = try first.unsigned("query", line: 2)
        func required(_ key: String) throws(DiscoveryFormatError) -> String {
            guard let value = try first.text(key, line: 2, limit: DiscoveryLimits.maxTextBytes) else {
                throw DiscoveryFormatError("answer line 2: missing field '\(key)'")
            }
            return value
        }
        let authText = try required("auth")
        guard let authentication = DiscoveryAuthentication(rawValue: authText) else {
            throw DiscoveryFormatError("answer line 2: field 'auth': '\(authText)' is not key or curve")
        }
        var description = PublisherDescription(
            name: try required("name"), host: try required("host"), address: try required("address"),
            authentication: authentication, sources: [])
        description.truncated = try first.text("truncated", line: 2, limit: 1) == "1"
        guard lines.count - 1 <= DiscoveryLimits.maxSources else {
            throw DiscoveryFormatError("answer: \(lines.count - 1) sources, more than \(DiscoveryLimits.maxSources)")
        }
        var ids = Set<UInt32>()
        for (index, fields) in lines.enumerated().dropFirst() {
            let line = index + 2
            guard fields.record == "source" else {
                throw DiscoveryFormatError("answer line \(line): expected a 'source' line, got '\(fields.record)'")
            }
            let idValue = try fields.unsigned("id", line: line)
            guard idValue > 0, let id = UInt32(exactly: idValue) else {
                throw DiscoveryFormatError("answer line \(line): field 'id': \(idValue) is not a source id in 1...\(UInt32.max)")
            }
            guard ids.insert(id).inserted else { throw DiscoveryFormatError("answer line \(line): source \(id) listed twice") }
            let rateText = try fields.text("rate", line: line, limit: 32) ?? "0"
            guard let rate = Double(rateText), rate.isFinite, rate >= 0, rate <= 1e12 else {
                throw DiscoveryFormatError("answer line \(line): field 'rate': '\(rateText)' is not a rate in [0, 1e12]")
            }
            let channelValue = try fields.unsigned("channels", line: line)
            guard channelValue <= UInt64(DiscoveryLimits.maxChannels) else {
                throw DiscoveryFormatError(
                    "answer line \(line): field 'channels': \(channelValue) is more than \(DiscoveryLimits.maxChannels)")
            }
            let channels = Int(channelValue)
            var sampleType: SampleFormat?
            if let text = try fields.text("sample", line: line, limit: 16) {
                guard let format = SampleFormat.allCases.first(where: { $0.description == text }) else {
                    throw DiscoveryFormatError("answer line \(line): field 'sample': '\(text)' is not float64, float32, int16 or int32")
                }
                sampleType = format
            }
            let names = try fields.list("names", line: line, count: channels)
            let units = try fields.list("units", line: line, count: channels)
            description.sources.append(
                DiscoveredSource(
                    id: id, device: try fields.text("device", line: line, limit: DiscoveryLimits.maxTextBytes) ?? "",
                    type: try fields.text("type", line: line, limit: DiscoveryLimits.maxTextBytes) ?? "",
                    rate: rate, channelCount: channels, channelNames: names, units: units, sampleType: sampleType))
        }
        publisher = description
    }
}
