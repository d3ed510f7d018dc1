import Foundation
import TributaryAnalysis
import TributaryCapture
import TributaryDSP
import TributaryText
import TributaryWire

/// `tributary process IN --out OUT.tcap [--filter SPEC] [--notch F0:Q] [--decimate N]`: a capture's
/// (or an imported file's) analog data filtered and decimated, chunk by chunk, its gaps, times and other frames kept.
enum ProcessCommand: TableCommand {
    static let name = "process"
    static let summary = "filter, notch and decimate a capture's analog data into a new capture, chunk by chunk"
    static let usage = """
        usage: tributary process IN.tcap --out OUT.tcap [--filter SPEC] [--notch F0:Q] [--decimate N | --resample UP/DOWN]
                                 [--source N] [--force]
               tributary process IN.npy|.wav|.csv|.tdms|.xdf|.h5 --out OUT.tcap [--rate HZ] [--start-time T] [--select NAMES] …

        Reads the capture IN chunk by chunk (never the whole recording in memory) and writes OUT.tcap: the
        analog frames of every source (or of --source N) filtered, notched, then decimated or resampled,
        each channel by itself, as scipy's sosfilt, lfilter, decimate(x, N, ftype='iir', zero_phase=False)
        and resample_poly(x, UP, DOWN) would treat the whole recording (docs/SIGNAL.md). The processed
        samples are float64 (int16 counts are scaled to their physical values first); each output frame
        keeps the sequence number and the source of the input frame it came from; its time is the time
        of its first sample (resampled: the segment's start + k / the new rate). Configurations give the
        new rate. Every other frame (other sources, messages, arrays, digital data, …) and the gap records
        are copied as they are, in place. A gap — the next analog frame of a source not continuing its
        sample numbering, a change of its channels, or a configuration changing its rate — ends a
        segment: every filter restarts at rest, nothing is carried across it, and the output has the gap
        at the same time (a resampler first gives its last outputs, as resample_poly pads the end with zeros).

        \(ownOptions.help())

        At least one of --filter, --notch, --decimate and --resample is required. Every frequency must be above 0 and
        below half the rate of each processed source (its configuration gives the rate); a source with no
        known single rate is an error. An IN that is not a capture (NPY, WAV, CSV, TDMS, XDF, HDF5) is first
        recorded as 'tributary import' would, into a capture in a new directory beside OUT (removed at the
        end; the import reads the file in bounded pieces), with import's options:
        \(ImportRequest.readOptions.help())
        Damage found in IN (a damaged chunk, a torn tail, …) is listed on stderr, OUT is not written and
        the exit status is 3 (run 'tributary repair' first).
        Exit status: 0 written, 1 error, 2 usage, 3 damaged capture (nothing written).
        """

    static let damagedStatus: Int32 = 3

    /// `--resample UP/DOWN`: two integers from 1 to 2^20, reduced by their gcd.
    static func ratio(_ text: String) throws -> (up: Int, down: Int) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let up = Int(parts[0]), let down = Int(parts[1]), (1...RateChange.maxFactor).contains(up),
            (1...RateChange.maxFactor).contains(down)
        else {
            throw UsageError("--resample '\(text)': expected UP/DOWN, two integers from 1 to \(RateChange.maxFactor), e.g. 3/2")
        }
        guard let reduced = try? RateChange.reduced(up: up, down: down), reduced.up != reduced.down else {
            throw UsageError("--resample '\(text)': UP/DOWN must change the rate")
        }
        return reduced
    }
    static let maxOrder = 64

    /// The command line as given.
    struct Given {
        var filter: FilterSpec?
        var notch: NotchSpec?
        var decimate: Int?
        var resample: String?
        var out: String?
        var source: UInt32?
        var force = false
        var importing = ImportRequest(out: "")
    }

    /// The input, the processing and the output.
    struct Configuration {
        var input: String
        var out: String
        var plan: ProcessPlan
        var source: UInt32?
        var force: Bool
        /// How an input that is not a capture is imported first.
        var importing: ImportRequest
    }

    static var ownOptions: OptionTable<Given> {
        OptionTable([
            .custom(
                "--filter", "SPEC",
                """
                an IIR filter FAMILY:ORDER:BAND:F[-F2][:PARAM=VALUE]... with frequencies in Hz:
                FAMILY butter, cheby1 (needs rp=DB), cheby2 (needs rs=DB), ellip (needs rp= and rs=),
                bessel (norm=phase|delay, default phase); ORDER 1 to 64; BAND lowpass, highpass
                (one frequency), bandpass, bandstop (two, F-F2); e.g. butter:8:lowpass:1000,
                butter:4:bandpass:10-200, cheby1:6:highpass:50:rp=1, ellip:4:lowpass:100:rp=0.5:rs=60
                """
            ) { given, text in given.filter = try FilterSpec(text) },
            .custom("--notch", "F0:Q", "a notch (scipy's iirnotch) at F0 Hz with quality factor Q, e.g. 50:30") { given, text in
                given.notch = try NotchSpec(text)
            },
            .parsed(
                "--decimate", "N", "an integer from 2 to \(RateChange.maxFactor)",
                """
                keep every N-th sample (N 2 to 1048576) after decimate's anti-aliasing filter, a
                Chebyshev I of order 8, 0.05 dB ripple, cutoff 0.8 × rate / (2N), run forward only
                """, \.decimate
            ) { text in Int(text).flatMap { $0 >= 2 && $0 <= RateChange.maxFactor ? $0 : nil } },
            .text(
                "--resample", "UP/DOWN",
                """
                resample_poly by UP/DOWN (integers 1 to 1048576, e.g. 3/2): scipy's Kaiser (beta 5)
                firwin filter, padtype 'constant' (zeros beyond each segment's ends), its delay removed
                """, \.resample),
            .text("--out", "OUT.tcap", "the capture to write (required)", \.out),
            .parsed(
                "--source", "N", "a source id 0 to 4294967295", "process only source N (its other sources are copied as they are)", \.source
            ) {
                UInt32($0)
            },
            .flag("--force", "replace OUT.tcap if it exists, once the new capture is complete (never IN itself)", \.force),
        ])
    }

    static var options: OptionTable<Given> { ownOptions + ImportRequest.readOptions.lifted(\.importing) }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var given = Given()
        let inputs = try options.parse(arguments, into: &given)
        guard let out = given.out else { throw UsageError("missing --out OUT.tcap") }
        let input = try Positionals.one(inputs, "IN", missing: "IN.tcap")
        guard given.filter != nil || given.notch != nil || given.decimate != nil || given.resample != nil else {
            throw UsageError("give at least one of --filter, --notch, --decimate and --resample")
        }
        if given.decimate != nil && given.resample != nil { throw UsageError("give --decimate or --resample, not both") }
        let resample = try given.resample.map(Self.ratio)
        guard out.hasSuffix(".tcap") else { throw UsageError("--out '\(out)': OUT must be a capture, its name ending in .tcap") }
        let plan = ProcessPlan(filter: given.filter, notch: given.notch, decimate: given.decimate, resample: resample)
        return Configuration(input: input, out: out, plan: plan, source: given.source, force: given.force, importing: given.importing)
    }

    static func run(_ c: Configuration) throws -> Int32 {
        let input = c.input, out = c.out, plan = c.plan, source = c.source, force = c.force
        var importing = c.importing
        try InputFile.check(input)
        // Another format is recorded first as `tributary import` would (its options --rate, --select,
        // --start-time), into a capture in a new directory beside OUT, removed at the end.
        var imported: ImportedInput?
        defer { imported?.remove() }
        if CaptureDescription.isCapture(input) {
            if importing.rate != nil || importing.select != nil || importing.startText != nil {
                throw UsageError("--rate, --select and --start-time apply to an IN that is not a capture; \(input) is one")
            }
        } else {
            imported = try ImportedInput(input, besides: out, request: &importing)
        }
        let readPath = imported?.capture ?? input
        let reader: CaptureReader
        do { reader = try CaptureReader(path: readPath) } catch { throw CommandError("\(input): \(error)") }
        let output = try FilterOutput(out, input: input, force: force)
        var processor = CaptureProcessor(plan: plan, only: source)
        do {
            var gapRecords = 0
            let gaps = Dictionary(reader.gaps.map { ($0.offset, $0) }, uniquingKeysWith: { a, _ in a })
            for entry in reader.index where reader.damage.isEmpty {
                switch entry.envelope.type {
                case .chunk:
                    guard let frames = try? reader.frames(of: entry) else { continue }
                    for frame in frames { try processor.process(frame, output.append) }
                case .gap:
                    if let g = gaps[entry.offset], try output.recordGap(g) { gapRecords += 1 }
                default:
                    continue
                }
            }
            try processor.finish(output.append)
            if !reader.damage.isEmpty {
                output.abandon()
                for d in reader.damage { printError("tributary process: \(input): damage at \(d)") }
                printError(
                    "tributary process: \(input) is damaged (\(counted(reader.damage.count, "damaged region"))); nothing written. "
                        + "Run 'tributary repair \(input) --out REPAIRED.tcap' first")
                return damagedStatus
            }
            guard processor.processedFrames > 0 else {
                output.abandon()
                throw CommandError(
                    "\(input): no analog frames " + (source.map { "of source \($0) " } ?? "") + "to process; nothing written")
            }
            try output.finish()
            print(
                "\(out): \(counted(processor.processedFrames, "analog frame")) processed into \(counted(processor.writtenSamples, "sample")) "
                    + "per channel (\(counted(processor.segments, "segment"))), \(counted(processor.copiedFrames, "frame")) copied, "
                    + "\(counted(gapRecords, "gap record")) kept")
            return 0
        } catch let error as ProcessError {
            output.abandon()
            throw CommandError("\(input): \(error.text)")
        } catch {
            output.abandon()
            throw CommandError("\(input): \(error)")
        }
    }
}

/// A problem with the data being processed (no rate, a frequency above its Nyquist).
struct ProcessError: Error { let text: String }

/// `--filter FAMILY:ORDER:BAND:F[-F2][:PARAM=VALUE]...`, checked when parsed; designed per source rate.
struct FilterSpec {
    let text: String
    let family: FilterFamily
    let order: Int
    let band: FilterBand
    let frequencies: [Double]

    init(_ text: String) throws {
        self.text = text
        func bad(_ why: String) -> UsageError { UsageError("--filter '\(text)': \(why)") }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 4 else { throw bad("expected FAMILY:ORDER:BAND:F[-F2], e.g. butter:8:lowpass:1000") }
        guard let order = Int(parts[1]), order >= 1, order <= ProcessCommand.maxOrder else {
            throw bad("the order '\(parts[1])' is not an integer from 1 to \(ProcessCommand.maxOrder)")
        }
        guard let band = FilterBand(rawValue: parts[2]) else {
            throw bad("the band '\(parts[2])' is not lowpass, highpass, bandpass or bandstop")
        }
        let frequencyTexts = parts[3].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard frequencyTexts.count == band.frequencyCount else {
            throw bad(band.frequencyCount == 1 ? "\(band.rawValue) takes one frequency F" : "\(band.rawValue) takes two frequencies F1-F2")
        }
        var frequencies: [Double] = []
        for f in frequencyTexts {
            guard let v = Double(f), v > 0, v.isFinite else { throw bad("the frequency '\(f)' is not a positive number of Hz") }
            frequencies.append(v)
        }
        if frequencies.count == 2, !(frequencies[0] < frequencies[1]) { throw bad("F1 must be below F2 in F1-F2") }
        var params: [String: String] = [:]
        for p in parts[4...] {
            let kv = p.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2, ["rp", "rs", "norm"].contains(kv[0]) else {
                throw bad("'\(p)' is not rp=DB, rs=DB or norm=phase|delay")
            }
            guard params[kv[0]] == nil else { throw bad("\(kv[0]) given twice") }
            params[kv[0]] = kv[1]
        }
        func decibels(_ name: String) throws -> Double {
            guard let t = params.removeValue(forKey: name) else { throw bad("\(parts[0]) needs \(name)=DB") }
            guard let v = Double(t), v > 0, v <= 1000 else { throw bad("\(name) '\(t)' is not a number of dB above 0, at most 1000") }
            return v
        }
        switch parts[0] {
        case "butter": family = .butterworth
        case "cheby1": family = .chebyshev1(ripple: try decibels("rp"))
        case "cheby2": family = .chebyshev2(attenuation: try decibels("rs"))
        case "ellip":
            let rp = try decibels("rp"), rs = try decibels("rs")
            family = .elliptic(ripple: rp, attenuation: rs)
        case "bessel":
            let t = params.removeValue(forKey: "norm") ?? "phase"
            guard let norm = BesselNorm(rawValue: t) else { throw bad("norm '\(t)' is not phase or delay") }
            family = .bessel(norm: norm)
        default:
            throw bad("the family '\(parts[0])' is not butter, cheby1, cheby2, ellip or bessel")
        }
        if let extra = params.keys.sorted().first { throw bad("\(parts[0]) takes no \(extra)") }
        self.order = order
        self.band = band
        self.frequencies = frequencies
    }

    func sections(rate: Double) throws -> SecondOrderSections {
        guard let top = frequencies.last, top < rate / 2 else {
            throw ProcessError(text: "--filter '\(text)': every frequency must be below half the rate, \(rate / 2) Hz")
        }
        do { return try FilterDesign.iirSOS(order: order, frequencies: frequencies, band: band, family: family, fs: rate) } catch {
            throw ProcessError(text: "--filter '\(text)' at \(rate) Hz: \(error)")
        }
    }
}

/// `--notch F0:Q`.
struct NotchSpec {
    let text: String
    let f0: Double, q: Double

    init(_ text: String) throws {
        self.text = text
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw UsageError("--notch '\(text)': expected F0:Q, e.g. 50:30") }
        guard let f0 = Double(parts[0]), f0 > 0, f0.isFinite else {
            throw UsageError("--notch '\(text)': F0 '\(parts[0])' is not a positive number of Hz")
        }
        guard let q = Double(parts[1]), q > 0, q <= 1e6 else {
            throw UsageError("--notch '\(text)': Q '\(parts[1])' is not a number above 0, at most 1e6")
        }
        (self.f0, self.q) = (f0, q)
    }

    func function(rate: Double) throws -> TransferFunction {
        guard f0 < rate / 2 else { throw ProcessError(text: "--notch '\(text)': F0 must be below half the rate, \(rate / 2) Hz") }
        do { return try FilterDesign.notch(w0: f0, q: q, fs: rate) } catch {
            throw ProcessError(text: "--notch '\(text)' at \(rate) Hz: \(error)")
        }
    }
}

struct ProcessPlan {
    let filter: FilterSpec?
    let notch: NotchSpec?
    let decimate: Int?
    let resample: (up: Int, down: Int)?

    /// The output rate over the input rate.
    var factor: Double {
        if let q = decimate { return 1 / Double(q) }
        if let r = resample { return Double(r.up) / Double(r.down) }
        return 1
    }

    func chain(rate: Double, channels: Int) throws -> SignalChain {
        do {
            return try SignalChain(
                filter: try filter?.sections(rate: rate), notch: try notch?.function(rate: rate), decimate: decimate, resample: resample,
                channels: channels)
        } catch let error as FilterError {
            throw ProcessError(text: "\(error)")
        }
    }
}

/// The frames of a capture in file order through the plan: each processed source's analog frames
/// through its `SignalChain`, restarted at every gap; its configurations with the new rate.
struct CaptureProcessor {
    let plan: ProcessPlan
    let only: UInt32?

    struct SourceState {
        var configuration: Configuration?
        var chain: SignalChain?
        var channelIndexes: [UInt32] = []
        var rate: Double = 0
        /// The input sample number that continues the segment.
        var nextSample: UInt64 = 0
        /// The output sample number after the last one written.
        var nextOutput: UInt64 = 0
        /// The time of the segment's first sample, and its outputs so far (for resampled times).
        var segmentStartNs: Int64 = 0
        var segmentOutputs = 0
        var lastHeader: FrameHeader?
        var started = false
    }
    var sources: [UInt32: SourceState] = [:]
    var processedFrames = 0, writtenSamples = 0, copiedFrames = 0, segments = 0

    func processes(_ source: UInt32) -> Bool { only == nil || only == source }

    /// The one sampling rate `configuration` gives the channels `indexes`, or nil.
    static func rate(of indexes: [UInt32], in configuration: Configuration?) -> Double? {
        let configured = Dictionary((configuration?.channels ?? []).map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        let rates = Set(indexes.compactMap { configured[$0]?.samplingRate })
        guard rates.count == 1, indexes.allSatisfy({ configured[$0] != nil }), let rate = rates.first, rate > 0, rate.isFinite else {
            return nil
        }
        return rate
    }

    mutating func process(_ frame: Frame, _ emit: (Frame) throws -> Void) throws {
        let id = frame.header.sourceID
        guard processes(id), frame.header.kind == .analog || frame.header.kind == .configuration else {
            copiedFrames += 1
            return try emit(frame)
        }
        var state = sources[id] ?? SourceState()
        defer { sources[id] = state }
        if frame.header.kind == .configuration {
            guard case .configuration(var configuration) = try frame.payload() else { return try emit(frame) }
            // A new rate for the segment's channels ends it: what the resampler still owes goes first.
            if state.started, Self.rate(of: state.channelIndexes, in: configuration) != state.rate { try flush(&state, emit) }
            state.configuration = configuration
            for i in configuration.channels.indices { configuration.channels[i].samplingRate *= plan.factor }
            try emit(Frame(encoding: .configuration(configuration), header: frame.header))
            return
        }
        let view = try frame.analog()
        let indexes = view.channelIndexes
        guard let rate = Self.rate(of: indexes, in: state.configuration) else {
            throw ProcessError(
                text: "source \(id): no single sampling rate for channels \(indexes.map(String.init).joined(separator: ",")) "
                    + "in a configuration before its analog frame \(frame.header.sequence)")
        }
        if state.chain == nil || !state.started || view.firstSample != state.nextSample || indexes != state.channelIndexes
            || rate != state.rate
        {
            // A new segment: every filter at rest; its output numbering leaves a hole after the last one.
            try flush(&state, emit)
            let first = UInt64(min((Double(view.firstSample) * plan.factor).rounded(.up), Double(UInt64.max >> 1)))
            let gapped = state.started
            state.chain = try plan.chain(rate: rate, channels: indexes.count)
            state.channelIndexes = indexes
            state.rate = rate
            state.nextOutput = gapped && first <= state.nextOutput ? state.nextOutput &+ 1 : first
            state.segmentStartNs = frame.header.timestampNs
            state.segmentOutputs = 0
            state.started = true
            segments += 1
        }
        state.nextSample = view.firstSample &+ UInt64(view.sampleCount)
        state.lastHeader = frame.header
        processedFrames += 1
        let offset = state.chain!.firstKept()
        var rows: [[Double]] = []
        rows.reserveCapacity(indexes.count)
        for c in 0..<indexes.count { rows.append(state.chain!.process(view.values(channel: c), channel: c)) }
        // A decimated frame's time is its first kept sample's; resampled outputs trail their input,
        // so theirs is counted from the segment's start.
        let time =
            state.chain!.trails
            ? segmentTime(state, outputs: state.segmentOutputs)
            : frame.header.timestampNs.addingSaturated(Int64(saturating: (Double(offset) * 1e9 / rate).rounded()) ?? 0)
        try write(rows, time: time, header: frame.header, &state, emit)
    }

    /// The time of output `outputs` of the segment: its start plus outputs / output rate.
    func segmentTime(_ state: SourceState, outputs: Int) -> Int64 {
        let ns = (Double(outputs) * 1e9 / (state.rate * plan.factor)).rounded()
        return state.segmentStartNs.addingSaturated(Int64(max(min(ns, 9e18), -9e18)))
    }

    mutating func write(
        _ rows: [[Double]], time: Int64, header frameHeader: FrameHeader, _ state: inout SourceState, _ emit: (Frame) throws -> Void
    )
        throws
    {
        let count = rows.first?.count ?? 0
        guard count > 0 else { return }
        var header = frameHeader
        header.timestampNs = time
        let indexes = state.channelIndexes
        let layout = AnalogLayout(channelCount: indexes.count, sampleCount: count, format: .float64)
        let first = state.nextOutput
        try emit(
            Frame.analog(header: header, layout: layout, firstSample: first) { writer in
                for (c, row) in rows.enumerated() {
                    writer.setChannelIndex(c, indexes[c])
                    row.withUnsafeBytes { writer.samples(channel: c).copyMemory(from: $0) }
                }
            })
        state.nextOutput = first &+ UInt64(count)
        state.segmentOutputs += count
        writtenSamples += count
    }

    /// Ends the segment of a source: the resampler's last outputs (with the last frame's header).
    mutating func flush(_ state: inout SourceState, _ emit: (Frame) throws -> Void) throws {
        guard state.started, state.chain?.trails == true, let header = state.lastHeader else { return }
        var rows: [[Double]] = []
        for c in 0..<state.channelIndexes.count { rows.append(state.chain!.finish(channel: c)) }
        try write(rows, time: segmentTime(state, outputs: state.segmentOutputs), header: header, &state, emit)
    }

    /// Ends every source's segment (at the end of the input).
    mutating func finish(_ emit: (Frame) throws -> Void) throws {
        for id in sources.keys.sorted() {
            var state = sources[id]!
            try flush(&state, emit)
            sources[id] = state
        }
    }
}

/// A file that is not a capture, recorded as one in a new directory beside OUT for `process` to read.
struct ImportedInput {
    let directory: String
    let capture: String

    init(_ input: String, besides out: String, request: inout ImportRequest) throws {
        let parent = (out as NSString).deletingLastPathComponent
        var template = Array(((parent.isEmpty ? "." : parent) as NSString).appendingPathComponent(".tributary-process-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!).map { String(cString: $0) } }) else {
            throw CommandError("cannot make a directory beside \(out) to import \(input) into: \(String(cString: strerror(errno)))")
        }
        directory = made
        capture = (made as NSString).appendingPathComponent("imported.tcap")
        request.path = input
        request.out = capture
        do { _ = try ImportCommand.perform(request) } catch {
            remove()
            throw error
        }
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
