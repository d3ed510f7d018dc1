import Foundation
import TributaryDSP
import TributaryFormats

/// The JSON form of `tributary analyze`'s results (documented in docs/ANALYSIS.md).
enum AnalysisJSON {
    static func file(_ path: String, name: String, array: NPYArray, sampleRate: Double, request: AnalysisRequest, reports: [ChannelReport]) -> JSONValue {
        .object([
            ("file", .string(path)),
            ("sources", .array([.object([
                ("id", .int(1)),
                ("name", .string(name)),
                ("sample_rate", .number(sampleRate)),
                ("dtype", .string(array.samples.dtype.rawValue)),
                ("channel_count", .int(array.channels)),
                ("channels", .array(reports.map { channel($0, request) })),
            ])])),
        ])
    }

    static func channel(_ r: ChannelReport, _ request: AnalysisRequest) -> JSONValue {
        var members: [(String, JSONValue)] = [("index", .int(r.index)), ("samples", .int(r.samples))]
        if let s = r.statistics {
            members.append(("stats", .object([
                ("count", .int(s.count)), ("min", .number(s.min)), ("max", .number(s.max)), ("mean", .number(s.mean)),
                ("std", .number(s.standardDeviation)), ("std_sample", .number(s.sampleStandardDeviation)),
                ("variance", .number(s.variance)), ("rms", .number(s.rms)),
                ("positive_peak", .number(s.positivePeak)), ("negative_peak", .number(s.negativePeak)),
                ("peak_to_peak", .number(s.peakToPeak)),
            ])))
        }
        if let w = r.welch, let c = request.welch {
            members.append(("welch", .object([
                ("frequencies", .numbers(w.frequencies)), ("psd", .numbers(w.values)), ("segments", .int(w.segments)),
                ("nperseg", .int(Swift.min(c.segmentLength, r.samples))), ("window", .string(c.window.rawValue)),
                ("detrend", .string(c.detrend.rawValue)), ("average", .string(c.average.rawValue)),
                ("scaling", .string(c.scaling.rawValue)),
            ])))
        }
        if let s = r.spectrum {
            members.append(("spectrum", .object([
                ("frequencies", .numbers(s.frequencies)), ("amplitude_rms", .numbers(s.amplitudeRMS)),
                ("averages", .int(s.averages)), ("window", .string(s.window.rawValue)),
            ])))
        }
        let m = request.measurements
        if let t = r.tone {
            members.append(("tone", .object([("frequency", .number(t.frequency)), ("amplitude", .number(t.amplitude)), ("phase_deg", .number(t.phaseDegrees))])))
        }
        if let d = r.distortion {
            if m.contains(.thd) {
                members.append(("thd", .number(d.thd)))
                members.append(("harmonics", .array(d.harmonics.map {
                    .object([("order", .int($0.order)), ("frequency", .number($0.frequency)), ("amplitude", .number($0.amplitude))])
                })))
            }
            if m.contains(.thdn) { members.append(("thd_n_db", .number(d.thdPlusNoiseDB))) }
            if m.contains(.sinad) { members.append(("sinad_db", .number(d.sinadDB))) }
            if m.contains(.snr) { members.append(("snr_db", .number(d.snrDB))) }
            if m.contains(.enob) { members.append(("enob", .number(d.enob))) }
            if m.contains(.sfdr) { members.append(("sfdr_db", .number(d.sfdrDB))) }
        }
        if let e = r.measurementError { members.append(("measurement_error", .string(e))) }
        return .object(members)
    }
}

/// The human-readable table of `tributary analyze`.
enum AnalysisTable {
    static func g(_ v: Double) -> String { v.isFinite ? String(format: "%.6g", v) : (v.isNaN ? "nan" : (v > 0 ? "inf" : "-inf")) }

    static func render(file: String, array: NPYArray, sampleRate: Double, request: AnalysisRequest, reports: [ChannelReport]) -> String {
        var lines = ["\(file): \(array.channels) channel(s) x \(array.samplesPerChannel) samples, \(array.samples.dtype.rawValue), \(g(sampleRate)) Hz"]
        if request.statistics {
            let header = ["ch", "count", "min", "max", "mean", "std", "std(n-1)", "rms", "p-p"]
            var rows = [header]
            for r in reports {
                guard let s = r.statistics else { continue }
                rows.append([String(r.index), String(s.count), g(s.min), g(s.max), g(s.mean), g(s.standardDeviation),
                             g(s.sampleStandardDeviation), g(s.rms), g(s.peakToPeak)])
            }
            lines += table(rows)
        }
        if !request.measurements.isEmpty {
            let m = request.measurements
            var header = ["ch"]
            if m.contains(.tone) { header += ["freq Hz", "amplitude", "phase deg"] }
            let columns: [(AnalysisMeasurement, String, (DistortionMeasurement) -> Double)] = [
                (.thd, "THD", { $0.thd }), (.thdn, "THD+N dB", { $0.thdPlusNoiseDB }), (.sinad, "SINAD dB", { $0.sinadDB }),
                (.snr, "SNR dB", { $0.snrDB }), (.enob, "ENOB", { $0.enob }), (.sfdr, "SFDR dB", { $0.sfdrDB }),
            ]
            for c in columns where m.contains(c.0) { header.append(c.1) }
            var rows = [header]
            for r in reports {
                var row = [String(r.index)]
                if let e = r.measurementError {
                    row.append(e)
                    rows.append(row)
                    continue
                }
                if m.contains(.tone), let t = r.tone { row += [g(t.frequency), g(t.amplitude), g(t.phaseDegrees)] }
                if let d = r.distortion { for c in columns where m.contains(c.0) { row.append(g(c.2(d))) } }
                rows.append(row)
            }
            lines.append("")
            lines += table(rows)
        }
        for r in reports {
            if let w = r.welch, let c = request.welch {
                let peak = w.values.indices.dropFirst().max { w.values[$0] < w.values[$1] } ?? 0
                let sorted = w.values.sorted()
                lines.append("ch \(r.index) Welch (nperseg \(Swift.min(c.segmentLength, r.samples)), \(c.window.rawValue), \(w.segments) segments, \(c.scaling.rawValue)): "
                             + "peak \(g(w.values[peak])) at \(g(w.frequencies[peak])) Hz, median \(g(sorted[sorted.count / 2])), \(w.values.count) bins (--json for values)")
            }
            if let s = r.spectrum {
                let peak = s.amplitudeRMS.indices.dropFirst().max { s.amplitudeRMS[$0] < s.amplitudeRMS[$1] } ?? 0
                lines.append("ch \(r.index) spectrum (N \(s.frequencies.count * 2 - 2), \(s.window.rawValue), \(s.averages) averages): "
                             + "largest \(g(s.amplitudeRMS[peak])) RMS at \(g(s.frequencies[peak])) Hz")
            }
        }
        return lines.joined(separator: "\n")
    }

    static func table(_ rows: [[String]]) -> [String] {
        let widths = (0..<(rows.map(\.count).max() ?? 0)).map { c in rows.map { c < $0.count ? $0[c].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { c, cell in
                String(repeating: " ", count: widths[c] - cell.count) + cell
            }.joined(separator: "  ")
        }
    }
}
