import Foundation
import Synchronization
import TributaryText
import TributaryTransport
import TributaryWire

/// The stream a pipe carries, as given to `tributary serve --stdin`: interleaved little-endian
/// samples (sample 0 of every channel, then sample 1 of every channel, …) of one sample type.
///
/// Text form: comma-separated `key=value` pairs, e.g. `id=1,name=mic,channels=2,rate=48000,type=int16`
/// (the output of `arecord -t raw -f S16_LE -c 2 -r 48000`).
public struct PipeSpec: Sendable, Hashable {
    /// Sample types a pipe may carry.
    public enum SampleType: String, Sendable, CaseIterable {
        case int16, int32, float32, float64

        /// Bytes per sample.
        public var size: Int {
            switch self {
            case .int16: 2
            case .int32, .float32: 4
            case .float64: 8
            }
        }

        /// The wire's sample format for it: the same type (counts with the scale and offset).
        public var wireFormat: SampleFormat { encoding.wireFormat }

        var encoding: InterleavedEncoding {
            switch self {
            case .int16: .int16
            case .int32: .int32
            case .float32: .float32
            case .float64: .float64
            }
        }
    }

    /// How the pipe's frames reach subscribers.
    public enum Mode: String, Sendable, CaseIterable {
        /// Credit-based, as a replay: nothing is dropped; reading waits for the slowest subscriber
        /// (and so, through the pipe, does the program writing it).
        case lossless
        /// As a live device: the pipe is read as fast as it is written; a slow subscriber loses
        /// frames, announced in gap notices.
        case live
    }

    /// Source id (required, > 0).
    public var id: UInt32
    /// Device name (default `pipe-<id>`).
    public var name: String
    /// Interleaved channels (required).
    public var channels: Int
    /// Samples per second per channel (required).
    public var rate: Double
    /// Sample type (default float64).
    public var type: SampleType = .float64
    /// For int16 and int32: value = count × scale + offset (default 1 and 0).
    public var scale: Double = 1
    public var offset: Double = 0
    /// Unit of the channels (default V).
    public var unit: String = "V"
    /// Samples per channel per frame (default rate / 10, i.e. 10 frames per second).
    public var block: Int?
    /// The configured range of the channels (default: the sample type's, through scale and offset,
    /// for counts; ±10 for floats).
    public var range: ClosedRange<Double>?
    /// Lossless (default) or live.
    public var mode: Mode = .lossless

    /// Samples per frame.
    public var samplesPerFrame: Int { block ?? max(1, Int((rate / 10).rounded())) }

    /// Bytes of one sample of every channel.
    public var bytesPerSampleRow: Int { channels * type.size }

    public init(id: UInt32, name: String? = nil, channels: Int, rate: Double) {
        self.id = id
        self.name = name ?? "pipe-\(id)"
        self.channels = channels
        self.rate = rate
    }

    /// Parses the text form.
    /// - Throws: `PipeSpecError` naming the key or value that is wrong.
    public init(parsing text: String) throws(PipeSpecError) {
        do throws(KeyValueSpecError) {
            var fields = try KeyValueSpec(parsing: text)
            guard let id = try fields.integer("id", 1...Int(UInt32.max)) else {
                throw KeyValueSpecError("id is required (a source id > 0)")
            }
            guard let channels = try fields.integer("channels", 1...WireLimits.maxChannels) else {
                throw KeyValueSpecError("channels is required (the number of interleaved channels, 1...\(WireLimits.maxChannels))")
            }
            guard let rate = try fields.number("rate", WireLimits.isValidSamplingRate, "a rate in [1e-6, 1e12] Hz") else {
                throw KeyValueSpecError("rate is required (samples per second per channel)")
            }
            self.init(id: UInt32(id), name: fields.take("name"), channels: channels, rate: rate)
            if let v = try fields.choice("type", SampleType.self) { type = v }
            if let v = try fields.number("scale", { $0 != 0 }, "a non-zero scale") { scale = v }
            if let v = try fields.number("offset", { _ in true }, "a number") { offset = v }
            if let v = fields.take("unit") { unit = v }
            block = try fields.integer("block", 1...(1 << 24))
            range = try fields.range("range", example: "-10:10")
            if let v = try fields.choice("mode", Mode.self) { mode = v }
            try fields.finish(known: ["id", "name", "channels", "rate", "type", "scale", "offset", "unit", "block", "range", "mode"])
            if (type == .float32 || type == .float64) && (scale != 1 || offset != 0) {
                throw KeyValueSpecError("scale and offset apply to counts (type=int16 or int32); \(type) samples are values already")
            }
            try InterleavedBlocks.checkFrameSize(channels: channels, samplesPerFrame: samplesPerFrame, format: type.wireFormat)
        } catch {
            throw PipeSpecError(spec: text, message: error.message)
        }
    }

    /// The configuration package of the source.
    public var configuration: Configuration {
        let limits: ClosedRange<Double>
        switch type {
        case _ where range != nil: limits = range!
        case .int16: limits = countRange(Double(Int16.min), Double(Int16.max))
        case .int32: limits = countRange(Double(Int32.min), Double(Int32.max))
        case .float32, .float64: limits = -10...10
        }
        return Configuration(
            deviceName: name, deviceType: "pipe \(type.rawValue)",
            channels: (0..<channels).map {
                ChannelConfiguration(
                    index: UInt32($0), description: "ch\($0)", unit: unit, samplingRate: rate,
                    minValue: limits.lowerBound, maxValue: limits.upperBound)
            })
    }

    private func countRange(_ lo: Double, _ hi: Double) -> ClosedRange<Double> {
        let a = lo * scale + offset, b = hi * scale + offset
        return min(a, b)...max(a, b)
    }
}

/// A `--stdin` spec that does not parse.
public struct PipeSpecError: Error, Hashable, Sendable, CustomStringConvertible {
    public var spec: String
    public var message: String
    public var description: String { "pipe spec '\(spec)': \(message)" }
}

/// What a pipe source did, for the application's report.
public typealias PipeProgress = StreamProgress

/// A source that publishes the samples a pipe (or any readable descriptor) carries: blocks of
/// `spec.samplesPerFrame` samples, de-interleaved into analog frames of the spec's type.
///
/// Timestamps are sample-accurate: the first sample's time is the wall-clock time at which the first
/// bytes arrived, and each frame's time follows from its first sample's index and the rate, so
/// consecutive frames are contiguous. The end of the input ends the source: a partial last block is
/// published as a shorter frame, and bytes that are not a whole sample of every channel are reported.
/// A lossless pipe starts reading once `waitForSubscribers` subscribers have started.
public final class PipeSource: Source {
    public let spec: PipeSpec
    /// The wire's sample format of its frames (announced in discovery answers).
    public var sampleFormat: SampleFormat? { spec.type.wireFormat }
    public let info: SourceInfo
    public let configuration: Configuration
    /// Free-form properties of the source and its channels (`serve --property`).
    public let properties: SourceProperties
    public let delivery: SourceDelivery
    /// The descriptor read (not closed by the source).
    public let descriptor: Int32
    /// Started subscribers to wait for before reading (lossless only; 0: at once).
    public let waitForSubscribers: Int
    private let progressState = ProgressRecord()

    /// - Parameters:
    ///   - spec: the stream.
    ///   - descriptor: where to read it (default standard input).
    ///   - waitForSubscribers: for a lossless pipe, started subscribers to wait for before reading.
    ///   - properties: the source's and its channels' properties, checked by the caller.
    public init(
        spec: PipeSpec, descriptor: Int32 = STDIN_FILENO, waitForSubscribers: Int = 1, properties: SourceProperties = SourceProperties()
    ) {
        self.spec = spec
        self.properties = properties
        self.descriptor = descriptor
        self.waitForSubscribers = waitForSubscribers
        info = SourceInfo(id: spec.id, description: spec.name)
        configuration = spec.configuration
        delivery = spec.mode == .lossless ? .lossless : .live
    }

    /// What the source has done so far.
    public var progress: PipeProgress { progressState.current }

    public func run(_ sink: SourceSink) {
        if delivery == .lossless {
            guard sink.waitForStartedSubscribers(waitForSubscribers) else { return }
        }
        var blocks = InterleavedBlocks(
            sourceID: spec.id, channels: spec.channels, rate: spec.rate, encoding: spec.type.encoding,
            scale: spec.scale, offset: spec.offset, progress: progressState)
        let row = spec.bytesPerSampleRow
        var buffer = [UInt8](repeating: 0, count: spec.samplesPerFrame * row)
        var firstTimeNs: Int64?
        var endOfInput = false
        while !endOfInput {
            var filled = 0
            do throws(ReadEnd) {
                filled = try fill(&buffer, sink: sink, firstArrivalNs: &firstTimeNs)
            } catch {
                switch error {
                case .cancelled: return
                case .endOfInput(let count):
                    filled = count
                    endOfInput = true
                case .failed(let message, let count):
                    progressState.update { $0.problems.append(message) }
                    filled = count
                    endOfInput = true
                }
            }
            // The first sample is stamped with the time its bytes arrived.
            let published = buffer.withUnsafeBytes { blocks.publish(rows: filled / row, of: $0, to: sink, startNs: { firstTimeNs ?? 0 }) }
            if !published { return }
            if endOfInput && filled % row != 0 {
                let rest = filled % row
                progressState.update {
                    $0.problems.append(
                        "the input ended with \(rest) byte\(rest == 1 ? "" : "s") that are not a whole sample of every channel "
                            + "(\(row) bytes: \(spec.channels) × \(spec.type.rawValue)); they were not published")
                }
            }
        }
        progressState.update { $0.finished = true }
    }

    private enum ReadEnd: Error {
        case cancelled
        case endOfInput(Int)
        /// A read failed after `Int` bytes of the block had been read (they are published).
        case failed(String, Int)
    }

    /// Reads until `buffer` is full; sets `firstArrivalNs` to the wall-clock time at which the first
    /// bytes arrive. Waits for input in steps of 100 ms so that a publisher that stops is noticed
    /// while the pipe is quiet.
    private func fill(_ buffer: inout [UInt8], sink: SourceSink, firstArrivalNs: inout Int64?) throws(ReadEnd) -> Int {
        var filled = 0
        let capacity = buffer.count
        while filled < capacity {
            if sink.isCancelled { throw .cancelled }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .failed("reading the input: \(String(cString: strerror(errno)))", filled)
            }
            if ready == 0 { continue }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, capacity - filled) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .failed("reading the input: \(String(cString: strerror(errno)))", filled)
            }
            if count == 0 { throw .endOfInput(filled) }
            if firstArrivalNs == nil { firstArrivalNs = wallClockNanoseconds() }
            filled += count
        }
        return filled
    }
}
