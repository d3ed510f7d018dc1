import TributaryText

extension DiscoveredPublisher {
    /// The publisher as `tributary resolve --json` and `tributary_resolve` describe it (docs/CLI.md,
    /// docs/C_API.md): one object with its sources.
    package var json: JSON {
        let p = description
        return .object([
            ("name", .string(p.name)), ("host", .string(p.host)), ("address", .string(p.address)),
            ("auth", .string(p.authentication.rawValue)), ("answered_from", .string(answeredFrom)),
            ("truncated", .bool(p.truncated)),
            (
                "sources",
                .array(
                    p.sources.map { s in
                        .object([
                            ("id", .uint(UInt64(s.id))), ("device", .string(s.device)), ("type", .string(s.type)),
                            ("rate", .double(s.rate)), ("channels", .int(s.channelCount)), ("channel_names", .strings(s.channelNames)),
                            ("unit", s.unit.map(JSON.string) ?? .null), ("units", .strings(s.units)),
                            ("sample_type", s.sampleType.map { .string($0.description) } ?? .null),
                        ])
                    })
            ),
        ])
    }
}
