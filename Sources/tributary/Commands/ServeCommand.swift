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
enum ServeCommand: ArgumentsCommand {
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
          --stdin SPEC       publish the samples standard input carries: interleaved little-endian
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
          --alsa DEVICE[,KEY=VALUE]...  capture from a sound card through ALSA (libasound); repeatable.
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
          --property ID:KEY=VALUE  a free-form property of source ID (a sensor's serial number, a
                             calibration date, a subject id), sent to subscribers right after the source's
                             configuration, kept by 'record', shown by 'inspect' and exported; ID:CH:KEY=VALUE
                             gives one to the channel with index CH; repeatable (a key given again: the
                             last value). A replay keeps the capture's properties, these set over them.
                             Bounds (docs/PROTOCOL.md §5.19): keys 1-256 bytes, values up to 16384 bytes,
                             1024 properties per source or channel, 1 MiB in all per source
          --wait-subscribers N  started subscribers to wait for before a replay, a lossless --stdin or
                             a lossless --alsa begins (default 1)
          --linger S         once every replay, the input and the captures have been delivered, seconds
                             to give subscribers before the publisher closes their sessions and exits
                             (default 1; only when every source is a replay, --stdin, or --alsa with
                             samples=N)

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
          --signal-budget SESSION[:TOTAL]  the CPU budget of the signal filters subscribers ask for
                             (subscribe --decimate/--lowpass, docs/PROTOCOL.md §6.2), in filter operations
                             a second (5 per IIR section per sample; decimate's FIR: taps / N per sample)
                             of one session and of all sessions together; a request past it ends its
                             session with error 17 (default 400e6:4e9; TOTAL defaults to 10 × SESSION)
          --description TEXT the publisher's description in the welcome
          --status-interval S  print the subscriber list every S seconds (default: only on SIGUSR1)
          --curve-secret FILE  encrypt with CURVE, with this secret key ('tributary keygen --out' writes it)
          --curve-clients FILE the allowed subscriber public keys, one per line (with --curve-secret)
          --curve-accept-any   with --curve-secret: let any client key in (traffic still encrypted)

        Discovery (docs/PROTOCOL.md §9; 'tributary resolve' and resolve:QUERY addresses find it):
          --no-announce      do not answer discovery queries (default: answer them; a publisher bound to
                             loopback answers on loopback only)
          --announce-group ADDR  the IPv4 multicast group to answer on (default 239.255.84.82)
          --announce-port PORT   its UDP port (default 16580)
          --announce-ttl N   the multicast TTL, 0-255 (default 1: the local network)
        \(ServeHTTP.usageLine)
        """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let options = try ServeOptions(&arguments)
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
            throw CommandError("\(error)")
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
