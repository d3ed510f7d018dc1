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
    /// - Throws: `FilterRequestError` when the frame breaks the id rules or is not a filter request.
    public mutating func apply(_ frame: Frame) throws(FilterRequestError) {
        let id = frame.header.filterID
        let payload: Payload
        do { payload = try frame.payload() } catch {
            throw FilterRequestError(message: "malformed \(frame.header.kind) frame: \(error)")
        }
        switch payload {
        case .analogFilter(let request): try add(request, id: id)
        case .arrayFilter(let request): try add(request, id: id)
        case .removeFilter: try remove(id: id)
        default: throw FilterRequestError(message: "\(frame.header.kind) is not a filter request")
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
