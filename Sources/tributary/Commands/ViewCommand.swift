import Dispatch
import Foundation
import TributaryText
import TributaryTransport
import TributaryView
import TributaryWire

/// `tributary view`: subscribes to a publisher and serves a live page (traces, spectrum, readings,
/// link health) to browsers.
enum ViewCommand: TableCommand {
    static let name = "view"
    static let streamsFrames = true
    static let summary = "watch a publisher in a browser: live traces, spectrum, readings and link health"
    static let usage = """
        usage: tributary view ADDRESS --api-key KEY [--channels SPEC] [--sources IDS] [--http HOST:PORT]
                              [--http-host NAME]... [--require-token] [--record-dir DIR] [--filter SPEC] [--notch F0:Q]
                              [--duration S]

        Subscribes to the publisher and serves one self-contained page (no network access needed) at
        --http (default 127.0.0.1:8080; port 0 picks a free one), printing 'view: http://HOST:PORT/'.
        The page shows the chosen channels' traces (min/max per column), their averaged Welch spectrum
        with its peak, a spectrogram of one of them (the last 600 updates), their readings (RMS, peak-to-peak, mean, tone frequency and amplitude, THD, SINAD,
        ENOB, as 'tributary analyze' computes them) and the link's health with the publisher's clock offset
        and round trip; choosing channels on the page changes this subscriber's server-side filter. Updates come at most 10 times a second and take at
        most about 200 KB/s whatever the stream's rate (docs/VIEW.md). The session reconnects by itself
        when the publisher goes away.

        Bound to a loopback address (127.x.x.x) the page is open to this machine's users; bound to any
        other address (or with --require-token), every request must carry the access token printed in
        the URL. The API key never reaches the page. The page answers only requests that name it as its
        address, localhost, 127.0.0.1, [::1] or a --http-host NAME, and WebSocket requests only from its
        own page (Host and Origin checked: a site whose name points to this machine cannot read it), and
        bounds what clients hold: connections per address and in all, request heads (8 KiB, 5 s),
        WebSocket messages (4096 bytes, refused by the frame's header); docs/VIEW.md lists the limits.

        Default channels: the first two of each source (at most 8 in all).

        \(options.help())
        """

    /// The command line as given.
    struct Given {
        var subscription = SubscriptionOptions.Given()
        var http: String?
        var httpHosts: [String] = []
        var requireToken = false
        var recordDirectory: String?
        var display = DisplayFilterOptions.Given()
    }

    /// The session and the page.
    struct Configuration {
        var subscription: SubscriptionOptions
        var http: String
        var hostNames: [String]
        var requireToken: Bool
        /// Where the page's recorder writes (`--record-dir`, checked); nil: no recorder.
        var recordDirectory: String?
        var displayFilter: DisplayFilter?
    }

    static var options: OptionTable<Given> {
        SubscriptionOptions.analogOptions(refusing: "the view shows analog channels only").lifted(\.subscription)
            + OptionTable([
                .text("--http", "HOST:PORT", "where to serve the page (IPv4; default 127.0.0.1:8080)", \.http),
                .texts(
                    "--http-host", "NAME",
                    """
                    a name browsers may use for the page besides its address, localhost,
                    127.0.0.1 and [::1] (the Host header must name one of them: DNS
                    rebinding); repeatable
                    """, \.httpHosts),
                .flag(
                    "--require-token",
                    """
                    require the access token on a loopback address too (a machine shared
                    with other users)
                    """, \.requireToken),
                .text(
                    "--record-dir", "DIR",
                    """
                    add the recorder to the page: it lists the publishers discovery finds
                    (as 'tributary resolve'), records the ticked streams into one capture
                    (as 'tributary record A B ... --out', with this command's --api-key,
                    --curve-server-key, --timeout and --reconnect) and shows each stream's
                    rate, clock offset and loss while it records. Captures are written in
                    DIR only, under a file name the page gives (no path, never replacing a
                    file); one recording at a time; only on a loopback address or with the
                    access token (docs/VIEW.md §6)
                    """, \.recordDirectory),
            ]) + DisplayFilterOptions.options.lifted(\.display)
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var given = Given()
        let rest = try options.parse(arguments, into: &given)
        var subscription = try SubscriptionOptions(given.subscription, defaultDescription: "tributary view")
        let hostNames = try LiveSession.parseHostNames(given.httpHosts)
        let recordDirectory = try given.recordDirectory.map(BrowserRecorder.directory)
        try subscription.setAddress(try Positionals.one(rest, "ADDRESS"))
        let http = given.http ?? "127.0.0.1:8080"
        _ = try LiveSession.parseHTTP(http)
        return Configuration(
            subscription: subscription, http: http, hostNames: hostNames, requireToken: given.requireToken,
            recordDirectory: recordDirectory, displayFilter: DisplayFilterOptions.filter(given.display))
    }

    static func run(_ configuration: Configuration) throws -> Int32 {
        let options = configuration.subscription, http = configuration.http, hostNames = configuration.hostNames
        let requireToken = configuration.requireToken, displayFilter = configuration.displayFilter
        let recordDirectory = configuration.recordDirectory
        let session = try LiveSession(
            host: options.host, port: options.port, apiKey: options.apiKey, description: options.description,
            timeout: options.timeout, curve: options.curve, sources: options.request.sources,
            channels: options.request.analogFilter?.channels, signalFilter: options.request.signalFilter, displayFilter: displayFilter)
        let recorder = recordDirectory.map { _ in BrowserRecorder(options) }
        let endpoints = recordDirectory.flatMap { dir in recorder.map { RecorderEndpoints(directory: dir, backend: $0) } }
        let url: String
        do { url = try session.serve(http: http, requireToken: requireToken, hostNames: hostNames, recorder: endpoints) } catch {
            session.close()
            throw error
        }
        printError("subscribed to '\(session.welcome.publisherDescription.terminalSafe)' (session \(session.welcome.sessionID))")
        StandardOutput.line("view: \(url)")
        let stop = DispatchSemaphore(value: 0)
        let signals = ProcessSignals([SIGINT, SIGTERM]) { _ in stop.signal() }
        _ = stop.wait(timeout: options.duration.map { .now() + $0 } ?? .distantFuture)
        withExtendedLifetime(signals) {}
        recorder?.stopIfRecording()
        let built = session.view?.updatesBuilt.load(ordering: .relaxed) ?? 0
        let bytes = session.view?.bytesOffered.load(ordering: .relaxed) ?? 0
        let statistics = session.subject.statistics()
        session.close()
        printError(
            "\(counted(statistics.framesReceived, "frame")) received, \(statistics.framesMissing) lost (gap notices), "
                + "\(statistics.unaccountedLoss) unaccounted, \(counted(statistics.reconnections, "reconnection")); "
                + "\(counted(built, "update")) built, \(counted(bytes, "byte")) offered to browsers")
        return 0
    }
}
