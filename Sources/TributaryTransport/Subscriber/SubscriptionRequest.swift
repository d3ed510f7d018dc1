import Foundation
import TributaryWire

/// What a subscriber asks of the publisher once its session is open: the source selection, the
/// analog filter, the array filters and the signal filter. The one model of the subscription options
/// the command line (`subscribe`, `record`, `view`, `monitor`, `bench`) and the C interface
/// (`tributary_subscription_open`, and Python through it) share: each maps its own syntax (an
/// option's text, a JSON member) onto the readers here, which check the values; their errors say
/// what is wrong, and which option, for the caller to spell in its own terms.
public struct SubscriptionRequest: Sendable, Hashable {
    /// The sources to receive (source selection, docs/PROTOCOL.md §5.13), or nil for every source.
    public var sources: [UInt32]?
    /// The analog filter (its data arrives with filter id 1), or nil.
    public var analogFilter: AnalogFilterRequest?
    /// The array filters, sent after the analog filter.
    public var arrayFilters: [ArrayFilterRequest]
    /// The signal filter asked of the publisher for every received source (`SignalFilterRequest
    /// .subscription`); its source id is set per source when it is sent.
    public var signalFilter: SignalFilterRequest?

    public init(
        sources: [UInt32]? = nil, analogFilter: AnalogFilterRequest? = nil, arrayFilters: [ArrayFilterRequest] = [],
        signalFilter: SignalFilterRequest? = nil
    ) {
        self.sources = sources
        self.analogFilter = analogFilter
        self.arrayFilters = arrayFilters
        self.signalFilter = signalFilter
    }
}

/// A subscription option whose value `SubscriptionRequest` refused: the case says which option (for
/// the caller to name in its spelling: `--sources` on the command line, `'sources'` in the C
/// interface's JSON), its text what is wrong with the value (`problem`, which quotes it).
public enum SubscriptionOptionError: Error, Sendable, Equatable, CustomStringConvertible {
    case sources(String)
    case channels(String)
    case arrayFilter(String)

    /// What is wrong with the value.
    public var problem: String {
        switch self {
        case .sources(let problem), .channels(let problem), .arrayFilter(let problem): problem
        }
    }

    public var description: String { problem }
}

extension SubscriptionRequest {
    /// The array element types by name, as an array filter's TYPE spells them.
    public static let arrayTypeNames = ArrayElementType.allCases.map(\.description)

    /// Source ids as a comma list ("1" or "1,3"). Source 0 stands for the publisher's own packages
    /// (docs/PROTOCOL.md §4.1), which every selection receives.
    /// - Throws: `SubscriptionOptionError.sources` when an item is not an id in 0...UInt32.max.
    public static func sources(_ text: String) throws(SubscriptionOptionError) -> [UInt32] {
        let ids = text.split(separator: ",", omittingEmptySubsequences: false).map { UInt32($0.trimmingCharacters(in: .whitespaces)) }
        guard ids.allSatisfy({ $0 != nil }) else {
            throw SubscriptionOptionError.sources(
                "'\(text)' is not a list of source ids in 0...\(UInt32.max), e.g. 1,3 (0: the publisher's own packages)")
        }
        return ids.map { $0! }
    }

    /// Source ids given as numbers.
    /// - Throws: `SubscriptionOptionError.sources` when the list is empty (it would select nothing).
    public static func sources(_ ids: [UInt32]) throws(SubscriptionOptionError) -> [UInt32] {
        guard !ids.isEmpty else {
            throw SubscriptionOptionError.sources("the list is empty: give source ids (0: the publisher's own packages)")
        }
        return ids
    }

    /// The analog filter of a channel list ("0-3" or "0,2,5"), applying to `sources` only when they
    /// are given (else to every source).
    /// - Throws: `SubscriptionOptionError.channels` quoting the list and the query's error.
    public static func analogFilter(channels: String, sources: [UInt32]?) throws(SubscriptionOptionError) -> AnalogFilterRequest {
        let query = channels + (sources.map { ";" + $0.map(String.init).joined(separator: ",") } ?? "")
        do { return try AnalogFilterRequest(query: query) } catch {
            throw SubscriptionOptionError.channels("'\(channels)': \(error)")
        }
    }

    /// An array filter `TYPE:QUERY`, e.g. "double:5-15;5-15" (TYPE an element type's name).
    /// - Throws: `SubscriptionOptionError.arrayFilter` quoting the text and what is wrong.
    public static func arrayFilter(_ text: String) throws(SubscriptionOptionError) -> ArrayFilterRequest {
        guard let colon = text.firstIndex(of: ":"),
            let type = ArrayElementType.allCases.first(where: { $0.description == text[..<colon] })
        else {
            let types = arrayTypeNames.dropLast().joined(separator: ", ") + " or " + arrayTypeNames.last!
            throw SubscriptionOptionError.arrayFilter("'\(text)' is not TYPE:QUERY with TYPE \(types)")
        }
        do { return try ArrayFilterRequest(elementType: type, query: String(text[text.index(after: colon)...])) } catch {
            throw SubscriptionOptionError.arrayFilter("'\(text)': \(error)")
        }
    }
}

extension Subject {
    /// Opens a session, asks it for `request` — the analog filter, the array filters, the source
    /// selection, then the signal filter for each received source (those of `request.sources`, else
    /// every source of the welcome; never source 0) — and starts the data.
    /// - Returns: the welcome and the ids the publisher's filters carry (the analog filter's first).
    /// - Throws: `ErrorReport` when the publisher refuses or cannot be reached (the Subject is left
    ///   for the caller to close).
    public func open(
        address: String, port: Int, apiKey: String, description: String, timeout: Double, request: SubscriptionRequest
    ) throws(ErrorReport) -> (welcome: Welcome, filterIDs: [UInt32]) {
        let welcome = try open(
            address: address, port: port, apiKey: apiKey, description: description, timeout: timeout,
            sourceFilterEnabled: request.sources != nil)
        var ids: [UInt32] = []
        if let filter = request.analogFilter { ids.append(try sendFilter(filter)) }
        for filter in request.arrayFilters { ids.append(try sendFilter(filter)) }
        if let sources = request.sources { try selectSources(sources) }
        if var signalFilter = request.signalFilter {
            for id in (request.sources ?? welcome.sources.map(\.id)) where id != 0 {
                signalFilter.sourceID = id
                try sendSignalFilter(signalFilter)
            }
        }
        try start()
        return (welcome, ids)
    }
}
