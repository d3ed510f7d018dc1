import Foundation
import Testing

@testable import TributaryDSP

/// The short-time transform, its inverse, the cross-spectra and the transfer functions on signals
/// whose answers are known exactly (the comparisons with scipy are in python/tests/test_spectral.py
/// and Tests/Interop/test_analyze_spectral.py).
@Suite struct CrossSpectrumTests {
    static func noise(_ n: Int, seed: UInt64) -> [Double] {
        var state = seed
        return (0..<n).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(Int64(bitPattern: state >> 11) % 1_000_000) / 500_000 - 1
        }
    }

    @Test func autoSpectrumEqualsWelch() throws {
        let x = Self.noise(5000, seed: 1)
        for (average, detrend) in [(WelchAverage.mean, Detrend.constant), (.median, .linear), (.mean, .none)] {
            let welchConfiguration = WelchConfiguration(
                segmentLength: 300, overlap: 100, window: .hamming, detrend: detrend, average: average)
            let expected = try welch(x, sampleRate: 50, configuration: welchConfiguration)
            let configuration = CrossSpectralConfiguration(
                segments: SegmentParameters(window: Window(.hamming, count: 300).values, overlap: 100, detrend: detrend), average: average)
            let got = try CrossSpectralEstimator(configuration: configuration, sampleRate: 50).estimate(x, nil)
            #expect(got.segments == expected.segments)
            #expect(got.frequencies == expected.frequencies)
            let scale = expected.values.max()!
            for k in got.pxx.indices { #expect(abs(got.pxx[k] - expected.values[k]) <= 1e-12 * scale) }
            #expect(got.pyy.isEmpty && got.pxyReal.isEmpty)
        }
    }

    @Test func aScaledCopyHasAKnownTransferFunction() throws {
        // y = 3 x: H1 = H2 = 3 and coherence 1 at every frequency, to rounding.
        let x = Self.noise(8192, seed: 2)
        let y = x.map { 3 * $0 }
        let configuration = CrossSpectralConfiguration.scipyDefaults(segmentLength: 256)
        for estimator in TransferEstimator.allCases {
            let h = try TransferEstimate(reference: x, response: y, sampleRate: 1000, configuration: configuration, estimator: estimator)
            #expect(h.frequencies.count == 129)
            for k in h.frequencies.indices {
                #expect(abs(h.real[k] - 3) < 1e-12)
                #expect(abs(h.imaginary[k]) < 1e-12)
                #expect(abs(h.coherence[k] - 1) < 1e-12)
                #expect(abs(h.magnitudeDB[k] - 20 * log10(3)) < 1e-10)
            }
        }
        // Independent noise: H1 is small and the coherence far below 1; H2 = H1 / coherence.
        let z = Self.noise(8192, seed: 3)
        let spectra = try CrossSpectralEstimator(configuration: configuration, sampleRate: 1000).estimate(x, z)
        let h1 = TransferEstimate(spectra: spectra, estimator: .h1), h2 = TransferEstimate(spectra: spectra, estimator: .h2)
        #expect(h1.coherence.reduce(0, +) / Double(h1.coherence.count) < 0.1)
        for k in 1..<(h1.frequencies.count - 1) {
            let m1 = hypot(h1.real[k], h1.imaginary[k]), m2 = hypot(h2.real[k], h2.imaginary[k])
            #expect(abs(m1 / m2 - h1.coherence[k]) < 1e-9 * max(1, h1.coherence[k]))
            #expect(abs(h1.phase[k] - h2.phase[k]) < 1e-9)
        }
    }

    @Test func inverseOfTheTransformIsTheSignal() throws {
        let x = Self.noise(1000, seed: 4)
        let window = Window(.hann, count: 64).values
        let parameters = SegmentParameters(window: window, overlap: 48, fftLength: 80, detrend: .none)
        let transform = try ShortTimeTransform(parameters)
        let segments = try parameters.segmentCount(signalLength: x.count)
        let bins = parameters.binCount(twoSided: false)
        var z = [Double](repeating: 0, count: bins * segments * 2)
        try x.withUnsafeBufferPointer { xb in
            try z.withUnsafeMutableBufferPointer { _ = try transform.spectra(xb, scale: 1, twoSided: false, into: $0) }
        }
        let length = 64 + (segments - 1) * 16
        var out = [Double](repeating: 0, count: length - 64)
        let failures = try z.withUnsafeBufferPointer { zb in
            try out.withUnsafeMutableBufferPointer {
                try inverseShortTimeTransform(
                    zb, segments: segments, window: window, fftLength: 80, step: 16, gain: 1,
                    range: 32..<(length - 32), into: $0)
            }
        }
        #expect(failures == 0)
        for i in out.indices { #expect(abs(out[i] - x[32 + i]) < 1e-12) }
    }

    @Test func badParametersAreNamed() throws {
        #expect(throws: SpectralParameterError.self) { try SegmentParameters(window: [1, 1], overlap: 2).validate() }
        #expect(throws: SpectralParameterError.self) { try SegmentParameters(window: [1, 1], overlap: 0, fftLength: 1).validate() }
        #expect(throws: SpectralParameterError.self) { try SegmentParameters(window: [], overlap: 0).validate() }
        #expect(throws: SpectralParameterError.self) { try SegmentParameters(window: [1, .nan], overlap: 0).validate() }
        #expect(throws: SpectralParameterError.self) { try SegmentParameters(window: [1, 1, 1], overlap: 0).segmentCount(signalLength: 2) }
        do {
            _ = try SpectralWindow.values(name: "kaiser", count: 8)
            Issue.record("kaiser made")
        } catch let error as SpectralParameterError {
            #expect(error.description.contains("'kaiser'"))
        }
        #expect(throws: SpectralParameterError.self) { try SpectralWindow.values(name: "hann", parameters: [1], count: 8) }
        #expect(try SpectralWindow.values(name: "tukey_periodic", parameters: [0.25], count: 1) == [1])
        #expect(try SpectralWindow.values(name: "hann_symmetric", count: 5) == Window(.hann, count: 5, periodic: false).values)
    }
}
