import Foundation
import TributaryDSP

/// Spectrogram heat maps (one panel per channel: time across, frequency up) with a colour bar in dB,
/// and stacked line panels with linear y axes (Bode magnitude and phase, coherence), as SVG. The tick
/// spacing and labels are `SVGSpectrumPlot`'s.
enum SVGPanels {
    private static func f(_ v: Double) -> String { String(format: "%.2f", v) }
    private static let left = 80.0, panelWidth = 720.0, gap = 70.0

    /// Linear ticks of a range: lines across the plot area and labels, along x (bottom) or y (left).
    private static func ticks(_ lo: Double, _ hi: Double, along x: Bool, area: (x: Double, y: Double, w: Double, h: Double)) -> String {
        guard hi > lo else { return "" }
        let step = SVGSpectrumPlot.niceStep((hi - lo) / 6)
        var svg = ""
        var t = ceil(lo / step) * step
        while t <= hi + step * 1e-9 {
            let p = (t - lo) / (hi - lo)
            if x {
                let px = area.x + p * area.w
                svg += "<line x1=\"\(f(px))\" y1=\"\(f(area.y))\" x2=\"\(f(px))\" y2=\"\(f(area.y + area.h))\" stroke=\"#0002\"/>\n"
                svg +=
                    "<text x=\"\(f(px))\" y=\"\(f(area.y + area.h + 16))\" text-anchor=\"middle\">\(SVGSpectrumPlot.tickLabel(t))</text>\n"
            } else {
                let py = area.y + (1 - p) * area.h
                svg += "<line x1=\"\(f(area.x))\" y1=\"\(f(py))\" x2=\"\(f(area.x + area.w))\" y2=\"\(f(py))\" stroke=\"#0002\"/>\n"
                svg += "<text x=\"\(f(area.x - 6))\" y=\"\(f(py + 4))\" text-anchor=\"end\">\(SVGSpectrumPlot.tickLabel(t))</text>\n"
            }
            t += step
        }
        return svg
    }

    private static func header(width: Double, height: Double, title: String) -> String {
        """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(f(left + panelWidth / 2))" y="22" text-anchor="middle" font-size="15">\(SVGSpectrumPlot.escape(title))</text>

        """
    }

    /// A perceptually ordered colour map (viridis' end points and three stops between), t in 0...1.
    static func colour(_ t: Double) -> String {
        let stops: [(Double, Double, Double)] = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
        let x = Swift.min(Swift.max(t.isFinite ? t : 0, 0), 1) * Double(stops.count - 1)
        let i = Swift.min(Int(x), stops.count - 2), u = x - Double(i)
        let a = stops[i], b = stops[i + 1]
        func c(_ p: Double, _ q: Double) -> Int { Int((p + (q - p) * u).rounded()) }
        return String(format: "#%02x%02x%02x", c(a.0, b.0), c(a.1, b.1), c(a.2, b.2))
    }

    /// Heat maps of spectrograms: 10 log10 of the PSD, coloured over the top `range` dB of all panels.
    static func spectrograms(_ panels: [(label: String, unit: String, spectrogram: Spectrogram)], title: String, range: Double = 100)
        -> String
    {
        let panelHeight = 220.0, top = 40.0
        let height = top + Double(panels.count) * (panelHeight + gap) + 10
        let width = left + panelWidth + 140
        let db = panels.map { $0.spectrogram.values.map { $0.map { 10 * log10($0) } } }
        let finite = db.flatMap { $0.flatMap { $0 } }.filter(\.isFinite)
        let hi = ceil(finite.max() ?? 0), lo = hi - range
        var svg = header(width: width, height: height, title: title)
        for (p, panel) in panels.enumerated() {
            let s = panel.spectrogram
            let y0 = top + Double(p) * (panelHeight + gap)
            let area = (x: left, y: y0, w: panelWidth, h: panelHeight)
            guard !s.times.isEmpty, !s.frequencies.isEmpty else { continue }
            // Cell edges: segment centres ± half a step, bins ± half a bin; at most 360 x 240 cells (the
            // loudest value of each group), so that the file stays small however long the record.
            let dt = s.times.count > 1 ? s.times[1] - s.times[0] : Swift.max(s.times[0] * 2, 1e-12)
            let df = s.frequencies.count > 1 ? s.frequencies[1] - s.frequencies[0] : 1
            let t0 = s.times[0] - dt / 2, t1 = s.times[s.times.count - 1] + dt / 2
            let f0 = Swift.max(0, s.frequencies[0] - df / 2), f1 = s.frequencies[s.frequencies.count - 1] + df / 2
            let columns = Swift.min(s.times.count, 360), rows = Swift.min(s.frequencies.count, 240)
            for c in 0..<columns {
                let ta = c * s.times.count / columns, tb = (c + 1) * s.times.count / columns
                for r in 0..<rows {
                    let ka = r * s.frequencies.count / rows, kb = (r + 1) * s.frequencies.count / rows
                    var v = -Double.infinity
                    for t in ta..<tb { for k in ka..<kb where db[p][t][k] > v { v = db[p][t][k] } }
                    let xa = left + (Double(ta) * dt) / (t1 - t0) * panelWidth, xb = left + (Double(tb) * dt) / (t1 - t0) * panelWidth
                    let fa = s.frequencies[ka] - df / 2, fb = s.frequencies[kb - 1] + df / 2
                    let ya = y0 + (1 - (Swift.min(fb, f1) - f0) / (f1 - f0)) * panelHeight
                    let yb = y0 + (1 - (Swift.max(fa, f0) - f0) / (f1 - f0)) * panelHeight
                    svg +=
                        "<rect x=\"\(f(xa))\" y=\"\(f(ya))\" width=\"\(f(xb - xa + 0.3))\" height=\"\(f(yb - ya + 0.3))\" fill=\"\(colour((v - lo) / range))\"/>\n"
                }
            }
            svg += ticks(t0, t1, along: true, area: area) + ticks(f0, f1, along: false, area: area)
            svg +=
                "<rect x=\"\(f(left))\" y=\"\(f(y0))\" width=\"\(f(panelWidth))\" height=\"\(f(panelHeight))\" fill=\"none\" stroke=\"black\"/>\n"
            svg += "<text x=\"\(f(left))\" y=\"\(f(y0 - 6))\">\(SVGSpectrumPlot.escape(panel.label))</text>\n"
            svg += "<text x=\"\(f(left + panelWidth / 2))\" y=\"\(f(y0 + panelHeight + 34))\" text-anchor=\"middle\">Time (s)</text>\n"
            svg += "<text transform=\"translate(18 \(f(y0 + panelHeight / 2))) rotate(-90)\" text-anchor=\"middle\">Frequency (Hz)</text>\n"
        }
        // The colour bar: lo ... hi dB of the PSD, beside the first panel.
        let barX = left + panelWidth + 30, barH = Swift.min(220.0, height - top - 40)
        for i in 0..<100 {
            let y = top + barH * (1 - Double(i + 1) / 100)
            svg +=
                "<rect x=\"\(f(barX))\" y=\"\(f(y))\" width=\"18\" height=\"\(f(barH / 100 + 0.3))\" fill=\"\(colour((Double(i) + 0.5) / 100))\"/>\n"
        }
        svg += "<rect x=\"\(f(barX))\" y=\"\(f(top))\" width=\"18\" height=\"\(f(barH))\" fill=\"none\" stroke=\"black\"/>\n"
        svg += ticks(lo, hi, along: false, area: (x: barX + 18 + 40, y: top, w: 0, h: barH)).replacingOccurrences(
            of: "stroke=\"#0002\"", with: "stroke=\"none\"")
        let units = Set(panels.map(\.unit))
        let unit = units.count == 1 && !units.first!.isEmpty ? units.first! : "unit"
        svg +=
            "<text transform=\"translate(\(f(barX + 80)) \(f(top + barH / 2))) rotate(-90)\" text-anchor=\"middle\">PSD (dB \(SVGSpectrumPlot.escape(unit))²/Hz)</text>\n"
        return svg + "</svg>\n"
    }

    /// Panels of curves sharing the x axis, each with its own linear y axis.
    static func lines(
        _ panels: [(yLabel: String, series: [SVGSpectrumPlot.Series], yRange: ClosedRange<Double>?)],
        title: String, xLabel: String
    ) -> String {
        let panelHeight = 240.0, top = 40.0
        let labels = panels.first?.series.map(\.label) ?? []
        let right = Swift.max(170.0, 56 + 7 * Double(labels.map(\.count).max() ?? 0))
        let width = left + panelWidth + right
        let height = top + Double(panels.count) * (panelHeight + gap) + 10
        var svg = header(width: width, height: height, title: title)
        let xs = panels.flatMap { $0.series.flatMap(\.x) }.filter(\.isFinite)
        let xMin = xs.min() ?? 0, xMax = Swift.max(xs.max() ?? 1, xMin + 1e-12)
        for (p, panel) in panels.enumerated() {
            let y0 = top + Double(p) * (panelHeight + gap)
            let ys = panel.series.flatMap(\.y).filter(\.isFinite)
            var yLo = panel.yRange?.lowerBound ?? (ys.min() ?? 0), yHi = panel.yRange?.upperBound ?? (ys.max() ?? 1)
            if yHi <= yLo { yLo -= 1; yHi += 1 }
            let area = (x: left, y: y0, w: panelWidth, h: panelHeight)
            svg += ticks(xMin, xMax, along: true, area: area) + ticks(yLo, yHi, along: false, area: area)
            for (i, s) in panel.series.enumerated() {
                let colour = SVGSpectrumPlot.palette[i % SVGSpectrumPlot.palette.count]
                // Gaps where a value is not finite (a 0/0 coherence, the phase of a zero).
                var runs: [[String]] = [[]]
                for (x, y) in zip(s.x, s.y) {
                    guard y.isFinite, x.isFinite else { if !runs[runs.count - 1].isEmpty { runs.append([]) }; continue }
                    let px = left + (x - xMin) / (xMax - xMin) * panelWidth
                    let py = y0 + (1 - (Swift.min(Swift.max(y, yLo), yHi) - yLo) / (yHi - yLo)) * panelHeight
                    runs[runs.count - 1].append("\(f(px)),\(f(py))")
                }
                for run in runs where !run.isEmpty {
                    svg += "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"1.2\" points=\"\(run.joined(separator: " "))\"/>\n"
                }
                if p == 0 {
                    let ly = top + 10 + Double(i) * 18
                    svg +=
                        "<line x1=\"\(f(left + panelWidth + 12))\" y1=\"\(f(ly))\" x2=\"\(f(left + panelWidth + 36))\" y2=\"\(f(ly))\" stroke=\"\(colour)\" stroke-width=\"2\"/>\n"
                    svg += "<text x=\"\(f(left + panelWidth + 42))\" y=\"\(f(ly + 4))\">\(SVGSpectrumPlot.escape(s.label))</text>\n"
                }
            }
            svg +=
                "<rect x=\"\(f(left))\" y=\"\(f(y0))\" width=\"\(f(panelWidth))\" height=\"\(f(panelHeight))\" fill=\"none\" stroke=\"black\"/>\n"
            svg +=
                "<text x=\"\(f(left + panelWidth / 2))\" y=\"\(f(y0 + panelHeight + 34))\" text-anchor=\"middle\">\(SVGSpectrumPlot.escape(xLabel))</text>\n"
            svg +=
                "<text transform=\"translate(18 \(f(y0 + panelHeight / 2))) rotate(-90)\" text-anchor=\"middle\">\(SVGSpectrumPlot.escape(panel.yLabel))</text>\n"
        }
        return svg + "</svg>\n"
    }
}
