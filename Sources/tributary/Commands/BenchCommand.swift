import Foundation
import TributaryText
import TributaryTransport
import TributaryWire

/// `tributary bench`: the throughput ↔ callback-latency curve of a link and a publisher.
enum BenchCommand: TableCommand {
    static let name = "bench"
    static let streamsFrames = true
    static let summary = "measure delivered throughput, callback latency and loss, on loopback or against a publisher"
    static let usage = """
        usage: tributary bench [--rates LIST] [--sizes LIST] [--lossless] [COMMON OPTIONS]
               tributary bench ADDRESS --api-key KEY [--sources IDS] [SUBSCRIPTION OPTIONS] [COMMON OPTIONS]
        COMMON OPTIONS: [--seconds S] [--warmup S] [--subscribers N] [--inline] [--start-at T] [--json PATH] [--svg PATH]

        Measures, point by point, what subscribers receive: delivered frames/s and MB/s of samples,
        callback latency (p50, p99, p99.9: the wall-clock time of the observer callback minus the time
        the frame's last sample was taken, i.e. its header timestamp plus its samples / sampling rate),
        and loss: frames the publisher announced as dropped (gap notices) and frames lost without a
        notice ('unaccounted', 0 unless something is broken; the exit status is 1 if any), and the
        publisher's clock at the point's end: its offset (its clock minus this host's, s) and the round
        trip of the probe it comes from (ms), '-' before the first estimate. Prints a table; --json
        and --svg write the curve.

        Loopback (no ADDRESS): starts its own publisher in this process on tcp://127.0.0.1 and, for
        each frame size and each offered rate, publishes 8-channel float64 frames from a prebuilt
        block for --seconds to --subscribers sessions (live: frames a subscriber cannot take are dropped
        and announced; --lossless: credit-based, the publisher waits for the slowest subscriber).

        Against a running publisher (ADDRESS, e.g. 'tributary serve' on another machine): each of its
        sources (or those of --sources) is one point; the sessions select that source only (source
        selection) for --seconds, so start the publisher with one --simulate per rate and frame size
        to sweep. Latency across machines needs clocks synchronised (PTP/NTP) better than the latencies
        measured; frames of a replay keep their recorded timestamps and get no latency, and a replay
        that ends during a point makes the point run from its first frame counted to its last.

        \(ownOptions.help())
        \(subscriptionOptions.help())
        """

    /// The command line as given.
    struct Given {
        var rates: String?
        var sizes: String?
        var lossless = false
        var seconds: Double?
        var warmup: Double?
        var subscribers: Int?
        var inline = false
        var startAt: Double?
        var json: String?
        var svg: String?
        var subscription = SubscriptionOptions.Given()
    }

    /// One run: the points to measure (loopback rates and sizes, or the publisher's sources) and how.
    struct Configuration {
        var runner: BenchRunner
        /// Against a publisher: the session options, ADDRESS set (nil: loopback).
        var subscription: SubscriptionOptions?
        var rates: [Double?] = []
        var sizes: [Int] = []
        var lossless = false
        var json: String?
        var svg: String?
        /// The ADDRESS as given.
        var address = ""
    }

    static var ownOptions: OptionTable<Given> {
        OptionTable([
            .text(
                "--rates", "LIST",
                """
                loopback: offered frames/s, comma-separated, 'max' for unpaced
                (default 100,1000,10000,50000,max)
                """, \.rates),
            .text(
                "--sizes", "LIST",
                """
                loopback: samples per channel per frame (8 channels of float64:
                16 = 1 KiB, 1024 = 64 KiB; default 16,1024)
                """, \.sizes),
            .flag("--lossless", "loopback: lossless (credit) delivery instead of live", \.lossless),
            .number(
                "--seconds", "S", "a duration in seconds", in: 0.1...3_600, "measured seconds per point, in [0.1, 3600] (default 2)",
                \.seconds),
            .number(
                "--warmup", "S", "a duration in seconds", in: 0...3_600,
                """
                seconds after the sessions start before a point is measured, in
                [0, 3600] (default min(0.5, S/4))
                """, \.warmup),
            .integer(
                "--subscribers", "N", "a count of subscribers", in: 1...256,
                """
                sessions measured at once, 1-256 (default 1); they share one libzmq
                context with an I/O thread per core at most
                """, \.subscribers),
            .flag(
                "--inline",
                """
                call the observers on each session's socket thread as messages
                are read (the library's inline callback queue) instead of on a
                callback thread: no hand-off between threads
                """, \.inline),
            .number(
                "--start-at", "T", "a Unix time in seconds", in: 0...1e11,
                """
                against a publisher: start measuring the first point at Unix time T
                (s), so that several bench processes measure the same window
                """, \.startAt),
            .text("--json", "PATH", "also write the points as JSON", \.json),
            .text("--svg", "PATH", "also write the curve (latency against MB/s, log-log) as SVG", \.svg),
        ])
    }

    /// The subscription options, --duration refused (bench measures --seconds per point).
    static var subscriptionOptions: OptionTable<Given> {
        let refused = OptionEntry<SubscriptionOptions.Given>.refused("--duration", "S", because: "bench measures --seconds per point")
        return SubscriptionOptions.options.replacing("--duration", with: refused).lifted(\.subscription)
    }

    static var options: OptionTable<Given> { ownOptions + subscriptionOptions }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var given = Given()
        let rest = try options.parse(arguments, into: &given)
        let seconds = given.seconds ?? 2
        let runner = BenchRunner(
            subscribers: given.subscribers ?? 1, seconds: seconds, startAt: given.startAt, warmup: given.warmup ?? min(0.5, seconds / 4),
            inline: given.inline)
        var c = Configuration(runner: runner, lossless: given.lossless, json: given.json, svg: given.svg)
        // ADDRESS mode takes the subscription options (--api-key is required there, meaningless on loopback).
        if given.subscription.apiKey != nil {
            var subscription = try SubscriptionOptions(given.subscription, defaultDescription: "tributary bench")
            for path in [given.json, given.svg].compactMap({ $0 }) { try checkWritable(path) }
            guard rest.count == 1 else {
                throw UsageError(rest.isEmpty ? "missing ADDRESS (with --api-key)" : "expected one ADDRESS, got \(rest.count)")
            }
            if given.rates != nil || given.sizes != nil || given.lossless {
                throw UsageError(
                    "--rates, --sizes and --lossless apply to loopback runs; against a publisher its sources "
                        + "are the points (start it with one --simulate per rate and frame size)")
            }
            try subscription.setAddress(rest[0])
            c.subscription = subscription
            c.address = rest[0]
            return c
        }
        // Without --api-key the subscription options are not this mode's: refused as options it does not know.
        let shared = Set(SubscriptionOptions.options.specs.map(\.name))
        if let item = arguments.prefix(while: { $0 != "--" }).first(where: { shared.contains(String($0.prefix { $0 != "=" })) }) {
            throw UsageError("unknown option '\(item)' (the subscription options need ADDRESS and --api-key KEY)")
        }
        for path in [given.json, given.svg].compactMap({ $0 }) { try checkWritable(path) }
        guard rest.isEmpty else {
            throw UsageError("unexpected argument '\(rest[0])' (a publisher ADDRESS needs --api-key KEY)")
        }
        if given.startAt != nil { throw UsageError("--start-at applies to runs against a publisher (ADDRESS)") }
        c.rates = try parseList(
            given.rates ?? "100,1000,10000,50000,max", option: "--rates", what: "an offered rate in frames/s in [1, 1000000] or max"
        ) { text -> Double?? in
            if text == "max" { return .some(nil) }
            guard let v = Double(text), (1...1_000_000).contains(v) else { return nil }
            return .some(v)
        }
        c.sizes = try parseList(
            given.sizes ?? "16,1024", option: "--sizes", what: "samples per channel in [1, 262144] (8 channels of float64)"
        ) { text -> Int? in
            guard let v = Int(text), (1...262_144).contains(v) else { return nil }
            return v
        }
        return c
    }

    static func run(_ c: Configuration) throws -> Int32 {
        let report = try c.subscription.map { try remote($0, given: c.address, runner: c.runner) } ?? loopback(c)
        for line in report.table() { StandardOutput.line(line) }
        if let jsonPath = c.json { try write(report.json().render() + "\n", to: jsonPath) }
        if let svgPath = c.svg { try write(report.svg(), to: svgPath) }
        return report.points.contains { $0.unaccounted > 0 } ? 1 : 0
    }

    /// Each source of the publisher at `options`' ADDRESS (or of --sources) one point.
    static func remote(_ options: SubscriptionOptions, given: String, runner: BenchRunner) throws -> BenchReport {
        let subscribers = runner.subscribers, inline = runner.inline, seconds = runner.seconds
        if let startAt = runner.startAt, startAt - Date().timeIntervalSince1970 > 3_600 {
            throw UsageError("option --start-at: \(startAt) is more than an hour from now")
        }
        let welcome = try BenchRunner.probe(options)
        var sources = welcome.sources
        if let wanted = options.request.sources {
            for id in wanted where !sources.contains(where: { $0.id == id }) {
                throw CommandError(
                    "--sources: the publisher has no source \(id)"
                        + (id == 0 ? " to measure (0 stands for its own packages, which are no stream)" : "")
                        + " (it lists " + sources.map { "\($0.id)" }.joined(separator: ", ") + ")")
            }
            sources = sources.filter { wanted.contains($0.id) }
        }
        guard !sources.isEmpty else { throw CommandError("the publisher at \(given) lists no source to measure") }
        let address = "tcp://\(options.host):\(options.port)"
        printError(
            "bench: '\(welcome.publisherDescription.terminalSafe)' at \(address), \(counted(sources.count, "source")), "
                + "\(counted(subscribers, "subscriber"))\(inline ? " (inline callbacks)" : ""), \(seconds.formatted()) s per point")
        var report = BenchReport(
            mode: "publisher", address: address, delivery: nil, subscribers: subscribers, inlineCallbacks: inline, points: [])
        for (index, source) in sources.enumerated() {
            let point = try runner.remote(options, source: source, aligned: index == 0)
            report.points.append(point)
            printError(
                "  source \(source.id) '\(source.description.terminalSafe)': \(String(format: "%.0f", point.deliveredRate)) frames/s")
        }
        return report
    }

    /// Every --sizes × --rates point on a publisher of this process.
    static func loopback(_ c: Configuration) throws -> BenchReport {
        let runner = c.runner, lossless = c.lossless, rates = c.rates, sizes = c.sizes
        let delivery: SourceDelivery = lossless ? .lossless : .live
        printError(
            "bench: loopback publisher on tcp://127.0.0.1, \(lossless ? "lossless" : "live") delivery, "
                + "\(counted(runner.subscribers, "subscriber"))\(runner.inline ? " (inline callbacks)" : ""), "
                + "\(counted(sizes.count * rates.count, "point")) of \(runner.seconds.formatted()) s")
        var report = BenchReport(
            mode: "loopback", address: "tcp://127.0.0.1", delivery: lossless ? "lossless" : "live",
            subscribers: runner.subscribers, inlineCallbacks: runner.inline, points: [])
        // A sweep takes a while (each point its warm-up and window): each point says on stderr when it is done.
        let total = sizes.count * rates.count
        for samples in sizes {
            for rate in rates {
                let point = try runner.loopback(samples: samples, rate: rate, delivery: delivery)
                report.points.append(point)
                printError(
                    "  point \(report.points.count)/\(total): \(counted(samples, "sample")) per channel at "
                        + (rate.map { String(format: "%.0f", $0) + " frames/s offered" } ?? "max rate")
                        + String(format: ": %.0f frames/s delivered", point.deliveredRate))
            }
        }
        return report
    }

    /// A comma-separated list whose items `parse` accepts; the error names the option and the bad item.
    static func parseList<T>(_ text: String, option: String, what: String, _ parse: (String) -> T?) throws -> [T] {
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        var values: [T] = []
        for item in items {
            guard let value = parse(item) else { throw UsageError("option \(option): '\(item)' is not \(what)") }
            values.append(value)
        }
        return values
    }

    /// Refuses, before measuring, an output path whose directory does not exist or that is a directory.
    static func checkWritable(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CommandError("\(path): is a directory")
        }
        let directory = (path as NSString).deletingLastPathComponent
        guard directory.isEmpty || FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory),
            isDirectory.boolValue || directory.isEmpty
        else {
            throw CommandError("\(path): the directory \(directory) does not exist")
        }
    }

    static func write(_ text: String, to path: String) throws {
        do { try text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
            throw CommandError("\(path): cannot write: \(error.localizedDescription)")
        }
    }
}

extension Double {
    fileprivate func formatted() -> String { self == rounded() ? String(Int(self)) : String(self) }
}
