import Dispatch
import Foundation
import Synchronization
import TributaryAnalysis
import TributaryCapture
import TributaryDSP
import TributarySources
import TributaryText
import TributaryTransport
import TributaryWire

/// `tributary serve`: a publisher streaming simulated devices, the replay of a capture, a pipe and/or sound cards.
enum ServeCommand: TableCommand {
    static let name = "serve"
    static let streamsFrames = true
    static let summary = "publish simulated devices, a capture replay, standard input and/or sound cards to subscribers"
    static let usage = """
        usage: tributary serve --bind tcp://HOST:PORT --api-key KEY [--simulate SPEC]...
                               [--replay X.tcap [--speed F|max] [--preload]] [--stdin SPEC]
                               [--alsa DEVICE[,channels=N,rate=HZ,format=F,block=N,...]]...
                               [--property ID:[CH:]KEY=VALUE]... [--wait-subscribers N] [--linger S]
                               [--message TEXT]... [--xml FILE|TEXT]... [--file PATH]... [--image PATH]...
                               [--array TYPE:FILE.npy]... [--every S] [--control -|FIFO]
                               [--inbox DIR [--inbox-quota BYTES] [--inbox-max-files N]
                                            [--inbox-session-quota BYTES] [--inbox-session-max-files N]]
                               [--policy drop|disconnect] [--signal-budget SESSION[:TOTAL]]
                               [--description TEXT] [--status-interval S]
                               [--curve-secret FILE (--curve-clients FILE | --curve-accept-any)]
                               [--http HOST:PORT [--http-host NAME]...]
                               [--no-announce | [--announce-group ADDR] [--announce-port PORT] [--announce-ttl N]]

        Runs a publisher (docs/PROTOCOL.md): subscribers connect with the API key, get the welcome and
        each source's configuration, and receive data through their own filters. Prints the endpoint it
        bound ('listening on tcp://127.0.0.1:40123'; port 0 picks a free port), a line when a subscriber
        comes or goes, the list of subscribers on SIGUSR1 (and every --status-interval seconds), and
        stops cleanly on SIGINT/SIGTERM (subscribers get a normal close).

        Sources:
        \(ServeOptions.sourceOptions.help(column: ServeOptions.options.helpColumn))

        Application packages (source 0, as an SCCT publisher's application sends them):
        \(ServeOptions.packageOptions.help(column: ServeOptions.options.helpColumn))

        What subscribers send (messages, XML, files, images, arrays) is printed, one line each
        ('from session 3 'name': message ...'):
        \(ServeOptions.inboxOptions.help(column: ServeOptions.options.helpColumn))

        Publisher:
        \(ServeOptions.publisherOptions.help(column: ServeOptions.options.helpColumn))

        Discovery (docs/PROTOCOL.md §9; 'tributary resolve' and resolve:QUERY addresses find it):
        \(ServeOptions.discoveryOptions.help(column: ServeOptions.options.helpColumn))
        \(ServeOptions.httpOptions.help(column: ServeOptions.options.helpColumn))
        """

    static var options: OptionTable<ServeOptions.Given> { ServeOptions.options }

    static func parse(_ arguments: [String]) throws -> ServeOptions {
        var given = ServeOptions.Given()
        let rest = try options.parse(arguments, into: &given)
        try Positionals.none(rest)
        return try ServeOptions(given)
    }

    static func run(_ options: ServeOptions) throws -> Int32 {
        let sources = try ServeSources(options)
        let inbox = try PublisherInbox(directory: options.inboxDirectory, quota: options.inboxQuota ?? InboxQuota())
        let curve = try ServeCurve(options)
        var configuration = PublisherConfiguration(
            endpoint: options.bind, apiKey: options.apiKey, description: options.description,
            slowConsumerPolicy: options.policy, curve: curve?.publisherCurve)
        configuration.signalFilters = DSPSignalFilters()
        if let budget = options.signalBudget {
            (configuration.maxSignalFilterCostPerSession, configuration.maxSignalFilterCost) = budget
        }
        let publisher: Publisher
        do {
            publisher = try Publisher(configuration: configuration, sources: sources.all, context: curve?.context) { inbox.receive($0) }
        } catch {
            curve?.zap.stop()
            throw error
        }
        inbox.setReply { [weak publisher] session, report in publisher?.publish(.error(report), to: .session(session)) }
        StandardOutput.line("listening on \(publisher.endpoint)")
        for source in sources.all {
            StandardOutput.line("source \(source.info.id) '\(source.info.description.terminalSafe)': \(sourceSummary(source))")
        }
        let announcer = startAnnouncer(options, publisher, sources, curve: curve != nil)
        defer { announcer?.stop() }
        let liveView = try ServeHTTP.start(
            http: options.http, hostNames: options.httpHostNames, endpoint: publisher.endpoint,
            apiKey: options.apiKey, curve: curve != nil)  // serve --http
        defer { liveView?.close() }

        // Control lines are published as they come, from the reading thread.
        var control: ControlInput?
        if let controlPath = options.controlPath {
            control = try ControlInput(path: controlPath) { [publisher] line, number in
                do {
                    let package = try OutgoingPackage.parse(jsonLine: line)
                    let sent = package.publish(on: publisher)
                    StandardOutput.line(
                        "control line \(number): " + (sent ? "published " : "refused (the publisher's queue is full): ") + package.summary)
                } catch {
                    printError("tributary serve: --control \(controlPath.terminalSafe) line \(number): \(error)")
                }
            }
            control?.start()
        }
        var loop = ServeLoop(options: options, sources: sources, publisher: publisher, inbox: inbox)
        let end = loop.run()
        control?.stop()
        let statistics = publisher.statistics()
        // At the end of a replay or the input, subscribers get time to read everything queued for
        // them (and its close); on a signal the operator wants the publisher gone soon.
        publisher.stop(reason: end.reason, drain: end.delivered ? .seconds(30) : .seconds(2))
        curve?.zap.stop()
        inbox.close()
        sources.reportProblems()
        StandardOutput.line(
            "\(end.reason): \(counted(statistics.framesPublished, "frame")) published, \(counted(statistics.sessionsOpened, "session")) opened, "
                + "\(statistics.sessionsRefused) refused, \(counted(statistics.handOffRefused, "frame")) refused at the hand-off")
        return 0
    }

    /// Answers discovery queries with the publisher's description (nil with --no-announce). The name
    /// is --description; the address the endpoint bound.
    private static func startAnnouncer(
        _ options: ServeOptions, _ publisher: Publisher, _ sources: ServeSources,
        curve: Bool
    ) -> DiscoveryAnnouncer? {
        guard let settings = options.announce else { return nil }
        do {
            guard
                let (announcer, loopback) = try DiscoveryAnnouncer.announcing(
                    endpoint: publisher.endpoint, name: options.description, authentication: curve ? .curve : .key,
                    sources: sources.all.map(DiscoveredSource.init), settings: settings)
            else {
                printError("discovery: not announced (\(publisher.endpoint.terminalSafe) is not a tcp:// endpoint other hosts can reach)")
                return nil
            }
            StandardOutput.line("answering discovery queries on \(settings.group):\(settings.port)" + (loopback ? " (loopback only)" : ""))
            return announcer
        } catch {
            // Publishing goes on: discovery is a convenience, and a machine without multicast still serves.
            printError("discovery: cannot answer queries on \(settings.group):\(settings.port): \(error); publishing without it")
            return nil
        }
    }

    /// Refuses a tcp:// endpoint whose port libzmq would not bind as given (it takes 99999 modulo
    /// 65536, another port than asked): the port must be 0-65535 (0 or * picks a free one).
    static func checkBindEndpoint(_ endpoint: String) throws {
        guard endpoint.hasPrefix("tcp://") else { return }  // ipc://, inproc://: libzmq checks them
        let rest = endpoint.dropFirst(6)
        guard let colon = rest.lastIndex(of: ":") else {
            throw UsageError(
                "option --bind: '\(endpoint)' has no port; expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:5555 (port 0: any free port)")
        }
        let host = rest[..<colon], port = rest[rest.index(after: colon)...]
        guard !host.isEmpty else { throw UsageError("option --bind: '\(endpoint)' has no host; use * for every interface") }
        guard port == "*" || (port.allSatisfy(\.isASCII) && UInt16(port) != nil) else {
            throw UsageError("option --bind: '\(endpoint)': the port '\(port)' is not in 0...65535 (0 or *: any free port)")
        }
    }

    private static func sourceSummary(_ source: any Source) -> String {
        if let simulated = source as? SimulatedDeviceSource {
            let s = simulated.spec
            return "simulated, \(counted(s.channels, "channel")) at \(s.rate) S/s, \(s.samplesPerFrame) samples per frame, "
                + (s.bits.map { "\($0)-bit int16 counts" } ?? "float64") + ", \(s.wave) \(s.frequency) Hz x (k+1)"
                + (s.lines > 0 ? ", \(counted(s.lines, "digital line"))" : "")
        }
        if let pipe = source as? PipeSource {
            let s = pipe.spec
            return "standard input, \(counted(s.channels, "channel")) at \(s.rate) S/s, \(s.type.rawValue)"
                + ", \(s.samplesPerFrame) samples per frame, \(s.mode.rawValue)"
        }
        if let card = source as? AlsaSource {
            let s = card.spec
            return "sound card '\(s.device.terminalSafe)', \(counted(s.channels, "channel")) at \(s.rate) S/s, \(s.format.rawValue)"
                + (s.format == .s24 || s.format == .s32 ? " (sent as int32 counts)" : "")
                + ", \(s.samplesPerFrame) samples per frame, \(s.mode.rawValue)"
                + (s.samples.map { ", \($0) samples per channel" } ?? "")
        }
        let c = source.configuration
        return "replay, \(counted(c.channels.count, "channel"))" + (c.channels.first.map { " at \($0.samplingRate) S/s" } ?? "")
    }
}
