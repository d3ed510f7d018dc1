import Foundation
import Synchronization
import TributaryDSP
import TributaryTransport
import TributaryWire

/// A live source that plays a simulated acquisition device (the `--simulate` spec, `SimulationSpec`):
/// blocks of `spec.samplesPerFrame` samples published in real time at the device's rate, with its
/// digital lines when the spec has any.
///
/// Like a real DAQ device, a block is published once its last sample has been "acquired", i.e. at
/// start + (block + 1) × block duration, and carries the wall-clock time of its first sample. The
/// schedule is computed from the sample index, so it does not drift however long it runs. Unpaced,
/// blocks go out as fast as the publisher takes them (benchmarks, tests). Deterministic for a seed.
public final class SimulatedDeviceSource: Source {
    /// The device.
    public let spec: SimulationSpec
    /// The wire's sample format of its frames (announced in discovery answers).
    public var sampleFormat: SampleFormat? { spec.bits == nil ? .float64 : .int16 }
    public let info: SourceInfo
    public let configuration: Configuration
    /// Free-form properties of the device and its channels (`serve --property`).
    public let properties: SourceProperties
    public let delivery: SourceDelivery = .live
    /// Real time (blocks at the sampling rate) or unpaced (as fast as the hand-off queue accepts).
    public let paced: Bool
    /// Blocks to produce before returning (nil: until the publisher stops).
    public let frameLimit: Int?
    /// How late (ns) the last block was made, paced: 0 while the simulator keeps up with its rate.
    private let lateness = Atomic<UInt64>(0)

    /// Seconds by which the last block was made after it was due (paced only; 0 while the simulator
    /// keeps up). A block's values cost time to compute (a sine, and Gaussian noise, per sample):
    /// a device faster than the machine can simulate falls behind real time, and its frames —
    /// stamped on its schedule — behind the wall clock.
    public var secondsBehind: Double { Double(lateness.load(ordering: .relaxed)) / 1e9 }

    /// - Parameters:
    ///   - spec: the device (its `id` is the source id, its `name` the source's description).
    ///   - paced: real time (default) or as fast as the publisher takes the frames.
    ///   - frameLimit: analog blocks to publish before `run` returns (nil: until cancelled).
    ///   - properties: the source's and its channels' properties, checked by the caller.
    public init(spec: SimulationSpec, paced: Bool = true, frameLimit: Int? = nil, properties: SourceProperties = SourceProperties()) {
        self.spec = spec
        self.properties = properties
        info = SourceInfo(id: spec.id, description: spec.name)
        configuration = spec.configuration
        self.paced = paced
        self.frameLimit = frameLimit
    }

    public func run(_ sink: SourceSink) {
        var device = SimulatedDevice(spec)
        let blockSamples = UInt64(spec.samplesPerFrame)
        let startMonotonic = monotonicNanoseconds()
        let startWall = wallClockNanoseconds()
        var block: UInt64 = 0
        while !sink.isCancelled && (frameLimit.map { block < UInt64($0) } ?? true) {
            // Time of the block's first sample and of the end of the block, from the sample index (no drift).
            let firstOffset = UInt64(Double(block * blockSamples) / spec.rate * 1e9)
            let endOffset = UInt64(Double((block + 1) * blockSamples) / spec.rate * 1e9)
            // Paced, the block is made half a block ahead and handed over with its due time, when its
            // last sample is acquired; the publisher's loop sends it then, so that neither the making
            // nor the hand-off between threads adds to its latency.
            let due = paced ? startMonotonic + endOffset : 0
            if paced { sink.sleep(untilMonotonicNanoseconds: due - (endOffset - firstOffset) / 2) }
            if sink.isCancelled { return }
            let timestamp = paced ? startWall + Int64(firstOffset) : wallClockNanoseconds()
            let frame = device.nextAnalogFrame(timestampNs: timestamp)
            if paced {
                let made = monotonicNanoseconds()
                lateness.store(made > due ? made - due : 0, ordering: .relaxed)
            }
            publish(frame, due: due, sink)
            if let digital = device.digitalFrame(forBlockEndingAt: device.nextSample, timestampNs: timestamp) {
                publish(digital, due: due, sink)
            }
            block += 1
        }
    }

    private func publish(_ frame: Frame, due: UInt64, _ sink: SourceSink) {
        if paced {
            // A live device does not wait: a full hand-off queue loses the block (counted by the publisher).
            sink.publish(frame, dueAtMonotonicNanoseconds: due)
        } else {
            // Unpaced: wait for room rather than lose frames at the hand-off.
            while !sink.isCancelled && !sink.publish(frame) { usleep(50) }
        }
    }
}
