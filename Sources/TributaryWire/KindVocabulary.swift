/// The frame kinds in the ignorable extension range (128–255, docs/PROTOCOL.md §2.2): a receiver that
/// does not know one skips the frame whole. The transport sends them; they have no `Package` case.
public enum ExtensionKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// A header-only frame either side of a session sends when it has been silent (docs/PROTOCOL.md §4.4).
    case keepalive = 128
    /// A subscriber's clock probe (docs/PROTOCOL.md §4.9).
    case timeProbe = 130
    /// The publisher's reply to a clock probe, with its receive and send times (docs/PROTOCOL.md §4.9).
    case timeReply = 131

    public var description: String {
        switch self {
        case .keepalive: "keepalive"
        case .timeProbe: "time-probe"
        case .timeReply: "time-reply"
        }
    }

    /// Who sends it (docs/PROTOCOL.md §2.2).
    public var direction: KindDirection {
        switch self {
        case .keepalive: .either
        case .timeProbe: .subscriberToPublisher
        case .timeReply: .publisherToSubscriber
        }
    }
}

extension FrameKind {
    /// The kind with this name (its `description`, e.g. "analog-filter"), or nil.
    public init?(name: String) {
        guard let kind = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = kind
    }

    /// Every declared kind, `FrameKind` then `ExtensionKind`, as number and name: the one package
    /// vocabulary that the C interface (`tributary_kind_name`), Python, the CLI and the docs follow.
    public static let vocabulary: [(number: UInt8, name: String)] =
        allCases.map { ($0.rawValue, $0.description) } + ExtensionKind.allCases.map { ($0.rawValue, $0.description) }

    /// Who sends a declared kind number (a `FrameKind` or an `ExtensionKind`), or nil.
    public static func direction(ofNumber number: UInt8) -> KindDirection? {
        if let kind = FrameKind(rawValue: number) { return kind.direction }
        return ExtensionKind(rawValue: number)?.direction
    }

    /// The name of a declared kind number (a `FrameKind` or an `ExtensionKind`), or nil.
    public static func name(ofNumber number: UInt8) -> String? {
        if let kind = FrameKind(rawValue: number) { return kind.description }
        return ExtensionKind(rawValue: number)?.description
    }
}
