/// The one reader of a publisher's ADDRESS, for the tool, the C interface and Python:
/// `tcp://HOST:PORT`, `HOST:PORT` (IPv6 hosts in brackets), or `resolve:QUERY` — discovery
/// (docs/PROTOCOL.md §9) on the default group, which must find exactly one publisher.
public enum PublisherAddress {
    /// Why an ADDRESS cannot be used.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The text is malformed (a usage error), or it is well formed but resolution failed.
        public let isSyntax: Bool
        public let message: String
        public var description: String { message }
    }

    /// The prefix of an ADDRESS found by discovery.
    public static let resolvePrefix = "resolve:"
    /// How long `resolve:QUERY` waits for answers, in seconds.
    public static let resolveTimeout = 1.0

    /// The host and port to connect to. An empty host and a port out of range are left for the
    /// Subject to refuse (errors 8 and 9).
    public static func parse(
        _ text: String, settings: DiscoverySettings = .standard,
        timeout: Double = resolveTimeout
    ) throws(Failure) -> (host: String, port: Int) {
        guard text.hasPrefix(resolvePrefix) else { return try parseTCP(text) }
        let queryText = String(text.dropFirst(resolvePrefix.count))
        var match: DiscoveryMatch?
        if !queryText.isEmpty {
            do { match = try DiscoveryMatch(queryText) } catch {
                throw Failure(isSyntax: true, message: "address '\(text)': \(error)")
            }
        }
        let result: DiscoveryResult
        do { result = try DiscoveryResolver.resolve(match, settings: settings, timeout: timeout) } catch {
            throw Failure(isSyntax: false, message: "address '\(text)': cannot resolve: \(error)")
        }
        let publishers = result.publishers
        guard publishers.count == 1, let found = publishers[0].hostAndPort else {
            if publishers.isEmpty {
                throw Failure(
                    isSyntax: false,
                    message: "address '\(text)': no publisher answered within \(timeout) s "
                        + "(group \(settings.group), port \(settings.port)); `tributary resolve` lists those that do")
            }
            let list = publishers.map { "'\($0.description.name)' on \($0.description.host) at \($0.description.address)" }
            throw Failure(
                isSyntax: false,
                message: "address '\(text)': \(publishers.count) publishers match, expected exactly one: "
                    + list.joined(separator: "; ") + " (narrow the query, e.g. name=NAME,host=HOST)")
        }
        return found
    }

    /// `tcp://HOST:PORT` or `HOST:PORT`.
    static func parseTCP(_ text: String) throws(Failure) -> (host: String, port: Int) {
        var rest = Substring(text)
        if rest.hasPrefix("tcp://") {
            rest = rest.dropFirst(6)
        } else if rest.contains("://") {
            throw Failure(isSyntax: true, message: "ADDRESS '\(text)': only tcp:// addresses are supported (or resolve:QUERY)")
        }
        guard let colon = rest.lastIndex(of: ":") else {
            throw Failure(isSyntax: true, message: "ADDRESS '\(text)': expected HOST:PORT, tcp://HOST:PORT or resolve:QUERY")
        }
        var host = String(rest[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard let port = Int(rest[rest.index(after: colon)...]) else {
            throw Failure(isSyntax: true, message: "ADDRESS '\(text)': '\(rest[rest.index(after: colon)...])' is not a port number")
        }
        return (host, port)
    }

    /// The host and port of `tcp://HOST:PORT` (IPv6 hosts in brackets), or nil.
    public static func tcpHostPort(_ address: String) -> (host: String, port: Int)? {
        guard address.hasPrefix("tcp://"), let parsed = try? parseTCP(address) else { return nil }
        return parsed
    }
}
