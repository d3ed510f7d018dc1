/// The first frame a subscriber sends: who it is and how it wants the session run.
/// The client's clock is the header's `timestamp_ns`.
public struct Hello: Sendable, Hashable {
    /// Seconds without traffic after which the session counts as lost; SCCT requires > 1.
    public var timeoutSeconds: Double
    /// When true the publisher sends only the sources selected with `selectSources` (none at first).
    public var sourceFilterEnabled: Bool
    public var apiKey: String
    /// The client's name or description, shown in the publisher's subscriber list.
    public var clientDescription: String

    public init(apiKey: String, clientDescription: String, timeoutSeconds: Double = 10, sourceFilterEnabled: Bool = false) {
        self.apiKey = apiKey
        self.clientDescription = clientDescription
        self.timeoutSeconds = timeoutSeconds
        self.sourceFilterEnabled = sourceFilterEnabled
    }

    var contentLength: Int { 16 + encodedSize(apiKey) + encodedSize(clientDescription) }

    func write(_ w: inout PayloadWriter) {
        w.write(timeoutSeconds)
        w.write(UInt8(sourceFilterEnabled ? 1 : 0))
        w.skip(7)
        w.write(string: apiKey)
        w.write(string: clientDescription)
    }

    static func read(_ r: inout PayloadReader) throws(WireError) -> Hello {
        let timeout = try r.f64("hello.timeout")
        let enabled = try readBool(&r, "hello.source_filter_enabled")
        try r.skip(7, "hello.reserved")
        let key = try r.readString("hello.api_key")
        let description = try r.readString("hello.description")
        return Hello(apiKey: key, clientDescription: description, timeoutSeconds: timeout, sourceFilterEnabled: enabled)
    }
}

/// A source of the publisher: its id and description.
public struct SourceInfo: Sendable, Hashable {
    public var id: UInt32
    public var description: String

    public init(id: UInt32, description: String) {
        self.id = id
        self.description = description
    }
}

/// The publisher's answer to an accepted hello; one configuration frame per source follows it.
public struct Welcome: Sendable, Hashable {
    /// Identifies the session in the publisher's logs and subscriber list.
    public var sessionID: UInt64
    public var publisherDescription: String
    public var sources: [SourceInfo]

    public init(sessionID: UInt64, publisherDescription: String, sources: [SourceInfo]) {
        self.sessionID = sessionID
        self.publisherDescription = publisherDescription
        self.sources = sources
    }

    var contentLength: Int {
        8 + encodedSize(publisherDescription) + 4 + sources.reduce(0) { $0 + 4 + encodedSize($1.description) }
    }

    func write(_ w: inout PayloadWriter) {
        w.write(sessionID)
        w.write(string: publisherDescription)
        w.write(UInt32(sources.count))
        for s in sources {
            w.write(s.id)
            w.write(string: s.description)
        }
    }

    static func read(_ r: inout PayloadReader) throws(WireError) -> Welcome {
        let session = try r.read(UInt64.self, "welcome.session_id")
        let description = try r.readString("welcome.description")
        let count = try r.readCount("welcome.source_count", elementSize: 8, limit: WireLimits.maxChannels)
        var sources: [SourceInfo] = []
        sources.reserveCapacity(count)
        for _ in 0..<count {
            let id = try r.read(UInt32.self, "source.id")
            sources.append(SourceInfo(id: id, description: try r.readString("source.description")))
        }
        return Welcome(sessionID: session, publisherDescription: description, sources: sources)
    }
}

/// Frames the publisher had to drop for this subscriber: sequence numbers
/// `firstMissingSequence ..< firstMissingSequence + missingCount` will never arrive.
public struct Gap: Sendable, Hashable {
    public var firstMissingSequence: UInt64
    public var missingCount: UInt64

    public init(firstMissingSequence: UInt64, missingCount: UInt64) {
        self.firstMissingSequence = firstMissingSequence
        self.missingCount = missingCount
    }

    var contentLength: Int { 16 }

    func write(_ w: inout PayloadWriter) {
        w.write(firstMissingSequence)
        w.write(missingCount)
    }

    static func read(_ r: inout PayloadReader) throws(WireError) -> Gap {
        let first = try r.read(UInt64.self, "gap.first_missing_sequence")
        return Gap(firstMissingSequence: first, missingCount: try r.read(UInt64.self, "gap.missing_count"))
    }
}

/// The end of a session, sent by either side: 0 for a normal close, else an error code.
public struct Close: Sendable, Hashable {
    public var code: ErrorCode
    public var reason: String

    public init(code: ErrorCode = ErrorCode(rawValue: 0), reason: String = "") {
        self.code = code
        self.reason = reason
    }

    var contentLength: Int { CodedText.contentLength(reason) }

    func write(_ w: inout PayloadWriter) { CodedText.write(code.rawValue, reason, into: &w) }

    static func read(_ r: inout PayloadReader) throws(WireError) -> Close {
        let (code, reason) = try CodedText.read(
            UInt32.self, &r, codeField: "close.code", textField: "close.reason", limit: WireLimits.maxStringLength)
        return Close(code: ErrorCode(rawValue: code), reason: reason)
    }
}

/// A list of u32 ids: u32 count, then the ids (source selection).
struct IDList {
    static func contentLength(_ ids: [UInt32]) -> Int { 4 + 4 * ids.count }

    static func write(_ ids: [UInt32], _ w: inout PayloadWriter) {
        w.write(UInt32(ids.count))
        for id in ids { w.write(id) }
    }

    static func read(_ r: inout PayloadReader, _ field: String) throws(WireError) -> [UInt32] {
        let count = try r.readCount(field + "_count", elementSize: 4, limit: WireLimits.maxChannels)
        var ids: [UInt32] = []
        ids.reserveCapacity(count)
        for _ in 0..<count { ids.append(try r.read(UInt32.self, field)) }
        return ids
    }
}

func readBool(_ r: inout PayloadReader, _ field: String) throws(WireError) -> Bool {
    let at = r.absolutePosition
    let raw = try r.read(UInt8.self, field)
    guard raw <= 1 else { throw WireError(.invalidValue, field: field, offset: at, detail: "\(raw); expected 0 or 1") }
    return raw == 1
}
