import Foundation
import Testing

@testable import TributaryDSP

@Suite struct MeasurementTests {
    @Test func toneBetweenBins() throws {
        let fs = 10_000.0
        let x = SignalGenerator.cosine(count: 10_000, sampleRate: fs, frequency: 1234.567, amplitude: 0.75, phase: 1.0)
        let t = try SpectralMeasurements(x, sampleRate: fs).singleTone()
        #expect(abs(t.frequency - 1234.567) < 0.01)  // tolerance: 0.01 Hz (acceptance)
        #expect(abs(t.amplitude - 0.75) < 0.75e-4)  // tolerance: 1e-4 relative
        #expect(abs(t.phaseDegrees - 1.0 * 180 / .pi) < 0.1)  // tolerance: 0.1 degree
    }

    @Test func thdOfKnownHarmonicMix() throws {
        // 1 % second and 0.5 % third harmonic: THD = sqrt(0.01^2 + 0.005^2) = 0.0111803.
        let fs = 48_000.0
        let x = SignalGenerator.harmonicSeries(
            count: 48_000, sampleRate: fs, fundamental: 1000.37, amplitude: 1,
            relativeAmplitudes: [0.01, 0.005])
        let d = try SpectralMeasurements(x, sampleRate: fs, configuration: MeasurementConfiguration(harmonics: 5)).distortion()
        let expected = (0.01 * 0.01 + 0.005 * 0.005).squareRoot()
        #expect(abs(d.thd - expected) / expected < 1e-3)  // tolerance: 0.1 % (acceptance)
        #expect(d.harmonics.map(\.order) == [2, 3, 4, 5])
        #expect(abs(d.sfdrDB - 40) < 0.01)  // the 1 % second harmonic is the largest spur: 40 dB
    }

    @Test func enobOfQuantisedCoherentSine() throws {
        let n = 8192, bits = 12
        let lsb = 2.0 / Double(1 << bits)
        var x = SignalGenerator.sine(count: n, sampleRate: Double(n), frequency: 1021, amplitude: 1 - lsb)
        SignalGenerator.quantize(&x, bits: bits, fullScale: 2)
        let d = try SpectralMeasurements(x, sampleRate: Double(n)).distortion()
        #expect(abs(d.enob - Double(bits)) < 0.15)  // tolerance: 0.15 bit (acceptance)
        #expect(abs(d.sinadDB - (6.02 * 12 + 1.76)) < 1)
    }

    @Test func snrOfSineInNoise() throws {
        let n = 65_536
        let x = zip(
            SignalGenerator.sine(count: n, sampleRate: 1, frequency: 0.1234, amplitude: 1),
            SignalGenerator.whiteNoise(count: n, sigma: 0.01, seed: 4)
        ).map(+)
        let d = try SpectralMeasurements(x, sampleRate: 1).distortion()
        #expect(abs(d.snrDB - 10 * log10(0.5 / 1e-4)) < 0.2)  // tolerance: 0.2 dB (noise estimate variance)
    }

    @Test func strongestTones() throws {
        let fs = 8000.0
        let x = SignalGenerator.multitone(
            count: 8000, sampleRate: fs,
            tones: [
                .init(frequency: 500.2, amplitude: 1), .init(frequency: 1500.7, amplitude: 0.1), .init(frequency: 3100, amplitude: 0.01),
            ])
        let tones = try SpectralMeasurements(x, sampleRate: fs).strongestTones(5, threshold: 0.05)
        #expect(tones.count == 2)
        #expect(abs(tones[0].frequency - 500.2) < 0.01 && abs(tones[1].frequency - 1500.7) < 0.01)
    }

    @Test func foldedHarmonics() throws {
        // 3rd harmonic of 3 kHz at fs = 8 kHz is 9 kHz, which aliases to 1 kHz.
        let fs = 8000.0
        let x = SignalGenerator.multitone(
            count: 8000, sampleRate: fs, tones: [.init(frequency: 3000, amplitude: 1), .init(frequency: 1000, amplitude: 0.02)])
        let folded = try SpectralMeasurements(x, sampleRate: fs, configuration: MeasurementConfiguration(harmonics: 3, foldAliases: true))
            .distortion()
        #expect(abs(folded.thd - 0.02) < 1e-6)
        let unfolded = try SpectralMeasurements(x, sampleRate: fs, configuration: MeasurementConfiguration(harmonics: 3)).distortion()
        #expect(unfolded.thd < 1e-6)
    }

    @Test func noToneIsAnError() {
        #expect(throws: MeasurementError.self) { try SpectralMeasurements([Double](repeating: 1, count: 64), sampleRate: 1).singleTone() }
    }
}

/// Readings as instruments report them: full-scale ENOB and dBFS, THD in dB and %, setup warnings.
@Suite struct FullScaleReadingTests {
    /// A 16-bit ±10 V converter (LSB 20/65536 V) sampling `amplitude` V at `frequency` Hz, 10 kS/s,
    /// with ±0.5 LSB of uniform dither so that quantisation error is noise-like.
    private func quantised(amplitude: Double, frequency: Double, count: Int = 1 << 16) -> [Double] {
        let lsb = 20.0 / 65_536
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return SignalGenerator.sine(count: count, sampleRate: 10_000, frequency: frequency, amplitude: amplitude).map { value in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let dither = (Double(state >> 11) / Double(1 << 53) - 0.5) * lsb
            return ((value + dither) / lsb).rounded() * lsb
        }
    }

    @Test func aOneVoltSineOnATenVoltSixteenBitConverter() throws {
        let x = quantised(amplitude: 1, frequency: 50.3)
        let m = try SpectralMeasurements(x, sampleRate: 10_000)
        let d = try m.distortion()
        let fs = d.referred(toFullScale: 10)
        // Relative to the signal: 20 dB (3.32 bits) below what the converter can do.
        #expect(abs(fs.enobFullScale - d.enob - 20 * log10(10 / d.fundamental.amplitude) / 6.02) < 1e-9)
        #expect(abs(fs.signalDBFS + 20) < 0.01)
        // Quantisation plus dither noise of a 16-bit converter: ENOB_fs a little below 16.
        #expect(fs.enobFullScale > 15.3 && fs.enobFullScale < 16.1, "\(fs.enobFullScale)")
        #expect(d.enob > 12.0 && d.enob < 12.8, "\(d.enob)")
        #expect(abs(fs.sinadDBFS - (d.sinadDB + 20)) < 0.01)
        #expect(abs(d.thdDB - 20 * log10(d.thd)) < 1e-12)
        #expect(abs(d.thdPercent - 100 * d.thd) < 1e-12)
        #expect(m.setupWarnings(for: try m.singleTone(), samples: x).isEmpty)
    }

    @Test func warningsNameTheSetupProblems() throws {
        // 50 Hz at 10 kS/s, quantised without dither (the simulator's default): the samples repeat
        // every 200, the quantisation error is periodic.
        let lsb = 20.0 / 65_536
        let periodic = SignalGenerator.sine(count: 1 << 16, sampleRate: 10_000, frequency: 50, amplitude: 1).map {
            ($0 / lsb).rounded() * lsb
        }
        let coherent = try SpectralMeasurements(periodic, sampleRate: 10_000)
        let warnings = coherent.setupWarnings(for: try coherent.singleTone(), samples: periodic)
        #expect(warnings.count == 1 && warnings[0].contains("every 200 samples"), "\(warnings)")
        // The same tone with dither: noise-like error, no warning.
        let dithered = quantised(amplitude: 1, frequency: 50)
        let fine = try SpectralMeasurements(dithered, sampleRate: 10_000)
        #expect(fine.setupWarnings(for: try fine.singleTone(), samples: dithered).isEmpty)
        // 3 cycles in the record.
        let shortRecord = quantised(amplitude: 1, frequency: 30.7, count: 1_000)
        let short = try SpectralMeasurements(shortRecord, sampleRate: 10_000)
        #expect(short.setupWarnings(for: try short.singleTone(), samples: shortRecord).contains { $0.contains("cycles") })
        // Next to Nyquist.
        let highRecord = quantised(amplitude: 1, frequency: 4_999.3)
        let high = try SpectralMeasurements(highRecord, sampleRate: 10_000)
        #expect(high.setupWarnings(for: try high.singleTone(), samples: highRecord).contains { $0.contains("Nyquist") })
    }
}
