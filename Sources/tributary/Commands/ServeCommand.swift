import Dispatch
import Foundation
import Synchronization
import TributaryAnalysis
import TributaryCapture
import TributaryDSP
import TributarySources
import TributaryTransport
import TributaryWire
import TributaryText

/// `tributary serve`: a publisher streaming simulated devices and/or the replay of a capture.
enum ServeCommand: Command {
    static let name = "serve"
    static let streamsFrames = true
    static let summary = "publish simulated devices and/or a capture replay to subscribers"
    static let usage = """
    usage: tributary serve --bind tcp://HOST:PORT --api-key KEY [--simulate SPEC]...
                           [--replay X.tcap [--speed F|max] [--preload] [--wait-subscribers N] [--linger S]]
                           [--message TEXT]... [--xml FILE|TEXT]... [--file PATH]... [--image PATH]...
                           [--array TYPE:FILE.npy]... [--every S] [--control -|FIFO]
                           [--inbox DIR [--inbox-quota BYTES] [--inbox-max-files N]
                                        [--inbox-session-quota BYTES] [--inbox-session-max-files N]]
                           [--policy drop|disconnect] [--description TEXT] [--status-interval S]
                           [--curve-secret FILE (--curve-clients FILE | --curve-accept-any)]
                           [--http HOST:PORT [--http-host NAME]...]

    Runs a publisher (docs/PROTOCOL.md): subscribers connect with the API key, get the welcome and
    each source's configuration, and receive data through their own filters. Prints the endpoint it
    bound ('listening on tcp://127.0.0.1:40123'; port 0 picks a free port), a line when a subscriber
    comes or goes, the list of subscribers on SIGUSR1 (and every --status-interval seconds), and
    stops cleanly on SIGINT/SIGTERM (subscribers get a normal close).

    Sources:
      --simulate SPEC    a simulated acquisition device, live, in real time; repeatable. SPEC is
                         key=value pairs, e.g. 'id=1,name=USB-6009,rate=10000,channels=4,freq=50,amp=1,noise=0.01':
                         channel k carries a sine of freq x (k+1) Hz, amplitude amp, plus Gaussian noise
                         of standard deviation noise. Keys: id (required), name, rate, channels, freq, amp,
                         noise, wave (sine|square|triangle|sawtooth), harmonics (e.g. 0.01;0.005), bits
                         (1-16: int16 ADC counts), range, block (samples per frame), lines (digital lines),
                         unit, seed. See README.md.
      --replay X.tcap    replay every source of a capture, losslessly (credit-based: nothing is dropped,
                         the replay waits for the slowest subscriber); frames keep their recorded
                         timestamps and are flagged 'replayed'
      --speed F|max      replay pace: F times the recorded pace (default 1), or max: as fast as the
                         slowest subscriber reads
      --preload          decode the whole replay into memory before listening (at most half this
                         machine's memory), so that its pace is the transport's and the subscribers'
                         alone, not the capture's decoding (which shares the cores): for benchmarking
                         a link or a subscriber at --speed max
      --wait-subscribers N  started subscribers to wait for before the replay begins (default 1)
      --linger S         once a replay has been delivered, seconds to give subscribers before the
                         publisher closes their sessions and exits (default 1; only when every source
                         is a replay)

    Application packages (source 0, as an SCCT publisher's application sends them):
      --message TEXT     a message (code 0); repeatable
      --xml FILE|TEXT    an XML document: TEXT when it starts with '<', else read from FILE; repeatable
      --file PATH        a file (sent in 1 MiB chunks with its MD5, under its base name); repeatable
      --image PATH       an image: png, jpeg, bmp or tiff, from the extension; repeatable
      --array TYPE:FILE.npy  a 2D array from an NPY file (float64, float32 or int16; shape (rows,
                         columns) or (columns,)) as TYPE double, float, int32, int16, int64 or bool;
                         repeatable
                         These are sent to each subscriber once, when it starts (in this order:
                         messages, XML, files, images, arrays), and with --every to every started
                         subscriber again every S seconds.
      --every S          repeat the packages above every S seconds, S in [0.01, 86400]
      --control -|FIFO   JSON lines from a script, on standard input (-) or a FIFO (mkfifo; opened
                         again after each writer), each published at once to every started subscriber:
                           {"kind":"message","text":"hello","code":0}
                           {"kind":"xml","text":"<a/>"} or {"kind":"xml","file":"doc.xml"}
                           {"kind":"file","path":"a.bin","name":"optional.bin"}
                           {"kind":"image","path":"p.png","format":"png (optional)"}
                           {"kind":"array","type":"double","npy":"a.npy"} or
                           {"kind":"array","type":"int32","values":[[1,2],[3,4]]} (type string: strings)
                         A bad line is reported on stderr with its number and skipped.

    What subscribers send (messages, XML, files, images, arrays) is printed, one line each
    ('from session 3 'name': message ...'):
      --inbox DIR        also record it: files and images written into DIR under their sanitised
                         names (never overwriting: a taken name gets -1, -2, ...), and every package
                         as a JSON object per line in DIR/packages.jsonl (the objects of 'subscribe
                         --json' with "session", "subscriber" and, for files, "stored_as")
    \(InboxQuota.usage)

    Publisher:
      --bind ENDPOINT    tcp://HOST:PORT (or HOST:PORT) to listen on (required)
      --api-key KEY      the key subscribers must present (required)
      --policy P         slow subscribers: drop (drop and count, announced in gap notices; default)
                         or disconnect (error 13)
      --description TEXT the publisher's description in the welcome
      --status-interval S  print the subscriber list every S seconds (default: only on SIGUSR1)
      --curve-secret FILE  encrypt with CURVE, with this secret key ('tributary keygen --out' writes it)
      --curve-clients FILE the allowed subscriber public keys, one per line (with --curve-secret)
      --curve-accept-any   with --curve-secret: let any client key in (traffic still encrypted)
    \(ServeHTTP.usageLine)
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        guard var bind = try arguments.option("--bind") else { throw UsageError("missing --bind tcp://HOST:PORT") }
        guard let apiKey = try arguments.option("--api-key") else { throw UsageError("missing --api-key KEY") }
        guard !apiKey.isEmpty else {
            throw UsageError("option --api-key: the key is empty; subscribers must present a key the publisher checks, give a non-empty one")
        }
        let simulateSpecs = try arguments.options("--simulate")
        let replayPath = try arguments.option("--replay")
        let speedText = try arguments.option("--speed")
        let preload = arguments.flag("--preload")
        let waitSubscribers = try arguments.integer("--wait-subscribers", "a count of subscribers", in: 0...10_000) ?? 1
        let linger = try arguments.number("--linger", "a duration in seconds", in: 0...86_400) ?? 1
        let policyText = try arguments.option("--policy") ?? "drop"
        let description = try arguments.option("--description") ?? "tributary serve"
        let statusInterval = try arguments.number("--status-interval", "a duration in seconds", in: 0.1...86_400)
        let curveSecret = try arguments.option("--curve-secret")
        let curveClients = try arguments.option("--curve-clients")
        let curveAcceptAny = arguments.flag("--curve-accept-any")
        let http = try arguments.option("--http")
        let httpHostNames = try LiveSession.parseHostNames(try arguments.options("--http-host"))
        if http == nil && !httpHostNames.isEmpty { throw UsageError("--http-host needs --http HOST:PORT") }
        let packages = try OutgoingPackage.parse(&arguments, .publish)
        let every = try arguments.number("--every", "a period in seconds", in: 0.01...86_400)
        let controlPath = try arguments.option("--control")
        let inboxDirectory = try arguments.option("--inbox")
        let inboxQuota = try InboxQuota.parse(&arguments)
        if inboxQuota != nil && inboxDirectory == nil {
            throw UsageError("--inbox-quota, --inbox-max-files, --inbox-session-quota and --inbox-session-max-files need --inbox DIR")
        }
        let rest = try arguments.finish()
        guard rest.isEmpty else { throw UsageError("unexpected argument '\(rest[0])'") }

        if !bind.contains("://") { bind = "tcp://" + bind }
        try checkBindEndpoint(bind)
        let policy: SlowConsumerPolicy
        switch policyText {
        case "drop": policy = .dropAndCount
        case "disconnect": policy = .disconnect
        default: throw UsageError("option --policy: '\(policyText)' is not drop or disconnect")
        }
        var speed = ReplaySpeed.factor(1)
        if let speedText {
            guard replayPath != nil else { throw UsageError("--speed needs --replay") }
            if speedText == "max" { speed = .asFastAsCredit } else {
                guard let f = Double(speedText), (0.001...1_000_000).contains(f) else {
                    throw UsageError("option --speed: '\(speedText)' is not a factor in [0.001, 1000000] or max")
                }
                speed = .factor(f)
            }
        }
        if preload && replayPath == nil { throw UsageError("--preload needs --replay") }
        if curveSecret == nil && (curveClients != nil || curveAcceptAny) {
            throw UsageError("--curve-clients and --curve-accept-any need --curve-secret")
        }
        if curveSecret != nil && (curveClients == nil) == !curveAcceptAny {
            throw UsageError("with --curve-secret give exactly one of --curve-clients FILE or --curve-accept-any")
        }

        // Sources.
        var sources: [any Source] = []
        var simulated: [SimulatedDeviceSource] = []
        for text in simulateSpecs {
            do { simulated.append(SimulatedDeviceSource(spec: try SimulationSpec(parsing: text))) } catch {
                throw UsageError("option --simulate: \(error)")
            }
        }
        sources += simulated
        var replays: [ReplaySource] = []
        if let replayPath {
            let started = ContinuousClock.now
            do {
                replays = try ReplaySource.sources(capture: replayPath, speed: speed, waitForSubscribers: waitSubscribers,
                                                   preloadLimit: preload ? Int(ProcessInfo.processInfo.physicalMemory / 2) : nil)
            } catch {
                throw CommandError("\(error)")
            }
            if preload {
                let bytes = replays.reduce(0) { $0 + $1.preloadedBytes }
                printError("preloaded \(replayPath): \(String(format: "%.1f MB of frames in %.2f s", Double(bytes) / 1e6, seconds(since: started)))")
            }
            guard !replays.isEmpty else { throw CommandError("\(replayPath): no source with frames to replay") }
            let reader = try? CaptureReader(path: replayPath)
            let gaps = reader?.gaps ?? []
            printError("replaying \(replayPath): sources \(replays.map { "\($0.info.id) '\($0.info.description.terminalSafe)'" }.joined(separator: ", ")), "
                       + (speed == .asFastAsCredit ? "as fast as subscribers read" : "at \(speedText ?? "1") x the recorded pace")
                       + (gaps.isEmpty ? "" : "; the capture records \(counted(gaps.count, "gap")) (\(counted(gaps.reduce(UInt64(0)) { $0.addingSaturated($1.missingCount) }, "frame")) missing), not re-announced"))
            sources += replays
        }
        if every != nil && packages.isEmpty {
            throw UsageError("--every needs packages to repeat (--message, --xml, --file, --image or --array)")
        }
        if sources.isEmpty {
            printError("no --simulate or --replay: serving application packages only"
                       + (packages.isEmpty && controlPath == nil ? " (none given: subscribers receive nothing but can send)" : ""))
        }
        let inbox = try PublisherInbox(directory: inboxDirectory, quota: inboxQuota ?? InboxQuota())

        // CURVE: the ZAP handler must run on the publisher's context before it binds.
        var context: ZMQContext?
        var zap: ZMQZAPHandler?
        var curve: PublisherCurve?
        if let curveSecret {
            let keys = try CurveKeyFile.loadSecret(curveSecret, option: "--curve-secret")
            var allowed: [ZMQCurveKey: String]?
            if let curveClients {
                do { allowed = try ZMQCurveKey.loadAllowList(from: curveClients) } catch { throw CommandError("--curve-clients: \(error)") }
                if allowed?.isEmpty == true {
                    throw UsageError("--curve-clients \(curveClients): the file lists no client key, so no subscriber could connect; "
                                     + "add the subscribers' public keys (their .pub files), one per line, or use --curve-accept-any")
                }
            }
            do {
                let zmq = try ZMQContext(ioThreads: 1)
                let zapPolicy: ZMQZAPPolicy = allowed.map { .allow($0) } ?? .acceptAnyClient()
                zap = try ZMQZAPHandler(context: zmq, policy: zapPolicy) { decision in
                    if !decision.accepted {
                        printError("CURVE: refused \(decision.clientKey?.z85 ?? "?") from \(decision.address.terminalSafe): \((decision.refusal ?? "").terminalSafe)")
                    }
                }
                context = zmq
                curve = PublisherCurve(keys: keys)
                printError("CURVE on: server public key \(keys.publicKey.z85)" + (curveAcceptAny ? ", any client key accepted" : ""))
            } catch {
                throw CommandError("\(error)")
            }
        }

        let configuration = PublisherConfiguration(endpoint: bind, apiKey: apiKey, description: description,
                                                   slowConsumerPolicy: policy, curve: curve)
        let publisher: Publisher
        do {
            publisher = try Publisher(configuration: configuration, sources: sources, context: context) { inbox.receive($0) }
        } catch {
            zap?.stop()
            throw CommandError("\(error)")
        }
        inbox.setReply { [weak publisher] session, report in publisher?.publish(.error(report), to: .session(session)) }
        StandardOutput.line("listening on \(publisher.endpoint)")
        for source in sources {
            StandardOutput.line("source \(source.info.id) '\(source.info.description.terminalSafe)': \(sourceSummary(source))")
        }
        let liveView = try ServeHTTP.start(http: http, hostNames: httpHostNames, endpoint: publisher.endpoint, apiKey: apiKey,
                                              curve: curveSecret != nil)  // serve --http
        defer { liveView?.close() }

        // Control lines are published as they come, from the reading thread.
        var control: ControlInput?
        if let controlPath {
            control = try ControlInput(path: controlPath) { [publisher] line, number in
                do {
                    let package = try OutgoingPackage.parse(jsonLine: line)
                    let sent = package.publish(on: publisher)
                    StandardOutput.line("control line \(number): " + (sent ? "published " : "refused (the publisher's queue is full): ") + package.summary)
                } catch {
                    printError("tributary serve: --control \(controlPath.terminalSafe) line \(number): \(error)")
                }
            }
            control?.start()
        }
        /// Subscribers that have been sent the packages of the command line.
        var greeted = Set<UInt64>()
        var lastRepeat = Date()

        enum Event { case stop(Int32), list }
        let events = Mutex<[Event]>([])
        let wake = DispatchSemaphore(value: 0)
        let signals = ProcessSignals([SIGINT, SIGTERM, SIGUSR1]) { number in
            events.withLock { $0.append(number == SIGUSR1 ? .list : .stop(number)) }
            wake.signal()
        }
        var known: [UInt64: SubscriberInfo] = [:]
        var sessionsOpened: UInt64 = 0
        var lastStatus = Date()
        var replayDeliveredAt: Date?
        let replayOnly = !replays.isEmpty && replays.count == sources.count
        var stopReason = "stopped"
        var replayEnded = false
        var behind: Set<UInt32> = []  // simulated sources said to be behind real time
        loop: while true {
            _ = wake.wait(timeout: .now() + .milliseconds(200))
            // A simulated device faster than this machine can compute falls behind real time: say so
            // (once it is a second late, and again once it has caught up).
            for device in simulated {
                let late = device.secondsBehind, id = device.info.id
                if late >= 1, !behind.contains(id) {
                    behind.insert(id)
                    printError("source \(id) '\(device.info.description.terminalSafe)': the simulation is \(String(format: "%.1f", late)) s behind real time: "
                               + "this machine computes its \(counted(device.spec.channels, "channel")) × \(String(format: "%.0f", device.spec.rate)) samples/s more slowly than real time, "
                               + "so its frames (stamped on the device's schedule) fall ever further behind the clock; lower its rate or channels")
                } else if late == 0, behind.contains(id) {
                    behind.remove(id)
                    printError("source \(id) '\(device.info.description.terminalSafe)': the simulation has caught up with real time")
                }
            }
            for event in events.withLock({ e -> [Event] in defer { e.removeAll() }; return e }) {
                switch event {
                case .stop(let number):
                    stopReason = number == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)"
                    break loop
                case .list:
                    printList(publisher.subscribers())
                }
            }
            // Subscribers coming and going.
            let current = publisher.subscribers()
            let ids = Set(current.map(\.sessionID))
            for info in current where known[info.sessionID] == nil {
                StandardOutput.line("subscriber + session \(info.sessionID) '\(info.description.terminalSafe)' from \(info.address.terminalSafe)"
                                    + (info.userID.map { " (CURVE \($0.terminalSafe))" } ?? ""))
            }
            // What the publisher held for a session that went (even one that came and went between
            // two looks) is freed: the inbox gives the heap's free pages back once things are quiet.
            let opened = publisher.statistics().sessionsOpened
            if opened != sessionsOpened || known.keys.contains(where: { !ids.contains($0) }) { inbox.sessionsChanged() }
            sessionsOpened = opened
            for (id, info) in known where !ids.contains(id) {
                StandardOutput.line("subscriber - session \(id) '\(info.description.terminalSafe)': \(counted(info.framesSent, "frame")) sent, \(info.framesDropped) dropped")
            }
            known = Dictionary(uniqueKeysWithValues: current.map { ($0.sessionID, $0) })
            // The command line's packages: to each subscriber as it starts, and with --every to all again.
            if !packages.isEmpty {
                for info in current where info.isStarted && !greeted.contains(info.sessionID) {
                    greeted.insert(info.sessionID)
                    let sent = packages.filter { $0.publish(on: publisher, to: .session(info.sessionID)) }.count
                    StandardOutput.line("sent \(sent) of \(counted(packages.count, "package")) to session \(info.sessionID)")
                }
                greeted.formIntersection(ids)
                if let every, Date().timeIntervalSince(lastRepeat) >= every {
                    lastRepeat = Date()
                    if current.contains(where: \.isStarted) {
                        let sent = packages.filter { $0.publish(on: publisher) }.count
                        StandardOutput.line("sent \(sent) of \(counted(packages.count, "package")) to every started subscriber")
                    }
                }
            }
            if let statusInterval, Date().timeIntervalSince(lastStatus) >= statusInterval {
                lastStatus = Date()
                printList(current)
            }
            // A replay-only publisher ends once everything it replayed has left and the subscribers had time to read it.
            if replayOnly {
                if replayDeliveredAt == nil, replays.allSatisfy({ $0.progress.finished }), publisher.losslessFramesPending == 0 {
                    replayDeliveredAt = Date()
                    let frames = replays.reduce(0) { $0 + $1.progress.framesPublished }
                    StandardOutput.line("replay complete: \(counted(frames, "frame"))")
                }
                if let at = replayDeliveredAt, Date().timeIntervalSince(at) >= linger {
                    stopReason = "the replay has ended"
                    replayEnded = true
                    break loop
                }
            }
        }
        withExtendedLifetime(signals) {}
        control?.stop()
        let statistics = publisher.statistics()
        // At a replay's end, subscribers get time to read everything queued for them (and its close);
        // on a signal the operator wants the publisher gone soon.
        publisher.stop(reason: stopReason, drain: replayEnded ? .seconds(30) : .seconds(2))
        zap?.stop()
        inbox.close()
        for replay in replays {
            for problem in replay.progress.problems { printError("replay of source \(replay.info.id): \("\(problem)".terminalSafe)") }
        }
        StandardOutput.line("\(stopReason): \(counted(statistics.framesPublished, "frame")) published, \(counted(statistics.sessionsOpened, "session")) opened, "
                            + "\(statistics.sessionsRefused) refused, \(counted(statistics.handOffRefused, "frame")) refused at the hand-off")
        return 0
    }

    /// Refuses a tcp:// endpoint whose port libzmq would not bind as given (it takes 99999 modulo
    /// 65536, another port than asked): the port must be 0-65535 (0 or * picks a free one).
    static func checkBindEndpoint(_ endpoint: String) throws {
        guard endpoint.hasPrefix("tcp://") else { return }  // ipc://, inproc://: libzmq checks them
        let rest = endpoint.dropFirst(6)
        guard let colon = rest.lastIndex(of: ":") else {
            throw UsageError("option --bind: '\(endpoint)' has no port; expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:5555 (port 0: any free port)")
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
        let c = source.configuration
        return "replay, \(counted(c.channels.count, "channel"))" + (c.channels.first.map { " at \($0.samplingRate) S/s" } ?? "")
    }

    private static func printList(_ subscribers: [SubscriberInfo]) {
        StandardOutput.line("subscribers: \(subscribers.count)")
        for s in subscribers {
            let filters = s.filters.isEmpty ? "no filters" : "filters \("\(s.filters)".terminalSafe)"
            StandardOutput.line("  session \(s.sessionID) '\(s.description.terminalSafe)' from \(s.address.terminalSafe)\(s.userID.map { " CURVE \($0.terminalSafe)" } ?? ""): "
                                + "\(s.isStarted ? "started" : "stopped"), \(counted(s.framesSent, "frame")) sent, \(s.framesDropped) dropped, \(filters)"
                                + (s.selectedSources.map { ", sources \($0.map(String.init).joined(separator: ","))" } ?? ""))
        }
    }
}

private func seconds(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
}
