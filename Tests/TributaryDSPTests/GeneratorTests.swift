import Testing

@testable import TributaryDSP

@Suite struct GeneratorTests {
    @Test func seededNoiseIsReproducible() {
        #expect(SignalGenerator.whiteNoise(count: 100, seed: 42) == SignalGenerator.whiteNoise(count: 100, seed: 42))
        #expect(SignalGenerator.whiteNoise(count: 100, seed: 42) != SignalGenerator.whiteNoise(count: 100, seed: 43))
        let s = Statistics(SignalGenerator.whiteNoise(count: 100_000, sigma: 2, seed: 1))
        #expect(abs(s.standardDeviation - 2) < 0.02)  // tolerance: 1 %
        let pink = Statistics(SignalGenerator.pinkNoise(count: 10_000, rms: 0.5, seed: 1))
        #expect(abs(pink.rms - 0.5) < 1e-12)
    }

    @Test func waveforms() {
        let sq = SignalGenerator.square(count: 8, sampleRate: 8, frequency: 1)
        #expect(sq == [1, 1, 1, 1, -1, -1, -1, -1])
        let tri = SignalGenerator.triangle(count: 4, sampleRate: 4, frequency: 1)
        #expect(tri == [-1, 0, 1, 0])
        let saw = SignalGenerator.sawtooth(count: 4, sampleRate: 4, frequency: 1)
        #expect(saw == [-1, -0.5, 0, 0.5])
        #expect(SignalGenerator.dc(count: 3, level: 2) == [2, 2, 2])
    }

    @Test func quantisation() {
        var x = [0.0, 0.3, -1.2, 0.99, 1.5]
        SignalGenerator.quantize(&x, bits: 3, fullScale: 2)  // LSB 0.25, codes -4...3
        #expect(x == [0, 0.25, -1, 0.75, 0.75])
    }
}
