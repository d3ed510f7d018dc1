import TributaryDSP

/// The options of an analysis as a caller gives them — `tributary analyze`'s flags, the C API's JSON
/// members (and so Python's `tributary.analyze` keywords) — checked and turned into an
/// `AnalysisRequest` in one place, so that every door checks the same things and applies the same
/// defaults. Each door reads its own syntax (a flag's text, a JSON value) into these values.
public struct AnalysisOptionValues: Sendable, Equatable {
    public var stats = false
    public var welch: Int?
    /// A fraction in [0, 1) of the segment length.
    public var overlap: Double?
    public var window: WindowKind?
    public var detrend: Detrend?
    public var average: WelchAverage?
    public var scaling: SpectralScaling?
    public var spectrum: Int?
    public var spectrogram: Int?
    /// A reference channel index: coherence against it, or the transfer function from it.
    public var coherence: Int?
    public var transfer: Int?
    /// nil when not given.
    public var measure: Set<AnalysisMeasurement>?
    public var harmonics: Int?
    public var foldAliases = false
    public var measureWindow: WindowKind?
    public var fullScale: Double?
    public var rigor: FFTRigor = .estimate

    public init() {}

    /// How the options are named in messages: as flags (`--fold-aliases`) or JSON members (`fold_aliases`).
    public enum Spelling: Sendable { case flag, member }

    /// The list of `measure`: tone, thd, thdn, sinad, snr, enob, sfdr or all.
    public static func measurements(_ items: [String], spelling: Spelling) throws(AnalysisOptionError) -> Set<AnalysisMeasurement> {
        var measurements = Set<AnalysisMeasurement>()
        for item in items {
            if item == "all" {
                measurements.formUnion(AnalysisMeasurement.allCases)
                continue
            }
            guard let m = AnalysisMeasurement(rawValue: item) else {
                throw AnalysisOptionError(
                    (spelling == .flag ? "--measure" : "measure") + ": '\(item)' is not one of tone, thd, thdn, sinad, snr, enob, sfdr, all"
                )
            }
            measurements.insert(m)
        }
        return measurements
    }

    /// Whether anything spectral (Welch, spectrum, spectrogram, cross-spectra) is asked for.
    public var wantsSpectra: Bool { welch != nil || spectrum != nil || spectrogram != nil || crossReference != nil }
    public var crossReference: Int? { transfer ?? coherence }

    /// The request: ranges, combinations and defaults checked; statistics when nothing else is asked.
    public func request(spelling: Spelling) throws(AnalysisOptionError) -> AnalysisRequest {
        func name(_ member: String) -> String {
            spelling == .member ? member : "--" + member.replacingOccurrences(of: "_", with: "-")
        }
        func names(_ members: [String], _ last: String) -> String {
            members.map(name).joined(separator: ", ") + " or " + name(last)
        }
        let lengths = 1...SpectralLimits.maxTransformLength
        for (member, value) in [("welch", welch), ("spectrum", spectrum), ("spectrogram", spectrogram)] {
            if let value, !lengths.contains(value) {
                throw AnalysisOptionError("\(name(member)) must be an integer from 1 to \(SpectralLimits.maxTransformLength), not \(value)")
            }
        }
        for (member, value) in [("coherence", coherence), ("transfer", transfer)] {
            if let value, !(0...Int(UInt32.max)).contains(value) {
                throw AnalysisOptionError("\(name(member)) must be a channel index from 0 to \(UInt32.max), not \(value)")
            }
        }
        if let overlap, !(overlap >= 0 && overlap < 1) { throw AnalysisOptionError("\(name("overlap")) must be a fraction in [0, 1)") }
        if let harmonics, !(2...1000).contains(harmonics) {
            throw AnalysisOptionError("\(name("harmonics")) must be an integer from 2 to 1000, not \(harmonics)")
        }
        if let fullScale, !(fullScale > 0 && fullScale.isFinite) {
            throw AnalysisOptionError("\(name("full_scale")) must be a positive number (the peak of a full-scale sine)")
        }
        if coherence != nil, transfer != nil {
            throw AnalysisOptionError(
                "give \(name("coherence")) or \(name("transfer")), not both (\(name("transfer")) gives the coherence too)")
        }
        let segmented = welch != nil || spectrogram != nil || crossReference != nil
        if !segmented {
            let segmentedNames = names(["welch", "spectrogram", "coherence"], "transfer")
            if overlap != nil { throw AnalysisOptionError("\(name("overlap")) needs \(segmentedNames)") }
            if detrend != nil || average != nil || scaling != nil {
                throw AnalysisOptionError("\(name("detrend")), \(name("average")) and \(name("scaling")) need \(segmentedNames)")
            }
        }
        if measure == nil, harmonics != nil || foldAliases || measureWindow != nil || fullScale != nil {
            throw AnalysisOptionError(
                "\(name("harmonics")), \(name("fold_aliases")), \(name("measure_window")) and \(name("full_scale")) need \(name("measure"))"
            )
        }
        let measurements = measure ?? []
        var request = AnalysisRequest(statistics: stats || (!wantsSpectra && measurements.isEmpty), measurements: measurements)
        func noverlap(_ length: Int) -> Int? { overlap.map { Int(($0 * Double(length)).rounded(.down)) } }
        if let welch {
            request.welch = WelchConfiguration(
                segmentLength: welch, overlap: noverlap(welch), window: window ?? .hann, detrend: detrend ?? .constant,
                average: average ?? .mean, scaling: scaling ?? .density, rigor: rigor)
        }
        if let spectrogram {
            // noverlap: floor(F * N) with overlap, else scipy's spectrogram default (nperseg // 8, set per channel).
            request.spectrogram = WelchConfiguration(
                segmentLength: spectrogram, overlap: noverlap(spectrogram), window: window ?? .hann, detrend: detrend ?? .constant,
                scaling: scaling ?? .density, rigor: rigor)
        }
        if let reference = crossReference {
            // The Welch segments when given, else scipy's csd defaults (nperseg 256, noverlap 128).
            let length = welch ?? 256
            request.crossChannel = CrossChannelRequest(
                reference: reference, transfer: transfer != nil,
                configuration: WelchConfiguration(
                    segmentLength: length, overlap: noverlap(length), window: window ?? .hann, detrend: detrend ?? .constant,
                    average: average ?? .mean, rigor: rigor))
        }
        if let spectrum { request.spectrum = SpectrumRequest(length: spectrum, window: window ?? .hann) }
        request.measurement = MeasurementConfiguration(
            window: measureWindow ?? .blackmanHarris7, harmonics: harmonics ?? 5, foldAliases: foldAliases)
        request.fullScale = fullScale
        return request
    }
}

/// Options that do not fit together or lie outside their range; the message names them as given.
public struct AnalysisOptionError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
