/// Which channels an analog filter keeps.
public enum ChannelSelection: Sendable, Hashable {
    /// Every channel.
    case all
    /// Channels whose configuration index lies in `from...to` (inclusive, as SCCT's selectChannelsFrom:to:).
    case range(from: UInt32, to: UInt32)
    /// The channels with these configuration indexes, in this order (scattered channels).
    case list([UInt32])
}

/// A subscriber's request for a subset of analog data (SCCT AnalogDataFilter).
///
/// The frame's header `filter_id` is the id the subscriber gives this filter: 1 for its first filter
/// request, then 2, 3, … (never reused within a session). Data produced for the filter carries that id.
public struct AnalogFilterRequest: Sendable, Hashable {
    /// The id of an existing filter this one replaces, or 0.
    public var replaces: UInt32
    public var channels: ChannelSelection
    /// Source ids whose data the filter applies to; empty: every source.
    public var sources: [UInt32]

    public init(channels: ChannelSelection = .all, sources: [UInt32] = [], replaces: UInt32 = 0) {
        self.channels = channels
        self.sources = sources
        self.replaces = replaces
    }

    /// Parses an SCCT analog query such as `1-3;0,2` (channels 1 to 3 of sources 0 and 2).
    ///
    /// - Throws: `QueryError` pointing at the offending character.
    public init(query: String) throws(QueryError) {
        var parser = QueryParser(query)
        let channelPart = try parser.parseList(allowRange: true, what: "channel")
        var sources: [UInt32] = []
        if parser.consume(";") {
            let sourcePart = try parser.parseList(allowRange: false, what: "source")
            if case .list(let ids) = sourcePart { sources = ids }
        }
        try parser.expectEnd()
        self.init(channels: channelPart, sources: sources)
    }

    /// The SCCT query string for this filter (`from-to;s1,s2` or `c1,c2;s1`).
    public var query: String {
        let channelText: String
        switch channels {
        case .all: channelText = ""
        case .range(let from, let to): channelText = "\(from)-\(to)"
        case .list(let list): channelText = list.map(String.init).joined(separator: ",")
        }
        return channelText + ";" + sources.map(String.init).joined(separator: ",")
    }

    var contentLength: Int {
        if case .list(let list) = channels { return 24 + 4 * (list.count + sources.count) }
        return 24 + 4 * sources.count
    }

    func write(_ w: inout PayloadWriter) {
        w.write(replaces)
        var list: [UInt32] = []
        switch channels {
        case .all:
            w.write(UInt8(0)); w.skip(3); w.write(UInt32(0)); w.write(UInt32(0))
        case .range(let from, let to):
            w.write(UInt8(1)); w.skip(3); w.write(from); w.write(to)
        case .list(let l):
            list = l
            w.write(UInt8(2)); w.skip(3); w.write(UInt32(0)); w.write(UInt32(0))
        }
        w.write(UInt32(list.count))
        w.write(UInt32(sources.count))
        for c in list { w.write(c) }
        for s in sources { w.write(s) }
    }

    static func read(_ r: inout PayloadReader) throws(WireError) -> AnalogFilterRequest {
        let replaces = try r.read(UInt32.self, "analog_filter.replaces")
        let modeAt = r.absolutePosition
        let mode = try r.read(UInt8.self, "analog_filter.mode")
        try r.skip(3, "analog_filter.reserved")
        let fromAt = r.absolutePosition
        let from = try r.read(UInt32.self, "analog_filter.from")
        let to = try r.read(UInt32.self, "analog_filter.to")
        let channelCountAt = r.absolutePosition
        let channelCount = Int(try r.read(UInt32.self, "analog_filter.channel_count"))
        let sourceCount = Int(try r.read(UInt32.self, "analog_filter.source_count"))
        guard channelCount <= WireLimits.maxChannels, sourceCount <= WireLimits.maxChannels,
            4 * (channelCount + sourceCount) <= r.remaining
        else {
            throw WireError(
                .countTooLarge, field: "analog_filter.channel_count", offset: channelCountAt,
                detail: "\(channelCount) channels and \(sourceCount) sources do not fit in the \(r.remaining) bytes left")
        }
        let channels: ChannelSelection
        switch mode {
        case 0: channels = .all
        case 1:
            guard from <= to else {
                throw WireError(.invalidValue, field: "analog_filter.from", offset: fromAt, detail: "range \(from)-\(to) is empty")
            }
            channels = .range(from: from, to: to)
        case 2:
            var list: [UInt32] = []
            for _ in 0..<channelCount { list.append(try r.read(UInt32.self, "analog_filter.channels")) }
            channels = .list(list)
        default:
            throw WireError(
                .invalidValue, field: "analog_filter.mode", offset: modeAt,
                detail: "\(mode); expected 0 (all), 1 (range) or 2 (list)")
        }
        if mode != 2, channelCount != 0 {
            throw WireError(
                .invalidValue, field: "analog_filter.channel_count", offset: channelCountAt,
                detail: "\(channelCount) listed channels with mode \(mode); only mode 2 lists channels")
        }
        var sources: [UInt32] = []
        for _ in 0..<sourceCount { sources.append(try r.read(UInt32.self, "analog_filter.sources")) }
        return AnalogFilterRequest(channels: channels, sources: sources, replaces: replaces)
    }
}

/// An inclusive index range of a 2D array; `to == UInt32.max` means "through the last".
public struct IndexRange: Sendable, Hashable {
    public var from: UInt32
    public var to: UInt32

    public init(from: UInt32 = 0, to: UInt32 = .max) {
        self.from = from
        self.to = to
    }

    /// Every index.
    public static let all = IndexRange()
}

/// A subscriber's request for a sub-array of the arrays of one element type (SCCT ArrayFilter).
/// Its `filter_id` follows the same numbering as analog filters (one counter per subscriber).
public struct ArrayFilterRequest: Sendable, Hashable {
    public var replaces: UInt32
    public var elementType: ArrayElementType
    public var rows: IndexRange
    public var columns: IndexRange

    public init(elementType: ArrayElementType, rows: IndexRange = .all, columns: IndexRange = .all, replaces: UInt32 = 0) {
        self.elementType = elementType
        self.rows = rows
        self.columns = columns
        self.replaces = replaces
    }

    /// Parses an SCCT array query such as `5-15;5-15` (rows 5 to 15, columns 5 to 15).
    /// A bound may be left open (`5-` through the last) and a part may be empty (every index).
    ///
    /// - Throws: `QueryError` pointing at the offending character.
    public init(elementType: ArrayElementType, query: String) throws(QueryError) {
        var parser = QueryParser(query)
        let rows = try parser.parseRange(what: "row")
        var columns = IndexRange.all
        if parser.consume(";") { columns = try parser.parseRange(what: "column") }
        try parser.expectEnd()
        self.init(elementType: elementType, rows: rows, columns: columns)
    }

    /// The SCCT query string for this filter.
    public var query: String {
        func text(_ r: IndexRange) -> String {
            if r == .all { return "" }
            return "\(r.from)-" + (r.to == .max ? "" : "\(r.to)")
        }
        return text(rows) + ";" + text(columns)
    }

    var contentLength: Int { 24 }

    func write(_ w: inout PayloadWriter) {
        w.write(replaces)
        w.write(elementType.rawValue)
        w.skip(3)
        w.write(rows.from); w.write(rows.to)
        w.write(columns.from); w.write(columns.to)
    }

    static func read(_ r: inout PayloadReader) throws(WireError) -> ArrayFilterRequest {
        let replaces = try r.read(UInt32.self, "array_filter.replaces")
        let typeAt = r.absolutePosition
        let raw = try r.read(UInt8.self, "array_filter.element_type")
        guard let type = ArrayElementType(rawValue: raw) else {
            throw WireError(.invalidValue, field: "array_filter.element_type", offset: typeAt, detail: "\(raw); expected 1-7")
        }
        try r.skip(3, "array_filter.reserved")
        var ranges: [IndexRange] = []
        for name in ["row", "column"] {
            let at = r.absolutePosition
            let from = try r.read(UInt32.self, "array_filter.\(name)_from")
            let to = try r.read(UInt32.self, "array_filter.\(name)_to")
            guard from <= to else {
                throw WireError(.invalidValue, field: "array_filter.\(name)_from", offset: at, detail: "range \(from)-\(to) is empty")
            }
            ranges.append(IndexRange(from: from, to: to))
        }
        return ArrayFilterRequest(elementType: type, rows: ranges[0], columns: ranges[1], replaces: replaces)
    }
}

/// A query string that does not parse: where and why.
public struct QueryError: Error, Hashable, Sendable, CustomStringConvertible {
    public var query: String
    /// Character offset (0-based) of the offending character.
    public var position: Int
    public var message: String

    public var description: String {
        "\(message) at character \(position + 1) of '\(query)'\n  \(query)\n  "
            + String(repeating: " ", count: position) + "^"
    }
}

/// Recursive-descent parser for the SCCT query grammars (docs/PROTOCOL.md §5).
struct QueryParser {
    let text: String
    let chars: [Character]
    var index = 0

    init(_ text: String) {
        self.text = text
        chars = Array(text)
    }

    func error(_ message: String) -> QueryError { QueryError(query: text, position: index, message: message) }

    mutating func skipSpaces() { while index < chars.count, chars[index] == " " { index += 1 } }

    mutating func consume(_ c: Character) -> Bool {
        skipSpaces()
        guard index < chars.count, chars[index] == c else { return false }
        index += 1
        return true
    }

    var atPartEnd: Bool {
        var i = index
        while i < chars.count, chars[i] == " " { i += 1 }
        return i == chars.count || chars[i] == ";"
    }

    mutating func number(_ what: String) throws(QueryError) -> UInt32 {
        skipSpaces()
        let start = index
        while index < chars.count, chars[index].isASCII, chars[index].isNumber { index += 1 }
        guard index > start else {
            throw index < chars.count
                ? error("expected a \(what) index, found '\(chars[index])'")
                : error("expected a \(what) index at the end")
        }
        guard let value = UInt32(String(chars[start..<index])), value != .max else {
            index = start
            throw error("\(what) index is too large")
        }
        return value
    }

    /// `""` (all) | `N-M` | `N` ("," `N`)*
    mutating func parseList(allowRange: Bool, what: String) throws(QueryError) -> ChannelSelection {
        if atPartEnd { return .all }
        let first = try number(what)
        if allowRange, consume("-") {
            let rangeAt = index
            let last = try number(what)
            guard first <= last else {
                index = rangeAt
                throw error("range \(first)-\(last) is empty (the end comes before the start)")
            }
            return .range(from: first, to: last)
        }
        var list = [first]
        while consume(",") { list.append(try number(what)) }
        if !atPartEnd {
            skipSpaces()
            throw error("unexpected '\(chars[index])' in the \(what) list")
        }
        return .list(list)
    }

    /// `""` (all) | `N` | `N-` | `N-M`
    mutating func parseRange(what: String) throws(QueryError) -> IndexRange {
        if atPartEnd { return .all }
        let from = try number(what)
        guard consume("-") else {
            if !atPartEnd { skipSpaces(); throw error("expected '-' after the first \(what) index, found '\(chars[index])'") }
            return IndexRange(from: from, to: from)
        }
        if atPartEnd { return IndexRange(from: from, to: .max) }
        let rangeAt = index
        let to = try number(what)
        guard from <= to else {
            index = rangeAt
            throw error("\(what) range \(from)-\(to) is empty (the end comes before the start)")
        }
        return IndexRange(from: from, to: to)
    }

    mutating func expectEnd() throws(QueryError) {
        skipSpaces()
        guard index == chars.count else { throw error("unexpected '\(chars[index])'") }
    }
}
