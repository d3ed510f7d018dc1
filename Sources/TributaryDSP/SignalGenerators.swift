import Foundation

/// A small, fast, seedable pseudo-random generator (xoshiro256**, seeded through SplitMix64), so that
/// generated noise is the same on every run and machine for a given seed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    public init(seed: UInt64) {
        var z = seed
        func splitMix() -> UInt64 {
            z &+= 0x9E37_79B9_7F4A_7C15
            var x = z
            x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
            x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
            return x ^ (x >> 31)
        }
        s = (splitMix(), splitMix(), splitMix(), splitMix())
    }

    public mutating func next() -> UInt64 {
        let result = ((s.1 &* 5) << 7 | (s.1 &* 5) >> 57) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = (s.3 << 45) | (s.3 >> 19)
        return result
    }

    /// A uniform double in [0, 1).
    public mutating func nextUnit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// A standard normal value (Box-Muller; one of the pair is discarded for simplicity and reproducibility).
    public mutating func nextGaussian() -> Double {
        let u1 = 1 - nextUnit()  // (0, 1]: log is finite
        let u2 = nextUnit()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }
}

/// Reproducible test signals: periodic waveforms, chirps, multitones, noise and quantisation.
///
/// Every periodic generator evaluates x[n] at t = n / sampleRate (no phase accumulation), so long
/// records carry no drift. Phases are in radians; periodic waveforms start at `phase` of their cycle.
public enum SignalGenerator {
    static func times(_ count: Int, _ rate: Double) -> [Double] { (0..<count).map { Double($0) / rate } }

    /// amplitude * sin(2 pi f t + phase) + offset.
    public static func sine(count: Int, sampleRate: Double, frequency: Double, amplitude: Double = 1, phase: Double = 0, offset: Double = 0)
        -> [Double]
    {
        (0..<count).map { amplitude * sin(2 * Double.pi * frequency * Double($0) / sampleRate + phase) + offset }
    }

    /// amplitude * cos(2 pi f t + phase) + offset (the convention `ToneMeasurement.phaseDegrees` reports).
    public static func cosine(
        count: Int, sampleRate: Double, frequency: Double, amplitude: Double = 1, phase: Double = 0, offset: Double = 0
    ) -> [Double] {
        (0..<count).map { amplitude * cos(2 * Double.pi * frequency * Double($0) / sampleRate + phase) + offset }
    }

    /// The fraction of the cycle at sample n, in [0, 1).
    static func cyclePosition(_ n: Int, _ rate: Double, _ f: Double, _ phase: Double) -> Double {
        let c = f * Double(n) / rate + phase / (2 * Double.pi)
        return c - c.rounded(.down)
    }

    /// A square wave: +amplitude for the first `duty` fraction of each cycle, -amplitude for the rest.
    public static func square(
        count: Int, sampleRate: Double, frequency: Double, amplitude: Double = 1, duty: Double = 0.5, phase: Double = 0
    ) -> [Double] {
        (0..<count).map { cyclePosition($0, sampleRate, frequency, phase) < duty ? amplitude : -amplitude }
    }

    /// A triangle wave from -amplitude (cycle start) to +amplitude (mid-cycle) and back.
    public static func triangle(count: Int, sampleRate: Double, frequency: Double, amplitude: Double = 1, phase: Double = 0) -> [Double] {
        (0..<count).map {
            let c = cyclePosition($0, sampleRate, frequency, phase)
            return amplitude * (c < 0.5 ? 4 * c - 1 : 3 - 4 * c)
        }
    }

    /// A rising sawtooth from -amplitude to +amplitude each cycle.
    public static func sawtooth(count: Int, sampleRate: Double, frequency: Double, amplitude: Double = 1, phase: Double = 0) -> [Double] {
        (0..<count).map { amplitude * (2 * cyclePosition($0, sampleRate, frequency, phase) - 1) }
    }

    /// A linear chirp from f0 to f1 over the record: cos(2 pi (f0 t + (f1 - f0) t^2 / (2 T))), as scipy's `chirp(method='linear')`.
    public static func chirp(count: Int, sampleRate: Double, from f0: Double, to f1: Double, amplitude: Double = 1) -> [Double] {
        let duration = Double(Swift.max(count - 1, 1)) / sampleRate
        let k = (f1 - f0) / duration
        return (0..<count).map {
            let t = Double($0) / sampleRate
            return amplitude * cos(2 * Double.pi * (f0 * t + 0.5 * k * t * t))
        }
    }

    /// One component of a multitone: amplitude * cos(2 pi f t + phase).
    public struct Tone: Sendable, Equatable {
        public var frequency: Double
        public var amplitude: Double
        public var phase: Double
        public init(frequency: Double, amplitude: Double, phase: Double = 0) {
            self.frequency = frequency
            self.amplitude = amplitude
            self.phase = phase
        }
    }

    /// The sum of cosine tones.
    public static func multitone(count: Int, sampleRate: Double, tones: [Tone]) -> [Double] {
        var x = [Double](repeating: 0, count: count)
        for tone in tones {
            let w = 2 * Double.pi * tone.frequency / sampleRate
            for n in 0..<count { x[n] += tone.amplitude * cos(w * Double(n) + tone.phase) }
        }
        return x
    }

    /// A fundamental and its harmonics: `relativeAmplitudes[i]` is harmonic i+2's amplitude over the fundamental's.
    public static func harmonicSeries(
        count: Int, sampleRate: Double, fundamental: Double, amplitude: Double = 1,
        relativeAmplitudes: [Double], phase: Double = 0
    ) -> [Double] {
        var tones = [Tone(frequency: fundamental, amplitude: amplitude, phase: phase)]
        for (i, r) in relativeAmplitudes.enumerated() {
            tones.append(Tone(frequency: fundamental * Double(i + 2), amplitude: amplitude * r, phase: phase * Double(i + 2)))
        }
        return multitone(count: count, sampleRate: sampleRate, tones: tones)
    }

    /// A constant.
    public static func dc(count: Int, level: Double) -> [Double] {
        [Double](repeating: level, count: count)
    }

    /// Gaussian white noise of standard deviation `sigma`, reproducible for a seed.
    public static func whiteNoise(count: Int, sigma: Double = 1, seed: UInt64) -> [Double] {
        var g = SeededGenerator(seed: seed)
        return (0..<count).map { _ in sigma * g.nextGaussian() }
    }

    /// Pink (1/f power) noise: white noise through Paul Kellet's refined pinking filter (within
    /// 0.05 dB of -3 dB/octave above about fs/1000), scaled to RMS `rms`, reproducible for a seed.
    public static func pinkNoise(count: Int, rms: Double = 1, seed: UInt64) -> [Double] {
        var g = SeededGenerator(seed: seed)
        var b0 = 0.0, b1 = 0.0, b2 = 0.0, b3 = 0.0, b4 = 0.0, b5 = 0.0, b6 = 0.0
        var x = (0..<count).map { _ -> Double in
            let white = g.nextGaussian()
            b0 = 0.99886 * b0 + white * 0.0555179
            b1 = 0.99332 * b1 + white * 0.0750759
            b2 = 0.96900 * b2 + white * 0.1538520
            b3 = 0.86650 * b3 + white * 0.3104856
            b4 = 0.55000 * b4 + white * 0.5329522
            b5 = -0.7616 * b5 - white * 0.0168980
            let y = b0 + b1 + b2 + b3 + b4 + b5 + b6 + white * 0.5362
            b6 = white * 0.115926
            return y
        }
        let measured = Statistics(x).rms
        if measured > 0 { for i in x.indices { x[i] *= rms / measured } }
        return x
    }

    /// Quantises in place as an ideal `bits`-bit ADC with range [-fullScale/2, fullScale/2):
    /// code = round(x / LSB) clamped to [-2^(bits-1), 2^(bits-1) - 1], value = code * LSB, LSB = fullScale / 2^bits.
    public static func quantize(_ x: inout [Double], bits: Int, fullScale: Double) {
        precondition(bits >= 1 && bits <= 52, "bits must be in 1...52")
        let levels = Double(1 << UInt64(bits))
        let lsb = fullScale / levels
        let lo = -levels / 2, hi = levels / 2 - 1
        for i in x.indices { x[i] = Swift.min(Swift.max((x[i] / lsb).rounded(), lo), hi) * lsb }
    }
}
