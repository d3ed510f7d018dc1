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
    /// What is asked of the publisher once the session is open: `--sources`, `--channels`,
    /// `--array-filter`, `--decimate` and `--lowpass` (the model the C interface shares).
    var request = SubscriptionRequest()
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

    /// The option texts as given, before `SubscriptionOptions(_:defaultDescription:)` checks them together.
    struct Given {
        var apiKey: String?
        var channels: String?
        var sources: String?
        var arrayFilters: [String] = []
        var decimate: String?
        var lowpass: String?
        var duration: Double?
        var timeout: Double?
        var description: String?
        var serverKeyPath: String?
        var clientKeyPath: String?
        var reconnect = false
        var receiveBuffer: String?
        var packages = OutgoingPackage.Given()

        /// Whether any option was given (bench takes them only with an ADDRESS).
        var isEmpty: Bool {
            apiKey == nil && channels == nil && sources == nil && arrayFilters.isEmpty && decimate == nil && lowpass == nil
                && duration == nil && timeout == nil && description == nil && serverKeyPath == nil && clientKeyPath == nil
                && !reconnect && receiveBuffer == nil && packages.isEmpty
        }
    }

    /// The subscription options (ADDRESS described first), in the order the help lists them.
    static var options: OptionTable<Given> {
        OptionTable([
            .positional(
                "ADDRESS",
                """
                the publisher: tcp://HOST:PORT or HOST:PORT, or resolve:QUERY: the one
                publisher discovery finds in 1 s (see 'tributary resolve'), e.g.
                resolve:name=daq; several matching is an error that lists them
                """),
            .text("--api-key", "KEY", "the publisher's API key (required)", \.apiKey),
            .text(
                "--channels", "SPEC",
                """
                analog channels to receive, e.g. 0-3 or 0,2,5 (an analog filter: data
                arrives with filter id 1)
                """, \.channels),
            .text(
                "--sources", "IDS",
                """
                sources to receive, e.g. 1 or 1,3 (source selection; with --channels the
                analog filter applies to these sources only). 0 stands for the
                publisher's own packages, which every selection receives: --sources 0
                receives only those
                """, \.sources),
            .text(
                "--decimate", "N[:fir]",
                """
                ask the publisher to decimate the analog data of each received source (of
                --sources, else of every source it has) by N (2 to 1048576), as
                'tributary process --decimate N': decimate's Chebyshev I filter of order
                8 (':fir': its FIR filter of 20N+1 taps) run forward only, filter state
                carried across frames; the configuration then gives the decimated rate
                """, \.decimate),
            .text(
                "--lowpass", "HZ[:ORDER]",
                """
                ask the publisher to low-pass the same data first: a Butterworth of
                ORDER (1 to 16, default 4) at HZ (below half the source's rate), as
                'process --filter butter:ORDER:lowpass:HZ'. The publisher ends the
                session with error 17 when the filters would exceed its CPU budget,
                with error 12 when it cannot filter a source
                """, \.lowpass),
            .texts(
                "--array-filter", "TYPE:QUERY",
                """
                an array filter, e.g. double:5-15;5-15 (TYPE: double, float, int32, int16,
                int64, bool, string); repeatable
                """, \.arrayFilters),
            .number(
                "--duration", "S", "a duration in seconds", in: 0...1e9, above: true,
                """
                stop after S seconds, at most 1e9 (default: until interrupted or the
                publisher ends)
                """, \.duration),
            .number(
                "--timeout", "S", "a timeout in seconds", in: 1...Subject.maxTimeout, above: true,
                """
                session timeout, in (1, 6553] s (default 10): silence longer than this
                is error 4
                """, \.timeout),
            .text("--description", "TEXT", "this subscriber's name in the publisher's list", \.description),
            .text(
                "--curve-server-key", "FILE", "the publisher's CURVE public key (its .pub file): encrypt the connection", \.serverKeyPath),
            .text(
                "--curve-key", "FILE",
                """
                this subscriber's CURVE secret key (default: a fresh key pair, for
                publishers that accept any client key)
                """, \.clientKeyPath),
            .flag(
                "--reconnect",
                """
                when the session is lost (the publisher stopped or restarted, the network
                broke), connect again — after 0.2 s, then doubling up to 2 s, without
                end — and restore the filters, the source selection and the start; the
                lost session is printed as an error 5 line and does not end the command
                (a refusal, errors 1-3, still does)
                """, \.reconnect),
            .text(
                "--receive-buffer", "BYTES|auto",
                """
                the connection's kernel receive buffer (SO_RCVBUF), 4096 to
                1073741824 bytes (the kernel caps it at net.core.rmem_max and then no
                longer autotunes it), or auto for the kernel's autotuning (default:
                4194304 where rmem_max allows it, else auto; use auto across a WAN)
                """, \.receiveBuffer),
        ]) + OutgoingPackage.options(.send).lifted(\.packages)
    }

    /// The options of a command that reads analog channels only: `--array-filter` refused, its help
    /// and its error saying `reason`.
    static func analogOptions(refusing reason: String) -> OptionTable<Given> {
        options.replacing("--array-filter", with: .refused("--array-filter", "TYPE:QUERY", because: reason))
    }

    /// The usage error of a subscription option's value, named as the command line spells it.
    static func usageError(_ error: SubscriptionOptionError) -> UsageError {
        let name =
            switch error {
            case .sources: "--sources"
            case .channels: "--channels"
            case .arrayFilter: "--array-filter"
            }
        return UsageError("option \(name): \(error.problem)")
    }

    /// `--curve-server-key FILE [--curve-key FILE]` (a fresh client key pair without --curve-key).
    static func curve(server: String?, client: String?) throws -> SubjectCurve? {
        guard let server else {
            if client != nil { throw UsageError("--curve-key needs --curve-server-key") }
            return nil
        }
        do { return try SubjectCurve(serverKeyFile: server, clientKeyFile: client) } catch {
            throw error.failure.commandLineError(option: error.isServerKey ? "--curve-server-key" : "--curve-key")
        }
    }

    /// `--decimate N[:fir]` and `--lowpass HZ[:ORDER]` as one request (its source set when sent), or nil.
    static func signalFilter(decimate: String?, lowpass: String?) throws -> SignalFilterRequest? {
        var factor: Int?, kind = DecimationKind.iir, hz: Double?, order: Int?
        if let decimate {
            let parts = decimate.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, let q = Int(parts[0]), parts.count == 1 || parts[1] == "fir" || parts[1] == "iir",
                (try? SignalFilterRequest.subscription(decimate: q, lowpass: nil)) != nil
            else {
                throw UsageError(
                    "option --decimate: '\(decimate)' is not N or N:fir with N an integer from 2 to \(SignalFilterRequest.maxFactor)")
            }
            (factor, kind) = (q, parts.count == 2 && parts[1] == "fir" ? .fir : .iir)
        }
        if let lowpass {
            let parts = lowpass.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, let cutoff = Double(parts[0]), cutoff.isFinite, cutoff > 0 else {
                throw UsageError("option --lowpass: '\(lowpass)' is not HZ[:ORDER] with HZ a frequency above 0")
            }
            hz = cutoff
            if parts.count == 2 {
                guard let n = Int(parts[1]) else { throw UsageError(Self.orderMessage(lowpass)) }
                order = n
            }
        }
        // The checks are the library's, shared with the C interface's decimate and lowpass members.
        do { return try SignalFilterRequest.subscription(decimate: factor, kind: kind, lowpass: hz, lowpassOrder: order) } catch {
            switch error {
            case .factor:
                throw UsageError(
                    "option --decimate: '\(decimate ?? "")' is not N or N:fir with N an integer from 2 to \(SignalFilterRequest.maxFactor)")
            case .order: throw UsageError(Self.orderMessage(lowpass ?? ""))
            case .invalid(let error): throw UsageError("option --lowpass: '\(lowpass ?? "")': \(error)")
            }
        }
    }

    private static func orderMessage(_ lowpass: String) -> String {
        "option --lowpass: the order in '\(lowpass)' is not an integer from 1 to \(SignalFilterRequest.maxLowpassOrder)"
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
            throw error
        }
        run.attach(to: subject)
        if reconnect { subject.register(ReconnectNotice()) }
        do {
            let (welcome, _) = try subject.open(
                address: host, port: port, apiKey: apiKey, description: description, timeout: timeout, request: request)
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

extension SubscriptionOptions {
    /// Checks the given options together (not the positional ADDRESS).
    init(_ given: Given, defaultDescription: String) throws {
        guard let apiKey = given.apiKey else { throw UsageError("missing --api-key KEY") }
        let signalFilter = try Self.signalFilter(decimate: given.decimate, lowpass: given.lowpass)
        self.init(
            host: "", port: 0, apiKey: apiKey, description: given.description ?? defaultDescription, timeout: given.timeout ?? 10,
            duration: given.duration)
        reconnect = given.reconnect
        request.signalFilter = signalFilter
        outgoing = try given.packages.packages(.send)
        if let receiveBuffer = given.receiveBuffer {
            if receiveBuffer == "auto" {
                receiveBufferBytes = nil
            } else if let bytes = Int(receiveBuffer), (4_096...(1 << 30)).contains(bytes) {
                receiveBufferBytes = bytes
            } else {
                throw UsageError("option --receive-buffer: '\(receiveBuffer)' is not 'auto' or a number of bytes in [4096, 1073741824]")
            }
        }
        do throws(SubscriptionOptionError) {
            if let sources = given.sources { request.sources = try SubscriptionRequest.sources(sources) }
            if let channels = given.channels {
                request.analogFilter = try SubscriptionRequest.analogFilter(channels: channels, sources: request.sources)
            }
            for text in given.arrayFilters { request.arrayFilters.append(try SubscriptionRequest.arrayFilter(text)) }
        } catch { throw Self.usageError(error) }
        curve = try Self.curve(server: given.serverKeyPath, client: given.clientKeyPath)
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
