import Testing

@testable import TributaryDSP

@Suite struct WelchTests {
    @Test func whiteNoiseLevel() throws {
        // One-sided PSD of unit-variance white noise at fs = 100 Hz is 2 / 100 per Hz.
        let x = SignalGenerator.whiteNoise(count: 200_000, seed: 11)
        let p = try welch(x, sampleRate: 100, configuration: WelchConfiguration(segmentLength: 256))
        let inner = p.values[1..<(p.values.count - 1)]
        let mean = inner.reduce(0, +) / Double(inner.count)
        #expect(abs(mean - 0.02) < 0.02 * 0.01)  // tolerance: 1 % (1561 segments x 127 bins)
        #expect(p.segments == (200_000 - 128) / 128)
    }

    @Test func parsevalForDensity() throws {
        // The integral of a PSD is the (detrended) variance.
        let x = SignalGenerator.whiteNoise(count: 65_536, sigma: 2, seed: 1)
        let p = try welch(x, sampleRate: 10, configuration: WelchConfiguration(segmentLength: 1024, window: .rectangular, detrend: .none))
        let power = p.values.reduce(0, +) * 10 / 1024
        #expect(abs(power - 4) < 0.04)  // tolerance: 1 %
    }

    @Test func streamingEqualsBatch() throws {
        let n = 10_000
        let a = SignalGenerator.whiteNoise(count: n, seed: 2), b = SignalGenerator.sine(count: n, sampleRate: 1, frequency: 0.1)
        let config = WelchConfiguration(segmentLength: 300, overlap: 100, window: .blackman, detrend: .linear)
        let stream = try StreamingWelch(configuration: config, sampleRate: 1, channelCount: 2)
        var start = 0
        for size in [1, 7, 299, 300, 301, 2500, 6592] {
            let block = Array(a[start..<(start + size)]) + Array(b[start..<(start + size)])
            block.withUnsafeBufferPointer { stream.add(block: $0, samplesPerChannel: size) }
            start += size
        }
        #expect(start == n)
        for (c, x) in [a, b].enumerated() {
            let batch = try welch(x, configuration: config)
            let s = stream.estimate(channel: c)!
            #expect(s.segments == batch.segments)
            let scale = batch.values.max()!
            for k in batch.values.indices { #expect(abs(s.values[k] - batch.values[k]) <= 1e-12 * scale) }  // tolerance: 1e-12 of the max
        }
    }

    /// `restartAverage` forgets the segments so far but keeps the samples the next segment needs: the
    /// segments after it are those batch Welch takes from the rest of the stream (the live view's
    /// spectrogram columns). With segments of 300 every 200 samples, after 2 300 samples (11 segments)
    /// the next segments start at 2 200, so the estimate equals batch Welch of samples 2 200 ..< 5 000.
    @Test func restartAverageKeepsTheStreamsSegments() throws {
        let n = 5_000
        let x = SignalGenerator.whiteNoise(count: n, seed: 5)
        let config = WelchConfiguration(segmentLength: 300, overlap: 100, window: .hann)
        let stream = try StreamingWelch(configuration: config, sampleRate: 1, channelCount: 1)
        x[0..<2_300].withUnsafeBufferPointer { stream.add(block: $0, samplesPerChannel: 2_300) }
        #expect(stream.segments == 11)
        stream.restartAverage()
        #expect(stream.segments == 0 && stream.estimate(channel: 0) == nil)
        Array(x[2_300...]).withUnsafeBufferPointer { stream.add(block: $0, samplesPerChannel: n - 2_300) }
        let batch = try welch(Array(x[2_200...]), configuration: config)
        let s = stream.estimate(channel: 0)!
        #expect(s.segments == batch.segments && s.segments == 13)
        let scale = batch.values.max()!
        for k in batch.values.indices { #expect(abs(s.values[k] - batch.values[k]) <= 1e-12 * scale) }
    }

    /// Segments inside a block are transformed in place and only straddling ones are assembled, so
    /// every way of cutting the stream must give the same sums, for any overlap (none, half, all but
    /// one sample) and blocks shorter, equal to and longer than a segment. (To rounding, not to the
    /// bit: the FFT plan cache hands a later estimator a better plan once another test has made one,
    /// and its roundoff differs; a segment taken from the wrong place differs by far more.)
    @Test(arguments: [0, 32, 63])
    func streamingIsIndependentOfBlockBoundaries(overlap: Int) throws {
        let n = 5_000, channels = 2
        let signal = (0..<channels).map { SignalGenerator.whiteNoise(count: n, seed: UInt64(7 + $0)) }
        let config = WelchConfiguration(segmentLength: 64, overlap: overlap, window: .hann)
        func stream(_ sizes: [Int]) throws -> StreamingWelch {
            let w = try StreamingWelch(configuration: config, sampleRate: 1, channelCount: channels)
            var start = 0
            for size in sizes {
                let block = signal.flatMap { $0[start..<(start + size)] }
                block.withUnsafeBufferPointer { w.add(block: $0, samplesPerChannel: size) }
                start += size
            }
            #expect(start == n)
            return w
        }
        var generator = SeededGenerator(seed: UInt64(overlap) + 1)
        var cuts: [[Int]] = [[n], Array(repeating: 1, count: n), Array(repeating: 64, count: n / 64) + [n % 64]]
        for _ in 0..<6 {
            var sizes: [Int] = [], left = n
            while left > 0 {
                let size = min(left, Int(generator.next() % 150))
                sizes.append(size)
                left -= size
            }
            cuts.append(sizes)
        }
        let whole = try stream([n])
        for sizes in cuts {
            let w = try stream(sizes)
            #expect(w.segments == whole.segments)
            for c in 0..<channels {
                let got = w.estimate(channel: c)!.values, want = whole.estimate(channel: c)!.values
                let scale = want.max()!
                // tolerance: 1e-13 of the max (plans' roundoff)
                #expect(zip(got, want).allSatisfy { abs($0 - $1) <= 1e-13 * scale }, "channel \(c), cut \(sizes.count) blocks")
            }
        }
        for c in 0..<channels {
            let batch = try welch(signal[c], configuration: config)
            #expect(whole.segments == batch.segments)
            let scale = batch.values.max()!
            for k in batch.values.indices {
                #expect(abs(whole.estimate(channel: c)!.values[k] - batch.values[k]) <= 1e-12 * scale)  // tolerance: 1e-12 of the max
            }
        }
    }

    @Test func streamingRejectsMedian() {
        #expect(throws: SpectralParameterError.self) {
            try StreamingWelch(configuration: WelchConfiguration(average: .median), sampleRate: 1, channelCount: 1)
        }
    }

    @Test func parameterErrors() {
        #expect(throws: SpectralParameterError.self) { try welch([1, 2, 3], configuration: WelchConfiguration(segmentLength: 0)) }
        #expect(throws: SpectralParameterError.self) { try welch([], configuration: WelchConfiguration()) }
        #expect(throws: SpectralParameterError.self) {
            try welch([Double](repeating: 1, count: 100), configuration: WelchConfiguration(segmentLength: 10, overlap: 10))
        }
    }

    /// A segment length from a command line used to be allocated as asked: 2^40 aborted, 10^9 took gigabytes.
    @Test func lengthsBeyondTheLimitAreRefusedBeforeAllocating() {
        for length in [SpectralLimits.maxTransformLength + 1, 1_000_000_000, 1 << 40] {
            #expect(throws: SpectralParameterError.self) {
                try StreamingWelch(configuration: WelchConfiguration(segmentLength: length), sampleRate: 1, channelCount: 1)
            }
            #expect(throws: SpectralParameterError.self) { try SpectrumAnalyzer(count: length, sampleRate: 1) }
        }
        #expect(throws: SpectralParameterError.self) {
            try StreamingWelch(configuration: WelchConfiguration(segmentLength: 16, fftLength: 1 << 40), sampleRate: 1, channelCount: 1)
        }
    }

    @Test func medianBiasMatchesScipy() {
        // scipy.signal._spectral_py._median_bias(5) = 1 + (1/3 - 1/2) + (1/5 - 1/4)
        #expect(abs(WelchEstimator.medianBias(5) - (1 + (1.0 / 3 - 0.5) + (0.2 - 0.25))) < 1e-15)
        #expect(WelchEstimator.medianBias(1) == 1)
    }

    @Test func spectrogramRowsAverageToWelch() throws {
        let x = SignalGenerator.chirp(count: 8192, sampleRate: 1000, from: 10, to: 400)
        let config = WelchConfiguration(segmentLength: 512)
        let s = try Spectrogram(x, sampleRate: 1000, configuration: config)
        let w = try welch(x, sampleRate: 1000, configuration: config)
        #expect(s.values.count == w.segments)
        #expect(abs(s.times[0] - 0.256) < 1e-12)
        for k in stride(from: 0, to: w.values.count, by: 17) {
            let mean = s.values.reduce(0) { $0 + $1[k] } / Double(s.values.count)
            #expect(abs(mean - w.values[k]) <= 1e-12 * w.values.max()!)  // tolerance: 1e-12 of the max
        }
    }
}
