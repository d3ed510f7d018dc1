import Foundation
import Synchronization
import TributaryTransport
import TributaryWire

/// The description of a source whose blocks an application pushes (the C API's
/// `tributary_source_add`, Python's `Publisher.add_source`): checked as a whole by `PushSource.init`.
public struct PushSourceSpec: Sendable, Hashable {
    /// Sample types an application may push.
    public enum SampleType: String, Sendable, CaseIterable {
        case float64, float32, int16, int32

        /// Bytes per sample.
        public var size: Int { wireFormat.size }

        /// The wire's sample format (the same type: pushed samples go out as they are).
        public var wireFormat: SampleFormat {
            switch self {
            case .float64: .float64
            case .float32: .float32
            case .int16: .int16
            case .int32: .int32
            }
        }
    }

    /// Source id (> 0, unique within the publisher).
    public var id: UInt32
    /// Device name (the source's description in the welcome, `device_name` of its configuration).
    public var name: String
    /// Samples per second per channel.
    public var rate: Double
    /// One name per channel.
    public var channelNames: [String]
    /// Unit of the channels.
    public var unit: String
    /// Sample type of the pushed blocks.
    public var sampleType: SampleType
    /// For int16 and int32: value = count × scale + offset.
    public var scale: Double = 1
    public var offset: Double = 0
    /// The channels' configured range (physical units).
    public var range: ClosedRange<Double>
    /// Live (a full queue drops the block) or lossless (push waits for the slowest subscriber).
    public var delivery: SourceDelivery
    /// Free-form properties of the source and its channels (checked against `PropertyLimits`).
    public var properties = SourceProperties()

    public init(
        id: UInt32, name: String, rate: Double, channelNames: [String], unit: String, sampleType: SampleType,
        scale: Double = 1, offset: Double = 0, range: ClosedRange<Double>, delivery: SourceDelivery
    ) {
        self.id = id
        self.name = name
        self.rate = rate
        self.channelNames = channelNames
        self.unit = unit
        self.sampleType = sampleType
        self.scale = scale
        self.offset = offset
        self.range = range
        self.delivery = delivery
    }

    /// The configuration package of the source.
    public var configuration: Configuration {
        Configuration(
            deviceName: name, deviceType: "application \(sampleType.rawValue)",
            channels: channelNames.enumerated().map { k, channelName in
                ChannelConfiguration(
                    index: UInt32(k), description: channelName, unit: unit, samplingRate: rate,
                    minValue: range.lowerBound, maxValue: range.upperBound)
            })
    }
}

/// Why a push source could not be made, or a block not pushed: what is wrong, in words.
public struct PushSourceError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of mistake (the C API maps it to its status codes).
    public enum Kind: Sendable, Hashable {
        /// A value outside its domain (a rate, a size, a name, a layout).
        case argument
        /// The block's sample type is not the source's.
        case type
        /// The block's channel count is not the source's.
        case channels
        /// The source was closed, or its publisher stopped.
        case closed
    }

    public var kind: Kind
    public var message: String
    public var description: String { message }

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}

/// What became of a pushed block.
public enum PushOutcome: Sendable, Equatable {
    /// Handed to the publisher.
    case sent
    /// Live source, the publisher's hand-off queue full: not sent, counted in `dropped`; the block's
    /// samples count as lost (the next block's first sample index and time come after them).
    case dropped
    /// Lossless source, no room or credit before the timeout: not sent; the next block takes its
    /// place in the stream (push it again to send it).
    case timedOut
}

/// A source whose analog blocks the application pushes from its own thread: the door of the C and
/// Python publishing API into the same `Publisher` and hand-off queue as every other source.
///
/// `push` copies the caller's samples once, into the frame that goes to the publisher (channel-major
/// or interleaved in, channel-major out), and hands it to the publisher's queue from the calling
/// thread: a live source never waits (a full queue drops the block and counts it), a lossless one
/// waits for room and credit up to a timeout. `run` (the publisher's thread for the source) only
/// holds the sink until the source is closed or the publisher stops.
///
/// Timestamps: a block's first-sample time is the caller's when given; otherwise it follows from the
/// last given time (or the wall clock at the first push) and the number of samples since, at the
/// source's rate, so consecutive blocks are contiguous.
public final class PushSource: Source {
    public let spec: PushSourceSpec
    /// The wire's sample format of its frames (announced in discovery answers).
    public var sampleFormat: SampleFormat? { spec.sampleType.wireFormat }
    public let info: SourceInfo
    public let configuration: Configuration
    public let properties: SourceProperties
    public let delivery: SourceDelivery

    /// The most samples (channels × samples) in one block: a frame must fit the format's limit.
    public var maxSamplesPerBlock: Int {
        (WireLimits.maxFrameSize - WireLimits.headerLength - 64 - 20 * spec.channelNames.count) / spec.sampleType.size
    }

    private struct State {
        var sink: SourceSink?
        var closed = false
        /// Index of the next block's first sample.
        var nextSample: UInt64 = 0
        /// The time of sample `anchorSample` (the first push's wall clock, or the caller's last time).
        var anchorTimeNs: Int64?
        var anchorSample: UInt64 = 0
        var pushed: UInt64 = 0
        var dropped: UInt64 = 0
    }

    private let state = Mutex(State())
    private let ended = DispatchSemaphore(value: 0)
    /// The frame buffers of earlier pushes, written again once the publisher has let go of them.
    private let pool = Mutex(BufferPool())

    /// Checks the description.
    /// - Throws: `PushSourceError` (`.argument`) naming what is wrong.
    public init(spec: PushSourceSpec) throws(PushSourceError) {
        func fail(_ message: String) -> PushSourceError { PushSourceError(.argument, "source \(spec.id): \(message)") }
        guard spec.id > 0 else { throw PushSourceError(.argument, "the source id must be > 0 (0 is the publisher's own packages)") }
        // 0 Hz ("unknown" on the wire) is refused: the blocks' times follow from the rate.
        guard spec.rate >= WireLimits.minSamplingRate && spec.rate <= WireLimits.maxSamplingRate else {
            throw fail("sample rate \(spec.rate) Hz is outside [\(WireLimits.minSamplingRate), \(WireLimits.maxSamplingRate)] Hz")
        }
        guard !spec.channelNames.isEmpty, spec.channelNames.count <= WireLimits.maxChannels else {
            throw fail("\(spec.channelNames.count) channels: a source has 1 to \(WireLimits.maxChannels)")
        }
        let longest = 4096
        for (k, channelName) in spec.channelNames.enumerated() where channelName.utf8.count > longest {
            throw fail("channel \(k)'s name has \(channelName.utf8.count) bytes, more than \(longest)")
        }
        guard spec.name.utf8.count <= longest, spec.unit.utf8.count <= longest else {
            throw fail("the device name and the unit must have at most \(longest) bytes")
        }
        guard spec.range.lowerBound.isFinite, spec.range.upperBound.isFinite, spec.range.lowerBound < spec.range.upperBound else {
            throw fail("range \(spec.range.lowerBound)...\(spec.range.upperBound): expected finite MIN < MAX")
        }
        if spec.sampleType.wireFormat.isCounts {
            guard spec.scale.isFinite, spec.scale != 0, spec.offset.isFinite else {
                throw fail(
                    "\(spec.sampleType.rawValue) counts need a finite non-zero scale and a finite offset (value = count × scale + offset)")
            }
        } else if spec.scale != 1 || spec.offset != 0 {
            throw fail(
                "scale and offset apply to int16 and int32 counts; \(spec.sampleType.rawValue) samples are values already (give 1 and 0)")
        }
        if let problem = spec.properties.violation() { throw fail("properties: \(problem)") }
        if let entry = spec.properties.channels.first(where: { Int($0.index) >= spec.channelNames.count }) {
            throw fail(
                "properties of channel \(entry.index): the source has \(spec.channelNames.count) channels (0 to \(spec.channelNames.count - 1))"
            )
        }
        self.spec = spec
        info = SourceInfo(id: spec.id, description: spec.name)
        configuration = spec.configuration
        properties = spec.properties.normalized
        delivery = spec.delivery
    }

    /// Blocks handed to the publisher, and live blocks dropped because its queue was full.
    public var counts: (pushed: UInt64, dropped: UInt64) { state.withLock { ($0.pushed, $0.dropped) } }

    /// Frame buffers the source keeps for reuse (it adds one, two allocations, whenever more of its
    /// frames are in flight than ever before; the allocation guard tells that growth from the pushes).
    public var pooledBuffers: Int { pool.withLock { $0.count } }

    /// Frame buffers made but not kept, because the pool was at its bounds with every buffer in flight
    /// (two allocations each, like the pool's growth).
    public var unpooledBuffers: Int { pool.withLock { $0.unkept } }

    /// Whether `close` was called or the publisher stopped.
    public var isClosed: Bool { state.withLock { $0.closed } }

    public func run(_ sink: SourceSink) {
        let closedAlready = state.withLock { state -> Bool in
            if !state.closed { state.sink = sink }
            return state.closed
        }
        if closedAlready { return }
        while !sink.isCancelled {
            if ended.wait(timeout: .now() + .milliseconds(50)) == .success { break }
        }
        state.withLock {
            $0.closed = true
            $0.sink = nil
        }
    }

    /// Ends the source: later pushes fail; frames already handed over still go out. Idempotent.
    public func close() {
        let wasOpen = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        if wasOpen { ended.signal() }
    }

    /// How a block's samples are laid out in memory.
    public enum Layout: Sendable, Equatable {
        /// Channel 0's samples, then channel 1's, … (a C-contiguous (channels, samples) array).
        case channelMajor
        /// Sample 0 of every channel, then sample 1 of every channel, … (a (samples, channels) array).
        case interleaved
    }

    /// Publishes one analog block.
    /// - Parameters:
    ///   - samples: `channels × samplesPerChannel` samples of `type` (the source's type).
    ///   - channels: must be the source's channel count.
    ///   - layout: channel-major or interleaved.
    ///   - firstSampleTimeNs: the first sample's time (ns since 1970); nil: contiguous with the last block.
    ///   - timeoutNs: lossless only, how long to wait for room and credit.
    /// - Throws: `PushSourceError` for a block that does not fit the source, or a closed source.
    public func push(
        _ samples: UnsafeRawPointer, type: PushSourceSpec.SampleType, channels: Int, samplesPerChannel: Int,
        layout: Layout, firstSampleTimeNs: Int64?, timeoutNs: UInt64
    ) throws(PushSourceError) -> PushOutcome {
        let channelCount = spec.channelNames.count
        guard type == spec.sampleType else {
            throw PushSourceError(.type, "source \(spec.id) publishes \(spec.sampleType.rawValue) samples; the block is \(type.rawValue)")
        }
        guard channels == channelCount else {
            throw PushSourceError(
                .channels, "source \(spec.id) has \(channelCount) channel\(channelCount == 1 ? "" : "s"); the block has \(channels)")
        }
        guard samplesPerChannel > 0 else { throw PushSourceError(.argument, "the block has no samples (samples per channel is 0)") }
        let (total, overflow) = channels.multipliedReportingOverflow(by: samplesPerChannel)
        guard !overflow, total <= maxSamplesPerBlock else {
            throw PushSourceError(
                .argument,
                "\(channels) × \(samplesPerChannel) samples of \(type.rawValue) make a frame larger than the "
                    + "format's limit of \(WireLimits.maxFrameSize) bytes; push at most \(maxSamplesPerBlock / channels) samples per channel at a time"
            )
        }
        // The block's place in the stream and its time, without moving the stream yet (a lossless
        // block that times out leaves it as it was).
        let placed = state.withLock { state -> (sink: SourceSink, first: UInt64, timeNs: Int64)? in
            guard !state.closed, let sink = state.sink, !sink.isCancelled else { return nil }
            let first = state.nextSample
            let anchorTime: Int64
            let anchorSample: UInt64
            if let firstSampleTimeNs {
                (anchorTime, anchorSample) = (firstSampleTimeNs, first)
            } else if let time = state.anchorTimeNs {
                (anchorTime, anchorSample) = (time, state.anchorSample)
            } else {
                (anchorTime, anchorSample) = (wallClockNanoseconds(), first)
            }
            let offset = Int64(saturating: (Double(first - anchorSample) / spec.rate * 1e9).rounded()) ?? 0
            return (sink, first, anchorTime.addingSaturated(offset))
        }
        guard let placed else {
            // The source's thread may not have started yet right after `addSource`: wait a moment for it.
            if !isClosed && waitForSink() {
                return try push(
                    samples, type: type, channels: channels, samplesPerChannel: samplesPerChannel, layout: layout,
                    firstSampleTimeNs: firstSampleTimeNs, timeoutNs: timeoutNs)
            }
            throw PushSourceError(.closed, "source \(spec.id) is closed")
        }
        let deadline = monotonicNanoseconds().addingSaturated(timeoutNs)
        let byteCount =
            WireLimits.headerLength
            + AnalogLayout(channelCount: channels, sampleCount: samplesPerChannel, format: type.wireFormat).payloadLength
        guard let buffer = try frameBuffer(holding: byteCount, sink: placed.sink, deadline: deadline) else { return .timedOut }
        let frame = makeFrame(
            samples, into: buffer, channels: channels, count: samplesPerChannel, layout: layout, firstSample: placed.first,
            timestampNs: placed.timeNs)
        // The frame is handed over as the only other holder of its buffer; the pool's copy stays behind.
        let taken = placed.sink.publish(frame, waitingUntilMonotonicNanoseconds: deadline)
        if !taken && placed.sink.isCancelled {
            throw PushSourceError(.closed, "source \(spec.id): the publisher stopped")
        }
        return state.withLock { state -> PushOutcome in
            if !taken && delivery == .lossless { return .timedOut }
            // Sent, or dropped live (its samples are lost, the stream moves on past them).
            if firstSampleTimeNs != nil || state.anchorTimeNs == nil {
                state.anchorTimeNs = placed.timeNs
                state.anchorSample = placed.first
            }
            state.nextSample = placed.first.addingSaturated(UInt64(samplesPerChannel))
            if taken { state.pushed += 1 } else { state.dropped += 1 }
            return taken ? .sent : .dropped
        }
    }

    /// Waits up to 2 s for `run` to hand over the sink. - Returns: whether it did.
    private func waitForSink() -> Bool {
        let deadline = monotonicNanoseconds() + 2_000_000_000
        while monotonicNanoseconds() < deadline {
            let (ready, closed) = state.withLock { ($0.sink != nil, $0.closed) }
            if ready { return true }
            if closed { return false }
            usleep(1_000)
        }
        return false
    }

    /// A buffer of the pool for a frame of `byteCount` bytes. Every pooled buffer in flight and the pool
    /// at its bounds: a live push takes a buffer the pool does not keep; a lossless one waits for one of
    /// its frames to be let go of, as it waits for room and credit, until `deadline` (then nil).
    private func frameBuffer(holding byteCount: Int, sink: SourceSink, deadline: UInt64) throws(PushSourceError) -> FrameBuffer? {
        let mayGoBeyond = delivery == .live
        while true {
            if let buffer = pool.withLock({ $0.take(holding: byteCount, beyondBounds: mayGoBeyond) }) { return buffer }
            if sink.isCancelled { throw PushSourceError(.closed, "source \(spec.id): the publisher stopped") }
            if monotonicNanoseconds() >= deadline { return nil }
            usleep(50)
        }
    }

    /// The analog frame of a block, written into `buffer`: the one copy of the caller's samples.
    private func makeFrame(
        _ samples: UnsafeRawPointer, into buffer: FrameBuffer, channels: Int, count: Int, layout: Layout, firstSample: UInt64,
        timestampNs: Int64
    ) -> Frame {
        let header = FrameHeader(kind: .analog, sequence: 0, timestampNs: timestampNs, sourceID: spec.id)
        let type = spec.sampleType
        let size = type.size
        let analogLayout = AnalogLayout(channelCount: channels, sampleCount: count, format: type.wireFormat)
        // Pairs with the release of the publisher's (or libzmq's) last reference to a reused buffer.
        atomicMemoryFence(ordering: .acquiring)
        return Frame.analog(header: header, layout: analogLayout, firstSample: firstSample, reusing: buffer) { writer in
            for k in 0..<channels {
                writer.setChannelIndex(k, UInt32(k))
                if type.wireFormat.isCounts { writer.setScale(k, scale: spec.scale, offset: spec.offset) }
                let out = writer.samples(channel: k)
                switch layout {
                case .channelMajor:
                    out.baseAddress!.copyMemory(from: samples + k * count * size, byteCount: count * size)
                case .interleaved:
                    switch type {
                    case .float64: Self.gather(UInt64.self, from: samples, channel: k, channels: channels, count: count, into: out)
                    case .float32, .int32: Self.gather(UInt32.self, from: samples, channel: k, channels: channels, count: count, into: out)
                    case .int16: Self.gather(UInt16.self, from: samples, channel: k, channels: channels, count: count, into: out)
                    }
                }
            }
        }
    }

    /// Copies channel `channel` of interleaved samples (bit patterns of type `T`) into a row.
    private static func gather<T: FixedWidthInteger>(
        _: T.Type, from samples: UnsafeRawPointer, channel: Int, channels: Int, count: Int,
        into out: UnsafeMutableRawBufferPointer
    ) {
        let row = out.baseAddress!.assumingMemoryBound(to: T.self)
        let size = MemoryLayout<T>.size
        for i in 0..<count {
            row[i] = samples.loadUnaligned(fromByteOffset: (i * channels + channel) * size, as: T.self)
        }
    }
}

/// The frame buffers of a push source's earlier frames: a push writes its frame into one that no
/// frame holds any more (the publisher sent it, or dropped it), so that the steady state allocates
/// nothing; while every buffer is still in flight (queued for the publisher, in libzmq's pipe) a new
/// one joins, up to `maxBuffers` and `maxBytes`. At those bounds with every buffer in flight, `take`
/// returns nil (a lossless push waits for a buffer) or, `beyondBounds`, a buffer that is not kept (a
/// live push, whose frames in flight may outgrow the pool; also a frame larger than `maxBytes`).
///
/// A buffer is free when `isKnownUniquelyReferenced` (the pool holds the only reference): the check
/// and the hand-out happen under the pool's lock, and the buffer handed out is referenced twice from
/// then on, so no other push can take it until the frame made of it is gone.
struct BufferPool {
    /// At most this many buffers (small frames: a lossless source's 256-frame credit window and the
    /// hand-off queue's lossless window of 64, with room for a live source's short backlogs) …
    static let maxBuffers = 1024
    /// … holding at most this many bytes together (large frames: the 8 MiB credit window, twice).
    static let maxBytes = 16 << 20

    private var buffers: [FrameBuffer] = []
    private var bytes = 0
    /// Where the next search starts (the buffer after the last one handed out: the oldest frame).
    private var cursor = 0
    /// Buffers handed out without being kept (`beyondBounds`).
    private(set) var unkept = 0

    init() { buffers.reserveCapacity(Self.maxBuffers) }

    /// Buffers kept.
    var count: Int { buffers.count }

    /// A buffer of at least `byteCount` bytes that nothing else references; nil when none can be had
    /// within the bounds and `beyondBounds` is false.
    mutating func take(holding byteCount: Int, beyondBounds: Bool) -> FrameBuffer? {
        var tooSmall: Int?
        for step in 0..<buffers.count {
            let k = (cursor + step) % buffers.count
            guard isKnownUniquelyReferenced(&buffers[k]) else { continue }
            if buffers[k].writableCapacity >= byteCount {
                cursor = (k + 1) % buffers.count
                return buffers[k]
            }
            if tooSmall == nil { tooSmall = k }
        }
        // Every buffer is in flight or too small: a new one, replacing free ones that are too small.
        if let k = tooSmall, bytes - buffers[k].writableCapacity + byteCount <= Self.maxBytes {
            let buffer = FrameBuffer(reusableCapacity: byteCount)
            bytes += byteCount - buffers[k].writableCapacity
            buffers[k] = buffer
            cursor = (k + 1) % buffers.count
            return buffer
        }
        if tooSmall != nil && byteCount <= Self.maxBytes { dropFreeBuffers(toFit: byteCount) }
        if buffers.count < Self.maxBuffers && bytes + byteCount <= Self.maxBytes {
            let buffer = FrameBuffer(reusableCapacity: byteCount)
            bytes += byteCount
            buffers.append(buffer)
            cursor = 0
            return buffer
        }
        // A frame larger than the pool, or the pool full of frames in flight.
        let inFlight = byteCount <= Self.maxBytes && !buffers.isEmpty
        guard beyondBounds || !inFlight else { return nil }
        unkept += 1
        return FrameBuffer(reusableCapacity: byteCount)
    }

    /// Lets go of free buffers (too small for the frame) until one of `byteCount` bytes fits the bounds.
    private mutating func dropFreeBuffers(toFit byteCount: Int) {
        var k = 0
        while k < buffers.count && (buffers.count >= Self.maxBuffers || bytes + byteCount > Self.maxBytes) {
            if isKnownUniquelyReferenced(&buffers[k]) {
                bytes -= buffers[k].writableCapacity
                buffers.remove(at: k)
            } else {
                k += 1
            }
        }
        cursor = 0
    }
}
