import Foundation
import TributaryText
import TributaryWire

/// The description of a simulated acquisition device, as given to `tributary serve --simulate`.
///
/// Text form: comma-separated `key=value` pairs, e.g.
/// `id=1,name=USB-6009,rate=10000,channels=4,freq=50,amp=1,noise=0.01`. Channel k (0-based) carries
/// a waveform of frequency `freq` × (k + 1) Hz and amplitude `amp`, plus Gaussian noise of standard
/// deviation `noise`.
public struct SimulationSpec: Sendable, Hashable {
    /// Waveforms a simulated channel can carry.
    public enum Wave: String, Sendable, CaseIterable { case sine, square, triangle, sawtooth }

    /// Source id (required, > 0).
    public var id: UInt32
    /// Device name (default `SIM-<id>`).
    public var name: String
    /// Samples per second per channel (default 10000).
    public var rate: Double = 10_000
    /// Analog channels (default 4).
    public var channels: Int = 4
    /// Fundamental of channel 0 in Hz; channel k runs at freq × (k + 1) (default 50).
    public var frequency: Double = 50
    /// Amplitude (default 1).
    public var amplitude: Double = 1
    /// Standard deviation of the added Gaussian noise (default 0.01).
    public var noise: Double = 0.01
    /// Waveform (default sine).
    public var wave: Wave = .sine
    /// Relative amplitudes of harmonics 2, 3, … added to each channel (default none), e.g. `0.01;0.005`.
    public var harmonics: [Double] = []
    /// When set, samples are quantised by an ideal ADC of this many bits (1–16) over ±`range` and
    /// sent as int16 counts with a scale, as a real DAQ device does.
    public var bits: Int?
    /// Half the ADC's full-scale range, and the configured min/max (default 10).
    public var range: Double = 10
    /// Samples per frame (default rate / 10, i.e. 10 frames per second).
    public var block: Int?
    /// Digital lines (default 0): line l toggles every 2^(l+1) blocks' worth of samples / 8.
    public var lines: Int = 0
    /// Unit of the channels (default V).
    public var unit: String = "V"
    /// Noise seed (default: the id).
    public var seed: UInt64?

    public init(id: UInt32, name: String? = nil) {
        self.id = id
        self.name = name ?? "SIM-\(id)"
    }

    /// The most samples per second (channels x rate) a simulated device may produce.
    public static let maxSampleRate = 100e6

    /// Samples per frame.
    public var samplesPerFrame: Int { block ?? max(1, Int((rate / 10).rounded())) }

    /// Parses the text form.
    ///
    /// - Throws: `SimulationSpecError` naming the key or value that is wrong.
    public init(parsing text: String) throws(SimulationSpecError) {
        do throws(KeyValueSpecError) {
            var fields = try KeyValueSpec(parsing: text)
            guard let idValue = try fields.integer("id", 1...Int(UInt32.max)) else {
                throw KeyValueSpecError("id is required (a source id > 0)")
            }
            self.init(id: UInt32(idValue), name: fields.take("name"))
            if let v = try fields.number("rate", { $0 > 0 && $0 <= 100e6 }, "a rate in (0, 1e8] Hz") { rate = v }
            if let v = try fields.integer("channels", 1...WireLimits.maxChannels) { channels = v }
            if let v = try fields.number("freq", { $0 >= 0 }, "a frequency >= 0") { frequency = v }
            if let v = try fields.number("amp", { $0 >= 0 }, "an amplitude >= 0") { amplitude = v }
            if let v = try fields.number("noise", { $0 >= 0 }, "a standard deviation >= 0") { noise = v }
            if let v = try fields.choice("wave", Wave.self) { wave = v }
            if let v = fields.take("harmonics") {
                let values = v.split(separator: ";").map { Double($0) }
                guard !values.isEmpty, values.allSatisfy({ $0 != nil && $0!.isFinite }) else {
                    throw KeyValueSpecError("harmonics=\(v): expected relative amplitudes separated by ';'")
                }
                harmonics = values.map { $0! }
            }
            bits = try fields.integer("bits", 1...16)
            if let v = try fields.number("range", { $0 > 0 }, "a range > 0") { range = v }
            block = try fields.integer("block", 1...(1 << 24))
            if let v = try fields.integer("lines", 0...64) { lines = v }
            if let v = fields.take("unit") { unit = v }
            if let v = try fields.integer("seed", 0...Int.max) { seed = UInt64(v) }
            try fields.finish(known: [
                "id", "name", "rate", "channels", "freq", "amp", "noise", "wave", "harmonics", "bits", "range",
                "block", "lines", "unit", "seed",
            ])
        } catch {
            throw SimulationSpecError(spec: text, message: error.message)
        }
        // Each frame must fit the wire format, and the device must be one a machine can simulate in real time.
        let frameBytes = channels * samplesPerFrame * (bits == nil ? 8 : 2) + channels * 20 + 64
        guard frameBytes <= WireLimits.maxFrameSize else {
            throw SimulationSpecError(
                spec: text,
                message: "\(channels) channels x \(samplesPerFrame) samples per frame make frames of "
                    + "\(frameBytes) bytes, more than the format's limit of \(WireLimits.maxFrameSize); "
                    + "use fewer channels, a lower rate or a smaller block")
        }
        guard Double(channels) * rate <= Self.maxSampleRate else {
            throw SimulationSpecError(
                spec: text,
                message: "\(channels) channels at \(rate) S/s are more than "
                    + "\(Int(Self.maxSampleRate)) samples per second in all, more than can be generated in real time")
        }
    }

    /// The configuration package of the device.
    public var configuration: Configuration {
        Configuration(
            deviceName: name, deviceType: "simulated \(wave.rawValue)",
            channels: (0..<channels).map {
                ChannelConfiguration(
                    index: UInt32($0), description: "ai\($0) \(wave.rawValue) \(frequency * Double($0 + 1)) Hz",
                    unit: unit, samplingRate: rate, minValue: -range, maxValue: range)
            },
            lines: (0..<lines).map { DigitalLineConfiguration(index: UInt32($0), description: "line\($0)") })
    }
}

/// A `--simulate` spec that does not parse.
public struct SimulationSpecError: Error, Hashable, Sendable, CustomStringConvertible {
    public var spec: String
    public var message: String
    public var description: String { "simulation spec '\(spec)': \(message)" }
}

/// Generates the frames of a simulated device: deterministic for a seed, continuous across frames
/// (sample n of channel k is evaluated at t = n / rate, so there is no phase drift).
public struct SimulatedDevice: Sendable {
    public let spec: SimulationSpec
    /// Index of the next sample to generate.
    public private(set) var nextSample: UInt64 = 0
    private var random: SeededGenerator
    /// The clean values of a quantised device's channel, before they become counts.
    private var scratch: [Double] = []

    public init(_ spec: SimulationSpec) {
        self.spec = spec
        random = SeededGenerator(seed: spec.seed ?? UInt64(spec.id))
    }

    /// The configuration frame (source id set).
    public func configurationFrame(timestampNs: Int64 = 0) -> Frame {
        Frame(encoding: .configuration(spec.configuration), timestampNs: timestampNs, sourceID: spec.id)
    }

    /// The value of channel `k` at sample `n`, before noise.
    func clean(channel k: Int, sample n: UInt64) -> Double {
        let f = spec.frequency * Double(k + 1)
        let t = Double(n) / spec.rate
        var value = wave(f * t)
        for (h, relative) in spec.harmonics.enumerated() { value += relative * wave(f * Double(h + 2) * t) }
        return spec.amplitude * value
    }

    /// One waveform period at cycle position `cycles` (in periods).
    func wave(_ cycles: Double) -> Double {
        let phase = cycles - cycles.rounded(.down)
        switch spec.wave {
        case .sine: return sin(2 * .pi * phase)
        case .square: return phase < 0.5 ? 1 : -1
        case .triangle: return phase < 0.5 ? 4 * phase - 1 : 3 - 4 * phase
        case .sawtooth: return 2 * phase - 1
        }
    }

    /// Writes the clean values (before noise) of channel `k` for samples `first ..< first + out.count`:
    /// what `clean(channel:sample:)` gives, computed faster for sines. A sine is a phasor turned by
    /// one sample's angle per step, four samples at a time in four lanes, started exactly (libm) every
    /// `anchorInterval` samples, so that rounding never accumulates beyond that many steps: values
    /// agree with libm's at the same n to about 1e-13 of the amplitude, in whatever blocks they are
    /// asked for (no drift across frames). `serve --simulate` of 8 channels × 5.12 MS/s used a whole
    /// core and fell behind real time with libm's sine per sample; with the phasors it keeps up on a
    /// fraction of a core, framing included.
    func writeClean(channel k: Int, first: UInt64, into out: UnsafeMutableBufferPointer<Double>) {
        guard spec.wave == .sine else {
            for i in out.indices { out[i] = clean(channel: k, sample: first + UInt64(i)) }
            return
        }
        for i in out.indices { out[i] = 0 }
        let f = spec.frequency * Double(k + 1)
        addSine(amplitude: spec.amplitude, frequency: f, first: first, into: out)
        for (h, relative) in spec.harmonics.enumerated() {
            addSine(amplitude: spec.amplitude * relative, frequency: f * Double(h + 2), first: first, into: out)
        }
    }

    /// Samples between exact starts of the sine phasors.
    static let anchorInterval = 1_024

    /// Adds amplitude × sin(2π × frequency × n / rate) for each sample n of `out` (n from `first`).
    private func addSine(amplitude: Double, frequency: Double, first: UInt64, into out: UnsafeMutableBufferPointer<Double>) {
        func angle(_ n: UInt64) -> Double {
            let cycles = frequency * (Double(n) / spec.rate)
            return 2 * .pi * (cycles - cycles.rounded(.down))
        }
        let stepCycles = 4 * frequency / spec.rate
        let step = 2 * Double.pi * (stepCycles - stepCycles.rounded(.down))
        let (c4, s4) = (SIMD4<Double>(repeating: cos(step)), SIMD4<Double>(repeating: sin(step)))
        let a = SIMD4<Double>(repeating: amplitude)
        var start = 0
        while start < out.count {
            let end = Swift.min(out.count, start + Self.anchorInterval)
            let n0 = first + UInt64(start)
            let angles = SIMD4<Double>(angle(n0), angle(n0 + 1), angle(n0 + 2), angle(n0 + 3))
            var c = SIMD4<Double>(cos(angles[0]), cos(angles[1]), cos(angles[2]), cos(angles[3]))
            var s = SIMD4<Double>(sin(angles[0]), sin(angles[1]), sin(angles[2]), sin(angles[3]))
            var i = start
            while i + 4 <= end {
                let value = a * s
                out[i] += value[0]; out[i + 1] += value[1]; out[i + 2] += value[2]; out[i + 3] += value[3]
                (c, s) = (c * c4 - s * s4, s * c4 + c * s4)
                i += 4
            }
            for j in 0..<(end - i) { out[i + j] += amplitude * s[j] }
            start = end
        }
    }

    /// One sample of the noise: without noise (standard deviation 0) nothing is drawn, which leaves
    /// the values as they were (0 × a finite draw) and makes a block several times cheaper.
    @inline(__always)
    private mutating func noise() -> Double {
        spec.noise == 0 ? 0 : spec.noise * random.nextGaussian()
    }

    /// The next block of analog samples as a frame: float64, or int16 counts with a scale when the
    /// spec quantises (`bits`).
    ///
    /// - Parameters:
    ///   - timestampNs: the time of the block's first sample.
    ///   - sequence: the header's sequence number.
    public mutating func nextAnalogFrame(timestampNs: Int64, sequence: UInt64 = 0) -> Frame {
        let n = spec.samplesPerFrame
        let first = nextSample
        let header = FrameHeader(kind: .analog, sequence: sequence, timestampNs: timestampNs, sourceID: spec.id)
        let layout = AnalogLayout(channelCount: spec.channels, sampleCount: n, format: spec.bits == nil ? .float64 : .int16)
        let lsb = spec.bits.map { 2 * spec.range / Double(1 << $0) } ?? 1
        // Taken out of `self` while the frame is written (noise() mutates self), put back after.
        var cleanValues = scratch
        scratch = []
        if spec.bits != nil && cleanValues.count < n { cleanValues = [Double](repeating: 0, count: n) }
        let frame = Frame.analog(header: header, layout: layout, firstSample: first) { writer in
            for k in 0..<spec.channels {
                writer.setChannelIndex(k, UInt32(k))
                let out = writer.samples(channel: k)
                if let bits = spec.bits {
                    writer.setScale(k, scale: lsb, offset: 0)
                    let lo = -Double(1 << (bits - 1)), hi = Double(1 << (bits - 1)) - 1
                    let counts = out.bindMemory(to: Int16.self)
                    cleanValues.withUnsafeMutableBufferPointer { clean in
                        let values = UnsafeMutableBufferPointer(rebasing: clean[0..<n])
                        writeClean(channel: k, first: first, into: values)
                        for i in 0..<n {
                            let x = values[i] + noise()
                            counts[i] = Int16(Swift.min(Swift.max((x / lsb).rounded(), lo), hi))
                        }
                    }
                } else {
                    let values = out.bindMemory(to: Double.self)
                    writeClean(channel: k, first: first, into: values)
                    if spec.noise != 0 {
                        for i in 0..<n { values[i] += noise() }
                    }
                }
            }
        }
        scratch = cleanValues
        nextSample += UInt64(n)
        return frame
    }

    /// The digital lines for the block that `nextAnalogFrame` just produced (nil without lines):
    /// line l is high for 2^l ms, then low for as long.
    public func digitalFrame(forBlockEndingAt end: UInt64, timestampNs: Int64, sequence: UInt64 = 0) -> Frame? {
        guard spec.lines > 0 else { return nil }
        let n = spec.samplesPerFrame
        let first = end - UInt64(n)
        let lines = (0..<spec.lines).map { l -> [Bool] in
            let half = max(1, Int(spec.rate / 1000) << l)
            return (0..<n).map { i in (Int(first) + i) / half % 2 == 0 }
        }
        var data = DigitalData(lines: lines, firstSample: first)
        data.firstSample = first
        return Frame(encoding: .digital(data), sequence: sequence, timestampNs: timestampNs, sourceID: spec.id)
    }
}
