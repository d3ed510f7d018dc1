import Foundation
import TributaryCapture
import TributaryDSP
import TributarySources
import TributaryText
import TributaryTransport
import TributaryWire

/// `tributary serve`'s command line, read and checked (ServeCommand.usage says what each option means).
struct ServeOptions {
    var bind: String
    var apiKey: String
    var simulateSpecs: [String]
    var replayPath: String?
    var speedText: String?
    var speed = ReplaySpeed.factor(1)
    var preload: Bool
    var stdinSpec: PipeSpec?
    var alsaSpecs: [AlsaSpec] = []
    /// --property: free-form properties by source id.
    var properties: [UInt32: SourceProperties]
    var waitSubscribers: Int
    var linger: Double
    var policy: SlowConsumerPolicy
    /// The signal filters' CPU budgets (`--signal-budget`), operations a second: per session, all sessions.
    var signalBudget: (session: Double, total: Double)?
    var description: String
    var statusInterval: Double?
    var curveSecret: String?
    var curveClients: String?
    var curveAcceptAny: Bool
    var http: String?
    var httpHostNames: [String]
    var packages: [OutgoingPackage]
    var every: Double?
    var controlPath: String?
    var inboxDirectory: String?
    var inboxQuota: InboxQuota?
    /// Where to answer discovery queries (docs/PROTOCOL.md §9), or nil with --no-announce.
    var announce: DiscoverySettings?

    /// `--signal-budget SESSION[:TOTAL]`: two numbers of operations a second (TOTAL defaults to 10 × SESSION).
    static func signalBudget(_ text: String?) throws -> (session: Double, total: Double)? {
        guard let text else { return nil }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        let values = parts.map { Double($0) }
        guard parts.count <= 2, values.allSatisfy({ $0 != nil && $0!.isFinite && $0! >= 0 && $0! <= 1e15 }) else {
            throw UsageError("--signal-budget '\(text)': expected SESSION[:TOTAL], operations a second from 0 to 1e15, e.g. 400e6:4e9")
        }
        return (values[0]!, values.count == 2 ? values[1]! : min(values[0]! * 10, 1e15))
    }

    init(_ arguments: inout Arguments) throws {
        guard var bind = try arguments.option("--bind") else { throw UsageError("missing --bind tcp://HOST:PORT") }
        guard let apiKey = try arguments.option("--api-key") else { throw UsageError("missing --api-key KEY") }
        guard !apiKey.isEmpty else {
            throw UsageError(
                "option --api-key: the key is empty; subscribers must present a key the publisher checks, give a non-empty one")
        }
        self.apiKey = apiKey
        simulateSpecs = try arguments.options("--simulate")
        replayPath = try arguments.option("--replay")
        speedText = try arguments.option("--speed")
        preload = arguments.flag("--preload")
        let stdinText = try arguments.option("--stdin")
        let alsaTexts = try arguments.options("--alsa")
        properties = try PropertyOptions.parse(try arguments.options("--property"))
        waitSubscribers = try arguments.integer("--wait-subscribers", "a count of subscribers", in: 0...10_000) ?? 1
        linger = try arguments.number("--linger", "a duration in seconds", in: 0...86_400) ?? 1
        let policyText = try arguments.option("--policy") ?? "drop"
        description = try arguments.option("--description") ?? "tributary serve"
        statusInterval = try arguments.number("--status-interval", "a duration in seconds", in: 0.1...86_400)
        curveSecret = try arguments.option("--curve-secret")
        curveClients = try arguments.option("--curve-clients")
        curveAcceptAny = arguments.flag("--curve-accept-any")
        http = try arguments.option("--http")
        httpHostNames = try LiveSession.parseHostNames(try arguments.options("--http-host"))
        if http == nil && !httpHostNames.isEmpty { throw UsageError("--http-host needs --http HOST:PORT") }
        packages = try OutgoingPackage.parse(&arguments, .publish)
        every = try arguments.number("--every", "a period in seconds", in: 0.01...86_400)
        controlPath = try arguments.option("--control")
        signalBudget = try Self.signalBudget(try arguments.option("--signal-budget"))
        inboxDirectory = try arguments.option("--inbox")
        inboxQuota = try InboxQuota.parse(&arguments)
        if inboxQuota != nil && inboxDirectory == nil {
            throw UsageError("--inbox-quota, --inbox-max-files, --inbox-session-quota and --inbox-session-max-files need --inbox DIR")
        }
        announce = try Self.announceSettings(&arguments)
        let rest = try arguments.finish()
        guard rest.isEmpty else { throw UsageError("unexpected argument '\(rest[0])'") }

        if !bind.contains("://") { bind = "tcp://" + bind }
        try ServeCommand.checkBindEndpoint(bind)
        self.bind = bind
        switch policyText {
        case "drop": policy = .dropAndCount
        case "disconnect": policy = .disconnect
        default: throw UsageError("option --policy: '\(policyText)' is not drop or disconnect")
        }
        if let speedText {
            guard replayPath != nil else { throw UsageError("--speed needs --replay") }
            if speedText == "max" {
                speed = .asFastAsCredit
            } else {
                guard let f = Double(speedText), (0.001...1_000_000).contains(f) else {
                    throw UsageError("option --speed: '\(speedText)' is not a factor in [0.001, 1000000] or max")
                }
                speed = .factor(f)
            }
        }
        if preload && replayPath == nil { throw UsageError("--preload needs --replay") }
        if let stdinText {
            guard controlPath != "-" else {
                throw UsageError("--stdin and --control - both read standard input; give --control a FIFO (mkfifo) instead")
            }
            do { stdinSpec = try PipeSpec(parsing: stdinText) } catch { throw UsageError("option --stdin: \(error)") }
        }
        for text in alsaTexts {
            do { alsaSpecs.append(try AlsaSpec(parsing: text)) } catch { throw UsageError("option --alsa \(error)") }
        }
        if curveSecret == nil && (curveClients != nil || curveAcceptAny) {
            throw UsageError("--curve-clients and --curve-accept-any need --curve-secret")
        }
        if curveSecret != nil && (curveClients == nil) == !curveAcceptAny {
            throw UsageError("with --curve-secret give exactly one of --curve-clients FILE or --curve-accept-any")
        }
        if every != nil && packages.isEmpty {
            throw UsageError("--every needs packages to repeat (--message, --xml, --file, --image or --array)")
        }
    }
}

extension ServeOptions {
    /// --no-announce, or the group, port and TTL to answer discovery queries on (--announce-group,
    /// --announce-port, --announce-ttl; the defaults of docs/PROTOCOL.md §9).
    static func announceSettings(_ arguments: inout Arguments) throws -> DiscoverySettings? {
        let silent = arguments.flag("--no-announce")
        let group = try arguments.option("--announce-group")
        let port = try arguments.integer("--announce-port", "a UDP port", in: 1...65_535)
        let ttl = try arguments.integer("--announce-ttl", "a multicast TTL", in: 0...255)
        if silent {
            guard group == nil && port == nil && ttl == nil else {
                throw UsageError("--no-announce and --announce-group, --announce-port or --announce-ttl contradict each other")
            }
            return nil
        }
        do {
            return try DiscoverySettings(
                group: group ?? DiscoverySettings.defaultGroup, port: port ?? DiscoverySettings.defaultPort,
                ttl: ttl ?? DiscoverySettings.defaultTTL)
        } catch {
            throw UsageError("option --announce-group: \(error)")
        }
    }
}

/// The sources of `tributary serve`: simulated devices, the replay's sources, the pipe and sound cards.
struct ServeSources {
    var simulated: [SimulatedDeviceSource] = []
    var replays: [ReplaySource] = []
    var pipe: PipeSource?
    var soundCards: [AlsaSource] = []

    var all: [any Source] { simulated + replays + (pipe.map { [$0] } ?? []) + soundCards }

    /// Whether every source ends by itself (replays, the pipe, sound cards given samples=N): the
    /// publisher then ends with them.
    var allEnd: Bool {
        simulated.isEmpty && soundCards.allSatisfy { $0.spec.samples != nil } && (!replays.isEmpty || pipe != nil || !soundCards.isEmpty)
    }

    /// Whether every source that ends has been read to its end.
    var allFinished: Bool {
        replays.allSatisfy(\.progress.finished) && (pipe?.progress.finished ?? true) && soundCards.allSatisfy(\.progress.finished)
    }

    init(_ options: ServeOptions) throws {
        for text in options.simulateSpecs {
            let spec: SimulationSpec
            do { spec = try SimulationSpec(parsing: text) } catch { throw UsageError("option --simulate: \(error)") }
            simulated.append(SimulatedDeviceSource(spec: spec, properties: options.properties[spec.id] ?? SourceProperties()))
        }
        if let replayPath = options.replayPath { replays = try Self.replays(of: replayPath, options) }
        if let spec = options.stdinSpec {
            let ids = Set(all.map(\.info.id))
            guard !ids.contains(spec.id) else {
                throw UsageError(
                    "option --stdin: source id \(spec.id) is taken by another source (\(ids.sorted().map(String.init).joined(separator: ", "))); give another id"
                )
            }
            pipe = PipeSource(
                spec: spec, waitForSubscribers: options.waitSubscribers, properties: options.properties[spec.id] ?? SourceProperties())
        }
        for spec in options.alsaSpecs {
            let ids = Set(all.map(\.info.id))
            guard !ids.contains(spec.id) else {
                throw UsageError(
                    "option --alsa '\(spec.device)': source id \(spec.id) is taken by another source "
                        + "(\(ids.sorted().map(String.init).joined(separator: ", "))); give another id=")
            }
            let id = spec.id
            do {
                soundCards.append(
                    try AlsaSource(
                        spec: spec, waitForSubscribers: options.waitSubscribers,
                        properties: options.properties[spec.id] ?? SourceProperties()
                    ) { event in
                        printError("sound card (source \(id)): \(event.terminalSafe)")
                    })
            } catch {
                throw UsageError("option --alsa \(error)")
            }
        }
        for source in all {
            if let problem = source.properties.violation() { throw UsageError("option --property: source \(source.info.id): \(problem)") }
        }
        try PropertyOptions.check(
            options.properties, against: Dictionary(all.map { ($0.info.id, $0.configuration) }, uniquingKeysWith: { a, _ in a }))
        if all.isEmpty {
            printError(
                "no --simulate, --replay, --stdin or --alsa: serving application packages only"
                    + (options.packages.isEmpty && options.controlPath == nil
                        ? " (none given: subscribers receive nothing but can send)" : ""))
        }
    }

    private static func replays(of path: String, _ options: ServeOptions) throws -> [ReplaySource] {
        let started = ContinuousClock.now
        let replays: [ReplaySource]
        do {
            replays = try ReplaySource.sources(
                capture: path, speed: options.speed, waitForSubscribers: options.waitSubscribers,
                preloadLimit: options.preload ? Int(ProcessInfo.processInfo.physicalMemory / 2) : nil, properties: options.properties)
        } catch {
            throw CommandError("\(error)")
        }
        if options.preload {
            let bytes = replays.reduce(0) { $0 + $1.preloadedBytes }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            printError("preloaded \(path): \(String(format: "%.1f MB of frames in %.2f s", Double(bytes) / 1e6, seconds))")
        }
        guard !replays.isEmpty else { throw CommandError("\(path): no source with frames to replay") }
        let gaps = (try? CaptureReader(path: path))?.gaps ?? []
        let missing = gaps.reduce(UInt64(0)) { $0.addingSaturated($1.missingCount) }
        printError(
            "replaying \(path): sources \(replays.map { "\($0.info.id) '\($0.info.description.terminalSafe)'" }.joined(separator: ", ")), "
                + (options.speed == .asFastAsCredit ? "as fast as subscribers read" : "at \(options.speedText ?? "1") x the recorded pace")
                + (gaps.isEmpty
                    ? "" : "; the capture records \(counted(gaps.count, "gap")) (\(counted(missing, "frame")) missing), not re-announced"))
        return replays
    }

    /// What the sources that end say when they are done.
    var completion: String {
        var parts: [String] = []
        if !replays.isEmpty { parts.append("replay complete: \(counted(replays.reduce(0) { $0 + $1.progress.framesPublished }, "frame"))") }
        if let progress = pipe?.progress {
            parts.append(
                "input complete: \(counted(progress.framesPublished, "frame")), \(counted(progress.samplesRead, "sample")) per channel"
                    + (progress.framesRefused > 0 ? ", \(counted(progress.framesRefused, "frame")) refused at the hand-off" : ""))
        }
        for card in soundCards {
            let progress = card.progress
            parts.append(
                "capture complete (source \(card.info.id)): \(counted(progress.framesPublished, "frame")), "
                    + "\(counted(progress.samplesRead, "sample")) per channel"
                    + (progress.overruns > 0
                        ? ", \(counted(progress.overruns, "overrun")) (\(counted(progress.samplesLost, "sample")) per channel lost)" : "")
                    + (progress.framesRefused > 0 ? ", \(counted(progress.framesRefused, "frame")) refused at the hand-off" : ""))
        }
        return parts.joined(separator: "; ")
    }

    /// Prints what the replays, the pipe and the sound cards met on the way (damage, a read error, a partial sample).
    func reportProblems() {
        for replay in replays {
            for problem in replay.progress.problems { printError("replay of source \(replay.info.id): \("\(problem)".terminalSafe)") }
        }
        if let pipe {
            for problem in pipe.progress.problems { printError("standard input (source \(pipe.info.id)): \(problem.terminalSafe)") }
        }
        for card in soundCards {
            for problem in card.progress.problems {
                printError("sound card '\(card.spec.device.terminalSafe)' (source \(card.info.id)): \(problem.terminalSafe)")
            }
        }
    }
}

/// CURVE for `serve`: the ZAP handler runs on the publisher's context before it binds.
struct ServeCurve {
    let context: ZMQContext
    let zap: ZMQZAPHandler
    let publisherCurve: PublisherCurve

    /// nil without --curve-secret.
    init?(_ options: ServeOptions) throws {
        guard let curveSecret = options.curveSecret else { return nil }
        let keys = try CurveKeyFile.loadSecret(curveSecret, option: "--curve-secret")
        var allowed: [ZMQCurveKey: String]?
        if let curveClients = options.curveClients {
            do { allowed = try ZMQCurveKey.loadAllowList(from: curveClients) } catch { throw CommandError("--curve-clients: \(error)") }
            if allowed?.isEmpty == true {
                throw UsageError(
                    "--curve-clients \(curveClients): the file lists no client key, so no subscriber could connect; "
                        + "add the subscribers' public keys (their .pub files), one per line, or use --curve-accept-any")
            }
        }
        do {
            context = try ZMQContext(ioThreads: 1)
            let zapPolicy: ZMQZAPPolicy = allowed.map { .allow($0) } ?? .acceptAnyClient()
            zap = try ZMQZAPHandler(context: context, policy: zapPolicy) { decision in
                if !decision.accepted {
                    printError(
                        "CURVE: refused \(decision.clientKey?.z85 ?? "?") from \(decision.address.terminalSafe): \((decision.refusal ?? "").terminalSafe)"
                    )
                }
            }
            publisherCurve = PublisherCurve(keys: keys)
        } catch {
            throw CommandError("\(error)")
        }
        printError("CURVE on: server public key \(keys.publicKey.z85)" + (options.curveAcceptAny ? ", any client key accepted" : ""))
    }
}
