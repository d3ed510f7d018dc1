import Foundation
import TributaryText
import TributaryTransport
import TributaryView
import TributaryWire

/// A live view of one publisher: a reconnecting Subject opened with source selection, the `LiveModel`
/// on it, the initial channels chosen, and (for `view` and `serve --http`) the page served.
/// Shared by `view`, `monitor` and `serve --http`.
final class LiveSession {
    let subject: Subject
    let model: LiveModel
    let welcome: Welcome
    private(set) var view: LiveView?

    /// Opens the session, selects the sources, starts the data, waits for the configurations (at most
    /// `timeout`) and chooses the initial channels (`channels` per source: nil → the first two of each),
    /// which `serve(http:)` or `applyInitialSelection()` turns into filters. `signalFilter` (`--decimate`,
    /// `--lowpass`) is asked for every source shown, before the start.
    init(
        host: String, port: Int, apiKey: String, description: String, timeout: Double, curve: SubjectCurve?,
        sources: [UInt32]?, channels: ChannelSelection?, signalFilter: SignalFilterRequest? = nil,
        displayFilter: DisplayFilter? = nil
    ) throws {
        subject = try Subject(options: SubjectOptions(reconnect: ReconnectPolicy(maxDelay: .seconds(2)), curve: curve))
        // Registered before the session opens: the configurations follow the welcome at once.
        model = LiveModel(displayFilter: displayFilter)
        subject.register(model)
        do {
            welcome = try subject.open(
                address: host, port: port, apiKey: apiKey, description: description, timeout: timeout,
                sourceFilterEnabled: true)
        } catch {
            subject.close()
            throw CommandError("error \(error.code): \(error.message.terminalSafe)")
        }
        model.name(welcome.sources)
        let wanted = sources ?? welcome.sources.map(\.id)
        // Source 0, the publisher's own packages (PROTOCOL.md §4.1), is no source with channels to show.
        if sources != nil, !wanted.contains(where: { $0 != 0 }) {
            subject.close()
            throw CommandError(
                "--sources 0: source 0 stands for the publisher's own packages, which have no channels to show; "
                    + "name one of its sources (it has \(welcome.sources.map { String($0.id) }.joined(separator: ", ")))")
        }
        for id in wanted where id != 0 && !welcome.sources.contains(where: { $0.id == id }) {
            subject.close()
            throw CommandError(
                "--sources: the publisher has no source \(id) (it has \(welcome.sources.map { String($0.id) }.joined(separator: ", ")))")
        }
        // Configurations come once the sources are selected and the data started.
        do {
            try subject.selectSources(wanted)
            if var signalFilter {
                for id in wanted where id != 0 {
                    signalFilter.sourceID = id
                    try subject.sendSignalFilter(signalFilter)
                }
            }
            try subject.start()
        } catch {
            subject.close()
            throw CommandError("error \(error.code): \(error.message.terminalSafe)")
        }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, !Set(wanted).isSubset(of: model.knownConfigurations.keys) { Thread.sleep(forTimeInterval: 0.02) }
        let configurations = model.knownConfigurations
        var keys: [ChannelKey] = []
        for id in wanted {
            let all = configurations[id]?.channels.map(\.index) ?? []
            let chosen: [UInt32]
            switch channels {
            case nil: chosen = Array(all.prefix(2))
            case .all?: chosen = all
            case .range(let from, let to)?: chosen = all.filter { $0 >= from && $0 <= to }
            case .list(let ids)?: chosen = ids.filter(all.contains)
            }
            keys += chosen.map { ChannelKey(source: id, channel: $0) }
        }
        initial = Array(keys.prefix(LiveModel.maxChannels))
        if keys.count > LiveModel.maxChannels {
            printError("showing the first \(LiveModel.maxChannels) of \(keys.count) channels (choose others on the page)")
        }
    }

    private let initial: [ChannelKey]
    /// The filters when there is no page (monitor).
    private lazy var filters = FilterControl(subject: subject, model: model)

    /// Serves the page on `http` (HOST:PORT); a token is required unless HOST is a loopback address
    /// (and `requireToken` is false). `hostNames`: names browsers may use besides the address and
    /// localhost (`--http-host`, checked with `parseHostNames`).
    /// - Returns: the URL to open.
    /// `recorder`: the recorder's endpoints (`view --record-dir`), or nil.
    func serve(http: String, requireToken: Bool = false, hostNames: [String] = [], recorder: RecorderEndpoints? = nil) throws -> String {
        let (host, port) = try Self.parseHTTP(http)
        let loopback = host.hasPrefix("127.")
        let token = loopback && !requireToken ? nil : Self.newToken()
        var settings = HTTPServer.Settings(host: host, port: port, token: token, hostNames: hostNames)
        settings.recorder = recorder
        let view: LiveView
        do { view = try LiveView(subject: subject, model: model, settings: settings) } catch {
            throw CommandError("--http \(http): \(error)")
        }
        self.view = view
        try applyInitialSelection()
        return "http://\(host):\(view.port)/" + (token.map { "?token=\($0)" } ?? "")
    }

    /// Selects the initial channels without a page (monitor).
    func applyInitialSelection() throws {
        do {
            if let view { try view.select(initial) } else { try filters.select(initial) }
        } catch {
            throw CommandError("the filter could not be set: error \(error.code): \(error.message.terminalSafe)")
        }
    }

    func close() {
        view?.stop()
        subject.unregister(model)
        subject.close()
    }

    /// `HOST:PORT` with an IPv4 host (port 0: a free one).
    static func parseHTTP(_ text: String) throws -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            throw UsageError("option --http: '\(text)' is not HOST:PORT with a port in 0...65535, e.g. 127.0.0.1:8080")
        }
        let host = String(text[..<colon])
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) else {
            throw UsageError(
                "option --http: '\(host)' is not an IPv4 address (127.0.0.1 for this machine only, 0.0.0.0 for every interface)")
        }
        return (host, port)
    }

    /// The `--http-host` names, lower-cased; a name that is not a host name is a usage error.
    static func parseHostNames(_ names: [String]) throws -> [String] {
        try names.map { name in
            guard let normalized = HostRules.normalizedName(name) else {
                throw UsageError(
                    "option --http-host: '\(name.terminalSafe)' is not a host name (letters, digits, hyphens and dots, "
                        + "e.g. viewer.lab.example), an IPv4 address or [an IPv6 address]")
            }
            return normalized
        }
    }

    /// 128 random bits, hex.
    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// `serve --http HOST:PORT`: the live page of the publisher's own sources, through an in-process
/// subscriber to the publisher's endpoint (the API key stays in the process).
enum ServeHTTP {
    /// Starts the view of `endpoint` (the publisher's bound `tcp://HOST:PORT`); nil when `http` is nil.
    /// - Throws: `UsageError` with `curve` (the in-process subscriber does not speak CURVE).
    /// `hostNames`: the `--http-host` names, already checked with `LiveSession.parseHostNames`.
    static func start(http: String?, hostNames: [String], endpoint: String, apiKey: String, curve: Bool) throws -> LiveSession? {
        guard let http else { return nil }
        guard !curve else {
            throw UsageError("--http cannot be combined with --curve-secret; run 'tributary view' with --curve-server-key instead")
        }
        var (host, port) = try SubscriptionOptions.parseAddress(endpoint)
        if host == "0.0.0.0" || host == "*" { host = "127.0.0.1" }
        let session = try LiveSession(
            host: host, port: port, apiKey: apiKey, description: "tributary serve --http", timeout: 10,
            curve: nil, sources: nil, channels: nil)
        let url: String
        do { url = try session.serve(http: http, hostNames: hostNames) } catch {
            session.close()
            throw error
        }
        StandardOutput.line("view: \(url)")
        return session
    }
}
