import Foundation
import TributaryTransport
import TributaryWire

/// A source that captures from a sound card through libasound (`tributary serve --alsa`): blocks of
/// `spec.samplesPerFrame` interleaved samples, de-interleaved into analog frames — S16_LE as int16
/// counts with the scale and offset, S24_LE (sign-extended) and S32_LE as int32 counts with the
/// scale and offset, FLOAT_LE as float32.
///
/// The device is opened and configured when the source is made, so that a device that cannot give
/// the stream is refused before the publisher listens; capture starts in `run`, once
/// `waitForSubscribers` subscribers have started for a lossless source (at once for a live one) — a
/// PCM that is not paced by a clock (ALSA's `file` plugin hands over its whole input at once) is then
/// read as a replay is.
///
/// Timestamps are sample-accurate: the first sample's time is the driver's trigger timestamp (the
/// wall clock's time at which the capture started), or the wall clock just before the start for a
/// PCM that keeps none; each frame's time follows from its first sample's index and the rate. An
/// overrun (the card's buffer filled before it was read: a slow subscriber of a lossless source, a
/// busy machine) is recovered (`snd_pcm_recover`), counted, and declared as a gap: the capture
/// restarts, and its first sample is numbered and stamped from the restart's time, so `first_sample`
/// jumps by the samples lost (at least one).
public final class AlsaSource: Source {
    public let spec: AlsaSpec
    public let info: SourceInfo
    public let configuration: Configuration
    public let delivery: SourceDelivery
    public var sampleFormat: SampleFormat? { spec.format.wireFormat }
    /// Started subscribers to wait for before capturing (lossless only; 0: at once).
    public let waitForSubscribers: Int
    /// Free-form properties of the source and its channels (`serve --property`).
    public let properties: SourceProperties
    private let capture: AlsaCapture
    private let progressState = ProgressRecord()
    private let onLoss: (@Sendable (String) -> Void)?

    /// Opens and configures the device.
    /// - Parameters:
    ///   - spec: the device and the stream asked of it.
    ///   - waitForSubscribers: for a lossless source, started subscribers to wait for before capturing.
    ///   - onLoss: told of each overrun as it happens (from the source's thread), in words.
    ///   - properties: the source's and its channels' properties, checked by the caller.
    /// - Throws: `AlsaSpecError` when the device cannot be opened or cannot give the stream (which
    ///   format, channel count or rate it refused, and what it offers).
    public init(
        spec: AlsaSpec, waitForSubscribers: Int = 1, properties: SourceProperties = SourceProperties(),
        onLoss: (@Sendable (String) -> Void)? = nil
    ) throws(AlsaSpecError) {
        self.properties = properties
        do {
            capture = try AlsaCapture(spec: spec)
        } catch {
            throw AlsaSpecError(spec: spec.device, message: error.message)
        }
        self.spec = spec
        self.waitForSubscribers = waitForSubscribers
        self.onLoss = onLoss
        info = SourceInfo(id: spec.id, description: spec.name)
        configuration = spec.configuration
        delivery = spec.mode == .lossless ? .lossless : .live
    }

    /// What the source has done so far.
    public var progress: StreamProgress { progressState.current }

    public func run(_ sink: SourceSink) {
        if delivery == .lossless {
            guard sink.waitForStartedSubscribers(waitForSubscribers) else { return }
        }
        var blocks = InterleavedBlocks(
            sourceID: spec.id, channels: spec.channels, rate: Double(spec.rate), encoding: spec.format.encoding,
            scale: spec.effectiveScale, offset: spec.offset, progress: progressState)
        let row = blocks.bytesPerRow
        var buffer = [UInt8](repeating: 0, count: spec.samplesPerFrame * row)
        defer { capture.stop() }
        let startNs: Int64
        do { startNs = try capture.start() } catch {
            progressState.update {
                $0.problems.append(error.message)
                $0.finished = true
            }
            return
        }
        var remaining = spec.samples ?? .max
        while remaining > 0 {
            let want = Int(min(UInt64(spec.samplesPerFrame), remaining))
            var filled = 0
            var loss: String?
            var failure: String?
            reading: while filled < want {
                if sink.isCancelled { return }
                let read = buffer.withUnsafeMutableBytes { capture.read(into: $0.baseAddress! + filled * row, frames: want - filled) }
                switch read {
                case .samples(let count): filled += min(count, want - filled)
                case .nothing: continue
                case .lost(let what):
                    loss = what
                    break reading
                case .failed(let message):
                    failure = message
                    break reading
                }
            }
            // What was read before an overrun is contiguous with the blocks before it: published as a shorter frame.
            let published = buffer.withUnsafeBytes { blocks.publish(rows: filled, of: $0, to: sink, startNs: { startNs }) }
            if !published { return }
            remaining -= UInt64(filled)
            if let failure {
                progressState.update {
                    $0.problems.append(failure)
                    $0.finished = true
                }
                return
            }
            if let loss {
                let restartNs: Int64
                do { restartNs = try capture.start() } catch {
                    progressState.update {
                        $0.problems.append("after an \(loss): \(error.message)")
                        $0.finished = true
                    }
                    return
                }
                let before = progressState.current.samplesLost
                blocks.declareLoss(restartedAtNs: restartNs)
                let lost = progressState.current.samplesLost &- before
                onLoss?(
                    "\(loss) after sample \(blocks.clock.nextSample &- lost): \(lost) sample\(lost == 1 ? "" : "s") per channel lost, declared as a gap"
                )
            }
        }
        progressState.update { $0.finished = true }
    }
}
