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
        rate = try arguments.number("--rate", "a sampling rate in Hz", in: 0...1e12, above: true)
        var wantStats = arguments.flag("--stats")
        let welchLength = try arguments.integer("--welch", "a segment length", in: 1...SpectralLimits.maxTransformLength)
        let overlap = try arguments.option("--overlap", "a fraction in [0, 1)") { Double($0).flatMap { $0 >= 0 && $0 < 1 ? $0 : nil } }
        let window = try arguments.option("--window", "a window name (\(AnalyzeCommand.windowNames))") { WindowKind(name: $0) }
        let detrend = try arguments.option("--detrend", "none, constant or linear") { Detrend(rawValue: $0) }
        let average = try arguments.option("--average", "mean or median") { WelchAverage(rawValue: $0) }
        let scaling = try arguments.option("--scaling", "density or spectrum") { SpectralScaling(rawValue: $0) }
        let spectrumLength = try arguments.integer("--spectrum", "a block length", in: 1...SpectralLimits.maxTransformLength)
        let spectrogramLength = try arguments.integer("--spectrogram", "a segment length", in: 1...SpectralLimits.maxTransformLength)
        let coherenceReference = try arguments.integer("--coherence", "a reference channel index", in: 0...Int(UInt32.max))
        let transferReference = try arguments.integer("--transfer", "a reference channel index", in: 0...Int(UInt32.max))
        let measureText = try arguments.option("--measure")
        let harmonics = try arguments.integer("--harmonics", "a harmonic order", in: 2...1000)
        let fold = arguments.flag("--fold-aliases")
        let measureWindow = try arguments.option("--measure-window", "a window name (\(AnalyzeCommand.windowNames))") {
            WindowKind(name: $0)
        }
        let fullScale = try arguments.number("--full-scale", "a peak amplitude", in: 0...Double.greatestFiniteMagnitude, above: true)
        let channelText = try arguments.option("--channels")
        let sourceTexts = try arguments.options("--source")
        int16Scale =
            try arguments.number("--int16-scale", "a scale", in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude) ?? 1
        plotPath = try arguments.option("--plot")
        logFrequency = arguments.flag("--log-frequency")
        json = arguments.flag("--json")
        let rigor = try arguments.option("--rigor", "estimate, measure or patient") { FFTRigor(name: $0) } ?? .estimate
        wisdom = try arguments.option("--wisdom")
        jobs = try arguments.integer("--jobs", "a number of files at a time", in: 1...256)
        files = try arguments.finish()
        guard !files.isEmpty else { throw UsageError("no input files") }

        if coherenceReference != nil, transferReference != nil {
            throw UsageError("give --coherence or --transfer, not both (--transfer gives the coherence too)")
        }
        let crossReference = transferReference ?? coherenceReference
        if welchLength == nil && spectrogramLength == nil && crossReference == nil {
            if overlap != nil { throw UsageError("--overlap needs --welch, --spectrogram, --coherence or --transfer") }
            if detrend != nil || average != nil || scaling != nil {
                throw UsageError("--detrend, --average and --scaling need --welch, --spectrogram, --coherence or --transfer")
            }
        }
        if measureText == nil, harmonics != nil || fold || measureWindow != nil || fullScale != nil {
            throw UsageError("--harmonics, --fold-aliases, --measure-window and --full-scale need --measure")
        }
        let measurements = try Self.measurements(measureText)
        if !wantStats && welchLength == nil && spectrumLength == nil && measurements.isEmpty && spectrogramLength == nil
            && crossReference == nil
        {
            wantStats = true
        }
        if plotPath != nil && welchLength == nil && spectrumLength == nil && spectrogramLength == nil && crossReference == nil {
            throw UsageError("--plot needs --welch, --spectrum, --spectrogram, --coherence or --transfer")
        }
        if logFrequency && (spectrogramLength != nil || crossReference != nil) {
            throw UsageError("--log-frequency is for the --welch and --spectrum plot")
        }
        if logFrequency && plotPath == nil { throw UsageError("--log-frequency needs --plot") }
        if let plotPath, !plotPath.lowercased().hasSuffix(".svg") {
            throw UsageError("option --plot: '\(plotPath)': the plot is written as SVG; give a file name ending in .svg")
        }
        try Self.refuseOverwritingAnInput([("--plot", plotPath), ("--wisdom", wisdom)], files: files)
        sources = try Self.sources(sourceTexts)

        request = AnalysisRequest(statistics: wantStats, measurements: measurements)
        if let welchLength {
            request.welch = WelchConfiguration(
                segmentLength: welchLength, overlap: overlap.map { Int((($0 * Double(welchLength))).rounded(.down)) },
                window: window ?? .hann, detrend: detrend ?? .constant, average: average ?? .mean,
                scaling: scaling ?? .density, rigor: rigor)
        }
        if let spectrogramLength {
            // noverlap: floor(F * N) with --overlap, else scipy's spectrogram default (nperseg // 8, set per channel).
            request.spectrogram = WelchConfiguration(
                segmentLength: spectrogramLength, overlap: overlap.map { Int((($0 * Double(spectrogramLength))).rounded(.down)) },
                window: window ?? .hann, detrend: detrend ?? .constant, scaling: scaling ?? .density, rigor: rigor)
        }
        if let crossReference {
            // The --welch segments when given, else scipy's csd defaults (nperseg 256, noverlap 128).
            let length = welchLength ?? 256
            request.crossChannel = CrossChannelRequest(
                reference: crossReference, transfer: transferReference != nil,
                configuration: WelchConfiguration(
                    segmentLength: length, overlap: overlap.map { Int((($0 * Double(length))).rounded(.down)) },
                    window: window ?? .hann, detrend: detrend ?? .constant, average: average ?? .mean,
                    rigor: rigor))
        }
        if let spectrumLength { request.spectrum = SpectrumRequest(length: spectrumLength, window: window ?? .hann) }
        request.measurement = MeasurementConfiguration(
            window: measureWindow ?? .blackmanHarris7, harmonics: harmonics ?? 5, foldAliases: fold)
        request.fullScale = fullScale

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

    /// --measure's list: tone, thd, thdn, sinad, snr, enob, sfdr or all.
    static func measurements(_ text: String?) throws -> Set<AnalysisMeasurement> {
        var measurements = Set<AnalysisMeasurement>()
        guard let text else { return measurements }
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            if item == "all" {
                measurements.formUnion(AnalysisMeasurement.allCases)
                continue
            }
            guard let m = AnalysisMeasurement(rawValue: String(item)) else {
                throw UsageError("--measure: '\(item)' is not one of tone, thd, thdn, sinad, snr, enob, sfdr, all")
            }
            measurements.insert(m)
        }
        return measurements
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
