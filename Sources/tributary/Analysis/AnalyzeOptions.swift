import Foundation
import TributaryAnalysis
import TributaryDSP
import TributaryWire

/// `tributary analyze`'s command line, read and checked (AnalyzeCommand.usage says what each option
/// means): the analysis request, the filters and selections, and where the results go.
struct AnalyzeOptions {
    var files: [String]
    var request: AnalysisRequest
    var filters = SubscriberFilters()
    /// --channels: channel indexes each analysed source must have.
    var channels: [Int]?
    /// --source: the sources to analyse (nil: every source).
    var sources: Set<UInt32>?
    var rate: Double?
    var int16Scale: Double
    var plotPath: String?
    var logFrequency: Bool
    var json: Bool
    var jobs: Int?
    var wisdom: String?

    /// The command line as given.
    struct Given {
        var values = AnalysisOptionValues()
        var rate: Double?
        var measure: String?
        var channels: String?
        var sources: [String] = []
        var int16Scale: Double?
        var plotPath: String?
        var logFrequency = false
        var json = false
        var wisdom: String?
        var jobs: Int?
    }

    /// The analysis options, in the order the help lists them (AnalyzeCommand.usage).
    static var options: OptionTable<Given> {
        spectralOptions + measurementOptions + outputOptions
    }

    static var spectralOptions: OptionTable<Given> {
        let windows = "a window name (\(AnalyzeCommand.windowNames))", max = SpectralLimits.maxTransformLength
        return OptionTable([
            .number(
                "--rate", "HZ", "a sampling rate in Hz", in: 0...1e12, above: true,
                "sampling rate (NPY default 1, as scipy's fs; overrides configured rates)", \.rate),
            .flag("--stats", "count, min, max, mean, std (population), sample std, RMS, peaks, peak-to-peak", \.values.stats),
            .integer(
                "--welch", "N", "a segment length", in: 1...max,
                """
                Welch PSD with segments of N samples, N <= 4194304 (scipy.signal.welch
                defaults otherwise)
                """, \.values.welch),
            .parsed(
                "--overlap", "F", "a fraction in [0, 1)", "overlap as a fraction of N in [0, 1) (default 0.5; noverlap = floor(F*N))",
                level: 1, \.values.overlap
            ) { Double($0).flatMap { $0 >= 0 && $0 < 1 ? $0 : nil } },
            .parsed(
                "--window", "NAME", windows,
                """
                rectangular, hann (default), hamming, blackman, exact-blackman,
                blackman-harris, blackman-harris-7, flattop (also used by --spectrum)
                """, level: 1, \.values.window
            ) { WindowKind(name: $0) },
            .parsed("--detrend", "MODE", "none, constant or linear", "none, constant (default), linear", level: 1, \.values.detrend) {
                Detrend(rawValue: $0)
            },
            .parsed("--average", "MODE", "mean or median", "mean (default) or median", level: 1, \.values.average) {
                WelchAverage(rawValue: $0)
            },
            .parsed(
                "--scaling", "MODE", "density or spectrum", "density (unit^2/Hz, default) or spectrum (unit^2)", level: 1,
                \.values.scaling
            ) { SpectralScaling(rawValue: $0) },
            .integer(
                "--spectrum", "N", "a block length", in: 1...max,
                """
                RMS-averaged amplitude spectrum (RMS units) over the complete N-sample blocks,
                N <= 4194304
                """, \.values.spectrum),
            .integer(
                "--spectrogram", "N", "a segment length", in: 1...max,
                """
                spectrogram of each channel, segments of N samples (scipy.signal.spectrogram,
                psd mode; --window default hann, --overlap default 1/8, --detrend, --scaling)
                """, \.values.spectrogram),
            .integer(
                "--coherence", "REF", "a reference channel index", in: 0...Int(UInt32.max),
                """
                coherence of every other channel with channel REF (scipy.signal.coherence);
                segments of --welch N and its options, else nperseg 256, hann, half overlap
                """, \.values.coherence),
            .integer(
                "--transfer", "REF", "a reference channel index", in: 0...Int(UInt32.max),
                """
                transfer functions H1 = Pxy/Pxx and H2 = Pyy/Pyx from channel REF to every
                other channel (magnitude dB, phase, coherence; segments as --coherence)
                """, \.values.transfer),
        ])
    }

    static var measurementOptions: OptionTable<Given> {
        OptionTable([
            .text("--measure", "LIST", "comma list of tone,thd,thdn,sinad,snr,enob,sfdr (or 'all')", \.measure),
            .integer(
                "--harmonics", "H", "a harmonic order", in: 2...1000, "highest harmonic of THD (default 5)", level: 1, \.values.harmonics),
            .flag(
                "--fold-aliases", "fold harmonics above Nyquist back into the band instead of ignoring them", level: 1,
                \.values.foldAliases),
            .parsed(
                "--measure-window", "W", "a window name (\(AnalyzeCommand.windowNames))",
                "window of the measurements (default blackman-harris-7)",
                level: 1, \.values.measureWindow
            ) { WindowKind(name: $0) },
            .number(
                "--full-scale", "V", "a peak amplitude", in: 0...Double.greatestFiniteMagnitude, above: true,
                """
                peak amplitude of a full-scale sine for ENOB_fs and the dBFS readings
                (default: half of each channel's configured range, e.g. 10 for ±10 V)
                """, level: 1, \.values.fullScale),
        ])
    }

    static var outputOptions: OptionTable<Given> {
        OptionTable([
            .text("--channels", "SPEC", "channels to analyse, e.g. 0-3 or 0,2,5 (default all)", \.channels),
            .texts(
                "--source", "IDS",
                """
                sources to analyse, e.g. 2 or 1,3; repeatable (default all; results are
                listed by source id)
                """, \.sources),
            .number(
                "--int16-scale", "S", "a scale", in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude,
                "int16 NPY counts are multiplied by S (default 1)", \.int16Scale),
            .text(
                "--plot", "FILE.svg",
                """
                plot the Welch PSD (or the spectrum) of every channel, log y axis, as SVG
                (the name must end in .svg): the y axis in the channels' unit (V²/Hz...),
                each curve named by file, device, source id, channel index and name;
                with --spectrogram heat maps (time, frequency, colour bar in dB), with
                --transfer Bode plots (|H1|, |H2| dB, phase, coherence), with --coherence
                the coherence
                """, \.plotPath),
            .flag("--log-frequency", "a logarithmic frequency axis (DC is left out)", level: 1, \.logFrequency),
            .flag("--json", "one JSON object per input file, one per line; NaN/inf are written as null", \.json),
            .integer(
                "--jobs", "N", "a number of files at a time", in: 1...256,
                """
                analyse N files at a time (default: the number of cores); a progress bar
                is shown on stderr when it is a terminal
                """, \.jobs),
            .parsed("--rigor", "R", "estimate, measure or patient", "FFTW planning rigor (default estimate)", \.values.rigor) {
                FFTRigor(name: $0)
            },
            .text("--wisdom", "FILE", "load FFTW wisdom from FILE before and save it after", \.wisdom),
        ])
    }

    /// Reads and checks the command line.
    init(_ arguments: [String]) throws {
        var given = Given()
        files = try Self.options.parse(arguments, into: &given)
        guard !files.isEmpty else { throw UsageError("no input files") }
        var values = given.values
        let measureText = given.measure, channelText = given.channels
        rate = given.rate
        int16Scale = given.int16Scale ?? 1
        plotPath = given.plotPath
        logFrequency = given.logFrequency
        json = given.json
        wisdom = given.wisdom
        jobs = given.jobs

        do {
            values.measure = try measureText.map { text throws(AnalysisOptionError) in
                try AnalysisOptionValues.measurements(
                    text.split(separator: ",", omittingEmptySubsequences: false).map(String.init), spelling: .flag)
            }
            request = try values.request(spelling: .flag)
        } catch { throw UsageError(error.message) }
        let crossReference = values.crossReference
        if plotPath != nil && !values.wantsSpectra {
            throw UsageError("--plot needs --welch, --spectrum, --spectrogram, --coherence or --transfer")
        }
        if logFrequency && (values.spectrogram != nil || crossReference != nil) {
            throw UsageError("--log-frequency is for the --welch and --spectrum plot")
        }
        if logFrequency && plotPath == nil { throw UsageError("--log-frequency needs --plot") }
        if let plotPath, !plotPath.lowercased().hasSuffix(".svg") {
            throw UsageError("option --plot: '\(plotPath)': the plot is written as SVG; give a file name ending in .svg")
        }
        try Self.refuseOverwritingAnInput([("--plot", plotPath), ("--wisdom", wisdom)], files: files)
        sources = try Self.sources(given.sources)

        if let channelText {
            let channelSpec: ChannelSpec
            do {
                channelSpec = try ChannelSpec(parsing: channelText)
            } catch let error as ChannelSpecError {
                throw UsageError("--channels: \(error)")
            }
            channels = channelSpec.channels
            do { try filters.add(AnalogFilterRequest(channels: .list(channelSpec.channels.map { UInt32($0) })), id: 1) } catch {
                throw UsageError("--channels: \(error)")
            }
        }
    }

    /// --source (repeatable, each a list): the ids asked for, or nil when none is given.
    static func sources(_ texts: [String]) throws -> Set<UInt32>? {
        var requested: Set<UInt32>?
        for text in texts {
            let ids = text.split(separator: ",", omittingEmptySubsequences: false).map { UInt32($0.trimmingCharacters(in: .whitespaces)) }
            guard ids.allSatisfy({ $0 != nil && $0! > 0 }) else {
                throw UsageError("option --source: '\(text)' is not a source id in 1...\(UInt32.max) or a list of them, e.g. 1,3")
            }
            requested = (requested ?? []).union(ids.map { $0! })
        }
        return requested
    }

    /// The plot and the saved wisdom never replace an input (a capture named *.svg, a link to one).
    static func refuseOverwritingAnInput(_ outputs: [(option: String, path: String?)], files: [String]) throws {
        for (option, output) in outputs {
            guard let output else { continue }
            var target = stat(), source = stat()
            guard stat(output, &target) == 0 else { continue }
            for file in files where stat(file, &source) == 0 && source.st_dev == target.st_dev && source.st_ino == target.st_ino {
                throw UsageError("option \(option): '\(output)' is the input '\(file)'; writing it would destroy the input")
            }
        }
    }
}
