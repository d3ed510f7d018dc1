/// Which `Host` and `Origin` headers the view answers: the defence against DNS rebinding, where a
/// page of another site, served under a name the attacker later resolves to 127.0.0.1, would
/// otherwise be the page's own origin to the browser and read the view or drive its WebSocket.
///
/// A request is answered when its `Host` names this machine as the user typed it: the bound address,
/// `localhost`, `127.0.0.1`, `[::1]` (any port: a tunnel such as `ssh -L 9000:127.0.0.1:8080` keeps
/// the name and changes the port), any IPv4 address when bound to 0.0.0.0 (an address cannot be
/// rebound), and the names given with `--http-host`. A request that carries an `Origin` is answered
/// only when that origin is `http://` + its `Host`: a page of this view, not of another port or site.
public struct HostRules: Sendable, Equatable {
    /// Lower-case names without a port.
    public let names: Set<String>
    /// Bound to every interface: any IPv4 address is a name of this machine.
    public let anyIPv4Address: Bool

    /// - Parameters:
    ///   - boundAddress: the IPv4 address the server listens on (0.0.0.0: every interface).
    ///   - extraNames: more names browsers may use (already checked with `normalizedName`).
    public init(boundAddress: String, extraNames: [String] = []) {
        var names: Set<String> = ["localhost", "127.0.0.1", "[::1]"]
        anyIPv4Address = boundAddress == "0.0.0.0"
        if !anyIPv4Address { names.insert(boundAddress.lowercased()) }
        for name in extraNames { names.insert(Self.normalizedName(name) ?? name.lowercased()) }
        self.names = names
    }

    /// A name given on the command line (`--http-host`), lower-cased, or nil when it is not a DNS
    /// name (labels of letters, digits and hyphens), an IPv4 address or a bracketed IPv6 address.
    public static func normalizedName(_ text: String) -> String? {
        let name = text.lowercased()
        guard !name.isEmpty, name.utf8.count <= 253 else { return nil }
        if name.hasPrefix("[") {
            let inside = name.dropFirst().dropLast()
            return name.hasSuffix("]") && !inside.isEmpty && inside.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) ? name : nil
        }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard (1...63).contains(label.utf8.count), label.utf8.allSatisfy({ isLetterOrDigit($0) || $0 == UInt8(ascii: "-") }),
                label.first != "-", label.last != "-"
            else { return nil }
        }
        return name
    }

    /// The name of a `Host` header's value: lower-cased, its port (`:` and 1-5 digits) removed;
    /// nil when it is malformed.
    public static func name(ofHost value: String) -> String? {
        let host = value.lowercased()
        var name = Substring(host), port: Substring = ""
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            name = host[...close]
            port = host[host.index(after: close)...]
        } else if let colon = host.firstIndex(of: ":") {
            name = host[..<colon]
            port = host[colon...]
        }
        if !port.isEmpty {
            let digits = port.dropFirst()
            guard port.first == ":", (1...5).contains(digits.count), digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        }
        guard let normalized = normalizedName(String(name)), normalized == String(name) else { return nil }
        return normalized
    }

    /// Whether a request with this `Host` value is answered.
    public func allows(host value: String) -> Bool {
        guard let name = Self.name(ofHost: value) else { return false }
        return names.contains(name) || (anyIPv4Address && Self.isIPv4Address(name))
    }

    /// Whether a request from a page of `origin` (its `Origin` header) to `host` (its `Host` header,
    /// already allowed) is answered: the origin must be this very page's.
    public func allows(origin: String, host: String) -> Bool {
        origin.lowercased() == "http://" + host.lowercased()
    }

    static func isIPv4Address(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { $0.utf8.count <= 3 && UInt8($0) != nil }
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 122)
    }
}
