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

    init(_ arguments: inout Arguments) throws {
        var values = AnalysisOptionValues()
        rate = try arguments.number("--rate", "a sampling rate in Hz", in: 0...1e12, above: true)
        values.stats = arguments.flag("--stats")
        values.welch = try arguments.integer("--welch", "a segment length", in: 1...SpectralLimits.maxTransformLength)
        values.overlap = try arguments.option("--overlap", "a fraction in [0, 1)") { Double($0).flatMap { $0 >= 0 && $0 < 1 ? $0 : nil } }
        values.window = try arguments.option("--window", "a window name (\(AnalyzeCommand.windowNames))") { WindowKind(name: $0) }
        values.detrend = try arguments.option("--detrend", "none, constant or linear") { Detrend(rawValue: $0) }
        values.average = try arguments.option("--average", "mean or median") { WelchAverage(rawValue: $0) }
        values.scaling = try arguments.option("--scaling", "density or spectrum") { SpectralScaling(rawValue: $0) }
        values.spectrum = try arguments.integer("--spectrum", "a block length", in: 1...SpectralLimits.maxTransformLength)
        values.spectrogram = try arguments.integer("--spectrogram", "a segment length", in: 1...SpectralLimits.maxTransformLength)
        values.coherence = try arguments.integer("--coherence", "a reference channel index", in: 0...Int(UInt32.max))
        values.transfer = try arguments.integer("--transfer", "a reference channel index", in: 0...Int(UInt32.max))
        let measureText = try arguments.option("--measure")
        values.harmonics = try arguments.integer("--harmonics", "a harmonic order", in: 2...1000)
        values.foldAliases = arguments.flag("--fold-aliases")
        values.measureWindow = try arguments.option("--measure-window", "a window name (\(AnalyzeCommand.windowNames))") {
            WindowKind(name: $0)
        }
        values.fullScale = try arguments.number("--full-scale", "a peak amplitude", in: 0...Double.greatestFiniteMagnitude, above: true)
        let channelText = try arguments.option("--channels")
        let sourceTexts = try arguments.options("--source")
        int16Scale =
            try arguments.number("--int16-scale", "a scale", in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude) ?? 1
        plotPath = try arguments.option("--plot")
        logFrequency = arguments.flag("--log-frequency")
        json = arguments.flag("--json")
        values.rigor = try arguments.option("--rigor", "estimate, measure or patient") { FFTRigor(name: $0) } ?? .estimate
        wisdom = try arguments.option("--wisdom")
        jobs = try arguments.integer("--jobs", "a number of files at a time", in: 1...256)
        files = try arguments.finish()
        guard !files.isEmpty else { throw UsageError("no input files") }

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
        sources = try Self.sources(sourceTexts)

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
