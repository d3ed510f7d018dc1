import TributaryTransport

/// The multicast group, UDP port and TTL of discovery (docs/PROTOCOL.md §9), declared once for the
/// commands that take them under their own names: `resolve`'s --group, --port and --ttl (where to
/// ask) and `serve`'s --announce-group, --announce-port and --announce-ttl (where to answer).
struct DiscoveryOptions {
    var group: String?
    var port: Int?
    var ttl: Int?

    /// Whether none is given.
    var isEmpty: Bool { group == nil && port == nil && ttl == nil }

    /// The three options, named `prefix` + group, port, ttl; `purpose` says what the group is for
    /// ("to ask"), `ttlHelp` what the TTL is of.
    static func options(prefix: String, purpose: String, ttlHelp: String) -> OptionTable<Self> {
        OptionTable([
            .text(prefix + "group", "ADDR", "the IPv4 multicast group \(purpose) (default \(DiscoverySettings.defaultGroup))", \.group),
            .integer(
                prefix + "port", "PORT", "a UDP port", in: 1...65_535, "its UDP port (default \(DiscoverySettings.defaultPort))", \.port),
            .integer(
                prefix + "ttl", "N", "a multicast TTL", in: 0...255,
                "\(ttlHelp), 0-255 (default \(DiscoverySettings.defaultTTL): the local network)", \.ttl),
        ])
    }

    /// The settings, the defaults for what is not given.
    /// - Throws: `UsageError` naming the group's option (`prefix` + group) when the group is not one.
    func settings(prefix: String) throws -> DiscoverySettings {
        do {
            return try DiscoverySettings(
                group: group ?? DiscoverySettings.defaultGroup, port: port ?? DiscoverySettings.defaultPort,
                ttl: ttl ?? DiscoverySettings.defaultTTL)
        } catch {
            throw UsageError("option \(prefix)group: \(error)")
        }
    }
}
