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

    /// The command line as given (ServeOptions.sourceOptions and the other tables say what each is).
    struct Given {
        var bind: String?
        var apiKey: String?
        var simulate: [String] = []
        var replay: String?
        var speed: String?
        var preload = false
        var stdin: String?
        var alsa: [String] = []
        var properties: [String] = []
        var waitSubscribers: Int?
        var linger: Double?
        var policy: String?
        var description: String?
        var statusInterval: Double?
        var curveSecret: String?
        var curveClients: String?
        var curveAcceptAny = false
        var http: String?
        var httpHosts: [String] = []
        var packages = OutgoingPackage.Given()
        var every: Double?
        var control: String?
        var signalBudget: String?
        var inbox: String?
        var inboxQuota = InboxQuota()
        var inboxQuotaGiven = false
        var noAnnounce = false
        var announce = DiscoveryOptions()
    }

    /// Checks the options together.
    init(_ given: Given) throws {
        guard var bind = given.bind else { throw UsageError("missing --bind tcp://HOST:PORT") }
        guard let apiKey = given.apiKey else { throw UsageError("missing --api-key KEY") }
        guard !apiKey.isEmpty else {
            throw UsageError(
                "option --api-key: the key is empty; subscribers must present a key the publisher checks, give a non-empty one")
        }
        self.apiKey = apiKey
        simulateSpecs = given.simulate
        replayPath = given.replay
        speedText = given.speed
        preload = given.preload
        let stdinText = given.stdin
        let alsaTexts = given.alsa
        properties = try PropertyOptions.parse(given.properties)
        waitSubscribers = given.waitSubscribers ?? 1
        linger = given.linger ?? 1
        let policyText = given.policy ?? "drop"
        description = given.description ?? "tributary serve"
        statusInterval = given.statusInterval
        curveSecret = given.curveSecret
        curveClients = given.curveClients
        curveAcceptAny = given.curveAcceptAny
        http = given.http
        httpHostNames = try LiveSession.parseHostNames(given.httpHosts)
        if http == nil && !httpHostNames.isEmpty { throw UsageError("--http-host needs --http HOST:PORT") }
        packages = try given.packages.packages(.publish)
        every = given.every
        controlPath = given.control
        signalBudget = try Self.signalBudget(given.signalBudget)
        inboxDirectory = given.inbox
        inboxQuota = given.inboxQuotaGiven ? given.inboxQuota : nil
        if inboxQuota != nil && inboxDirectory == nil {
            throw UsageError("--inbox-quota, --inbox-max-files, --inbox-session-quota and --inbox-session-max-files need --inbox DIR")
        }
        announce = try Self.announceSettings(given)
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
    static func announceSettings(_ given: Given) throws -> DiscoverySettings? {
        if given.noAnnounce {
            guard given.announce.isEmpty else {
                throw UsageError("--no-announce and --announce-group, --announce-port or --announce-ttl contradict each other")
            }
            return nil
        }
        return try given.announce.settings(prefix: "--announce-")
    }
}

extension ServeOptions {
    static var sourceOptions: OptionTable<Given> {
        OptionTable([
            .texts(
                "--simulate", "SPEC",
                """
                a simulated acquisition device, live, in real time; repeatable. SPEC is
                key=value pairs, e.g. 'id=1,name=USB-6009,rate=10000,channels=4,freq=50,amp=1,noise=0.01':
                channel k carries a sine of freq x (k+1) Hz, amplitude amp, plus Gaussian noise
                of standard deviation noise. Keys: id (required), name, rate, channels, freq, amp,
                noise, wave (sine|square|triangle|sawtooth), harmonics (e.g. 0.01;0.005), bits
                (1-16: int16 ADC counts), range, block (samples per frame), lines (digital lines),
                unit, seed. See README.md.
                """, \.simulate),
            .text(
                "--replay", "X.tcap",
                """
                replay every source of a capture, losslessly (credit-based: nothing is dropped,
                the replay waits for the slowest subscriber); frames keep their recorded
                timestamps and are flagged 'replayed'
                """, \.replay),
            .text(
                "--speed", "F|max",
                """
                replay pace: F times the recorded pace (default 1), or max: as fast as the
                slowest subscriber reads
                """, level: 1, \.speed),
            .flag(
                "--preload",
                """
                decode the whole replay into memory before listening (at most half this
                machine's memory), so that its pace is the transport's and the subscribers'
                alone, not the capture's decoding (which shares the cores): for benchmarking
                a link or a subscriber at --speed max
                """, level: 1, \.preload),
            .text(
                "--stdin", "SPEC",
                """
                publish the samples standard input carries: interleaved little-endian
                samples (sample 0 of every channel, then sample 1, ...), e.g. from
                'arecord -t raw -f S16_LE -c 2 -r 48000 | tributary serve ... --stdin
                id=1,name=mic,channels=2,rate=48000,type=int16'. Keys: id, channels and rate
                (required), name, type (int16|int32|float32|float64, default float64), scale
                and offset (counts only: value = count x scale + offset; int16 and int32
                counts are sent as counts), unit, range (MIN:MAX), block (samples per frame, default
                rate/10), mode (lossless, default: nothing dropped, reading waits for the
                slowest subscriber; or live: a slow subscriber loses frames, announced). The
                first sample is stamped with the time the input's first bytes arrived, each
                frame from its first sample's index and the rate. The end of the input ends
                the source.
                """, \.stdin),
            .texts(
                "--alsa", "DEVICE[,KEY=VALUE]...",
                """
                capture from a sound card through ALSA (libasound); repeatable.
                DEVICE is an ALSA PCM (default, hw:1,0, plughw:CARD=USB,DEV=0, or one an
                ALSA configuration defines), up to the first key=value with a lower-case
                key. Keys: id (default 1), name (default DEVICE), channels (default 2),
                rate (Hz, default 48000; the device must give exactly this rate), format
                (S16_LE, default: sent as int16 counts; S24_LE and S32_LE: sent as int32
                counts, S24_LE sign-extended; FLOAT_LE: sent as float32), scale and
                offset (counts only; default 1/2^(bits-1) and 0: fractions of full scale),
                unit (default FS), range (MIN:MAX), block (samples per frame and the
                device's period, default rate/10), mode (lossless, default, or live, as
                for --stdin), samples (capture this many samples per channel, then end the
                source; default: until stopped). The first sample is stamped with the
                driver's trigger timestamp (the wall clock's time at which the capture
                started, or the wall clock at the start when the device keeps none), each
                frame from its first sample's index and the rate. An overrun (the card's
                buffer filled before it was read) is recovered, counted, printed and
                declared as a gap: the sample index (first_sample) jumps by the samples
                lost.
                """, \.alsa),
            .texts(
                "--property", "ID:[CH:]KEY=VALUE",
                """
                a free-form property of source ID (a sensor's serial number, a
                calibration date, a subject id), sent to subscribers right after the source's
                configuration, kept by 'record', shown by 'inspect' and exported; ID:CH:KEY=VALUE
                gives one to the channel with index CH; repeatable (a key given again: the
                last value). A replay keeps the capture's properties, these set over them.
                Bounds (docs/PROTOCOL.md §5.19): keys 1-256 bytes, values up to 16384 bytes,
                1024 properties per source or channel, 1 MiB in all per source
                """, \.properties),
            .integer(
                "--wait-subscribers", "N", "a count of subscribers", in: 0...10_000,
                """
                started subscribers to wait for before a replay, a lossless --stdin or
                a lossless --alsa begins (default 1)
                """, \.waitSubscribers),
            .number(
                "--linger", "S", "a duration in seconds", in: 0...86_400,
                """
                once every replay, the input and the captures have been delivered, seconds
                to give subscribers before the publisher closes their sessions and exits
                (default 1; only when every source is a replay, --stdin, or --alsa with
                samples=N)
                """, \.linger),
        ])
    }

    static var packageOptions: OptionTable<Given> {
        OutgoingPackage.options(.publish).lifted(\.packages)
            + OptionTable([
                .number(
                    "--every", "S", "a period in seconds", in: 0.01...86_400,
                    "repeat the packages above every S seconds, S in [0.01, 86400]", \.every),
                .text(
                    "--control", "-|FIFO",
                    """
                    JSON lines from a script, on standard input (-) or a FIFO (mkfifo; opened
                    again after each writer), each published at once to every started subscriber:
                      {"kind":"message","text":"hello","code":0}
                      {"kind":"xml","text":"<a/>"} or {"kind":"xml","file":"doc.xml"}
                      {"kind":"file","path":"a.bin","name":"optional.bin"}
                      {"kind":"image","path":"p.png","format":"png (optional)"}
                      {"kind":"array","type":"double","npy":"a.npy"} or
                      {"kind":"array","type":"int32","values":[[1,2],[3,4]]} (type string: strings)
                    A bad line is reported on stderr with its number and skipped.
                    """, \.control),
            ])
    }

    static var inboxOptions: OptionTable<Given> {
        OptionTable([
            .text(
                "--inbox", "DIR",
                """
                also record it: files and images written into DIR under their sanitised
                names (never overwriting: a taken name gets -1, -2, ...), and every package
                as a JSON object per line in DIR/packages.jsonl (the objects of 'subscribe
                --json' with "session", "subscriber" and, for files, "stored_as")
                """, \.inbox)
        ]) + InboxQuota.options
    }

    static var publisherOptions: OptionTable<Given> {
        OptionTable([
            .text("--bind", "ENDPOINT", "tcp://HOST:PORT (or HOST:PORT) to listen on (required)", \.bind),
            .text("--api-key", "KEY", "the key subscribers must present (required)", \.apiKey),
            .text(
                "--policy", "P",
                """
                slow subscribers: drop (drop and count, announced in gap notices; default)
                or disconnect (error 13)
                """, \.policy),
            .text(
                "--signal-budget", "SESSION[:TOTAL]",
                """
                the CPU budget of the signal filters subscribers ask for
                (subscribe --decimate/--lowpass, docs/PROTOCOL.md §6.2), in filter operations
                a second (5 per IIR section per sample; decimate's FIR: taps / N per sample)
                of one session and of all sessions together; a request past it ends its
                session with error 17 (default 400e6:4e9; TOTAL defaults to 10 × SESSION)
                """, \.signalBudget),
            .text("--description", "TEXT", "the publisher's description in the welcome", \.description),
            .number(
                "--status-interval", "S", "a duration in seconds", in: 0.1...86_400,
                "print the subscriber list every S seconds (default: only on SIGUSR1)", \.statusInterval),
            .text("--curve-secret", "FILE", "encrypt with CURVE, with this secret key ('tributary keygen --out' writes it)", \.curveSecret),
            .text("--curve-clients", "FILE", "the allowed subscriber public keys, one per line (with --curve-secret)", \.curveClients),
            .flag("--curve-accept-any", "with --curve-secret: let any client key in (traffic still encrypted)", \.curveAcceptAny),
        ])
    }

    static var discoveryOptions: OptionTable<Given> {
        OptionTable([
            .flag(
                "--no-announce",
                """
                do not answer discovery queries (default: answer them; a publisher bound to
                loopback answers on loopback only)
                """, \.noAnnounce)
        ]) + DiscoveryOptions.options(prefix: "--announce-", purpose: "to answer on", ttlHelp: "the multicast TTL").lifted(\.announce)
    }

    static var httpOptions: OptionTable<Given> {
        OptionTable([
            .text("--http", "HOST:PORT", "also serve the live view page of these sources (see 'tributary view')", \.http),
            .texts(
                "--http-host", "NAME",
                """
                with --http: a name browsers may use for the page besides its address,
                localhost, 127.0.0.1 and [::1] (the Host header must name one of them:
                DNS rebinding); repeatable
                """, level: 1, \.httpHosts),
        ])
    }

    static var options: OptionTable<Given> {
        sourceOptions + packageOptions + inboxOptions + publisherOptions + discoveryOptions + httpOptions
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
        replays = try ReplaySource.sources(
            capture: path, speed: options.speed, waitForSubscribers: options.waitSubscribers,
            preloadLimit: options.preload ? Int(ProcessInfo.processInfo.physicalMemory / 2) : nil, properties: options.properties)
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
        printError("CURVE on: server public key \(keys.publicKey.z85)" + (options.curveAcceptAny ? ", any client key accepted" : ""))
    }
}
