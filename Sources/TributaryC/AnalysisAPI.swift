import Foundation
import TributaryAnalysis
import TributaryBytes
import TributaryDSP
import TributaryText
import TributaryWire

/// The options of `tributary_analyze_*`: a JSON object whose members are the options of `tributary
/// analyze` (docs/C_API.md), checked as the command checks them (`AnalysisOptionValues`).
struct AnalysisOptions: JSONOptions {
    var job: AnalysisJob
    var name: String?
    var arrays = AnalysisArrayEncoding.json

    static let keys: Set<String> = [
        "rate", "stats", "welch", "overlap", "window", "detrend", "average", "scaling", "spectrum",
        "spectrogram", "coherence", "transfer", "measure", "harmonics", "fold_aliases", "measure_window", "full_scale",
        "channels", "int16_scale", "rigor", "name", "arrays",
    ]

    init(_ members: OptionMembers) throws {
        func get<T: Decodable>(_ name: String, _ type: T.Type, _ what: String) throws -> T? { try members.get(name, type, what) }
        func bad(_ text: String) -> APIError { APIError(.argument, text) }
        let windowNames = WindowKind.allCases.map(\.rawValue).joined(separator: ", ")
        let rate = try get("rate", Double.self, "a number")
        if let r = rate, !(r > 0 && r.isFinite) { throw bad("rate must be a positive number") }
        var values = AnalysisOptionValues()
        values.stats = try get("stats", Bool.self, "true or false") ?? false
        values.welch = try get("welch", Int.self, "an integer")
        values.overlap = try get("overlap", Double.self, "a number")
        values.window = try namedValue(try get("window", String.self, "a string"), WindowKind.init(name:)) {
            "window '\($0)' is not one of \(windowNames)"
        }
        values.detrend = try namedValue(try get("detrend", String.self, "a string"), Detrend.init(rawValue:)) { _ in
            "detrend must be none, constant or linear"
        }
        values.average = try namedValue(try get("average", String.self, "a string"), WelchAverage.init(rawValue:)) { _ in
            "average must be mean or median"
        }
        values.scaling = try namedValue(try get("scaling", String.self, "a string"), SpectralScaling.init(rawValue:)) { _ in
            "scaling must be density or spectrum"
        }
        values.spectrum = try get("spectrum", Int.self, "an integer")
        values.spectrogram = try get("spectrogram", Int.self, "an integer")
        values.coherence = try get("coherence", Int.self, "an integer")
        values.transfer = try get("transfer", Int.self, "an integer")
        let measure: [String]?
        if let list = try? get("measure", [String].self, "") {
            measure = list
        } else {
            measure = try get("measure", String.self, "a comma list or an array of strings")?
                .split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        values.harmonics = try get("harmonics", Int.self, "an integer")
        values.foldAliases = try get("fold_aliases", Bool.self, "true or false") ?? false
        values.measureWindow = try namedValue(try get("measure_window", String.self, "a string"), WindowKind.init(name:)) {
            "measure_window '\($0)' is not one of \(windowNames)"
        }
        values.fullScale = try get("full_scale", Double.self, "a number")
        let channels = try members.channels()
        let int16Scale = try get("int16_scale", Double.self, "a number")
        if let s = int16Scale, !s.isFinite { throw bad("int16_scale must be a finite number") }
        values.rigor =
            try namedValue(try get("rigor", String.self, "a string"), FFTRigor.init(name:)) { _ in
                "rigor must be estimate, measure or patient"
            } ?? .estimate
        let name = try get("name", String.self, "a string")
        let arrays =
            try namedValue(try get("arrays", String.self, "\"json\", \"base64\" or \"block\""), AnalysisArrayEncoding.init(rawValue:)) {
                "arrays must be \"json\", \"base64\" or \"block\", not '\($0)'"
            } ?? .json
        let request = try Self.request(values, measure: measure)
        var channelSpec: ChannelSpec?
        if let channels {
            do { channelSpec = try ChannelSpec(parsing: channels) } catch { throw bad("channels: \(error)") }
        }
        var filters = SubscriberFilters()
        if let channelSpec {
            do {
                try filters.add(AnalogFilterRequest(channels: .list(channelSpec.channels.map { UInt32($0) })), id: 1)
            } catch {
                throw bad("channels: \(error)")
            }
        }
        job = AnalysisJob(
            request: request, filters: filters, requestedChannels: channelSpec?.channels, rate: rate, int16Scale: int16Scale ?? 1)
        self.name = name
        self.arrays = arrays
    }

    /// The request of `values` with `measure`'s list, checked as the command checks its options.
    private static func request(_ values: AnalysisOptionValues, measure: [String]?) throws(APIError) -> AnalysisRequest {
        var values = values
        do {
            values.measure = try measure.map { items throws(AnalysisOptionError) in
                try AnalysisOptionValues.measurements(items, spelling: .member)
            }
            return try values.request(spelling: .member)
        } catch {
            throw APIError(.argument, error.message)
        }
    }
}

/// Analyses a file (capture, NPY or frame file) as `tributary analyze --json` does; `json` receives the
/// document the command prints for the file (freed with tributary_free).
@_cdecl("tributary_analyze_file")
public func tributary_analyze_file(
    _ path: UnsafePointer<CChar>?, _ options: UnsafePointer<CChar>?,
    _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    guarded("tributary_analyze_file") {
        let result = try out(json, "json")
        result.pointee = nil
        let path = try string(path, "path")
        let options = try AnalysisOptions(json: options.map { String(cString: $0) })
        switch options.job.run(path) {
        case .failure(let error):
            throw APIError(.analysis, error.description)
        case .success(let (input, sources)):
            result.pointee = try ownedDocument(arrays: options.arrays) { block in
                AnalysisJSON.file(path, input: input, sources: sources, request: options.job.request, arrays: options.arrays, block: block)
            }
        }
    }
}

/// Analyses a caller's buffer of float64 samples, row-major (channels × samples_per_channel), as
/// `tributary analyze --json` analyses an NPY file of the same array (one source, id 1).
@_cdecl("tributary_analyze_buffer")
public func tributary_analyze_buffer(
    _ samples: UnsafePointer<Double>?, _ channels: UInt, _ samplesPerChannel: UInt,
    _ rate: Double, _ options: UnsafePointer<CChar>?,
    _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    guarded("tributary_analyze_buffer") {
        let result = try out(json, "json")
        result.pointee = nil
        guard channels >= 1, channels <= UInt(WireLimits.maxChannels) else {
            throw APIError(.argument, "channels must be 1 to \(WireLimits.maxChannels), not \(channels)")
        }
        guard samplesPerChannel >= 1, samplesPerChannel <= UInt(Int.max) / 8 / channels else {
            throw APIError(.argument, "samples_per_channel must be at least 1 (and the buffer addressable), not \(samplesPerChannel)")
        }
        guard let samples else { throw APIError(.argument, "samples is NULL") }
        guard rate > 0, rate.isFinite else { throw APIError(.argument, "rate must be a positive number, not \(rate)") }
        var options = try AnalysisOptions(json: options.map { String(cString: $0) })
        if options.job.rate == nil { options.job.rate = rate }
        let name = options.name ?? "buffer"
        let c = Int(channels), n = Int(samplesPerChannel)
        let job = options.job
        let analysis = FrameAnalysis(request: job.request, filters: job.filters, sampleRate: job.rate)
        do {
            // The frames `analyze` makes of an NPY file, from memory.
            try AnalysisInputs.arrayFrames(
                name: name, channels: c, samplesPerChannel: n, format: .float64, rate: job.rate!,
                int16Scale: 1,
                copy: { ch, range, out in
                    out.copyMemory(from: UnsafeRawBufferPointer(start: samples + range.lowerBound, count: range.count * 8))
                }
            ) { frame in try analysis.add(frame) }
            let sources = try analysis.finish()
            if let requested = job.requestedChannels, let missing = requested.first(where: { $0 >= c }) {
                throw APIError(.analysis, "\(name): channels: channel \(missing) is not in source 1 (\(c) channels)")
            }
            guard !sources.isEmpty else { throw APIError(.analysis, "\(name): no analog data") }
            let input = InputDescription(memoryOf: "<f8", channels: c)
            result.pointee = try ownedDocument(arrays: options.arrays) { block in
                AnalysisJSON.file(name, input: input, sources: sources, request: job.request, arrays: options.arrays, block: block)
            }
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.analysis, "\(name): \(error)")
        }
    }
}

/// A document as a library-allocated C string (freed with tributary_free). Under the block encoding
/// the arrays' values follow the text in the same allocation (docs/C_API.md): from the first multiple
/// of 8 bytes after the text's terminating NUL (zero bytes between), `array_block_bytes` bytes of
/// little-endian float64 values.
private func ownedDocument(arrays: AnalysisArrayEncoding, _ build: (ArrayBlock?) -> JSON) throws(APIError) -> UnsafeMutablePointer<CChar> {
    guard arrays == .block else { return try ownedCString(build(nil).text) }
    let block = ArrayBlock()
    var text = build(block).text
    let values = block.values
    let memory = text.withUTF8 { (utf8: UnsafeBufferPointer<UInt8>) -> UnsafeMutableRawPointer? in
        let start = (utf8.count + 1 + 7) & ~7
        guard let memory = calloc(start + values.count * 8, 1) else { return nil }
        var w = ByteWriter(UnsafeMutableRawBufferPointer(start: memory, count: start + values.count * 8))
        w.write(UnsafeRawBufferPointer(utf8))
        w.position = start
        for value in values { w.write(value) }
        return memory
    }
    guard let memory else { throw APIError(.internal, "out of memory") }
    return memory.assumingMemoryBound(to: CChar.self)
}
