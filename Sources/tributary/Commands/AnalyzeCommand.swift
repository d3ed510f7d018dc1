import Foundation
import TributaryAnalysis
import TributaryDSP
import TributaryFormats
import TributaryWire
import TributaryText

/// `tributary analyze`: statistics, Welch PSD, spectra and tone/distortion measurements of captures and array files.
enum AnalyzeCommand: Command {
    static let name = "analyze"
    static let summary = "statistics, Welch PSD, spectra and THD/SINAD/ENOB of captures, NPY, frame, TDMS, XDF and HDF5 files"
    static let usage = """
    usage: tributary analyze FILE... [--rate HZ] [--stats] [--welch N [--overlap F] [--window NAME]
                             [--detrend MODE] [--average mean|median] [--scaling density|spectrum]]
                             [--spectrum N] [--measure LIST [--harmonics H] [--fold-aliases]
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
    Without any of --stats/--welch/--spectrum/--measure, --stats is implied.

      --rate HZ            sampling rate (NPY default 1, as scipy's fs; overrides configured rates)
      --stats              count, min, max, mean, std (population), sample std, RMS, peaks, peak-to-peak
      --welch N            Welch PSD with segments of N samples, N <= 4194304 (scipy.signal.welch
                           defaults otherwise)
        --overlap F        overlap as a fraction of N in [0, 1) (default 0.5; noverlap = floor(F*N))
        --window NAME      rectangular, hann (default), hamming, blackman, exact-blackman,
                           blackman-harris, blackman-harris-7, flattop (also used by --spectrum)
        --detrend MODE     none, constant (default), linear
        --average MODE     mean (default) or median
        --scaling MODE     density (unit^2/Hz, default) or spectrum (unit^2)
      --spectrum N         RMS-averaged amplitude spectrum (RMS units) over the complete N-sample blocks,
                           N <= 4194304
      --measure LIST       comma list of tone,thd,thdn,sinad,snr,enob,sfdr (or 'all')
        --harmonics H      highest harmonic of THD (default 5)
        --fold-aliases     fold harmonics above Nyquist back into the band instead of ignoring them
        --measure-window W window of the measurements (default blackman-harris-7)
        --full-scale V     peak amplitude of a full-scale sine for ENOB_fs and the dBFS readings
                           (default: half of each channel's configured range, e.g. 10 for ±10 V)
      --channels SPEC      channels to analyse, e.g. 0-3 or 0,2,5 (default all)
      --source IDS         sources to analyse, e.g. 2 or 1,3; repeatable (default all; results are
                           listed by source id)
      --plot FILE.svg      plot the Welch PSD (or the spectrum) of every channel, log y axis, as SVG
                           (the name must end in .svg): the y axis in the channels' unit (V²/Hz...),
                           each curve named by file, device, source id, channel index and name
        --log-frequency    a logarithmic frequency axis (DC is left out)
      --json               one JSON object per input file, one per line; NaN/inf are written as null
      --jobs N             analyse N files at a time (default: the number of cores); a progress bar
                           is shown on stderr when it is a terminal
      --rigor R            FFTW planning rigor (default estimate)
      --wisdom FILE        load FFTW wisdom from FILE before and save it after
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let rate = try arguments.number("--rate", "a sampling rate in Hz", in: 0...1e12, above: true)
        var wantStats = arguments.flag("--stats")
        let welchLength = try arguments.integer("--welch", "a segment length", in: 1...SpectralLimits.maxTransformLength)
        let overlap = try arguments.option("--overlap", "a fraction in [0, 1)") { Double($0).flatMap { $0 >= 0 && $0 < 1 ? $0 : nil } }
        let window = try arguments.option("--window", "a window name (\(windowNames))") { WindowKind(name: $0) }
        let detrend = try arguments.option("--detrend", "none, constant or linear") { Detrend(rawValue: $0) }
        let average = try arguments.option("--average", "mean or median") { WelchAverage(rawValue: $0) }
        let scaling = try arguments.option("--scaling", "density or spectrum") { SpectralScaling(rawValue: $0) }
        let spectrumLength = try arguments.integer("--spectrum", "a block length", in: 1...SpectralLimits.maxTransformLength)
        let measureText = try arguments.option("--measure")
        let harmonics = try arguments.integer("--harmonics", "a harmonic order", in: 2...1000)
        let fold = arguments.flag("--fold-aliases")
        let measureWindow = try arguments.option("--measure-window", "a window name (\(windowNames))") { WindowKind(name: $0) }
        let fullScale = try arguments.number("--full-scale", "a peak amplitude", in: 0...Double.greatestFiniteMagnitude, above: true)
        let channelText = try arguments.option("--channels")
        let sourceTexts = try arguments.options("--source")
        let int16Scale = try arguments.number("--int16-scale", "a scale", in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude) ?? 1
        let plotPath = try arguments.option("--plot")
        let logFrequency = arguments.flag("--log-frequency")
        let json = arguments.flag("--json")
        let rigor = try arguments.option("--rigor", "estimate, measure or patient") { FFTRigor(name: $0) } ?? .estimate
        let wisdom = try arguments.option("--wisdom")
        let jobs = try arguments.integer("--jobs", "a number of files at a time", in: 1...256)
        let files = try arguments.finish()
        guard !files.isEmpty else { throw UsageError("no input files") }

        if welchLength == nil {
            if overlap != nil { throw UsageError("--overlap needs --welch") }
            if detrend != nil || average != nil || scaling != nil { throw UsageError("--detrend, --average and --scaling need --welch") }
        }
        if measureText == nil, harmonics != nil || fold || measureWindow != nil || fullScale != nil {
            throw UsageError("--harmonics, --fold-aliases, --measure-window and --full-scale need --measure")
        }
        var measurements = Set<AnalysisMeasurement>()
        if let measureText {
            for item in measureText.split(separator: ",", omittingEmptySubsequences: false) {
                if item == "all" { measurements.formUnion(AnalysisMeasurement.allCases); continue }
                guard let m = AnalysisMeasurement(rawValue: String(item)) else {
                    throw UsageError("--measure: '\(item)' is not one of tone, thd, thdn, sinad, snr, enob, sfdr, all")
                }
                measurements.insert(m)
            }
        }
        let channelSpec: ChannelSpec?
        do {
            channelSpec = try channelText.map { try ChannelSpec(parsing: $0) }
        } catch let error as ChannelSpecError {
            throw UsageError("--channels: \(error)")
        }
        if !wantStats && welchLength == nil && spectrumLength == nil && measurements.isEmpty { wantStats = true }
        if plotPath != nil && welchLength == nil && spectrumLength == nil { throw UsageError("--plot needs --welch or --spectrum") }
        if logFrequency && plotPath == nil { throw UsageError("--log-frequency needs --plot") }
        if let plotPath, !plotPath.lowercased().hasSuffix(".svg") {
            throw UsageError("option --plot: '\(plotPath)': the plot is written as SVG; give a file name ending in .svg")
        }
        // The plot and the saved wisdom never replace an input (a capture named *.svg, a link to one).
        for (option, output) in [("--plot", plotPath), ("--wisdom", wisdom)] {
            guard let output else { continue }
            var target = stat(), source = stat()
            guard stat(output, &target) == 0 else { continue }
            for file in files where stat(file, &source) == 0 && source.st_dev == target.st_dev && source.st_ino == target.st_ino {
                throw UsageError("option \(option): '\(output)' is the input '\(file)'; writing it would destroy the input")
            }
        }
        var requestedSources: Set<UInt32>?
        for text in sourceTexts {
            let ids = text.split(separator: ",", omittingEmptySubsequences: false).map { UInt32($0.trimmingCharacters(in: .whitespaces)) }
            guard ids.allSatisfy({ $0 != nil && $0! > 0 }) else {
                throw UsageError("option --source: '\(text)' is not a source id in 1...\(UInt32.max) or a list of them, e.g. 1,3")
            }
            requestedSources = (requestedSources ?? []).union(ids.map { $0! })
        }

        var request = AnalysisRequest(statistics: wantStats, measurements: measurements)
        if let welchLength {
            request.welch = WelchConfiguration(
                segmentLength: welchLength, overlap: overlap.map { Int((($0 * Double(welchLength))).rounded(.down)) },
                window: window ?? .hann, detrend: detrend ?? .constant, average: average ?? .mean,
                scaling: scaling ?? .density, rigor: rigor)
        }
        if let spectrumLength { request.spectrum = SpectrumRequest(length: spectrumLength, window: window ?? .hann) }
        request.measurement = MeasurementConfiguration(window: measureWindow ?? .blackmanHarris7, harmonics: harmonics ?? 5, foldAliases: fold)
        request.fullScale = fullScale

        if let wisdom { FFTPlanCache.shared.loadWisdom(path: wisdom) }
        var filters = SubscriberFilters()
        if let channelSpec {
            do { try filters.add(AnalogFilterRequest(channels: .list(channelSpec.channels.map { UInt32($0) })), id: 1) } catch {
                throw UsageError("--channels: \(error)")
            }
        }
        var analysis = AnalysisJob(request: request, filters: filters, requestedChannels: channelSpec?.channels, requestedSources: requestedSources,
                                   rate: rate, int16Scale: int16Scale)
        // The cores not taken by files analysed side by side decode each file's chunks ahead.
        let cores = ProcessInfo.processInfo.activeProcessorCount
        analysis.decodeThreads = max(1, cores / max(1, min(files.count, jobs ?? cores)))
        let job = analysis
        var plotSeries: [SVGSpectrumPlot.Series] = []
        var failures = 0
        let progress = ProgressBar(total: files.count, enabled: isatty(STDERR_FILENO) == 1 && files.count > 1)
        var outputWorks = true
        func output(_ text: String) { outputWorks = outputWorks && StandardOutput.line(text) }
        ParallelMap.run(files.count, jobs: jobs ?? ProcessInfo.processInfo.activeProcessorCount,
                        work: { job.run(files[$0]) },
                        inOrder: { index, result in
            progress.advance()
            let file = files[index]
            switch result {
            case .failure(let error):
                failures += 1
                progress.clear()
                printError("tributary analyze: \(error)")
                if json { output(AnalysisJSON.failure(file, error: "\(error)").text) }
            case .success(let (input, sources)):
                progress.clear()
                for warning in input.warnings { printError("tributary analyze: warning: \(warning)") }
                // A Welch segment longer than a channel is shortened to it, as scipy does: said as scipy warns.
                for source in sources {
                    for r in source.channels {
                        guard let warning = AnalysisWarnings.welch(request, samples: r.samples) else { continue }
                        printError("tributary analyze: warning: \(file): source \(source.id) channel \(r.index): \(warning)")
                    }
                }
                if json {
                    output(AnalysisJSON.file(file, input: input, sources: sources, request: request).text)
                } else {
                    output(AnalysisTable.render(file: file, input: input, sources: sources, request: request) + "\n")
                }
                let name = (file as NSString).lastPathComponent
                for source in sources {
                    for r in source.channels {
                        let index = UInt32(r.index)
                        let channelName = source.channelNames[index].flatMap { $0.isEmpty ? nil : " \($0)" } ?? ""
                        let label = (files.count > 1 ? "\(name): " : "") + (source.name.isEmpty ? "" : "\(source.name) ")
                            + "(source \(source.id)) ch \(r.index)\(channelName)"
                        let unit = source.units[index] ?? ""
                        if let w = r.welch {
                            plotSeries.append(.init(label: label, unit: unit, x: w.frequencies, y: w.values))
                        } else if let sp = r.spectrum {
                            plotSeries.append(.init(label: label, unit: unit, x: sp.frequencies, y: sp.amplitudeRMS))
                        }
                    }
                }
            }
            return outputWorks
        })
        progress.clear()
        guard outputWorks else { throw StandardOutputFailure() }
        if let plotPath, !plotSeries.isEmpty {
            let isWelch = request.welch != nil
            let density = request.welch?.scaling != .spectrum
            // The y axis in the channels' unit; when they differ, each legend entry gives its own.
            let units = Set(plotSeries.map(\.unit))
            let unit = units.count == 1 && !units.first!.isEmpty ? units.first! : "unit"
            if units.count > 1 {
                for i in plotSeries.indices { plotSeries[i].label += " [\(plotSeries[i].unit.isEmpty ? "no unit" : plotSeries[i].unit)]" }
            }
            let plot = SVGSpectrumPlot(
                title: isWelch ? "Welch \(density ? "PSD" : "power spectrum") (nperseg \(request.welch!.segmentLength), \(request.welch!.window.rawValue))"
                    : "Amplitude spectrum (N \(request.spectrum!.length), \(request.spectrum!.window.rawValue), RMS average)",
                xLabel: "Frequency (Hz)" + (logFrequency ? ", log scale" : ""),
                yLabel: isWelch ? (density ? "PSD (\(unit)²/Hz)" : "Power (\(unit)²)") : "Amplitude (\(unit) RMS)",
                series: plotSeries, logFrequency: logFrequency)
            do {
                try plot.render().write(toFile: plotPath, atomically: true, encoding: .utf8)
            } catch {
                throw CommandError("cannot write plot \(plotPath): \((error as NSError).localizedDescription)")
            }
            printError("plot written to \(plotPath)")
        }
        if let wisdom {
            do { try FFTPlanCache.shared.saveWisdom(path: wisdom) } catch { throw CommandError("\(error)") }
        }
        if failures > 0 { printError("tributary analyze: \(failures) of \(counted(files.count, "file")) failed") }
        return failures == 0 ? 0 : 1
    }

    static var windowNames: String { WindowKind.allCases.map(\.rawValue).joined(separator: ", ") }
}
