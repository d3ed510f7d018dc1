import CFFTW
import Foundation
import Testing

@testable import TributaryDSP

@Suite struct FFTTests {
    @Test func sineAmplitudeAndFrequency() throws {
        // A coherent sine (bin 100 of 4096) reads its amplitude exactly in the amplitude spectrum.
        let n = 4096, fs = 4096.0
        let x = SignalGenerator.sine(count: n, sampleRate: fs, frequency: 100, amplitude: 1.7)
        let s = try SpectrumAnalyzer(count: n, sampleRate: fs, window: .rectangular).spectrum(x)
        let a = s.amplitude(.peak)
        let peak = a.indices.max { a[$0] < a[$1] }!
        #expect(peak == 100)
        #expect(abs(a[100] - 1.7) < 1e-12)  // tolerance: 1e-12 absolute
        #expect(abs(s.amplitude(.rms)[100] - 1.7 / 2.0.squareRoot()) < 1e-12)
        // sin = cos shifted by -90 degrees.
        #expect(abs(s.phase()[100] * 180 / .pi + 90) < 1e-9)  // tolerance: 1e-9 degrees
    }

    @Test(arguments: [16, 1000, 1024, 4097])
    func parseval(n: Int) throws {
        let x = SignalGenerator.whiteNoise(count: n, seed: UInt64(n))
        let y = try RealFFT<Double>(count: n).forward(x)
        var energy = 0.0
        for k in 0...(n / 2) {
            let p = y[2 * k] * y[2 * k] + y[2 * k + 1] * y[2 * k + 1]
            energy += (k == 0 || (n % 2 == 0 && k == n / 2)) ? p : 2 * p
        }
        let timeEnergy = x.reduce(0) { $0 + $1 * $1 }
        #expect(abs(energy / Double(n) - timeEnergy) <= 1e-12 * timeEnergy)  // tolerance: 1e-12 relative
    }

    @Test func floatMatchesDouble() throws {
        let n = 512
        let x = SignalGenerator.whiteNoise(count: n, seed: 3)
        let yd = try RealFFT<Double>(count: n).forward(x)
        let yf = try RealFFT<Float>(count: n).forward(x.map(Float.init))
        let scale = yd.map(abs).max()!
        for i in yd.indices { #expect(abs(Double(yf[i]) - yd[i]) < 1e-5 * scale) }  // tolerance: 1e-5 of the largest bin
    }

    @Test func unalignedBuffersAndBatches() throws {
        let n = 64, channels = 3
        let fft = try RealFFT<Double>(count: n, rigor: .measure)
        let x = SignalGenerator.whiteNoise(count: n * channels + 1, seed: 9)
        var out = [Double](repeating: 0, count: (n + 2) * channels + 1)
        // Offset by one element: not FFTW-aligned, so the copy path is taken.
        x.withUnsafeBufferPointer { xb in
            out.withUnsafeMutableBufferPointer { ob in
                fft.forward(
                    batch: UnsafeBufferPointer(rebasing: xb[1...]), into: UnsafeMutableBufferPointer(rebasing: ob[1...]), channels: channels
                )
            }
        }
        for c in 0..<channels {
            let expected = fft.forward(Array(x[(1 + c * n)..<(1 + (c + 1) * n)]))
            #expect(Array(out[(1 + c * (n + 2))..<(1 + (c + 1) * (n + 2))]) == expected)
        }
    }

    @Test func alignmentCheckAgreesWithFFTW() {
        for address in stride(from: 0, through: 256, by: 4) {
            let p = UnsafeRawPointer(bitPattern: 4096 + address)!
            #expect(
                RealFFT<Double>.isAligned(p)
                    == (fftw_alignment_of(UnsafeMutablePointer(mutating: p.assumingMemoryBound(to: Double.self))) == 0))
            #expect(
                RealFFT<Float>.isAligned(p)
                    == (fftwf_alignment_of(UnsafeMutablePointer(mutating: p.assumingMemoryBound(to: Float.self))) == 0))
        }
    }

    @Test func planCacheReusesPlansAndWisdomRoundTrips() throws {
        _ = try RealFFT<Double>(count: 96, rigor: .measure)
        let before = FFTPlanCache.shared.planCount
        _ = try RealFFT<Double>(count: 96, rigor: .estimate)  // served by the measured plan
        #expect(FFTPlanCache.shared.planCount == before)
        let wisdom = FFTPlanCache.shared.wisdomText()
        #expect(wisdom.contains("fftw_wisdom"))
        #expect(FFTPlanCache.shared.importWisdom(text: wisdom))
    }

    @Test func concurrentExecution() async throws {
        let n = 256
        let x = SignalGenerator.whiteNoise(count: n, seed: 5)
        let expected = try RealFFT<Double>(count: n).forward(x)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let fft = try RealFFT<Double>(count: n)
                    return (0..<50).allSatisfy { _ in fft.forward(x) == expected }
                }
            }
            for try await ok in group { #expect(ok) }
        }
    }
}
