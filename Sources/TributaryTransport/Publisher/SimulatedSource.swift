import Foundation
import TributaryDSP
import TributaryWire

/// One channel of a `SimulatedSource`: a sine plus Gaussian noise.
public struct SimulatedChannel: Sendable, Equatable {
    public var frequency: Double
    public var amplitude: Double
    public var noiseSigma: Double
    public var description: String
    public var unit: String

    public init(frequency: Double, amplitude: Double = 1, noiseSigma: Double = 0, description: String = "", unit: String = "V") {
        self.frequency = frequency
        self.amplitude = amplitude
        self.noiseSigma = noiseSigma
        self.description = description
        self.unit = unit
    }
}

/// A simulated acquisition device: channels of sines plus noise (TributaryDSP's generators), float64
/// frames of `samplesPerFrame` samples, paced at the sampling rate (or as fast as the publisher takes
/// them). Deterministic for a given seed.
public final class SimulatedSource: Source {
    public let info: SourceInfo
    public let configuration: Configuration
    public let delivery: SourceDelivery = .live
    public let channels: [SimulatedChannel]
    public let sampleRate: Double
    public let samplesPerFrame: Int
    /// Real time (frames at the sampling rate) or unpaced (as fast as the hand-off queue accepts).
    public let paced: Bool
    /// Frames to produce before returning (nil: until cancelled).
    public let frameLimit: Int?
    public let seed: UInt64

    public init(id: UInt32, description: String, channels: [SimulatedChannel], sampleRate: Double,
                samplesPerFrame: Int, paced: Bool = true, frameLimit: Int? = nil, seed: UInt64 = 1) {
        precondition(id != 0 && !channels.isEmpty && samplesPerFrame > 0 && sampleRate > 0)
        info = SourceInfo(id: id, description: description)
        self.channels = channels
        self.sampleRate = sampleRate
        self.samplesPerFrame = samplesPerFrame
        self.paced = paced
        self.frameLimit = frameLimit
        self.seed = seed
        configuration = Configuration(
            deviceName: description, deviceType: "simulated",
            channels: channels.enumerated().map { index, channel in
                ChannelConfiguration(index: UInt32(index), description: channel.description.isEmpty ? "ch\(index)" : channel.description,
                                     unit: channel.unit, samplingRate: sampleRate,
                                     minValue: -(channel.amplitude + 6 * channel.noiseSigma),
                                     maxValue: channel.amplitude + 6 * channel.noiseSigma)
            })
    }

    /// Frame number `index` (samples `index × samplesPerFrame …`), as `run` publishes it.
    public func frame(_ index: Int, timestampNs: Int64) -> Frame {
        let first = index * samplesPerFrame
        var random = SeededGenerator(seed: seed &+ UInt64(index))
        let layout = AnalogLayout(channelCount: channels.count, sampleCount: samplesPerFrame, format: .float64)
        return Frame.analog(header: FrameHeader(kind: .analog, timestampNs: timestampNs, sourceID: info.id),
                            layout: layout, firstSample: UInt64(first)) { writer in
            for (row, channel) in channels.enumerated() {
                writer.setChannelIndex(row, UInt32(row))
                // Phase of the first sample, reduced modulo one period so that precision does not decay.
                let cycles = channel.frequency * Double(first) / sampleRate
                let phase = 2 * Double.pi * (cycles - cycles.rounded(.down))
                var values = SignalGenerator.sine(count: samplesPerFrame, sampleRate: sampleRate, frequency: channel.frequency,
                                                  amplitude: channel.amplitude, phase: phase)
                if channel.noiseSigma > 0 {
                    for i in values.indices { values[i] += channel.noiseSigma * random.nextGaussian() }
                }
                let out = writer.samples(channel: row)
                values.withUnsafeBytes { out.copyMemory(from: $0) }
            }
        }
    }

    public func run(_ sink: SourceSink) {
        let period = UInt64(Double(samplesPerFrame) / sampleRate * 1e9)
        let start = monotonicNanoseconds()
        var index = 0
        while !sink.isCancelled && (frameLimit.map { index < $0 } ?? true) {
            if paced { sink.sleep(untilMonotonicNanoseconds: start + UInt64(index) * period) }
            let frame = frame(index, timestampNs: wallClockNanoseconds())
            if paced {
                sink.publish(frame)
            } else {
                // Unpaced: wait for room rather than lose frames at the hand-off.
                while !sink.isCancelled && !sink.publish(frame) { usleep(50) }
            }
            index += 1
        }
    }
}
