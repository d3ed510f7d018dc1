/// The kind of a frame: which payload layout follows the header (docs/PROTOCOL.md §4).
///
/// The one declaration of the package vocabulary: each kind's number, name (`description`) and the
/// traits the rest of the tree decides by (`direction`, `isData`, `isApplicationPackage`,
/// `isDelivered`) are written here once. The C header's TRIBUTARY_KIND_*, Python's constants, the
/// CLI's package options and docs/PROTOCOL.md §2.2 are derived from it or checked against it
/// (PackageVocabularyTests, KindDispatchTests, python/tests/test_vocabulary.py).
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

/// Who sends a kind in a session: docs/PROTOCOL.md §2.2's direction column.
public enum KindDirection: String, Sendable, CaseIterable {
    case publisherToSubscriber = "publisher → subscriber"
    case subscriberToPublisher = "subscriber → publisher"
    case either
}

extension FrameKind {
    /// Who sends it (docs/PROTOCOL.md §2.2's direction column).
    public var direction: KindDirection {
        switch self {
        case .configuration, .welcome, .gap, .properties: .publisherToSubscriber
        case .analogFilter, .arrayFilter, .removeFilter, .signalFilter, .hello, .start, .stop, .selectSources, .credit:
            .subscriberToPublisher
        case .error, .analog, .digital, .message, .xml, .file, .image, .array, .close: .either
        }
    }

    /// A data kind: samples and application content, as opposed to session and control frames. Data
    /// frames are what replay credit counts (docs/PROTOCOL.md §5.16), what a source selection
    /// filters, and what a replay or a recording's end-of-data check takes.
    public var isData: Bool {
        switch self {
        case .analog, .digital, .message, .xml, .file, .image, .array: true
        default: false
        }
    }

    /// Content an application composes and sends itself, in either direction (the data kinds that
    /// are not a source's samples): what `serve --message/--xml/--file/--image/--array` publishes,
    /// `subscribe --send-*` sends, and a replay takes from source 0.
    public var isApplicationPackage: Bool { isData && self != .analog && self != .digital }

    /// A kind a subscription hands to the application: the C header's TRIBUTARY_KIND_* (a close, the
    /// publisher's normal end, reaches a Swift `Observer` as an error whose `publisherClose` is set).
    public var isDelivered: Bool {
        switch self {
        case .configuration, .error, .gap, .close, .properties: true
        default: isData
        }
    }
}
