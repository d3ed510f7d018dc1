/// The kind of a frame: which payload layout follows the header (docs/PROTOCOL.md §4).
public enum FrameKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case configuration = 1
    case error = 2
    case analog = 3
    case digital = 4
    case message = 5
    case xml = 6
    case file = 7
    case image = 8
    case array = 9
    case analogFilter = 10
    case arrayFilter = 11
    case removeFilter = 12
    case signalFilter = 13
    case hello = 16
    case welcome = 17
    case start = 18
    case stop = 19
    case selectSources = 20
    case gap = 21
    case close = 22
    case credit = 23
    /// Source and channel properties (an ignorable extension kind: receivers that predate it skip it).
    case properties = 129

    public var description: String {
        switch self {
        case .configuration: "configuration"
        case .error: "error"
        case .analog: "analog"
        case .digital: "digital"
        case .message: "message"
        case .xml: "xml"
        case .file: "file"
        case .image: "image"
        case .array: "array"
        case .analogFilter: "analog-filter"
        case .arrayFilter: "array-filter"
        case .removeFilter: "remove-filter"
        case .signalFilter: "signal-filter"
        case .hello: "hello"
        case .welcome: "welcome"
        case .start: "start"
        case .stop: "stop"
        case .selectSources: "select-sources"
        case .gap: "gap"
        case .close: "close"
        case .credit: "credit"
        case .properties: "properties"
        }
    }
}
