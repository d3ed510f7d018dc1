import Foundation
import TributaryDSP
import TributaryFormats
import TributaryText

/// How the document carries the Welch and spectrum arrays.
package enum AnalysisArrayEncoding: String, Sendable {
    /// JSON arrays of numbers (non-finite values as null), as `tributary analyze --json` prints them.
    case json
    /// One string per array: base64 of the little-endian float64 values (`JSON.float64Base64`); the
    /// document then says `"array_encoding": "float64le-base64"`.
    case base64
    /// Each array as `{"offset": bytes, "count": values}` into a block of little-endian float64
    /// values that travels beside the text (`ArrayBlock`); the document then says
    /// `"array_encoding": "float64le-block"` and `"array_block_bytes"`. No text encoding or parsing
    /// of the values at all (the C interface puts the block after the text, docs/C_API.md).
    case block
}

/// The values of a document's arrays under `AnalysisArrayEncoding.block`, in the order written.
package final class ArrayBlock {
    package private(set) var values: [Double] = []
    package init() {}
    /// Appends `v` and returns its reference.
    func add(_ v: [Double]) -> JSON {
        let offset = values.count * 8
        values.append(contentsOf: v)
        return .object([("offset", .int(offset)), ("count", .int(v.count))])
    }
}

/// What an analysis did other than asked, said as scipy says it.
package enum AnalysisWarnings {
    /// The start of the warning for a Welch segment longer than the input (scipy's words).
    package static let welchPrefix = "nperseg = "

    /// scipy's warning when `nperseg` is longer than the input: the segment is shortened to the
    /// input ("nperseg = 1024 is greater than input length = 500, using nperseg = 500"); nil when
    /// there is no Welch estimate or its segment fits.
    package static func welch(_ request: AnalysisRequest, samples: Int) -> String? {
        guard let w = request.welch, w.segmentLength > samples, samples > 0 else { return nil }
        return "\(welchPrefix)\(w.segmentLength) is greater than input length = \(samples), using nperseg = \(samples)"
    }
}

/// The JSON form of `tributary analyze`'s results (documented in docs/ANALYSIS.md).
package enum AnalysisJSON {
    /// - Parameter block: where the arrays go under `.block` (required then).
    package static func file(
        _ path: String, input: InputDescription, sources: [SourceAnalysis], request: AnalysisRequest,
        arrays: AnalysisArrayEncoding = .json, block: ArrayBlock? = nil
    ) -> JSON {
        precondition(arrays != .block || block != nil, "the block encoding needs a block")
        var members: [(String, JSON)] = [("file", .string(path))]
        if arrays == .base64 { members.append(("array_encoding", .string("float64le-base64"))) }
        if arrays == .block { members.append(("array_encoding", .string("float64le-block"))) }
        let channels = sources.map { source in
            source.channels.map { channel($0, request, unit: source.units[UInt32($0.index)], arrays: arrays, block: block) }
        }
        if let block, arrays == .block { members.append(("array_block_bytes", .int(block.values.count * 8))) }
        return .object(
            members + [
                ("warnings", .strings(input.warnings)),
                (
                    "sources",
                    .array(
                        zip(sources, channels).map { source, channels in
                            .object([
                                ("id", .int(Int(source.id))),
                                ("name", .string(source.name)),
                                ("sample_rate", .double(source.sampleRate)),
                                ("dtype", input.dtypes[source.id].map { .string($0) } ?? .null),
                                ("channel_count", .int(input.channelCounts[source.id] ?? source.channels.count)),
                                ("discontinuities", .int(source.discontinuities)),
                                ("channels", .array(channels)),
                            ])
                        })
                ),
            ])
    }

    /// The line of a file that could not be analysed.
    package static func failure(_ path: String, error: String) -> JSON {
        .object([("file", .string(path)), ("error", .string(error))])
    }

    package static func channel(
        _ r: ChannelReport, _ request: AnalysisRequest, unit: String?,
        arrays: AnalysisArrayEncoding = .json, block: ArrayBlock? = nil
    ) -> JSON {
        func values(_ v: [Double]) -> JSON {
            switch arrays {
            case .json: .doubles(v)
            case .base64: .float64Base64(v)
            case .block: block!.add(v)
            }
        }
        var members: [(String, JSON)] = [("index", .int(r.index)), ("samples", .int(r.samples))]
        if let unit, !unit.isEmpty { members.append(("unit", .string(unit))) }
        if let s = r.statistics {
            members.append(
                (
                    "stats",
                    .object([
                        ("count", .int(s.count)), ("min", .double(s.min)), ("max", .double(s.max)), ("mean", .double(s.mean)),
                        ("std", .double(s.standardDeviation)), ("std_sample", .double(s.sampleStandardDeviation)),
                        ("variance", .double(s.variance)), ("rms", .double(s.rms)),
                        ("positive_peak", .double(s.positivePeak)), ("negative_peak", .double(s.negativePeak)),
                        ("peak_to_peak", .double(s.peakToPeak)),
                    ])
                ))
        }
        if let w = r.welch, let c = request.welch {
            members.append(
                (
                    "welch",
                    .object([
                        ("frequencies", values(w.frequencies)), ("psd", values(w.values)), ("segments", .int(w.segments)),
                        ("nperseg", .int(Swift.min(c.segmentLength, r.samples))), ("window", .string(c.window.rawValue)),
                        ("detrend", .string(c.detrend.rawValue)), ("average", .string(c.average.rawValue)),
                        ("scaling", .string(c.scaling.rawValue)),
                    ])
                ))
        }
        if let s = r.spectrum {
            members.append(
                (
                    "spectrum",
                    .object([
                        ("frequencies", values(s.frequencies)), ("amplitude_rms", values(s.amplitudeRMS)),
                        ("averages", .int(s.averages)), ("window", .string(s.window.rawValue)),
                    ])
                ))
        }
        members += spectralMembers(r, request, values)
        let m = request.measurements
        if let t = r.tone {
            members.append(
                (
                    "tone",
                    .object([
                        ("frequency", .double(t.frequency)), ("amplitude", .double(t.amplitude)), ("phase_deg", .double(t.phaseDegrees)),
                    ])
                ))
        }
        if let d = r.distortion { members += distortionMembers(d, fullScale: r.fullScale, m) }
        let warnings = (AnalysisWarnings.welch(request, samples: r.samples).map { [$0] } ?? []) + r.measurementWarnings
        if !warnings.isEmpty { members.append(("warnings", .strings(warnings))) }
        if let e = r.measurementError { members.append(("measurement_error", .string(e))) }
        return .object(members)
    }

    /// The spectrogram, coherence and transfer members of a channel's object.
    private static func spectralMembers(
        _ r: ChannelReport, _ request: AnalysisRequest, _ values: ([Double]) -> JSON
    ) -> [(String, JSON)] {
        var members: [(String, JSON)] = []
        if let s = r.spectrogram, let c = request.spectrogram {
            let nperseg = Swift.min(c.segmentLength, r.samples)
            members.append(
                (
                    "spectrogram",
                    .object([
                        ("nperseg", .int(nperseg)), ("noverlap", .int(c.overlap ?? nperseg / 8)), ("window", .string(c.window.rawValue)),
                        ("detrend", .string(c.detrend.rawValue)), ("scaling", .string(c.scaling.rawValue)),
                        ("frequencies", values(s.frequencies)), ("times", values(s.times)),
                        ("psd", .array(s.values.map { values($0) })),
                    ])
                ))
        }
        if let x = r.crossChannel, let c = request.crossChannel {
            var cross: [(String, JSON)] = [
                ("reference", .int(x.reference)), ("nperseg", .int(x.segmentLength)), ("window", .string(c.configuration.window.rawValue)),
                ("segments", .int(x.h1.segments)), ("frequencies", values(x.h1.frequencies)), ("coherence", values(x.h1.coherence)),
            ]
            if c.transfer {
                for (name, h) in [("h1", x.h1), ("h2", x.h2)] {
                    cross.append(
                        (
                            name,
                            .object([
                                ("real", values(h.real)), ("imag", values(h.imaginary)),
                                ("magnitude_db", values(h.magnitudeDB)), ("phase_rad", values(h.phase)),
                            ])
                        ))
                }
            }
            members.append((c.transfer ? "transfer" : "coherence", .object(cross)))
        }
        return members
    }

    /// The distortion members of a channel's object, as the request's measurements ask.
    private static func distortionMembers(
        _ d: DistortionMeasurement, fullScale: FullScaleReadings?, _ m: Set<AnalysisMeasurement>
    ) -> [(String, JSON)] {
        var members: [(String, JSON)] = []
        if m.contains(.thd) {
            members.append(("thd", .double(d.thd)))
            members.append(("thd_db", .double(d.thdDB)))
            members.append(("thd_percent", .double(d.thdPercent)))
            members.append(
                (
                    "harmonics",
                    .array(
                        d.harmonics.map {
                            .object([
                                ("order", .int($0.order)), ("frequency", .double($0.frequency)), ("amplitude", .double($0.amplitude)),
                            ])
                        })
                ))
        }
        if m.contains(.thdn) { members.append(("thd_n_db", .double(d.thdPlusNoiseDB))) }
        if m.contains(.sinad) { members.append(("sinad_db", .double(d.sinadDB))) }
        if m.contains(.snr) { members.append(("snr_db", .double(d.snrDB))) }
        if m.contains(.enob) { members.append(("enob", .double(d.enob))) }
        if m.contains(.sfdr) { members.append(("sfdr_db", .double(d.sfdrDB))) }
        if let fs = fullScale {
            members.append(("full_scale", .double(fs.fullScale)))
            members.append(("signal_dbfs", .double(fs.signalDBFS)))
            if m.contains(.sinad) { members.append(("sinad_dbfs", .double(fs.sinadDBFS))) }
            if m.contains(.snr) { members.append(("snr_dbfs", .double(fs.snrDBFS))) }
            if m.contains(.enob) { members.append(("enob_fs", .double(fs.enobFullScale))) }
            if m.contains(.sfdr) { members.append(("sfdr_dbfs", .double(fs.sfdrDBFS))) }
        }
        return members
    }
}

/// The human-readable table of `tributary analyze`.
package enum AnalysisTable {
    package static func g(_ v: Double) -> String { v.isFinite ? String(format: "%.6g", v) : (v.isNaN ? "nan" : (v > 0 ? "inf" : "-inf")) }

    package static func render(file: String, input: InputDescription, sources: [SourceAnalysis], request: AnalysisRequest) -> String {
        var lines: [String] = []
        for source in sources {
            if !lines.isEmpty { lines.append("") }
            let samples = source.channels.map(\.samples).max() ?? 0
            let count = input.channelCounts[source.id] ?? source.channels.count
            lines.append(
                "\(file.terminalSafe): source \(source.id)" + (source.name.isEmpty ? "" : " '\(source.name.terminalSafe)'")
                    + ": \(count) \(count == 1 ? "channel" : "channels") x \(samples) \(samples == 1 ? "sample" : "samples")"
                    + (input.dtypes[source.id].map { ", \($0)" } ?? "")
                    + ", \(g(source.sampleRate)) Hz"
                    + (source.discontinuities > 0
                        ? ", \(source.discontinuities) \(source.discontinuities == 1 ? "discontinuity" : "discontinuities")" : ""))
            lines += render(source.channels, units: source.units, request: request)
        }
        return lines.joined(separator: "\n")
    }

    /// - Parameter units: each channel's unit (from its configuration); a channel without one is "-".
    package static func render(_ reports: [ChannelReport], units: [UInt32: String] = [:], request: AnalysisRequest) -> [String] {
        var lines: [String] = []
        func unit(_ r: ChannelReport) -> String {
            let u = units[UInt32(r.index)] ?? ""
            return u.isEmpty ? "-" : u.terminalSafe
        }
        if request.statistics {
            let header = ["ch", "unit", "count", "min", "max", "mean", "std", "std(n-1)", "rms", "p-p"]
            var rows = [header]
            for r in reports {
                guard let s = r.statistics else { continue }
                rows.append([
                    String(r.index), unit(r), String(s.count), g(s.min), g(s.max), g(s.mean), g(s.standardDeviation),
                    g(s.sampleStandardDeviation), g(s.rms), g(s.peakToPeak),
                ])
            }
            lines += table(rows)
        }
        if !request.measurements.isEmpty {
            let m = request.measurements
            var header = ["ch"]
            if m.contains(.tone) { header += ["freq Hz", "amplitude", "phase deg"] }
            let columns: [(AnalysisMeasurement, String, (DistortionMeasurement) -> Double)] = [
                (.thd, "THD", { $0.thd }), (.thd, "THD dB", { $0.thdDB }), (.thd, "THD %", { $0.thdPercent }),
                (.thdn, "THD+N dB", { $0.thdPlusNoiseDB }),
                (.sinad, "SINAD dB", { $0.sinadDB }), (.snr, "SNR dB", { $0.snrDB }), (.enob, "ENOB", { $0.enob }),
                (.sfdr, "SFDR dB", { $0.sfdrDB }),
            ]
            // Referred to full scale, when the channels' ranges (or --full-scale) give it.
            let fullScaleColumns: [(AnalysisMeasurement, String, (FullScaleReadings) -> Double)] = [
                (.sinad, "SINAD dBFS", { $0.sinadDBFS }), (.snr, "SNR dBFS", { $0.snrDBFS }),
                (.enob, "ENOB fs", { $0.enobFullScale }), (.sfdr, "SFDR dBFS", { $0.sfdrDBFS }),
            ]
            let anyFullScale = reports.contains { $0.fullScale != nil }
            for c in columns where m.contains(c.0) { header.append(c.1) }
            if anyFullScale { for c in fullScaleColumns where m.contains(c.0) { header.append(c.1) } }
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
                if anyFullScale {
                    for c in fullScaleColumns where m.contains(c.0) { row.append(r.fullScale.map { g(c.2($0)) } ?? "-") }
                }
                rows.append(row)
            }
            lines.append("")
            lines += table(rows)
            if m.contains(.tone) { lines.append("(amplitude: peak, in the channel's unit; phase in degrees)") }
            for r in reports {
                for warning in r.measurementWarnings { lines.append("warning: channel \(r.index): \(warning.terminalSafe)") }
            }
        }
        for r in reports {
            if let w = r.welch, let c = request.welch {
                let peak = w.values.indices.dropFirst().max { w.values[$0] < w.values[$1] } ?? 0
                let sorted = w.values.sorted()
                let u = unit(r) == "-" ? "U" : unit(r)
                let psdUnit = c.scaling == .density ? "\(u)²/Hz" : "\(u)²"
                lines.append(
                    "ch \(r.index) Welch (nperseg \(Swift.min(c.segmentLength, r.samples)), \(c.window.rawValue), \(counted(w.segments, "segment")), \(c.scaling.rawValue)): "
                        + "peak \(g(w.values[peak])) \(psdUnit) at \(g(w.frequencies[peak])) Hz, median \(g(sorted[sorted.count / 2])) \(psdUnit), "
                        + "\(counted(w.values.count, "bin")) (--json for values)")
            }
            if let s = r.spectrogram, let c = request.spectrogram {
                var best = (0, 0)
                for (t, row) in s.values.enumerated() {
                    for k in row.indices where row[k] > s.values[best.0][best.1] { best = (t, k) }
                }
                let u = unit(r) == "-" ? "U" : unit(r)
                lines.append(
                    "ch \(r.index) spectrogram (nperseg \(Swift.min(c.segmentLength, r.samples)), \(c.window.rawValue), "
                        + "\(counted(s.times.count, "segment")) x \(counted(s.frequencies.count, "bin"))): "
                        + "peak \(g(s.values[best.0][best.1])) \(u)²/Hz at \(g(s.frequencies[best.1])) Hz, \(g(s.times[best.0])) s (--json for values)"
                )
            }
            if let x = r.crossChannel, let c = request.crossChannel {
                let coherence = x.h1.coherence.filter(\.isFinite)
                let mean = coherence.isEmpty ? Double.nan : coherence.reduce(0, +) / Double(coherence.count)
                var line =
                    "ch \(r.index) vs ch \(x.reference) (nperseg \(x.segmentLength), \(counted(x.h1.segments, "segment"))): "
                    + "mean coherence \(g(mean))"
                if c.transfer, let k = x.h1.coherence.indices.max(by: { !(x.h1.coherence[$0] >= x.h1.coherence[$1]) }) {
                    line +=
                        ", at the most coherent \(g(x.h1.frequencies[k])) Hz |H1| \(g(x.h1.magnitudeDB[k])) dB, "
                        + "phase \(g(x.h1.phase[k] * 180 / Double.pi)) deg"
                }
                lines.append(line + " (--json for values)")
            }
            if let s = r.spectrum {
                let peak = s.amplitudeRMS.indices.dropFirst().max { s.amplitudeRMS[$0] < s.amplitudeRMS[$1] } ?? 0
                let u = unit(r) == "-" ? "" : " \(unit(r))"
                lines.append(
                    "ch \(r.index) spectrum (N \(s.frequencies.count * 2 - 2), \(s.window.rawValue), \(counted(s.averages, "average"))): "
                        + "largest \(g(s.amplitudeRMS[peak]))\(u) RMS at \(g(s.frequencies[peak])) Hz")
            }
        }
        return lines
    }

    package static func table(_ rows: [[String]]) -> [String] {
        let widths = (0..<(rows.map(\.count).max() ?? 0)).map { c in rows.map { c < $0.count ? $0[c].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { c, cell in
                String(repeating: " ", count: widths[c] - cell.count) + cell
            }.joined(separator: "  ")
        }
    }
}
