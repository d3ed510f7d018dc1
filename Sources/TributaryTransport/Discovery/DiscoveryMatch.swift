/// What a resolver looks for (docs/PROTOCOL.md §9.2): terms separated by commas, all of which a
/// publisher must match. A term is `name=PATTERN` (the publisher's name), `host=PATTERN` (its host
/// name), `source=PATTERN` (a source's device name or type), `type=PATTERN` (a source's type), or a
/// bare PATTERN (any of those). Patterns compare without regard to ASCII case; `*` stands for any text.
public struct DiscoveryMatch: Sendable, Hashable, CustomStringConvertible {
    public enum Field: String, Sendable, Hashable, CaseIterable {
        case name, host, source, type, any
    }

    public struct Term: Sendable, Hashable {
        public var field: Field
        public var pattern: String
    }

    public let terms: [Term]
    /// The query as given (the text sent in a query datagram).
    public let text: String

    public var description: String { text }

    /// Reads a query, e.g. `name=daq`, `source=EEG`, `name=lab-*,type=EEG`.
    public init(_ text: String) throws(DiscoveryFormatError) {
        guard text.utf8.count <= DiscoveryLimits.maxMatchBytes else {
            throw DiscoveryFormatError("the query is \(text.utf8.count) bytes, more than \(DiscoveryLimits.maxMatchBytes)")
        }
        var terms: [Term] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let item = part.trimmingSpaces()
            guard !item.isEmpty else { throw DiscoveryFormatError("'\(text)' has an empty term (terms are separated by single commas)") }
            if let equals = item.firstIndex(of: "=") {
                let key = String(item[..<equals]).lowercased()
                guard let field = Field(rawValue: key), field != .any else {
                    throw DiscoveryFormatError("'\(item)': '\(key)' is not name, host, source or type")
                }
                let pattern = String(item[item.index(after: equals)...]).trimmingSpaces()
                guard !pattern.isEmpty else { throw DiscoveryFormatError("'\(item)': the pattern is empty") }
                terms.append(Term(field: field, pattern: pattern))
            } else {
                terms.append(Term(field: .any, pattern: item))
            }
        }
        guard !terms.isEmpty else { throw DiscoveryFormatError("the query is empty") }
        self.terms = terms
        self.text = text
    }

    /// Whether `publisher` matches every term.
    public func matches(_ publisher: PublisherDescription) -> Bool {
        terms.allSatisfy { term in
            let p = term.pattern
            switch term.field {
            case .name: return Self.glob(p, publisher.name)
            case .host: return Self.glob(p, publisher.host)
            case .source: return publisher.sources.contains { Self.glob(p, $0.device) || Self.glob(p, $0.type) }
            case .type: return publisher.sources.contains { Self.glob(p, $0.type) }
            case .any:
                return Self.glob(p, publisher.name) || Self.glob(p, publisher.host)
                    || publisher.sources.contains { Self.glob(p, $0.device) || Self.glob(p, $0.type) }
            }
        }
    }

    /// `pattern` (with `*` for any run of characters) against `text`, ASCII case ignored; linear in
    /// pattern × text (the greedy algorithm with one backtrack point), so a hostile pattern costs little.
    static func glob(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern.utf8).map(lower), t = Array(text.utf8).map(lower)
        var i = 0, j = 0, star = -1, mark = 0
        while j < t.count {
            if i < p.count && p[i] != UInt8(ascii: "*") && p[i] == t[j] {
                i += 1; j += 1
            } else if i < p.count && p[i] == UInt8(ascii: "*") {
                star = i; mark = j; i += 1
            } else if star >= 0 {
                i = star + 1; mark += 1; j = mark
            } else {
                return false
            }
        }
        while i < p.count && p[i] == UInt8(ascii: "*") { i += 1 }
        return i == p.count
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}

extension StringProtocol {
    fileprivate func trimmingSpaces() -> String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
