import Foundation
import Synchronization
import TributaryText
import TributaryTransport
import TributaryWire

/// How one sample of an interleaved little-endian stream is stored, as pipes and sound cards hand
/// them over, and what it becomes on the wire.
enum InterleavedEncoding: Sendable, Hashable {
    /// 16-bit counts (sent as int16 counts with the scale and offset).
    case int16
    /// 24-bit counts in the low three bytes of a 32-bit word (ALSA's S24_LE; the high byte is ignored).
    case int24In32
    /// 32-bit counts.
    case int32
    case float32
    case float64

    /// Bytes per sample.
    var size: Int {
        switch self {
        case .int16: 2
        case .int24In32, .int32, .float32: 4
        case .float64: 8
        }
    }

    /// The wire's sample format: 16-bit counts as int16, 24- and 32-bit counts as int32 (24-bit ones
    /// sign-extended), each with the scale and offset; floats as they are.
    var wireFormat: SampleFormat {
        switch self {
        case .int16: .int16
        case .int24In32, .int32: .int32
        case .float32: .float32
        case .float64: .float64
        }
    }

    /// Whether the samples are counts (scale and offset apply).
    var isCounts: Bool { self == .int16 || self == .int24In32 || self == .int32 }
}

/// What a source that reads interleaved blocks (a pipe, a sound card) did, for the application's report.
public struct StreamProgress: Sendable, Equatable {
    /// Analog frames handed to the publisher (refused ones, live, are not counted).
    public var framesPublished: Int = 0
    /// Frames the publisher refused (live mode, its hand-off queue full).
    public var framesRefused: Int = 0
    /// Samples per channel read.
    public var samplesRead: UInt64 = 0
    /// Capture overruns (a sound card's buffer filled before it was read): each a declared gap.
    public var overruns: Int = 0
    /// Samples per channel lost in overruns (the jumps in `first_sample` they declared).
    public var samplesLost: UInt64 = 0
    /// Whether the source has ended: the end of the input (or of the samples asked for) was reached,
    /// or an error ended it (`problems` says which).
    public var finished = false
    /// What went wrong: a read error, bytes at the end that are not a whole sample of every channel.
    public var problems: [String] = []
}

/// A source's progress, shared between its reading thread and the application.
final class ProgressRecord: Sendable {
    private let state = Mutex(StreamProgress())
    var current: StreamProgress { state.withLock { $0 } }
    func update(_ body: (inout StreamProgress) -> Void) { state.withLock { body(&$0) } }
}

/// The sample index and time of a source's blocks: contiguous (each block's first sample follows the
/// last one's, its time follows from the index and the rate) until the acquisition restarts after a
/// loss, which moves the stream on past the lost samples — a jump in `first_sample` that declares the gap.
struct SampleClock: Sendable, Equatable {
    let rate: Double
    /// Index of the next block's first sample.
    private(set) var nextSample: UInt64 = 0
    /// The time of sample `anchorSample` (nil until the first block).
    private(set) var anchorNs: Int64?
    private(set) var anchorSample: UInt64 = 0

    init(rate: Double) { self.rate = rate }

    /// Places a block of `rows` samples: its first sample's index and time. The first block's time is
    /// `startNs()` (the acquisition clock's time of its first sample); later ones follow from it.
    mutating func place(rows: Int, startNs: () -> Int64) -> (first: UInt64, timeNs: Int64) {
        if anchorNs == nil { (anchorNs, anchorSample) = (startNs(), nextSample) }
        let first = nextSample
        nextSample = nextSample.addingSaturated(UInt64(max(0, rows)))
        return (first, time(ofSample: first))
    }

    /// The time of sample `n`: the anchor's plus (n − anchor) / rate, saturated at Int64's range.
    func time(ofSample n: UInt64) -> Int64 {
        let offset = Int64(saturating: (Double(n &- anchorSample) / rate * 1e9).rounded()) ?? 0
        return (anchorNs ?? 0).addingSaturated(offset)
    }

    /// The acquisition lost samples and restarted; its next sample was taken at `restartNs`. The
    /// samples between the last one read and that time are lost — at least one, whatever the clocks
    /// say, so that the gap is always declared: the next block's first sample comes after them and is
    /// stamped `restartNs`.
    /// - Returns: The samples per channel declared lost.
    mutating func restart(atNs restartNs: Int64) -> UInt64 {
        guard anchorNs != nil else {
            (anchorNs, anchorSample) = (restartNs, nextSample)
            return 0
        }
        let expectedNs = time(ofSample: nextSample)
        let lateSeconds = Double(restartNs.subtractingSaturated(expectedNs)) / 1e9
        let lost = max(1, UInt64(saturating: (lateSeconds * rate).rounded()) ?? 1)
        nextSample = nextSample.addingSaturated(lost)
        (anchorNs, anchorSample) = (restartNs, nextSample)
        return lost
    }
}

/// De-interleaves blocks of little-endian samples into analog frames and hands them to a sink,
/// keeping the stream's sample clock and the source's progress: the part of a pipe's and a sound
/// card's source that does not depend on where the bytes come from.
struct InterleavedBlocks {
    /// Checks that frames of `samplesPerFrame` samples × `channels` channels of `format` fit the
    /// format's frame limit.
    /// - Throws: `KeyValueSpecError` saying why not (a spec's error message).
    static func checkFrameSize(channels: Int, samplesPerFrame: Int, format: SampleFormat) throws(KeyValueSpecError) {
        let frameBytes = channels * samplesPerFrame * format.size + channels * 20 + 64
        guard frameBytes > WireLimits.maxFrameSize else { return }
        throw KeyValueSpecError(
            "\(channels) channels x \(samplesPerFrame) samples per frame make frames of \(frameBytes) "
                + "bytes, more than the format's limit of \(WireLimits.maxFrameSize); give a smaller block")
    }

    let sourceID: UInt32
    let channels: Int
    let encoding: InterleavedEncoding
    /// For counts: value = count × scale + offset.
    let scale: Double
    let offset: Double
    var clock: SampleClock
    let progress: ProgressRecord

    init(
        sourceID: UInt32, channels: Int, rate: Double, encoding: InterleavedEncoding, scale: Double, offset: Double,
        progress: ProgressRecord
    ) {
        (self.sourceID, self.channels, self.encoding, self.scale, self.offset) = (sourceID, channels, encoding, scale, offset)
        clock = SampleClock(rate: rate)
        self.progress = progress
    }

    /// Bytes of one sample of every channel.
    var bytesPerRow: Int { channels * encoding.size }

    /// Publishes the first `rows` samples of `bytes` as one frame, stamped from the clock (`startNs`
    /// gives the first block's first-sample time).
    /// - Returns: false when the publisher stopped (return from the source's run).
    mutating func publish(rows: Int, of bytes: UnsafeRawBufferPointer, to sink: SourceSink, startNs: () -> Int64) -> Bool {
        guard rows > 0 else { return true }
        let (first, timeNs) = clock.place(rows: rows, startNs: startNs)
        let taken = sink.publish(frame(rows: rows, from: bytes, firstSample: first, timestampNs: timeNs))
        if !taken && sink.isCancelled { return false }
        let read = clock.nextSample
        progress.update {
            if taken { $0.framesPublished += 1 } else { $0.framesRefused += 1 }
            $0.samplesRead = read &- $0.samplesLost
        }
        return true
    }

    /// Declares a loss: the acquisition restarted at `restartNs` (see `SampleClock.restart`).
    mutating func declareLoss(restartedAtNs restartNs: Int64) {
        let lost = clock.restart(atNs: restartNs)
        progress.update {
            $0.overruns += 1
            $0.samplesLost = $0.samplesLost.addingSaturated(lost)
        }
    }

    /// An analog frame of `rows` samples per channel from interleaved little-endian bytes.
    func frame(rows: Int, from bytes: UnsafeRawBufferPointer, firstSample: UInt64, timestampNs: Int64) -> Frame {
        let header = FrameHeader(kind: .analog, sequence: 0, timestampNs: timestampNs, sourceID: sourceID)
        let layout = AnalogLayout(channelCount: channels, sampleCount: rows, format: encoding.wireFormat)
        let size = encoding.size, stride = bytesPerRow
        precondition(bytes.count >= rows * stride, "the block holds fewer bytes than its rows")
        return Frame.analog(header: header, layout: layout, firstSample: firstSample) { writer in
            for k in 0..<channels {
                writer.setChannelIndex(k, UInt32(k))
                let out = writer.samples(channel: k)
                func word32(_ i: Int) -> UInt32 {
                    UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i * stride + k * size, as: UInt32.self))
                }
                switch encoding {
                case .int16:
                    writer.setScale(k, scale: scale, offset: offset)
                    let counts = out.bindMemory(to: Int16.self)
                    for i in 0..<rows {
                        counts[i] = Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: i * stride + k * size, as: Int16.self))
                    }
                case .int24In32:
                    writer.setScale(k, scale: scale, offset: offset)
                    let counts = out.bindMemory(to: Int32.self)
                    // The low 24 bits, sign-extended: shift them to the top and back.
                    for i in 0..<rows { counts[i] = Int32(bitPattern: word32(i) << 8) >> 8 }
                case .int32:
                    writer.setScale(k, scale: scale, offset: offset)
                    let counts = out.bindMemory(to: Int32.self)
                    for i in 0..<rows { counts[i] = Int32(bitPattern: word32(i)) }
                case .float32:
                    let values = out.bindMemory(to: Float.self)
                    for i in 0..<rows { values[i] = Float(bitPattern: word32(i)) }
                case .float64:
                    let values = out.bindMemory(to: Double.self)
                    for i in 0..<rows {
                        values[i] = Double(
                            bitPattern: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i * stride + k * size, as: UInt64.self)))
                    }
                }
            }
        }
    }
}
