import Foundation
import TributaryAnalysis
import TributaryDSP
import TributaryFormats
import TributaryText
import TributaryWire

/// `tributary analyze`: statistics, Welch PSD, spectra and tone/distortion measurements of captures and array files.
enum AnalyzeCommand: TableCommand {
    static let name = "analyze"
    static let summary = "statistics, Welch PSD, spectra and THD/SINAD/ENOB of captures, NPY, frame, TDMS, XDF and HDF5 files"
    static let usage = """
        usage: tributary analyze FILE... [--rate HZ] [--stats] [--welch N [--overlap F] [--window NAME]
                                 [--detrend MODE] [--average mean|median] [--scaling density|spectrum]]
                                 [--spectrum N] [--spectrogram N] [--coherence REF | --transfer REF]
                                 [--measure LIST [--harmonics H] [--fold-aliases]
                                 [--measure-window NAME] [--full-scale V]] [--channels SPEC] [--source IDS]... [--int16-scale S]
                                 [--plot FILE.svg [--log-frequency]] [--json] [--jobs N]
                                 [--rigor estimate|measure|patient] [--wisdom FILE]

        Analyses NPY files shaped (channels, samples) or (samples,), dtype float64, float32 or int16
        (int16 counts are multiplied by --int16-scale, default 1; each NPY file is one source with id 1),
        captures (docs/CAPTURE.md), frame files (docs/PROTOCOL.md), and NI TDMS, LSL XDF and HDF5 files
        (every group, stream or numeric dataset a source; docs/FORMATS.md): every source in them, rates
        from their configurations; a damaged capture chunk is skipped with a warning naming its offset.
        WAV and CSV files are not read directly: 'tributary import' turns them into captures.
        Files are streamed: memory does not grow with their length (measurements use the first 2^20
        samples of a channel). A file that cannot be analysed is reported by name and the others go on;
        the exit status is 1 when any file failed.
        Without any of --stats/--welch/--spectrum/--spectrogram/--coherence/--transfer/--measure, --stats is implied.

        \(AnalyzeOptions.options.help())
        """

    static var options: OptionTable<AnalyzeOptions.Given> { AnalyzeOptions.options }

    static func parse(_ arguments: [String]) throws -> AnalyzeOptions { try AnalyzeOptions(arguments) }

    static func run(_ options: AnalyzeOptions) throws -> Int32 {
        let files = options.files, request = options.request
        if let wisdom = options.wisdom { FFTPlanCache.shared.loadWisdom(path: wisdom) }
        var analysis = AnalysisJob(
            request: request, filters: options.filters, requestedChannels: options.channels,
            requestedSources: options.sources, rate: options.rate, int16Scale: options.int16Scale)
        // The cores not taken by files analysed side by side decode each file's chunks ahead.
        let cores = ProcessInfo.processInfo.activeProcessorCount
        analysis.decodeThreads = max(1, cores / max(1, min(files.count, options.jobs ?? cores)))
        let job = analysis
        var plotSeries: [SVGSpectrumPlot.Series] = []
        var spectrogramPanels: [(label: String, unit: String, spectrogram: Spectrogram)] = []
        var crossCurves: [(label: String, report: CrossChannelReport)] = []
        var failures = 0
        let progress = ProgressBar(total: files.count, enabled: isatty(STDERR_FILENO) == 1 && files.count > 1)
        var outputWorks = true
        func output(_ text: String) { outputWorks = outputWorks && StandardOutput.line(text) }
        ParallelMap.run(
            files.count, jobs: options.jobs ?? cores, work: { job.run(files[$0]) },
            inOrder: { index, result in
                progress.advance()
                progress.clear()
                let file = files[index]
                switch result {
                case .failure(let error):
                    failures += 1
                    printError("tributary analyze: \(error)")
                    if options.json { output(AnalysisJSON.failure(file, error: "\(error)").text) }
                case .success(let (input, sources)):
                    for warning in input.warnings { printError("tributary analyze: warning: \(warning)") }
                    // A Welch segment longer than a channel is shortened to it, as scipy does: said as scipy warns.
                    for source in sources {
                        for r in source.channels {
                            guard let warning = AnalysisWarnings.welch(request, samples: r.samples) else { continue }
                            printError("tributary analyze: warning: \(file): source \(source.id) channel \(r.index): \(warning)")
                        }
                    }
                    if options.json {
                        output(AnalysisJSON.file(file, input: input, sources: sources, request: request).text)
                    } else {
                        output(AnalysisTable.render(file: file, input: input, sources: sources, request: request) + "\n")
                    }
                    if options.plotPath != nil {
                        // One kind of plot: the spectrograms, else the transfer functions or coherence, else the spectra.
                        let labelled = SVGSpectrumPlot.Series.channelLabels(of: sources, file: file, fileCount: files.count)
                        if request.spectrogram != nil {
                            for (source, r, label) in labelled {
                                if let s = r.spectrogram { spectrogramPanels.append((label, source.units[UInt32(r.index)] ?? "", s)) }
                            }
                        } else if request.crossChannel != nil {
                            for (_, r, label) in labelled { if let x = r.crossChannel { crossCurves.append((label, x)) } }
                        } else {
                            plotSeries += SVGSpectrumPlot.Series.spectra(of: sources, file: file, fileCount: files.count)
                        }
                    }
                }
                return outputWorks
            })
        progress.clear()
        guard outputWorks else { throw StandardOutputFailure() }
        if let plotPath = options.plotPath {
            if let c = request.spectrogram, !spectrogramPanels.isEmpty {
                try writeSVG(
                    SVGPanels.spectrograms(spectrogramPanels, title: "Spectrogram (nperseg \(c.segmentLength), \(c.window.rawValue))"),
                    to: plotPath)
            } else if let c = request.crossChannel, !crossCurves.isEmpty {
                try writeSVG(crossPlot(crossCurves, request: c), to: plotPath)
            } else if !plotSeries.isEmpty {
                try writePlot(plotSeries, request: request, logFrequency: options.logFrequency, to: plotPath)
            }
        }
        if let wisdom = options.wisdom {
            try FFTPlanCache.shared.saveWisdom(path: wisdom)
        }
        if failures > 0 { printError("tributary analyze: \(failures) of \(counted(files.count, "file")) failed") }
        return failures == 0 ? 0 : 1
    }

    /// The spectra of every file in one SVG: the y axis in the channels' unit (when they differ, each
    /// legend entry gives its own).
    static func writePlot(_ series: [SVGSpectrumPlot.Series], request: AnalysisRequest, logFrequency: Bool, to path: String) throws {
        var series = series
        let isWelch = request.welch != nil
        let density = request.welch?.scaling != .spectrum
        let units = Set(series.map(\.unit))
        let unit = units.count == 1 && !units.first!.isEmpty ? units.first! : "unit"
        if units.count > 1 {
            for i in series.indices { series[i].label += " [\(series[i].unit.isEmpty ? "no unit" : series[i].unit)]" }
        }
        try writeSVG(
            SVGSpectrumPlot(
                title: isWelch
                    ? "Welch \(density ? "PSD" : "power spectrum") (nperseg \(request.welch!.segmentLength), \(request.welch!.window.rawValue))"
                    : "Amplitude spectrum (N \(request.spectrum!.length), \(request.spectrum!.window.rawValue), RMS average)",
                xLabel: "Frequency (Hz)" + (logFrequency ? ", log scale" : ""),
                yLabel: isWelch ? (density ? "PSD (\(unit)²/Hz)" : "Power (\(unit)²)") : "Amplitude (\(unit) RMS)",
                series: series, logFrequency: logFrequency
            ).render(), to: path)
    }

    /// Bode plots (|H1| and |H2| in dB, the phase in degrees, which H1 and H2 share) and the coherence
    /// of each channel against the reference; the coherence alone without --transfer.
    static func crossPlot(_ curves: [(label: String, report: CrossChannelReport)], request: CrossChannelRequest) -> String {
        let coherence = curves.map { SVGSpectrumPlot.Series(label: $0.label, x: $0.report.h1.frequencies, y: $0.report.h1.coherence) }
        let what = "nperseg \(request.configuration.segmentLength), \(request.configuration.window.rawValue)"
        guard request.transfer else {
            return SVGPanels.lines(
                [("Coherence", coherence, 0...1)], title: "Coherence with ch \(request.reference) (\(what))",
                xLabel: "Frequency (Hz)")
        }
        var magnitude: [SVGSpectrumPlot.Series] = []
        for c in curves {
            magnitude.append(.init(label: c.label + " H1", x: c.report.h1.frequencies, y: c.report.h1.magnitudeDB))
            magnitude.append(.init(label: c.label + " H2", x: c.report.h2.frequencies, y: c.report.h2.magnitudeDB))
        }
        var phase: [SVGSpectrumPlot.Series] = []
        for c in curves {
            phase.append(.init(label: c.label + " H1", x: c.report.h1.frequencies, y: c.report.h1.phase.map { $0 * 180 / Double.pi }))
            phase.append(.init(label: c.label + " H2", x: c.report.h2.frequencies, y: c.report.h2.phase.map { $0 * 180 / Double.pi }))
        }
        let coherencePairs = curves.flatMap { c in
            [
                SVGSpectrumPlot.Series(label: c.label + " H1", x: c.report.h1.frequencies, y: c.report.h1.coherence),
                SVGSpectrumPlot.Series(label: c.label + " H2", x: c.report.h1.frequencies, y: c.report.h1.coherence),
            ]
        }
        return SVGPanels.lines(
            [("Magnitude (dB)", magnitude, nil), ("Phase (degrees)", phase, -180...180), ("Coherence", coherencePairs, 0...1)],
            title: "Transfer functions from ch \(request.reference) (\(what))", xLabel: "Frequency (Hz)")
    }

    static func writeSVG(_ text: String, to path: String) throws {
        do {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw CommandError("cannot write plot \(path): \((error as NSError).localizedDescription)")
        }
        printError("plot written to \(path)")
    }

    static var windowNames: String { WindowKind.allCases.map(\.rawValue).joined(separator: ", ") }
}
