import Foundation
import TributaryText
import TributaryTransport

/// `tributary resolve [QUERY]`: the publishers on the local network that answer a discovery query.
enum ResolveCommand: TableCommand {
    static let name = "resolve"
    static let summary = "list the publishers on the local network that answer a discovery query"
    static let usage = """
        usage: tributary resolve [QUERY] [--timeout S] [--json]
                                 [--group ADDR] [--port PORT] [--ttl N]

        Multicasts a discovery query (docs/PROTOCOL.md §9) on every interface that carries multicast and
        lists the publishers that answer within the timeout: name (the publisher's description), host, the
        address to connect to, how subscribers authenticate (key or curve) and each source (device name
        and type, channels and their names, rate, unit, sample type). Nothing secret is announced.
        QUERY: terms separated by commas, all of which must match: name=PATTERN, host=PATTERN,
        source=PATTERN (a source's device name or type), type=PATTERN, or a bare PATTERN (any of them);
        case is ignored and * stands for any text, e.g. 'name=daq', 'source=EEG', 'name=lab-*,type=EEG'.
        The same QUERY after 'resolve:' stands for an ADDRESS (subscribe, record, view, monitor, bench,
        C and Python), when exactly one publisher matches.
        \(options.help())
        Exit status 0, also when nothing answers (said on standard error).
        """

    /// What to ask, where, for how long, and how to print the answers.
    struct Configuration {
        var timeout: Double?
        var json = false
        /// --group, --port, --ttl as given.
        var discovery = DiscoveryOptions()
        /// The group, port and TTL, checked (nil: the defaults).
        var settings: DiscoverySettings?
        var match: DiscoveryMatch?
    }

    static var options: OptionTable<Configuration> {
        OptionTable([
            .number(
                "--timeout", "S", "a duration in seconds", in: 0.05...3_600, "how long to gather answers, in [0.05, 3600] s (default 1)",
                \.timeout),
            .flag("--json", "one JSON array of the publishers on standard output", \.json),
        ]) + DiscoveryOptions.options(prefix: "--", purpose: "to ask", ttlHelp: "the query's multicast TTL").lifted(\.discovery)
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var c = Configuration()
        let rest = try options.parse(arguments, into: &c)
        guard rest.count <= 1 else { throw UsageError("expected at most one QUERY, got \(rest.count)") }
        c.settings = try c.discovery.settings(prefix: "--")
        if let text = rest.first {
            do { c.match = try DiscoveryMatch(text) } catch { throw UsageError("QUERY: \(error)") }
        }
        return c
    }

    static func run(_ c: Configuration) throws -> Int32 {
        let timeout = c.timeout ?? 1, settings = try c.settings ?? DiscoverySettings()
        let result: DiscoveryResult
        do { result = try DiscoveryResolver.resolve(c.match, settings: settings, timeout: timeout) } catch {
            throw CommandError("cannot resolve on \(settings.group):\(settings.port): \(error)")
        }
        for refused in result.refusedAnswers { printError("ignored: \(refused.terminalSafe)") }
        if c.json {
            StandardOutput.line(JSON.array(result.publishers.map(\.json)).render())
        } else {
            for publisher in result.publishers { StandardOutput.line(text(publisher)) }
        }
        if result.publishers.isEmpty {
            printError("no publisher answered within \(timeout) s" + (c.match.map { " matching '\($0.text.terminalSafe)'" } ?? ""))
        }
        return 0
    }

    static func text(_ found: DiscoveredPublisher) -> String {
        let p = found.description
        var lines = [
            "'\(p.name.terminalSafe)' on \(p.host.terminalSafe) at \(p.address.terminalSafe) (\(p.authentication.rawValue))"
                + (p.truncated ? " [description shortened to fit the answer]" : "")
        ]
        for s in p.sources {
            var line =
                "  source \(s.id) '\(s.device.terminalSafe)'" + (s.type.isEmpty ? "" : " \(s.type.terminalSafe)")
                + ": \(counted(s.channelCount, "channel")) at \(s.rate) S/s"
            if let sample = s.sampleType { line += ", \(sample)" }
            if let unit = s.unit {
                line += ", \(unit.terminalSafe)"
            } else if !s.units.isEmpty {
                line += ", units \(s.units.joined(separator: ",").terminalSafe)"
            }
            if !s.channelNames.isEmpty { line += ": " + s.channelNames.joined(separator: ", ").terminalSafe }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
