import Foundation
import Synchronization
import TributaryAnalysis
import TributaryText
import TributaryTransport
import TributaryWire

/// `tributary subscribe`: connects to a publisher and prints what arrives.
enum SubscribeCommand: TableCommand {
    static let name = "subscribe"
    static let streamsFrames = true
    static let summary = "connect to a publisher and print what arrives (a line or a JSON object per package)"
    static let usage = """
        \(SubscriptionOptions.synopsis(command: "subscribe", own: ["[--json | --summary]"]))

        Opens a session with a publisher (docs/PROTOCOL.md §4), sends the filters and the source
        selection, starts the data and prints every package that arrives: one summary line each (kind,
        source, sequence, time, filter id, size, content), or with --json one JSON object per line
        (the objects of 'tributary inspect --json'; a file or image, reassembled and MD5-checked,
        as {"kind":"file", ..., "content":{"name", "size", "md5", "attributes", "format"}}).

        Ends after --duration, on SIGINT/SIGTERM, or when the publisher closes the session (exit 0;
        with --reconnect the session is opened again instead).
        A refused or broken session prints the SCCT error, e.g. 'error 1 (wrong API key): ...' or
        'error 5 (lost connection): ...', and exits with status 1.

        \(options.help())
        """

    /// The command line as given, then checked.
    struct Given {
        var subscription = SubscriptionOptions.Given()
        var json = false
        var summary = false
    }

    /// The session to open and how to print what arrives.
    struct Configuration {
        var subscription: SubscriptionOptions
        var json: Bool
        var summary: Bool
    }

    static var options: OptionTable<Given> {
        SubscriptionOptions.options.lifted(\.subscription)
            + OptionTable([
                .flag("--json", "one JSON object per package instead of a line", \.json),
                .flag(
                    "--summary",
                    """
                    print no package; at the end one JSON object on stdout: data frames
                    and bytes, MB/s, frames announced missing, unaccounted loss, and
                    the publisher's clock offset and round-trip time (null when the
                    publisher answers no clock probes, docs/PROTOCOL.md §4.9)
                    """, \.summary),
            ])
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var given = Given()
        let rest = try options.parse(arguments, into: &given)
        var subscription = try SubscriptionOptions(given.subscription, defaultDescription: "tributary subscribe")
        try subscription.setAddress(try Positionals.one(rest, "ADDRESS"))
        return Configuration(subscription: subscription, json: given.json, summary: given.summary)
    }

    static func run(_ configuration: Configuration) throws -> Int32 {
        let options = configuration.subscription, json = configuration.json
        let summary = configuration.summary ? SubscriptionSummary() : nil
        // --summary only counts: it does so on the Subject's socket thread, with no hand-off to a
        // callback thread (docs/PERFORMANCE.md, twenty-fifth round). Printing keeps its own thread, so
        // that a slow terminal does not hold up reading.
        let run = SubscriptionRun(inline: summary != nil)
        let (subject, welcome) = try options.connect(run)
        printError(
            "subscribed to '\(welcome.publisherDescription.terminalSafe)' (session \(welcome.sessionID)), "
                + FrameDescription.sourcesText(welcome.sources))
        let received = Atomic<Int>(0)
        let end = run.run(subject: subject, duration: options.duration) { package in
            received.add(1, ordering: .relaxed)
            if let summary { summary.count(package); return nil }
            let text = json ? describeJSON(package).render() : describeLine(package)
            return StandardOutput.line(text) ? nil : "standard output is closed"
        }
        let count = received.load(ordering: .relaxed)
        if let summary {
            StandardOutput.line(summary.json(statistics: subject.statistics(), clock: subject.clockEstimate, end: "\(end)").render())
        }
        switch end {
        case .failed(let report):
            throw CommandError("error \(report.code): \(report.message.terminalSafe) (after \(counted(count, "package")))")
        case .publisherClosed(let reason):
            printError("\(reason.terminalSafe); \(counted(count, "package")) received")
        case .durationElapsed, .interrupted, .handlerStopped:
            printError("\(counted(count, "package")) received")
        }
        return 0
    }

    /// The frame of a package as received (filter id as the Subject maps it), or an encoded one for
    /// errors the Subject detected itself (a close with code 0 for the publisher's normal end); nil
    /// for files and images.
    static func frame(of package: ReceivedPackage) -> Frame? {
        if let frame = package.frame { return frame.withHeader(package.header) }
        if case .error(let report) = package.content {
            // A normal end by the publisher (it stopped, its replay ended) is the close it sent, not an error 5.
            if let close = report.publisherClose { return Frame(encoding: .close(close), timestampNs: wallClockNanoseconds()) }
            return Frame(encoding: .error(report), timestampNs: wallClockNanoseconds())
        }
        return nil
    }

    static func describeLine(_ package: ReceivedPackage) -> String {
        if let frame = frame(of: package), let payload = try? frame.payload() {
            return FrameDescription.line(frame, payload: payload)
        }
        let h = package.header
        switch package.content {
        case .file(let file), .image(let file):
            return FrameDescription.pad(h.kind.description, 14) + " " + FrameDescription.pad("source=\(h.sourceID)", 10) + " "
                + FrameDescription.pad("seq=\(h.sequence)", 11) + " t=\(FrameDescription.timestamp(h.timestampNs)) "
                + FrameDescription.pad("filter=\(h.filterID)", 9) + " " + FrameDescription.pad("size=\(file.content.count)", 12)
                + " '\(file.originalName.terminalSafe)' \(counted(file.content.count, "byte"))"
                + (file.md5 != nil ? ", MD5 verified" : "")
        default:
            return "\(h.kind) source=\(h.sourceID) seq=\(h.sequence)"
        }
    }

    static func describeJSON(_ package: ReceivedPackage) -> JSON {
        if let frame = frame(of: package), let payload = try? frame.payload() {
            return FrameDescription.json(frame, payload: payload)
        }
        let h = package.header
        var content: [(String, JSON)] = []
        if case .file(let file) = package.content { content = fileJSON(file) }
        if case .image(let file) = package.content { content = fileJSON(file) }
        return .object([
            ("kind", .string(h.kind.description)), ("source_id", .uint(UInt64(h.sourceID))), ("sequence", .uint(h.sequence)),
            ("timestamp_ns", .int(Int(h.timestampNs))), ("filter_id", .uint(UInt64(h.filterID))),
            ("flags", .uint(UInt64(h.flags.rawValue))), ("content", .object(content)),
        ])
    }

    private static func fileJSON(_ file: ReceivedFile) -> [(String, JSON)] {
        [
            ("name", .string(file.originalName)), ("size", .int(file.content.count)),
            ("md5", file.md5.map { .string(MD5.hex($0)) } ?? .null), ("attributes", .strings(file.attributes)),
            ("format", file.imageFormat.map { .string($0.description) } ?? .null),
        ]
    }
}
