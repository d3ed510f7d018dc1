import Foundation
import TributaryDSP

/// A line plot of spectra with a logarithmic y axis and a linear or logarithmic frequency axis,
/// written as a self-contained SVG that a browser shows.
struct SVGSpectrumPlot {
    struct Series {
        /// The legend entry (file, device, source, channel).
        var label: String
        /// The channel's unit ("" when it has none).
        var unit: String = ""
        var x: [Double]
        var y: [Double]
    }

    var title: String
    var xLabel: String
    var yLabel: String
    var series: [Series]
    /// A logarithmic x axis: points at x <= 0 (DC) are left out, ticks at 1, 2 and 5 per decade.
    var logFrequency = false

    static let palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]

    /// The SVG document.
    func render(width: Double = 900, height: Double = 520) -> String {
        // The legend column grows with the longest label, the plot keeps its width.
        let longest = self.series.map { $0.label.count }.max() ?? 0
        let right = Swift.max(170.0, 56 + 7 * Double(longest))
        let width = width + right - 170
        let left = 80.0, top = 40.0, bottom = 60.0
        let plotW = width - left - right, plotH = height - top - bottom
        // On a log x axis the x values are plotted as their log10; x <= 0 has no place on it.
        let series =
            logFrequency
            ? self.series.map { s in
                let kept = zip(s.x, s.y).filter { $0.0 > 0 && $0.0.isFinite }
                return Series(label: s.label, unit: s.unit, x: kept.map { log10($0.0) }, y: kept.map(\.1))
            }
            : self.series
        let xs = series.flatMap(\.x).filter(\.isFinite)
        let positives = series.flatMap(\.y).filter { $0 > 0 && $0.isFinite }
        var xMin = xs.min() ?? 0, xMax = Swift.max(xs.max() ?? 1, (xs.min() ?? 0) + 1e-12)
        if logFrequency {
            // From the decade below the lowest frequency to the highest (Nyquist), not the next decade.
            xMin = floor(xMin)
            xMax = Swift.max(xMax, xMin + log10(2))
        }
        var decadeLo = floor(log10(positives.min() ?? 1e-12))
        let decadeHi = ceil(log10(positives.max() ?? 1))
        // Keep at most 16 decades so that a floor of exact zeros (clamped) does not flatten the plot.
        decadeLo = Swift.max(decadeLo, decadeHi - 16)
        let yLo = decadeLo, yHi = decadeHi > decadeLo ? decadeHi : decadeLo + 1
        func px(_ x: Double) -> Double { left + (x - xMin) / (xMax - xMin) * plotW }
        func py(_ y: Double) -> Double {
            let l = y > 0 ? Swift.max(log10(y), yLo) : yLo
            return top + (yHi - l) / (yHi - yLo) * plotH
        }
        func f(_ v: Double) -> String { String(format: "%.2f", v) }
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(f(left + plotW / 2))" y="22" text-anchor="middle" font-size="15">\(Self.escape(title))</text>

            """
        // Grid and tick labels: one per decade on y, about eight on x.
        let decadeStep = Swift.max(1, Int((yHi - yLo) / 10))
        var d = yLo
        while d <= yHi {
            let y = top + (yHi - d) / (yHi - yLo) * plotH
            svg += "<line x1=\"\(f(left))\" y1=\"\(f(y))\" x2=\"\(f(left + plotW))\" y2=\"\(f(y))\" stroke=\"#ddd\"/>\n"
            svg += "<text x=\"\(f(left - 6))\" y=\"\(f(y + 4))\" text-anchor=\"end\">1e\(Int(d))</text>\n"
            d += Double(decadeStep)
        }
        if logFrequency {
            // 1, 2 and 5 in each decade; every decade labelled, the others when decades are few.
            let decades = Int(xMax - xMin)
            for decade in Int(xMin)..<Int(xMax) + 1 {
                for m in [1.0, 2, 5] {
                    let l = Double(decade) + log10(m)
                    guard l <= xMax + 1e-9 else { continue }
                    let x = px(l)
                    svg +=
                        "<line x1=\"\(f(x))\" y1=\"\(f(top))\" x2=\"\(f(x))\" y2=\"\(f(top + plotH))\" stroke=\"\(m == 1 ? "#ddd" : "#f3f3f3")\"/>\n"
                    if m == 1 || decades <= 4 {
                        svg +=
                            "<text x=\"\(f(x))\" y=\"\(f(top + plotH + 18))\" text-anchor=\"middle\">\(Self.tickLabel(m * pow(10, Double(decade))))</text>\n"
                    }
                }
            }
        } else {
            let xStep = Self.niceStep((xMax - xMin) / 8)
            var xt = ceil(xMin / xStep) * xStep
            while xt <= xMax + xStep * 1e-9 {
                let x = px(xt)
                svg += "<line x1=\"\(f(x))\" y1=\"\(f(top))\" x2=\"\(f(x))\" y2=\"\(f(top + plotH))\" stroke=\"#eee\"/>\n"
                svg += "<text x=\"\(f(x))\" y=\"\(f(top + plotH + 18))\" text-anchor=\"middle\">\(Self.tickLabel(xt))</text>\n"
                xt += xStep
            }
        }
        svg += "<rect x=\"\(f(left))\" y=\"\(f(top))\" width=\"\(f(plotW))\" height=\"\(f(plotH))\" fill=\"none\" stroke=\"black\"/>\n"
        svg += "<text x=\"\(f(left + plotW / 2))\" y=\"\(f(height - 15))\" text-anchor=\"middle\">\(Self.escape(xLabel))</text>\n"
        svg += "<text transform=\"translate(18 \(f(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\">\(Self.escape(yLabel))</text>\n"
        for (i, s) in series.enumerated() {
            let colour = Self.palette[i % Self.palette.count]
            var points: [String] = []
            // Thin long series to about two points per pixel column (min and max), keeping peaks visible.
            let columns = Int(plotW)
            if s.x.count > 4 * columns {
                var bucket = -1
                var lo = (0.0, Double.infinity), hi = (0.0, -Double.infinity)
                func flush() {
                    if bucket >= 0 {
                        for p in (lo.0 <= hi.0 ? [lo, hi] : [hi, lo]) { points.append("\(f(px(p.0))),\(f(py(p.1)))") }
                    }
                }
                for (x, y) in zip(s.x, s.y) {
                    let b = Int(px(x) - left)
                    if b != bucket {
                        flush()
                        bucket = b
                        lo = (x, .infinity); hi = (x, -.infinity)
                    }
                    let v = y > 0 ? y : pow(10, yLo)
                    if v < lo.1 { lo = (x, v) }
                    if v > hi.1 { hi = (x, v) }
                }
                flush()
            } else {
                for (x, y) in zip(s.x, s.y) { points.append("\(f(px(x))),\(f(py(y)))") }
            }
            svg += "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"1.2\" points=\"\(points.joined(separator: " "))\"/>\n"
            let ly = top + 10 + Double(i) * 18
            svg +=
                "<line x1=\"\(f(left + plotW + 12))\" y1=\"\(f(ly))\" x2=\"\(f(left + plotW + 36))\" y2=\"\(f(ly))\" stroke=\"\(colour)\" stroke-width=\"2\"/>\n"
            svg += "<text x=\"\(f(left + plotW + 42))\" y=\"\(f(ly + 4))\">\(Self.escape(s.label))</text>\n"
        }
        svg += "</svg>\n"
        return svg
    }

    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        let p = pow(10, floor(log10(raw)))
        for m in [1.0, 2, 5, 10] where m * p >= raw { return m * p }
        return 10 * p
    }

    static func tickLabel(_ v: Double) -> String {
        if abs(v) >= 1e6 || (abs(v) < 1e-3 && v != 0) { return String(format: "%.3g", v) }
        let s = String(format: "%.6g", v)
        return s
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(
            of: ">", with: "&gt;")
    }
}

extension SVGSpectrumPlot.Series {
    /// The Welch PSDs (or, without Welch, the averaged amplitude spectra) of a file's analysed sources,
    /// each curve named once: the file (when several are plotted, or when the source has no name of its
    /// own: an NPY file's source is named after the file), the device, the source id when the file has
    /// several sources, the channel index and the channel's name unless it is only a default one
    /// ("channel K", "chK").
    static func spectra(of sources: [SourceAnalysis], file: String, fileCount: Int) -> [Self] {
        channelLabels(of: sources, file: file, fileCount: fileCount).compactMap { source, r, label in
            let unit = source.units[UInt32(r.index)] ?? ""
            if let w = r.welch { return .init(label: label, unit: unit, x: w.frequencies, y: w.values) }
            if let sp = r.spectrum { return .init(label: label, unit: unit, x: sp.frequencies, y: sp.amplitudeRMS) }
            return nil
        }
    }

    /// Each analysed channel of a file's sources with its legend label (see `spectra`).
    static func channelLabels(of sources: [SourceAnalysis], file: String, fileCount: Int) -> [(SourceAnalysis, ChannelReport, String)] {
        let fileName = (file as NSString).lastPathComponent
        var labelled: [(SourceAnalysis, ChannelReport, String)] = []
        for source in sources {
            var prefix: [String] = []
            if fileCount > 1 || source.name.isEmpty || source.name == fileName { prefix.append(fileName) }
            if !source.name.isEmpty && source.name != fileName { prefix.append(source.name) }
            if sources.count > 1 { prefix.append("(source \(source.id))") }
            for r in source.channels {
                let index = UInt32(r.index)
                var label = prefix + ["ch \(r.index)"]
                if let name = source.channelNames[index], !name.isEmpty,
                    !["channel\(r.index)", "ch\(r.index)"].contains(name.lowercased().filter { $0 != " " })
                {
                    label.append(name)
                }
                labelled.append((source, r, label.joined(separator: " ")))
            }
        }
        return labelled
    }
}
