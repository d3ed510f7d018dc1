/// A filter request that breaks the rules of docs/PROTOCOL.md §6 (answered with error 12).
public struct FilterRequestError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var code: ErrorCode { .protocolViolation }
    public var description: String { message }
}

/// One subscriber's filters and the id rules that govern them (docs/PROTOCOL.md §6): the publisher
/// keeps one per session and runs every data frame through it; a subscriber keeps the same value
/// to know what it asked for, to restore it after a reconnect, or to filter a recording locally.
public struct SubscriberFilters: Sendable, Hashable {
    public struct Entry<Request: Sendable & Hashable>: Sendable, Hashable {
        public var id: UInt32
        public var request: Request
    }

    /// Analog filters in the order they were defined.
    public private(set) var analog: [Entry<AnalogFilterRequest>] = []
    /// Array filters in the order they were defined.
    public private(set) var array: [Entry<ArrayFilterRequest>] = []
    /// The highest filter id defined so far; the next request must carry this plus one.
    public private(set) var lastFilterID: UInt32 = 0

    public init() {}

    /// The id the next filter request must carry.
    public var nextFilterID: UInt32 { lastFilterID + 1 }

    /// True when no filter is defined: every frame passes unfiltered.
    public var isEmpty: Bool { analog.isEmpty && array.isEmpty }

    private func exists(_ id: UInt32) -> Bool {
        analog.contains { $0.id == id } || array.contains { $0.id == id }
    }

    private mutating func claim(_ id: UInt32, replacing replaced: UInt32) throws(FilterRequestError) {
        guard id == nextFilterID else {
            throw FilterRequestError(message: "filter id \(id) is not the next one (\(nextFilterID))")
        }
        if replaced != 0 {
            guard exists(replaced) else {
                throw FilterRequestError(message: "filter \(id) replaces filter \(replaced), which does not exist")
            }
            analog.removeAll { $0.id == replaced }
            array.removeAll { $0.id == replaced }
        }
        lastFilterID = id
    }

    /// Defines analog filter `id` (which must be `nextFilterID`), replacing `request.replaces` if set.
    public mutating func add(_ request: AnalogFilterRequest, id: UInt32) throws(FilterRequestError) {
        try claim(id, replacing: request.replaces)
        analog.append(Entry(id: id, request: request))
    }

    /// Defines array filter `id` (which must be `nextFilterID`), replacing `request.replaces` if set.
    public mutating func add(_ request: ArrayFilterRequest, id: UInt32) throws(FilterRequestError) {
        try claim(id, replacing: request.replaces)
        array.append(Entry(id: id, request: request))
    }

    /// Removes filter `id`.
    public mutating func remove(id: UInt32) throws(FilterRequestError) {
        guard exists(id) else { throw FilterRequestError(message: "there is no filter \(id) to remove") }
        analog.removeAll { $0.id == id }
        array.removeAll { $0.id == id }
    }

    /// Applies an analog-filter, array-filter or remove-filter frame received from the subscriber.
    ///
    /// - Parameter limits: what the receiver allows (the publisher passes its sources and its cap);
    ///   nil checks only the id rules.
    /// - Throws: `FilterRequestError` when the frame breaks the id rules or the limits, or is not a
    ///   filter request; the filters are then unchanged.
    public mutating func apply(_ frame: Frame, limits: FilterLimits? = nil) throws(FilterRequestError) {
        let id = frame.header.filterID
        let payload: Payload
        do { payload = try frame.payload() } catch {
            throw FilterRequestError(message: "malformed \(frame.header.kind) frame: \(error)")
        }
        switch payload {
        case .analogFilter(let request):
            if let limits {
                try limits.check(request)
                try checkCount(replacing: request.replaces, limits)
            }
            try add(request, id: id)
        case .arrayFilter(let request):
            if let limits { try checkCount(replacing: request.replaces, limits) }
            try add(request, id: id)
        case .removeFilter: try remove(id: id)
        default: throw FilterRequestError(message: "\(frame.header.kind) is not a filter request")
        }
    }

    private func checkCount(replacing replaced: UInt32, _ limits: FilterLimits) throws(FilterRequestError) {
        let count = analog.count + array.count
        if (replaced == 0 || !exists(replaced)) && count >= limits.maxFilters {
            throw FilterRequestError(message: "a session may define at most \(limits.maxFilters) filters; remove or replace one first")
        }
    }

    /// The frames a subscriber with these filters receives for `frame` (docs/PROTOCOL.md §6), in
    /// filter-definition order: filtered frames carry their filter's id; frames no filter governs
    /// pass unchanged (sharing their payload). Sequence numbers are left to the sender.
    ///
    /// - Throws: the `WireError` of a malformed analog or array frame, or what `emit` throws.
    public func outputs(for frame: Frame, _ emit: (Frame) throws -> Void) throws {
        switch frame.header.kind {
        case .analog where !analog.isEmpty:
            let view = try frame.analog()
            for entry in analog where AnalogFrameFilter.applies(entry.request, toSource: frame.header.sourceID) {
                if let out = AnalogFrameFilter.apply(entry.request, filterID: entry.id, to: view, of: frame) { try emit(out) }
            }
        case .array where !array.isEmpty:
            guard case .array(let view) = try frame.payload() else { return }
            let matching = array.filter { $0.request.elementType == view.elementType }
            if matching.isEmpty { return try emit(frame) }
            for entry in matching {
                if let out = ArrayFrameFilter.apply(entry.request, filterID: entry.id, to: view, of: frame) { try emit(out) }
            }
        default:
            try emit(frame)
        }
    }
}

/// What a publisher allows in the filter requests of one session (docs/PROTOCOL.md §6.3): a bound on
/// the number of filters, each channel and source listed at most once, and — for the sources the
/// publisher describes — only channels and sources that exist. Every data frame is sent once per
/// filter that governs it and a filter never repeats a channel, so no request can make a session's
/// output larger than `maxFilters` times the data itself.
public struct FilterLimits: Sendable, Hashable {
    /// Filters (analog and array together) a session may have at once.
    public var maxFilters: Int
    /// The channel count of each source the publisher describes; empty: indexes are not checked.
    public var channelCounts: [UInt32: Int]

    public init(maxFilters: Int, channelCounts: [UInt32: Int] = [:]) {
        self.maxFilters = maxFilters
        self.channelCounts = channelCounts
    }

    /// Checks one analog filter request against these limits.
    public func check(_ request: AnalogFilterRequest) throws(FilterRequestError) {
        if let twice = Self.firstRepeated(request.sources) {
            throw FilterRequestError(message: "source \(twice) is listed twice")
        }
        if case .list(let channels) = request.channels, let twice = Self.firstRepeated(channels) {
            throw FilterRequestError(message: "channel \(twice) is listed twice")
        }
        guard !channelCounts.isEmpty else { return }
        // Source 0 in a filter means "frames of no source" (application frames): nothing to check.
        let targeted = request.sources.isEmpty ? Array(channelCounts.keys) : request.sources.filter { $0 != 0 }
        var widest = 0
        for source in targeted {
            guard let count = channelCounts[source] else {
                let known = channelCounts.keys.sorted().map(String.init).joined(separator: ", ")
                throw FilterRequestError(message: "source \(source) does not exist (sources: \(known))")
            }
            widest = max(widest, count)
        }
        if targeted.isEmpty { return }
        let highest: UInt32
        switch request.channels {
        case .all: return
        case .range(let from, _): highest = from
        case .list(let channels): highest = channels.max() ?? 0
        }
        if Int(highest) >= widest {
            throw FilterRequestError(message: "channel \(highest) does not exist: the filtered sources have channels 0-\(widest - 1)")
        }
    }

    private static func firstRepeated(_ values: [UInt32]) -> UInt32? {
        var seen = Set<UInt32>()
        for value in values where !seen.insert(value).inserted { return value }
        return nil
    }
}
