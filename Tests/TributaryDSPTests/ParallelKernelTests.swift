import CKernels
import Foundation
import Testing

@testable import TributaryDSP

/// The fast paths of issue 42's speed work against the one-line code they replace, bit for bit:
/// the four-lane C cascade (`tributary_sos4`) at every kernel level, the filters and rate changes
/// of many lines spread over the cores, upfirdn's four-outputs-at-once interior, and the batched
/// spectrogram and cross-spectra.
@Suite struct ParallelKernelTests {
    static func noise(_ count: Int, seed: UInt64) -> [Double] { SignalGenerator.whiteNoise(count: count, seed: seed) }

    static func sections(_ count: Int) -> SecondOrderSections {
        var c: [Double] = []
        for s in 0..<count {
            let r = 0.5 + 0.04 * Double(s), w = 0.3 + 0.2 * Double(s)
            c += [0.2 + 0.01 * Double(s), -0.1, 0.05, 1, -2 * r * cos(w), r * r]
        }
        return SecondOrderSections(coefficients: c)
    }

    /// One line through IIRKernel.sos (the scalar rule), from `state` (sections × 2), which ends final.
    static func scalar(_ sos: SecondOrderSections, _ x: [Double], state: inout [Double]) -> [Double] {
        var y = [Double](repeating: 0, count: x.count)
        sos.coefficients.withUnsafeBufferPointer { c in
            x.withUnsafeBufferPointer { xp in
                y.withUnsafeMutableBufferPointer { yp in
                    state.withUnsafeMutableBufferPointer { z in
                        IIRKernel.sos(
                            c.baseAddress!, sections: sos.count, x: xp.baseAddress!, xStride: 1, y: yp.baseAddress!, yStride: 1,
                            count: x.count, state: z.baseAddress!)
                    }
                }
            }
        }
        return y
    }

    @Test func fourLaneCascadeEqualsTheScalarRuleAtEveryLevel() {
        for sectionCount in [1, 3, 4, 5, 9] {
            let sos = Self.sections(sectionCount)
            for lanes in 1...4 {
                let n = 700 + 37 * lanes  // more than one block of 256, not a multiple of it
                let lines = (0..<lanes).map { Self.noise(n, seed: UInt64(10 * sectionCount + $0)) }
                let initial = (0..<(2 * sectionCount * lanes)).map { 0.01 * Double($0) }
                var expected: [[Double]] = [], expectedState: [[Double]] = []
                for l in 0..<lanes {
                    var z = (0..<(2 * sectionCount)).map { initial[$0 * lanes + l] }
                    expected.append(Self.scalar(sos, lines[l], state: &z))
                    expectedState.append(z)
                }
                SegmentKernelTests.atEveryLevel { level in
                    for backward in [false, true] {
                        var state = [Double](repeating: 0, count: 8 * sectionCount)
                        for l in 0..<lanes { for j in 0..<(2 * sectionCount) { state[j * 4 + l] = initial[j * lanes + l] } }
                        // Backward: the lines stored reversed, read from their ends with stride -1.
                        let input = UnsafeMutablePointer<Double>.allocate(capacity: lanes * n)
                        let output = UnsafeMutablePointer<Double>.allocate(capacity: lanes * n)
                        defer {
                            input.deallocate()
                            output.deallocate()
                        }
                        for l in 0..<lanes {
                            for k in 0..<n { input[l * n + k] = lines[l][backward ? n - 1 - k : k] }
                        }
                        output.initialize(repeating: .nan, count: lanes * n)
                        let offset = backward ? n - 1 : 0
                        let x4: [UnsafePointer<Double>?] = (0..<4).map { UnsafePointer(input + min($0, lanes - 1) * n + offset) }
                        let y4: [UnsafeMutablePointer<Double>?] = (0..<4).map { output + min($0, lanes - 1) * n + offset }
                        sos.coefficients.withUnsafeBufferPointer { c in
                            tributary_sos4(c.baseAddress!, sectionCount, x4, backward ? -1 : 1, y4, backward ? -1 : 1, n, lanes, &state)
                        }
                        for l in 0..<lanes {
                            let got = (0..<n).map { output[l * n + (backward ? n - 1 - $0 : $0)] }
                            #expect(
                                got == expected[l], "level \(level), \(sectionCount) sections, lane \(l) of \(lanes), backward \(backward)")
                            #expect((0..<(2 * sectionCount)).map { state[$0 * 4 + l] } == expectedState[l])
                        }
                    }
                }
            }
        }
    }

    /// sosfilt of an (outer, length, inner) array with states: every line equals the scalar rule
    /// (7 lines: a group of four and a remainder of three; long enough to run on several threads).
    @Test func sosfiltOfManyLinesEqualsEachLineAlone() throws {
        let sos = Self.sections(4)
        let layout = FilterLayout(outer: 7, length: 20_000, inner: 1)
        let x = Self.noise(layout.count, seed: 3)
        let initial = (0..<(sos.count * 7 * 2)).map { 0.001 * Double($0) }
        var y = [Double](repeating: 0, count: layout.count)
        var final = [Double](repeating: 0, count: initial.count)
        try IIRFilter.sosfilt(sos, x: x, y: &y, layout: layout, initial: initial, final: &final)
        for line in 0..<7 {
            var z = (0..<sos.count).flatMap { s in (0..<2).map { j in initial[(s * 7 + line) * 2 + j] } }
            let expected = Self.scalar(sos, Array(x[(line * 20_000)..<((line + 1) * 20_000)]), state: &z)
            #expect(Array(y[(line * 20_000)..<((line + 1) * 20_000)]) == expected)
            #expect((0..<sos.count).flatMap { s in (0..<2).map { j in final[(s * 7 + line) * 2 + j] } } == z)
        }
        // Along the first axis of a (20 000, 5) array: lines strided by 5.
        let strided = FilterLayout(outer: 1, length: 20_000, inner: 5)
        var ys = [Double](repeating: 0, count: strided.count)
        try IIRFilter.sosfilt(sos, x: x, y: &ys, layout: strided, initial: nil, final: nil)
        for i in 0..<5 {
            var z = [Double](repeating: 0, count: 2 * sos.count)
            let expected = Self.scalar(sos, (0..<20_000).map { x[$0 * 5 + i] }, state: &z)
            #expect((0..<20_000).map { ys[$0 * 5 + i] } == expected)
        }
    }

    @Test func sosfiltfiltOfManyLinesEqualsEachLineAlone() throws {
        let sos = Self.sections(3)
        let n = 30_000
        let layout = FilterLayout(outer: 6, length: n, inner: 1)
        let x = Self.noise(layout.count, seed: 4)
        var y = [Double](repeating: 0, count: layout.count)
        try IIRFilter.sosfiltfilt(sos, x: x, y: &y, layout: layout)
        for line in 0..<6 {
            var one = [Double](repeating: 0, count: n)
            try IIRFilter.sosfiltfilt(sos, x: Array(x[(line * n)..<((line + 1) * n)]), y: &one, layout: FilterLayout(length: n))
            #expect(Array(y[(line * n)..<((line + 1) * n)]) == one)
        }
    }

    /// upfirdn (mode constant, zeros) against its definition written out: output k is the sum, from
    /// zero, oldest input first, of x[i]·h[k·down − i·up] — the order scipy's kernel sums in.
    @Test func upfirdnEqualsItsDefinitionInScipysOrder() throws {
        let x = Self.noise(5_000, seed: 5)
        for (up, down, taps) in [(1, 1, 7), (1, 10, 201), (2, 3, 61), (3, 2, 61), (5, 1, 33), (7, 13, 300), (1, 3, 2)] {
            let h = Self.noise(taps, seed: UInt64(taps))
            let n = try RateChange.upfirdnLength(taps: taps, length: x.count, up: up, down: down)
            var y = [Double](repeating: .nan, count: n)
            try RateChange.upfirdn(h: h, x: x, y: &y, layout: FilterLayout(length: x.count), up: up, down: down)
            let expected = (0..<n).map { k -> Double in
                let p = k * down
                var sum = 0.0
                // Input i contributes when 0 ≤ p − i·up < taps; the kernel also adds zeros for taps
                // past the end of h in a phase, which change no sum.
                for i in 0..<x.count where p - i * up >= 0 && p - i * up < taps { sum += x[i] * h[p - i * up] }
                return sum
            }
            #expect(y == expected, "up \(up), down \(down), \(taps) taps")
        }
    }

    @Test func resamplePolyOfManyLinesEqualsEachLineAlone() throws {
        let n = 40_000
        let layout = FilterLayout(outer: 5, length: n, inner: 1)
        let x = Self.noise(layout.count, seed: 6)
        let m = try RateChange.resampleLength(length: n, up: 2, down: 3)
        var y = [Double](repeating: 0, count: 5 * m)
        try RateChange.resamplePoly(x: x, y: &y, layout: layout, up: 2, down: 3)
        for line in 0..<5 {
            var one = [Double](repeating: 0, count: m)
            try RateChange.resamplePoly(
                x: Array(x[(line * n)..<((line + 1) * n)]), y: &one, layout: FilterLayout(length: n), up: 2, down: 3)
            #expect(Array(y[(line * m)..<((line + 1) * m)]) == one)
        }
    }

    /// Four lines of upfirdn and resample_poly through the C kernel's interior, at every kernel level,
    /// against each line alone (the scalar loop).
    @Test func upfirdnOfFourLinesEqualsEachLineAloneAtEveryLevel() throws {
        let n = 3_000
        let x = Self.noise(4 * n, seed: 11)
        for (up, down, taps) in [(1, 1, 9), (2, 3, 61), (3, 2, 40), (1, 10, 201), (7, 13, 300)] {
            let h = Self.noise(taps, seed: UInt64(up * 100 + taps))
            let m = try RateChange.upfirdnLength(taps: taps, length: n, up: up, down: down)
            let r = try RateChange.resampleLength(length: n, up: up, down: down)
            var alone: [[Double]] = [], resampled: [[Double]] = []
            for line in 0..<4 {
                var one = [Double](repeating: 0, count: m)
                try RateChange.upfirdn(
                    h: h, x: Array(x[(line * n)..<((line + 1) * n)]), y: &one, layout: FilterLayout(length: n), up: up, down: down)
                alone.append(one)
                var two = [Double](repeating: 0, count: r)
                try RateChange.resamplePoly(
                    x: Array(x[(line * n)..<((line + 1) * n)]), y: &two, layout: FilterLayout(length: n), up: up, down: down)
                resampled.append(two)
            }
            try SegmentKernelTests.atEveryLevelThrowing { level in
                var y = [Double](repeating: .nan, count: 4 * m)
                try RateChange.upfirdn(h: h, x: x, y: &y, layout: FilterLayout(outer: 4, length: n, inner: 1), up: up, down: down)
                var z = [Double](repeating: .nan, count: 4 * r)
                try RateChange.resamplePoly(x: x, y: &z, layout: FilterLayout(outer: 4, length: n, inner: 1), up: up, down: down)
                for line in 0..<4 {
                    #expect(Array(y[(line * m)..<((line + 1) * m)]) == alone[line], "level \(level), up \(up), down \(down)")
                    #expect(Array(z[(line * r)..<((line + 1) * r)]) == resampled[line], "level \(level), up \(up), down \(down)")
                }
            }
        }
    }

    @Test func batchedSpectrogramEqualsOneRowTransforms() throws {
        let rows = 3, n = 50_000
        let x = Self.noise(rows * n, seed: 7)
        let parameters = SegmentParameters(window: try SpectralWindow.values(name: "tukey", parameters: [0.25], count: 256), overlap: 32)
        let segments = try parameters.segmentCount(signalLength: n), bins = parameters.binCount(twoSided: false)
        var out = [Double](repeating: .nan, count: rows * bins * segments)
        let scale = 0.37
        try x.withUnsafeBufferPointer { xp in
            try out.withUnsafeMutableBufferPointer {
                _ = try SpectrogramBatch.psd(xp.baseAddress!, rows: rows, length: n, parameters: parameters, scale: scale, into: $0)
            }
        }
        let transform = try ShortTimeTransform(parameters)
        var spectra = [Double](repeating: 0, count: bins * segments * 2)
        for row in 0..<rows {
            try x.withUnsafeBufferPointer { xp in
                try spectra.withUnsafeMutableBufferPointer {
                    _ = try transform.spectra(
                        UnsafeBufferPointer(start: xp.baseAddress! + row * n, count: n), scale: 1, twoSided: false, into: $0)
                }
            }
            for k in 0..<bins {
                for s in 0..<segments {
                    let re = spectra[2 * (k * segments + s)], im = spectra[2 * (k * segments + s) + 1]
                    let power = (re * re + im * im) * scale
                    let expected = k == 0 || k == bins - 1 ? power : power * 2
                    #expect(out[(row * bins + k) * segments + s] == expected)
                }
            }
        }
        // Too small an output is an error, not a write past its end.
        var short = [Double](repeating: 0, count: 10)
        #expect(throws: SpectralParameterError.self) {
            try x.withUnsafeBufferPointer { xp in
                try short.withUnsafeMutableBufferPointer {
                    _ = try SpectrogramBatch.psd(xp.baseAddress!, rows: rows, length: n, parameters: parameters, scale: 1, into: $0)
                }
            }
        }
    }

    @Test func batchedCoherenceEqualsOnePairAtATime() throws {
        let rows = 3, n = 40_000
        let x = Self.noise(rows * n, seed: 8), y = Self.noise(rows * n, seed: 9).enumerated().map { $1 + 0.5 * x[$0] }
        let configuration = CrossSpectralConfiguration.scipyDefaults(segmentLength: 1024)
        let bins = configuration.segments.binCount(twoSided: false)
        var out = [Double](repeating: .nan, count: rows * bins)
        try x.withUnsafeBufferPointer { xp in
            try y.withUnsafeBufferPointer { yp in
                try out.withUnsafeMutableBufferPointer {
                    try CrossSpectralBatch.coherence(
                        xp.baseAddress!, yp.baseAddress!, rows: rows, length: n, configuration: configuration, sampleRate: 2, into: $0)
                }
            }
        }
        let estimator = try CrossSpectralEstimator(configuration: configuration, sampleRate: 2)
        for row in 0..<rows {
            let c = try estimator.estimate(Array(x[(row * n)..<((row + 1) * n)]), Array(y[(row * n)..<((row + 1) * n)]))
            let expected = (0..<bins).map { k in
                let m = hypot(c.pxyReal[k], c.pxyImaginary[k])
                return m * m / c.pxx[k] / c.pyy[k]
            }
            #expect(Array(out[(row * bins)..<((row + 1) * bins)]) == expected)
        }
    }
}
