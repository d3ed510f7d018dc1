import Dispatch
import Foundation
import TributaryText
import TributaryTransport
import TributaryView
import TributaryWire

/// `tributary monitor`: the live view's readings as a table in the terminal.
enum MonitorCommand: TableCommand {
    static let name = "monitor"
    static let streamsFrames = true
    static let summary = "live readings (RMS, p-p, tone, THD, SINAD, ENOB) and link health in the terminal"
    static let readingNames = ["rms", "pp", "mean", "freq", "amp", "thd", "sinad", "enob"]
    static let usage = """
        usage: tributary monitor ADDRESS --api-key KEY [--channels SPEC] [--sources IDS]
                                 [--measure LIST] [--every S] [--spectrogram] [--filter SPEC] [--notch F0:Q] [--duration S]

        Subscribes to the publisher and prints, every --every seconds, the readings of the chosen
        channels over their last 16384 samples (the library's measurements, as 'tributary analyze'
        computes them) and the link's health. On a terminal the table is redrawn in place; otherwise one
        JSON object per interval is written per line:
          {"time":T,"health":{"frames_per_s":…,"mb_per_s":…,"frames_received":…,"gap_notices":…,
           "frames_lost":…,"unaccounted_loss":…,"reconnections":…,"callback_latency_p50_ms":…,
           "callback_latency_p99_ms":…,"clock_offset_s":…,"clock_rtt_s":…,"connected":true,"error":null},
           "channels":[{"source":1,"channel":0,"name":"…","unit":"V","samples":N,"rms":…,…}]}
        (a reading that is not available is null). The readings' members: rms, pp, mean and amp in the
        channel's unit, freq in Hz, thd a ratio with thd_db and thd_percent beside it, sinad_db, enob in
        bits (the names of 'tributary analyze --json'). The table's columns name their units. The
        session reconnects by itself. clock_offset_s is the publisher's clock minus this one and
        clock_rtt_s the round trip of the probe it was measured with (docs/PROTOCOL.md §4.9; null
        while there is no estimate, and with a publisher that does not answer clock probes).

        Default channels: the first two of each source (at most 8 in all).

        \(options.help())
        """

    /// The command line as given.
    struct Given {
        var subscription = SubscriptionOptions.Given()
        var measure: String?
        var every: Double?
        var spectrogram = false
        var display = DisplayFilterOptions.Given()
    }

    /// The session, the readings to show and how often.
    struct Configuration {
        var subscription: SubscriptionOptions
        var measures: [String]
        var every: Double
        var spectrogram: Bool
        var displayFilter: DisplayFilter?
    }

    static var options: OptionTable<Given> {
        SubscriptionOptions.analogOptions(refusing: "monitor reads analog channels only").lifted(\.subscription)
            + OptionTable([
                .text(
                    "--measure", "LIST",
                    """
                    readings to show, from rms, pp, mean, freq (tone frequency), amp (tone
                    amplitude), thd (THD as a ratio, in dB and in %), sinad (dB), enob
                    (default: all)
                    """, \.measure),
                .number(
                    "--every", "S", "an interval in seconds", in: 0.1...3600, "seconds between tables, in [0.1, 3600] (default 1)", \.every),
                .flag(
                    "--spectrogram",
                    """
                    also the spectrum of the samples since the previous interval, per channel:
                    on a terminal a line of 64 shades from 0 Hz to half the rate (darkest the
                    quietest, over the 80 dB below its strongest band); in JSON a member
                    "spectrogram":{"df":HZ,"db":[…]} (centi-dB accuracy, points of df Hz,
                    each the strongest of its bins; null when no Welch segment completed)
                    """, \.spectrogram),
            ]) + DisplayFilterOptions.options.lifted(\.display)
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var given = Given()
        let rest = try options.parse(arguments, into: &given)
        var subscription = try SubscriptionOptions(given.subscription, defaultDescription: "tributary monitor")
        let address = try Positionals.one(rest, "ADDRESS")
        var measures = readingNames
        if let measureText = given.measure {
            measures = measureText.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            for m in measures where !readingNames.contains(m) {
                throw UsageError("option --measure: '\(m)' is not one of \(readingNames.joined(separator: ", "))")
            }
            guard !measures.isEmpty else { throw UsageError("option --measure: the list is empty") }
        }
        try subscription.setAddress(address)
        return Configuration(
            subscription: subscription, measures: measures, every: given.every ?? 1, spectrogram: given.spectrogram,
            displayFilter: DisplayFilterOptions.filter(given.display))
    }

    static func run(_ configuration: Configuration) throws -> Int32 {
        let options = configuration.subscription, measures = configuration.measures, every = configuration.every
        let spectrogram = configuration.spectrogram, displayFilter = configuration.displayFilter
        let session = try LiveSession(
            host: options.host, port: options.port, apiKey: options.apiKey, description: options.description,
            timeout: options.timeout, curve: options.curve, sources: options.request.sources,
            channels: options.request.analogFilter?.channels, signalFilter: options.request.signalFilter, displayFilter: displayFilter)
        defer { session.close() }
        try session.applyInitialSelection()
        let terminal = isatty(1) == 1
        let stop = DispatchSemaphore(value: 0)
        let signals = ProcessSignals([SIGINT, SIGTERM]) { _ in stop.signal() }
        let end = options.duration.map { Date().addingTimeInterval($0) }
        var lastTraffic = session.model.traffic
        var lastTime = Date()
        while true {
            var wait = every
            if let end { wait = min(wait, max(0, end.timeIntervalSinceNow)) }
            if stop.wait(timeout: .now() + wait) == .success { break }
            let now = Date()
            let traffic = session.model.traffic
            let elapsed = max(1e-3, now.timeIntervalSince(lastTime))
            let fps = Double(traffic.frames - lastTraffic.frames) / elapsed
            let mbps = Double(traffic.bytes - lastTraffic.bytes) / elapsed / 1e6
            (lastTraffic, lastTime) = (traffic, now)
            let statistics = session.subject.statistics()
            let (connected, _, lastError) = session.model.session
            let channels = session.model.snapshot(readings: true)
            let configurations = session.model.knownConfigurations
            func info(_ key: ChannelKey) -> (String, String) {
                let c = configurations[key.source]?.channels.first { $0.index == key.channel }
                return (c?.description ?? "channel \(key.channel)", c?.unit ?? "")
            }
            let ok: Bool
            if terminal {
                var lines = [
                    "\u{1B}[H\u{1B}[2J" + "tributary monitor — \(session.welcome.publisherDescription.terminalSafe) — "
                        + (connected ? "connected" : "reconnecting") + " — every \(every) s (Ctrl-C to stop)", "",
                ]
                let rows = table(
                    measures: measures,
                    channels: channels.map { c in
                        let (name, unit) = info(c.key)
                        return (source: c.key.source, channel: c.key.channel, name: name, unit: unit, readings: c.readings)
                    })
                let header = rows[0]
                let widths = (0..<header.count).map { i in rows.map { $0[i].count }.max()! }
                for row in rows {
                    lines.append(
                        row.enumerated().map { i, t in
                            i < 2
                                ? t.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                                : String(repeating: " ", count: widths[i] - t.count) + t
                        }.joined(separator: "  "))
                }
                lines.append("")
                lines.append(
                    String(
                        format: "%.1f frames/s  %.3f MB/s  %llu received  %llu gap notices  %llu lost  %llu unaccounted  "
                            + "%llu reconnections  callback latency p50 %.3f ms p99 %.3f ms", fps, mbps,
                        statistics.framesReceived, statistics.gapNotices, statistics.framesMissing,
                        statistics.unaccountedLoss, statistics.reconnections,
                        Double(statistics.callbackQueue.latencyP50Ns) / 1e6, Double(statistics.callbackQueue.latencyP99Ns) / 1e6))
                if let clock = session.subject.clockEstimate { lines.append(Self.clockText(clock)) }
                if spectrogram { lines += [""] + channels.map { spectrogramLine($0, name: info($0.key).0) } }
                if let lastError { lines.append(lastError.terminalSafe) }
                ok = StandardOutput.line(lines.joined(separator: "\n"))
            } else {
                let health =
                    "{\"frames_per_s\":\(jsonNumber(fps)),\"mb_per_s\":\(jsonNumber(mbps)),"
                    + "\"frames_received\":\(statistics.framesReceived),\"gap_notices\":\(statistics.gapNotices),"
                    + "\"frames_lost\":\(statistics.framesMissing),\"unaccounted_loss\":\(statistics.unaccountedLoss),"
                    + "\"reconnections\":\(statistics.reconnections),"
                    + "\"callback_latency_p50_ms\":\(jsonNumber(Double(statistics.callbackQueue.latencyP50Ns) / 1e6)),"
                    + "\"callback_latency_p99_ms\":\(jsonNumber(Double(statistics.callbackQueue.latencyP99Ns) / 1e6)),"
                    + Self.clockJSON(session.subject.clockEstimate)
                    + "\"connected\":\(connected),\"error\":\(lastError.map(jsonText) ?? "null")}"
                let list = channels.map { c in
                    let (name, unit) = info(c.key)
                    let sgram: String = spectrogram ? "\"spectrogram\":\(spectrogramJSON(c))," : ""
                    let readings: String = measures.flatMap { m in
                        jsonMembers(m).map { "\"\($0.key)\":\(jsonNumber($0.value(c.readings)))" }
                    }.joined(separator: ",")
                    return "{\"source\":\(c.key.source),\"channel\":\(c.key.channel),\"name\":\(jsonText(name)),\"unit\":\(jsonText(unit)),"
                        + "\"samples\":\(c.readings.samples)," + sgram + readings + "}"
                }
                ok = StandardOutput.line(
                    "{\"time\":\(jsonNumber(now.timeIntervalSince1970)),\"health\":\(health),\"channels\":[\(list.joined(separator: ","))]}"
                )
            }
            if !ok { break }
            if let end, Date() >= end { break }
        }
        withExtendedLifetime(signals) {}
        return 0
    }

    /// A channel's newest spectrogram column as the view sends it (docs/VIEW.md: at most 512 points,
    /// each the strongest of its bins), in dB; nil when no Welch segment completed since the last one.
    static func spectrogramPoints(_ c: ChannelSnapshot) -> (df: Double, db: [Double])? {
        guard let column = c.spectrogramColumn, column.values.count >= 2 else { return nil }
        let group = (column.values.count + UpdateEncoding.maxSpectrumPoints - 1) / UpdateEncoding.maxSpectrumPoints
        let df = (column.frequencies[1] - column.frequencies[0]) * Double(group)
        return (df, UpdateEncoding.centiDecibels(column, group: group).map { Double($0) / 100 })
    }

    /// The terminal's spectrogram line of a channel: its 64 shades from 0 Hz to the last point.
    static func spectrogramLine(_ c: ChannelSnapshot, name: String) -> String {
        let label = "\(c.key.source)/\(c.key.channel) \(name.terminalSafe)"
        guard let (df, db) = spectrogramPoints(c) else { return "\(label): no Welch segment completed in this interval" }
        return "\(label): 0 |\(shades(db))| \(compactNumber(df * Double(db.count - 1))) Hz"
    }

    static func spectrogramJSON(_ c: ChannelSnapshot) -> String {
        guard let (df, db) = spectrogramPoints(c) else { return "null" }
        return "{\"df\":\(jsonNumber(df)),\"db\":[\(db.map(jsonNumber).joined(separator: ","))]}"
    }

    /// 64 bands from 0 Hz to the last point, each shaded by its strongest point over the 80 dB below the
    /// strongest band: a space for the quietest, █ for the strongest.
    static func shades(_ db: [Double]) -> String {
        let bands = min(64, db.count)
        let levels = Array(" ▁▂▃▄▅▆▇█")
        let values = (0..<bands).map { b in db[(b * db.count / bands)..<((b + 1) * db.count / bands)].max() ?? -.infinity }
        let top = values.max() ?? 0
        return String(
            values.map { v in
                guard v.isFinite, top.isFinite else { return levels[0] }
                let t = max(0, min(1, (v - (top - 80)) / 80))
                return levels[Int((t * Double(levels.count - 1)).rounded())]
            })
    }

    /// A frequency for a label: at most 6 significant digits, no exponent below 1e15.
    static func compactNumber(_ x: Double) -> String {
        x.rounded() == x && abs(x) < 1e15 ? String(Int64(x)) : String(format: "%.6g", x)
    }

    /// The JSON members of a reading (`--measure` name): the names and meanings of `analyze --json`.
    static func jsonMembers(_ name: String) -> [(key: String, value: (ChannelReadings) -> Double)] {
        switch name {
        case "rms": [("rms", { $0.rms })]
        case "pp": [("pp", { $0.peakToPeak })]
        case "mean": [("mean", { $0.mean })]
        case "freq": [("freq", { $0.toneFrequency })]
        case "amp": [("amp", { $0.toneAmplitude })]
        case "thd": [("thd", { $0.thd }), ("thd_db", { $0.thdDB }), ("thd_percent", { $0.thdPercent })]
        case "sinad": [("sinad_db", { $0.sinadDB })]
        default: [("enob", { $0.enob })]
        }
    }

    /// The table's columns of a reading: a header with its unit (nil: the channel's unit) and the value.
    static func columns(_ name: String) -> [(header: String, unit: String?, value: (ChannelReadings) -> Double)] {
        switch name {
        case "rms": [("RMS", nil, { $0.rms })]
        case "pp": [("p-p", nil, { $0.peakToPeak })]
        case "mean": [("mean", nil, { $0.mean })]
        case "freq": [("tone", "Hz", { $0.toneFrequency })]
        case "amp": [("tone amp", nil, { $0.toneAmplitude })]
        case "thd": [("THD", "%", { $0.thdPercent }), ("THD", "dB", { $0.thdDB })]
        case "sinad": [("SINAD", "dB", { $0.sinadDB })]
        default: [("ENOB", "bits", { $0.enob })]
        }
    }

    /// The terminal table: a header row whose columns name their units, then one row per channel.
    /// Readings in a channel's own unit (RMS, p-p, mean, tone amplitude) carry it in the header when
    /// every channel shown has the same unit, else in each cell.
    static func table(
        measures: [String],
        channels: [(source: UInt32, channel: UInt32, name: String, unit: String, readings: ChannelReadings)]
    ) -> [[String]] {
        let units = Set(channels.map(\.unit))
        let shared = units.count == 1 ? units.first! : nil
        let chosen = measures.flatMap(columns)
        func unitText(_ unit: String) -> String { unit.isEmpty ? "" : " " + unit.terminalSafe }
        var rows = [
            ["source", "channel"]
                + chosen.map { c in
                    c.header + (c.unit.map { " " + $0 } ?? shared.map(unitText) ?? "")
                }
        ]
        for c in channels {
            rows.append(
                ["\(c.source)", "\(c.channel) \(c.name.terminalSafe)"]
                    + chosen.map { column in
                        let x = column.value(c.readings)
                        return format(x) + (column.unit == nil && shared == nil && x.isFinite ? unitText(c.unit) : "")
                    })
        }
        return rows
    }

    static func format(_ x: Double) -> String {
        guard x.isFinite else { return "-" }
        return abs(x) >= 1e5 || (abs(x) < 1e-3 && x != 0) ? String(format: "%.4g", x) : String(format: "%.5g", x)
    }

    static func jsonNumber(_ x: Double) -> String { x.isFinite ? "\(x)" : "null" }

    static func jsonText(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default: out += u.value < 0x20 ? String(format: "\\u%04x", u.value) : String(u)
            }
        }
        return out + "\""
    }

    /// The Subject's clock estimate as the table's line.
    static func clockText(_ clock: ClockEstimate) -> String {
        String(format: "publisher clock offset %+.6f s  RTT %.3f ms", Double(clock.offsetNs) / 1e9, Double(clock.rttNs) / 1e6)
    }

    /// `"clock_offset_s":…,"clock_rtt_s":…,` (null without an estimate).
    static func clockJSON(_ clock: ClockEstimate?) -> String {
        "\"clock_offset_s\":\(clock.map { jsonNumber(Double($0.offsetNs) / 1e9) } ?? "null"),"
            + "\"clock_rtt_s\":\(clock.map { jsonNumber(Double($0.rttNs) / 1e9) } ?? "null"),"
    }
}
