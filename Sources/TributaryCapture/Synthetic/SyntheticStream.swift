import Foundation
import TributaryWire

/// A deterministic stream of frames of every kind a capture must record — configuration, analog
/// data in all three sample formats, digital data, messages, XML, files, images, arrays, errors and
/// gap notices — for end-to-end tests of recorders, crash recovery and replay, and for benchmarks.
///
/// Frame `i` is a pure function of `i` (and the settings), so a test can regenerate exactly what a
/// killed recorder was given. Sequence numbers are `i`, except that every `gapEvery`-th position is
/// skipped and announced by the following gap frame, as a publisher does for a slow subscriber.
public struct SyntheticStream: Sendable {
    /// Analog channels of source 1.
    public var channels: Int
    /// Samples per analog frame.
    public var samplesPerFrame: Int
    /// Samples per second (frame timestamps advance by samplesPerFrame / rate).
    public var rate: Double
    /// Every this many positions a frame is "lost" and a gap frame announces it (0: never).
    public var gapEvery: Int

    public init(channels: Int = 4, samplesPerFrame: Int = 512, rate: Double = 10_000, gapEvery: Int = 97) {
        self.channels = channels
        self.samplesPerFrame = samplesPerFrame
        self.rate = rate
        self.gapEvery = gapEvery
    }

    /// The step of the ADC-quantised float64 samples (16 bits over ±10 V).
    public static let step = 20.0 / 65536

    /// The configuration of source 1.
    public var configuration: Configuration {
        Configuration(
            deviceName: "synthetic", deviceType: "test pattern",
            channels: (0..<channels).map { ChannelConfiguration(index: UInt32($0), description: "ch\($0)", unit: "V", samplingRate: rate) },
            lines: (0..<3).map { DigitalLineConfiguration(index: UInt32($0), description: "line\($0)") })
    }

    /// The frame at position `i`, or nil when position `i` is a lost frame (it is never sent).
    public func frame(_ i: Int) -> Frame? {
        let sequence = UInt64(i)
        let timestamp = Int64(Double(i) * Double(samplesPerFrame) / rate * 1e9)
        if gapEvery > 0, i > 0, i % gapEvery == 0 { return nil }
        if gapEvery > 0, i > 1, (i - 1) % gapEvery == 0 {
            return Frame(
                encoding: .gap(Gap(firstMissingSequence: sequence - 1, missingCount: 1)), sequence: sequence, timestampNs: timestamp)
        }
        let source: UInt32 = 1
        let package: Package
        if i == 0 {
            package = .configuration(configuration)
        } else {
            switch i % 16 {
            case 1, 2, 3, 5, 6, 7, 9, 10, 11: package = .analog(analog(i, format: .float64))
            case 4: package = .analog(analog(i, format: .int16))
            case 8: package = .analog(analog(i, format: .float32))
            case 12:
                package = .digital(
                    DigitalData(
                        lines: (0..<3).map { l in (0..<samplesPerFrame).map { ($0 + i + l) % (l + 3) == 0 } },
                        firstSample: UInt64(i * samplesPerFrame)))
            case 13:
                switch (i / 16) % 4 {
                case 0: package = .message(Message("message \(i) — ünïcødé", code: Int32(i)))
                case 1: package = .xml("<event n=\"\(i)\"/>")
                case 2: package = .error(ErrorReport(ErrorCode(rawValue: 6), "transmission error \(i)"))
                default: package = .array(Array2D(rowCount: 3, columnCount: 4, elements: .double((0..<12).map { Double($0 * i) })))
                }
            case 14:
                let content = (0..<(100 + i % 50)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
                let image = (i / 16) % 2 == 1
                package =
                    image
                    ? .image(
                        BlobChunk.chunks(of: content, transferID: UInt64(i), name: "image \(i)", attributes: ["w=10"], imageFormat: .png)[0]
                    )
                    : .file(BlobChunk.chunks(of: content, transferID: UInt64(i), name: "file\(i).bin", attributes: ["author=test"])[0])
            default:
                package = .array(Array2D(rowCount: 2, columnCount: 2, elements: .string(["a", "b\(i)", "ç", ""])))
            }
        }
        return Frame(encoding: package, sequence: sequence, timestampNs: timestamp, sourceID: source)
    }

    /// An analog package for position `i`: a sine per channel with a little deterministic noise, ADC-quantised.
    public func analog(_ i: Int, format: SampleFormat) -> AnalogData {
        let n = samplesPerFrame
        let first = i * n
        var counts = [Int16](repeating: 0, count: channels * n)
        for c in 0..<channels {
            let amplitude = 0.5 + Double(c), frequency = 10 + 37 * Double(c)
            for s in 0..<n {
                let t = Double(first + s) / rate
                var hash = UInt64(first + s) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(c)
                hash ^= hash >> 29
                let noise = Double(Int(hash & 7) - 3) * Self.step
                let v = amplitude * sin(2 * Double.pi * frequency * t) + noise
                counts[c * n + s] = Int16(max(-32768, min(32767, (v / Self.step).rounded())))
            }
        }
        let indexes = (0..<UInt32(channels)).map { $0 }
        switch format {
        case .float64:
            return AnalogData(
                channelIndexes: indexes, sampleCount: n, firstSample: UInt64(first),
                samples: .float64(counts.map { Double($0) * Self.step }))
        case .float32:
            return AnalogData(
                channelIndexes: indexes, sampleCount: n, firstSample: UInt64(first),
                samples: .float32(counts.map { Float(Double($0) * Self.step) }))
        case .int16:
            return AnalogData(
                channelIndexes: indexes, sampleCount: n, firstSample: UInt64(first),
                samples: .int16(
                    counts: counts, scale: Array(repeating: Self.step, count: channels), offset: Array(repeating: 0, count: channels)))
        case .int32:
            // 24-bit codes: the same signal with 256 times finer steps.
            return AnalogData(
                channelIndexes: indexes, sampleCount: n, firstSample: UInt64(first),
                samples: .int32(
                    counts: counts.map { Int32($0) << 8 }, scale: Array(repeating: Self.step / 256, count: channels),
                    offset: Array(repeating: 0, count: channels)))
        }
    }
}
