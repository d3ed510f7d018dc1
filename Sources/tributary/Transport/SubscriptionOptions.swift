import Foundation
import TributaryAnalysis
import TributaryText
import TributaryTransport
import TributaryWire

/// The connection and filter options `subscribe` and `record` share, parsed from the command line.
struct SubscriptionOptions {
    var host: String
    var port: Int
    var apiKey: String
    var description: String
    var timeout: Double
    var duration: Double?
    /// An analog filter from `--channels` (and `--sources`).
    var analogFilter: AnalogFilterRequest?
    var arrayFilters: [ArrayFilterRequest] = []
    /// The signal filter asked of the publisher for every received source (`--decimate`, `--lowpass`);
    /// its `sourceID` is set per source when the session opens.
    var signalFilter: SignalFilterRequest?
    /// Sources to receive (source selection), from `--sources`.
    var sources: [UInt32]?
    var curve: SubjectCurve?
    /// Reconnect after a lost session (`--reconnect`), restoring filters, selection and start.
    var reconnect = false
    /// Packages to send to the publisher once the session has started (`--send-*`).
    var outgoing: [OutgoingPackage] = []
    /// The connection's kernel receive buffer (`--receive-buffer`): bytes, or nil for autotuning.
    var receiveBufferBytes: Int? = SubjectOptions.defaultReceiveBufferBytes

    /// The synopsis of `subscribe` or `record`: ADDRESS, the command's own options, then these,
    /// wrapped under the first option.
    static func synopsis(command: String, own: [String], addresses: String = "ADDRESS") -> String {
        let items =
            ["--api-key KEY"] + own + [
                "[--channels SPEC]", "[--sources IDS]", "[--decimate N[:fir]]", "[--lowpass HZ[:ORDER]]", "[--array-filter TYPE:QUERY]...",
                "[--duration S]", "[--timeout S]",
                "[--description TEXT]", "[--reconnect]", "[--receive-buffer BYTES|auto]", "[--send-message TEXT]...",
                "[--send-xml FILE|TEXT]...",
                "[--send-file PATH]...", "[--send-image PATH]...", "[--send-array TYPE:FILE.npy]...",
                "[--curve-server-key FILE [--curve-key FILE]]",
            ]
        let head = "usage: tributary \(command) \(addresses) "
        let indent = String(repeating: " ", count: head.count)
        var lines = [head]
        for item in items {
            if lines[lines.count - 1].count + item.count > 100 { lines.append(indent) }
            lines[lines.count - 1] += (lines[lines.count - 1].hasSuffix(" ") ? "" : " ") + item
        }
        return lines.joined(separator: "\n")
    }

    /// The option lines of the usage text.
    static let usageLines = """
          ADDRESS                   the publisher: tcp://HOST:PORT or HOST:PORT, or resolve:QUERY: the one
                                    publisher discovery finds in 1 s (see 'tributary resolve'), e.g.
                                    resolve:name=daq; several matching is an error that lists them
          --api-key KEY             the publisher's API key (required)
          --channels SPEC           analog channels to receive, e.g. 0-3 or 0,2,5 (an analog filter: data
                                    arrives with filter id 1)
          --sources IDS             sources to receive, e.g. 1 or 1,3 (source selection; with --channels the
                                    analog filter applies to these sources only). 0 stands for the
                                    publisher's own packages, which every selection receives: --sources 0
                                    receives only those
          --decimate N[:fir]        ask the publisher to decimate the analog data of each received source (of
                                    --sources, else of every source it has) by N (2 to 1048576), as
                                    'tributary process --decimate N': decimate's Chebyshev I filter of order
                                    8 (':fir': its FIR filter of 20N+1 taps) run forward only, filter state
                                    carried across frames; the configuration then gives the decimated rate
          --lowpass HZ[:ORDER]      ask the publisher to low-pass the same data first: a Butterworth of
                                    ORDER (1 to 16, default 4) at HZ (below half the source's rate), as
                                    'process --filter butter:ORDER:lowpass:HZ'. The publisher ends the
                                    session with error 17 when the filters would exceed its CPU budget,
                                    with error 12 when it cannot filter a source
          --array-filter TYPE:QUERY an array filter, e.g. double:5-15;5-15 (TYPE: double, float, int32, int16,
                                    int64, bool, string); repeatable
          --duration S              stop after S seconds, at most 1e9 (default: until interrupted or the
                                    publisher ends)
          --timeout S               session timeout, in (1, 6553] s (default 10): silence longer than this
                                    is error 4
          --description TEXT        this subscriber's name in the publisher's list
          --curve-server-key FILE   the publisher's CURVE public key (its .pub file): encrypt the connection
          --curve-key FILE          this subscriber's CURVE secret key (default: a fresh key pair, for
                                    publishers that accept any client key)
          --reconnect               when the session is lost (the publisher stopped or restarted, the network
                                    broke), connect again — after 0.2 s, then doubling up to 2 s, without
                                    end — and restore the filters, the source selection and the start; the
                                    lost session is printed as an error 5 line and does not end the command
                                    (a refusal, errors 1-3, still does)
          --receive-buffer BYTES|auto  the connection's kernel receive buffer (SO_RCVBUF), 4096 to
                                    1073741824 bytes (the kernel caps it at net.core.rmem_max and then no
                                    longer autotunes it), or auto for the kernel's autotuning (default:
                                    4194304 where rmem_max allows it, else auto; use auto across a WAN)
          --send-message TEXT       send a message (code 0) to the publisher once started; repeatable
          --send-xml FILE|TEXT      send an XML document: TEXT when it starts with '<', else read from FILE
          --send-file PATH          send a file (chunked, with its MD5, under its base name); repeatable
          --send-image PATH         send an image: png, jpeg, bmp or tiff, from the extension; repeatable
          --send-array TYPE:FILE.npy  send a 2D array from an NPY file (float64, float32 or int16) as TYPE
                                    double, float, int32, int16, int64 or bool; repeatable
                                    (sent in this order — messages, XML, files, images, arrays — right
                                    after the start, once, not again after a reconnection)
        """

    /// Reads the options (not the positional ADDRESS).
    static func parse(_ arguments: inout Arguments, defaultDescription: String) throws -> SubscriptionOptions {
        guard let apiKey = try arguments.option("--api-key") else { throw UsageError("missing --api-key KEY") }
        let channels = try arguments.option("--channels")
        let sourcesText = try arguments.option("--sources")
        let arrayFilterTexts = try arguments.options("--array-filter")
        let signalFilter = try Self.signalFilter(decimate: try arguments.option("--decimate"), lowpass: try arguments.option("--lowpass"))
        let duration = try arguments.number("--duration", "a duration in seconds", in: 0...1e9, above: true)
        let timeout = try arguments.number("--timeout", "a timeout in seconds", in: 1...Subject.maxTimeout, above: true) ?? 10
        let description = try arguments.option("--description") ?? defaultDescription
        let serverKeyPath = try arguments.option("--curve-server-key")
        let clientKeyPath = try arguments.option("--curve-key")
        let reconnect = arguments.flag("--reconnect")
        let receiveBuffer = try arguments.option("--receive-buffer")
        let outgoing = try OutgoingPackage.parse(&arguments, .send)

        var options = SubscriptionOptions(host: "", port: 0, apiKey: apiKey, description: description, timeout: timeout, duration: duration)
        options.reconnect = reconnect
        options.signalFilter = signalFilter
        options.outgoing = outgoing
        if let receiveBuffer {
            if receiveBuffer == "auto" {
                options.receiveBufferBytes = nil
            } else if let bytes = Int(receiveBuffer), (4_096...(1 << 30)).contains(bytes) {
                options.receiveBufferBytes = bytes
            } else {
                throw UsageError("option --receive-buffer: '\(receiveBuffer)' is not 'auto' or a number of bytes in [4096, 1073741824]")
            }
        }
        if let sourcesText {
            let ids = sourcesText.split(separator: ",", omittingEmptySubsequences: false).map {
                UInt32($0.trimmingCharacters(in: .whitespaces))
            }
            // Source 0 is the publisher's own packages (PROTOCOL.md §4.1), accepted as a filter's sources accept it.
            guard !ids.isEmpty, ids.allSatisfy({ $0 != nil }) else {
                throw UsageError(
                    "option --sources: '\(sourcesText)' is not a list of source ids in 0...\(UInt32.max), e.g. 1,3 "
                        + "(0: the publisher's own packages)")
            }
            options.sources = ids.map { $0! }
        }
        if let channels {
            let query = channels + (options.sources.map { ";" + $0.map(String.init).joined(separator: ",") } ?? "")
            do { options.analogFilter = try AnalogFilterRequest(query: query) } catch {
                throw UsageError("option --channels: '\(channels)': \(error)")
            }
        }
        for text in arrayFilterTexts {
            guard let colon = text.firstIndex(of: ":"),
                let type = ArrayElementType.allCases.first(where: { $0.description == text[..<colon] })
            else {
                throw UsageError(
                    "option --array-filter: '\(text)' is not TYPE:QUERY with TYPE double, float, int32, int16, int64, bool or string")
            }
            do {
                options.arrayFilters.append(try ArrayFilterRequest(elementType: type, query: String(text[text.index(after: colon)...])))
            } catch {
                throw UsageError("option --array-filter: '\(text)': \(error)")
            }
        }
        if let serverKeyPath {
            let serverKey = try CurveKeyFile.loadPublic(serverKeyPath, option: "--curve-server-key")
            let keys: ZMQCurveKeyPair
            if let clientKeyPath {
                keys = try CurveKeyFile.loadSecret(clientKeyPath, option: "--curve-key")
            } else {
                do { keys = try ZMQCurveKeyPair.generate() } catch { throw CommandError("\(error)") }
            }
            options.curve = SubjectCurve(serverKey: serverKey, keys: keys)
        } else if clientKeyPath != nil {
            throw UsageError("--curve-key needs --curve-server-key")
        }
        return options
    }

    /// `--decimate N[:fir]` and `--lowpass HZ[:ORDER]` as one request (its source set when sent), or nil.
    static func signalFilter(decimate: String?, lowpass: String?) throws -> SignalFilterRequest? {
        guard decimate != nil || lowpass != nil else { return nil }
        var request = SignalFilterRequest(sourceID: 1)
        if let decimate {
            let parts = decimate.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, let q = UInt32(parts[0]), (2...SignalFilterRequest.maxFactor).contains(q),
                parts.count == 1 || parts[1] == "fir" || parts[1] == "iir"
            else {
                throw UsageError(
                    "option --decimate: '\(decimate)' is not N or N:fir with N an integer from 2 to \(SignalFilterRequest.maxFactor)")
            }
            request.decimate = q
            request.decimationKind = parts.count == 2 && parts[1] == "fir" ? .fir : .iir
        }
        if let lowpass {
            let parts = lowpass.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, let hz = Double(parts[0]), hz.isFinite, hz > 0 else {
                throw UsageError("option --lowpass: '\(lowpass)' is not HZ[:ORDER] with HZ a frequency above 0")
            }
            let order = parts.count == 2 ? UInt8(parts[1]) : 4
            guard let order, (1...SignalFilterRequest.maxLowpassOrder).contains(order) else {
                throw UsageError(
                    "option --lowpass: the order in '\(lowpass)' is not an integer from 1 to \(SignalFilterRequest.maxLowpassOrder)")
            }
            request.lowpassOrder = order
            request.lowpassCutoff = hz
        }
        return request
    }

    /// Sets host and port from the positional ADDRESS (`resolve:QUERY` asks discovery for it).
    mutating func setAddress(_ text: String) throws {
        (host, port) = try Self.parseAddress(text)
    }

    /// `tcp://HOST:PORT` or `HOST:PORT` (IPv6 hosts in brackets), or `resolve:QUERY`, into host and
    /// port (PublisherAddress, the one reader the C interface shares); an empty host and a port out of
    /// range are left for the Subject to refuse with errors 8 and 9.
    static func parseAddress(_ text: String) throws -> (String, Int) {
        do { return try PublisherAddress.parse(text) } catch {
            if error.isSyntax { throw UsageError(error.message) }
            throw CommandError(error.message)
        }
    }

    /// Opens the session, sends the filters and the source selection, and starts the data.
    /// - Returns: the Subject (streaming), its package stream (subscribed before the session opened,
    ///   so that the configurations are in it) and the welcome.
    /// - Throws: `CommandError` "error N (meaning): detail" when the publisher refuses or cannot be reached.
    /// Opens and starts the session with `run` attached to it (abandoned if this throws).
    func connect(_ run: SubscriptionRun) throws -> (Subject, Welcome) {
        let subject: Subject
        let policy = reconnect ? ReconnectPolicy(initialDelay: .milliseconds(200), maxDelay: .seconds(2)) : nil
        do {
            subject = try Subject(
                options: SubjectOptions(reconnect: policy, curve: curve, receiveBufferBytes: receiveBufferBytes),
                callbackQueue: run.callbackQueue())
        } catch {
            run.abandon()
            throw CommandError("\(error)")
        }
        run.attach(to: subject)
        if reconnect { subject.register(ReconnectNotice()) }
        do {
            let welcome = try subject.open(
                address: host, port: port, apiKey: apiKey, description: description,
                timeout: timeout, sourceFilterEnabled: sources != nil)
            if let analogFilter { try subject.sendFilter(analogFilter) }
            for filter in arrayFilters { try subject.sendFilter(filter) }
            if let sources { try subject.selectSources(sources) }
            if var signalFilter {
                for id in (sources ?? welcome.sources.map(\.id)) where id != 0 {
                    signalFilter.sourceID = id
                    try subject.sendSignalFilter(signalFilter)
                }
            }
            try subject.start()
            for package in outgoing {
                try package.send(on: subject)
                printError("sent \(package.summary)")
            }
            return (subject, welcome)
        } catch {
            run.abandon()
            subject.close()
            throw CommandError("error \(error.code): \(error.message.terminalSafe)")
        }
    }
}

/// With `--reconnect`: a line on standard error when a lost session has been opened again (the
/// Subject retains its observers).
private final class ReconnectNotice: Observer {
    func didReconnect(_ welcome: Welcome) {
        printError(
            "reconnected to '\(welcome.publisherDescription.terminalSafe)' (session \(welcome.sessionID)): "
                + "filters, source selection and start restored")
    }
}
