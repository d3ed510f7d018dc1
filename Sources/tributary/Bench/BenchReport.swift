import Foundation
import TributaryAnalysis
import TributaryText
import TributaryTransport

/// The outputs of `tributary bench`: a table, a JSON document and a log-log SVG plot of the
/// throughput ↔ callback-latency curve.
struct BenchReport {
    /// "loopback" or "publisher".
    var mode: String
    var address: String
    /// Loopback: "live" or "lossless"; nil against a running publisher (its sources decide).
    var delivery: String?
    var subscribers: Int
    /// Whether observers ran on the sessions' socket threads (`--inline`).
    var inlineCallbacks = false
    var points: [BenchPoint]

    static func micro(_ ns: Double?) -> String { ns.map { String(format: "%.0f", $0 / 1e3) } ?? "-" }

    static func frameLabel(_ p: BenchPoint) -> String {
        if let samples = p.samplesPerChannel {
            return "8x\(samples) f64 (\(byteLabel(8 * samples * 8)))"
        }
        return "source \(p.sourceID) (\(byteLabel(p.sampleBytesPerFrame)))"
    }

    static func byteLabel(_ bytes: Int) -> String {
        bytes >= 1 << 20
            ? String(format: "%.1f MiB", Double(bytes) / 1_048_576)
            : bytes >= 1 << 10 ? String(format: "%.4g KiB", Double(bytes) / 1_024) : "\(bytes) B"
    }

    /// The publisher's clock offset (s, signed) and the round trip of its probe (ms), or "-" without an estimate.
    static func clockCell(_ clock: ClockEstimate?) -> String {
        clock.map { String(format: "%+.6f / %.3f", Double($0.offsetNs) / 1e9, Double($0.rttNs) / 1e6) } ?? "-"
    }

    /// `clock_offset_s`, `clock_rtt_s` (s) and `clock_estimates`, null without an estimate.
    static func clockFields(_ clock: ClockEstimate?) -> [(String, JSON)] {
        guard let clock else { return [("clock_offset_s", .null), ("clock_rtt_s", .null), ("clock_estimates", .null)] }
        return [
            ("clock_offset_s", .double(Double(clock.offsetNs) / 1e9)), ("clock_rtt_s", .double(Double(clock.rttNs) / 1e9)),
            ("clock_estimates", .uint(clock.serial)),
        ]
    }

    /// The table, one line per point.
    func table() -> [String] {
        let many = subscribers > 1
        let header = [
            "frame", "offered f/s", many ? "delivered f/s (median/min)" : "delivered f/s",
            many ? "MB/s each (all)" : "MB/s", "p50 µs", "p99 µs", "p99.9 µs", "lost (announced)", "unaccounted",
            "clock offset s / RTT ms",
        ]
        var rows: [[String]] = [header]
        for p in points {
            let l = p.latency
            // Against a publisher: what it produced for the subscriber (delivered + announced lost).
            let offered =
                p.offeredRate.map { String(format: "%.0f", $0) }
                ?? (p.samplesPerChannel != nil ? "max" : String(format: "%.0f", p.arrivedRate))
            let delivered =
                many ? String(format: "%.0f / %.0f", p.deliveredRate, p.deliveredRates.min() ?? 0) : String(format: "%.0f", p.deliveredRate)
            let mbps = many ? String(format: "%.1f (%.1f)", p.deliveredMBps, p.totalMBps) : String(format: "%.1f", p.deliveredMBps)
            var row = [
                Self.frameLabel(p), offered, delivered, mbps,
                Self.micro(l.quantile(0.5)), Self.micro(l.quantile(0.99)), Self.micro(l.quantile(0.999)),
                "\(p.announcedLost)", "\(p.unaccounted)", Self.clockCell(p.clock),
            ]
            if let error = p.error { row[9] += "  (\(error))" }
            if p.publisherClosed { row[9] += String(format: "  (the publisher ended the session after %.2f s)", p.seconds) }
            rows.append(row)
        }
        let widths = header.indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == 0
                    ? cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[i] - cell.count) + cell
            }.joined(separator: "  ")
        }
    }

    func json() -> JSON {
        func optionalDouble(_ v: Double?) -> JSON { v.map { .double($0) } ?? .null }
        let items: [JSON] = points.map { p in
            let l = p.latency
            let latency: JSON =
                l.count == 0
                ? .null
                : .object([
                    ("p50", optionalDouble(l.quantile(0.5).map { $0 / 1e3 })), ("p99", optionalDouble(l.quantile(0.99).map { $0 / 1e3 })),
                    ("p999", optionalDouble(l.quantile(0.999).map { $0 / 1e3 })), ("max", .double(Double(l.maxNs) / 1e3)),
                    ("frames", .uint(l.count)), ("negative", .uint(l.negative)),
                ])
            let fields: [(String, JSON)] = [
                ("source_id", .uint(UInt64(p.sourceID))), ("source", .string(p.sourceDescription)),
                ("samples_per_channel", p.samplesPerChannel.map { .int($0) } ?? .null),
                ("sample_bytes_per_frame", .int(p.sampleBytesPerFrame)),
                ("offered_frames_per_s", optionalDouble(p.offeredRate)),
                ("arrived_frames_per_s", .double(p.arrivedRate)),
                ("delivered_frames_per_s", .double(p.deliveredRate)),
                ("delivered_frames_per_s_each", .array(p.deliveredRates.map { .double($0) })),
                ("delivered_mb_per_s", .double(p.deliveredMBps)),
                ("delivered_mb_per_s_total", .double(p.totalMBps)),
                ("latency_us", latency),
                ("replayed_frames", .uint(p.subscribers.reduce(0) { $0 + $1.replayedFrames })),
                ("announced_lost", .uint(p.announcedLost)),
                ("publisher_dropped", p.publisherDropped.map { .uint($0) } ?? .null),
                ("handoff_refused", p.handOffRefused.map { .uint($0) } ?? .null),
                ("unaccounted_lost", .uint(p.unaccounted)),
                ("seconds", .double(p.seconds)), ("publisher_closed", .bool(p.publisherClosed)),
                ("window_start_unix", .double(p.windowStartUnix)), ("window_end_unix", .double(p.windowEndUnix)),
                ("error", p.error.map { .string($0) } ?? .null),
            ]
            return .object(fields + Self.clockFields(p.clock))
        }
        return .object([
            ("tributary_bench", .int(1)), ("mode", .string(mode)), ("address", .string(address)),
            ("delivery", delivery.map { .string($0) } ?? .null), ("subscribers", .int(subscribers)),
            ("callbacks", .string(inlineCallbacks ? "inline" : "callback thread")),
            ("points", .array(items)),
        ])
    }

    /// Callback latency (p50 and p99, µs) against delivered MB/s per subscriber, log-log, one pair of
    /// series per frame size.
    func svg() -> String {
        var groups: [(String, [BenchPoint])] = []
        for p in points where p.latency.count > 0 && p.deliveredMBps > 0 {
            let label = Self.frameLabel(p)
            if let i = groups.firstIndex(where: { $0.0 == label }) { groups[i].1.append(p) } else { groups.append((label, [p])) }
        }
        var series: [LogLogPlot.Series] = []
        for (label, pts) in groups {
            let sorted = pts.sorted { $0.deliveredMBps < $1.deliveredMBps }
            series.append(
                .init(
                    label: "\(label) p50", x: sorted.map(\.deliveredMBps), y: sorted.map { ($0.latency.quantile(0.5) ?? 0) / 1e3 },
                    dashed: false))
            series.append(
                .init(
                    label: "\(label) p99", x: sorted.map(\.deliveredMBps), y: sorted.map { ($0.latency.quantile(0.99) ?? 0) / 1e3 },
                    dashed: true))
        }
        let who = mode == "loopback" ? "loopback (\(delivery ?? "live"))" : address
        return LogLogPlot(
            title: "tributary bench: callback latency vs throughput, \(who), \(subscribers) subscriber\(subscribers == 1 ? "" : "s")",
            xLabel: "delivered MB/s per subscriber", yLabel: "callback latency (µs)", series: series
        ).render()
    }
}

/// A line plot with logarithmic x and y axes, as a self-contained SVG.
struct LogLogPlot {
    struct Series {
        var label: String
        var x: [Double]
        var y: [Double]
        var dashed: Bool
    }
    var title: String
    var xLabel: String
    var yLabel: String
    var series: [Series]

    func render(width: Double = 900, height: Double = 520) -> String {
        let left = 80.0, right = 230.0, top = 40.0, bottom = 60.0
        let plotW = width - left - right, plotH = height - top - bottom
        let xs = series.flatMap(\.x).filter { $0 > 0 && $0.isFinite }, ys = series.flatMap(\.y).filter { $0 > 0 && $0.isFinite }
        let x0 = floor(log10(xs.min() ?? 1)), x1 = max(ceil(log10(xs.max() ?? 10)), x0 + 1)
        let y0 = floor(log10(ys.min() ?? 1)), y1 = max(ceil(log10(ys.max() ?? 10)), y0 + 1)
        func px(_ x: Double) -> Double { left + (log10(max(x, 1e-300)) - x0) / (x1 - x0) * plotW }
        func py(_ y: Double) -> Double { top + (y1 - log10(max(y, 1e-300))) / (y1 - y0) * plotH }
        func f(_ v: Double) -> String { String(format: "%.2f", v) }
        func tick(_ d: Double) -> String {
            d >= 0 && d < 7 ? String(Int(pow(10, d))) : d < 0 && d >= -4 ? String(format: "%g", pow(10, d)) : "1e\(Int(d))"
        }
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(f(left + plotW / 2))" y="22" text-anchor="middle" font-size="14">\(escape(title))</text>

            """
        var d = y0
        while d <= y1 {
            svg +=
                "<line x1=\"\(f(left))\" y1=\"\(f(py(pow(10, d))))\" x2=\"\(f(left + plotW))\" y2=\"\(f(py(pow(10, d))))\" stroke=\"#ddd\"/>\n"
            svg += "<text x=\"\(f(left - 6))\" y=\"\(f(py(pow(10, d)) + 4))\" text-anchor=\"end\">\(tick(d))</text>\n"
            d += 1
        }
        d = x0
        while d <= x1 {
            svg +=
                "<line x1=\"\(f(px(pow(10, d))))\" y1=\"\(f(top))\" x2=\"\(f(px(pow(10, d))))\" y2=\"\(f(top + plotH))\" stroke=\"#eee\"/>\n"
            svg += "<text x=\"\(f(px(pow(10, d))))\" y=\"\(f(top + plotH + 18))\" text-anchor=\"middle\">\(tick(d))</text>\n"
            d += 1
        }
        svg += "<rect x=\"\(f(left))\" y=\"\(f(top))\" width=\"\(f(plotW))\" height=\"\(f(plotH))\" fill=\"none\" stroke=\"black\"/>\n"
        svg += "<text x=\"\(f(left + plotW / 2))\" y=\"\(f(height - 15))\" text-anchor=\"middle\">\(escape(xLabel))</text>\n"
        svg += "<text transform=\"translate(20,\(f(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\">\(escape(yLabel))</text>\n"
        for (i, s) in series.enumerated() {
            let color = SVGSpectrumPlot.palette[(i / 2) % SVGSpectrumPlot.palette.count]
            let pts = zip(s.x, s.y).filter { $0.0 > 0 && $0.1 > 0 && $0.0.isFinite && $0.1.isFinite }
            let path = pts.map { "\(f(px($0.0))),\(f(py($0.1)))" }.joined(separator: " ")
            svg +=
                "<polyline class=\"series\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.5\"\(s.dashed ? " stroke-dasharray=\"5,3\"" : "") points=\"\(path)\"/>\n"
            for p in pts { svg += "<circle cx=\"\(f(px(p.0)))\" cy=\"\(f(py(p.1)))\" r=\"3\" fill=\"\(color)\"/>\n" }
            let ly = top + 10 + Double(i) * 18
            svg +=
                "<line x1=\"\(f(left + plotW + 12))\" y1=\"\(f(ly))\" x2=\"\(f(left + plotW + 36))\" y2=\"\(f(ly))\" stroke=\"\(color)\" stroke-width=\"2\"\(s.dashed ? " stroke-dasharray=\"5,3\"" : "")/>\n"
            svg += "<text x=\"\(f(left + plotW + 42))\" y=\"\(f(ly + 4))\">\(escape(s.label))</text>\n"
        }
        return svg + "</svg>\n"
    }

    private func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(
            of: ">", with: "&gt;")
    }
}
