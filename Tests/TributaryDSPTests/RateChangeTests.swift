import Foundation
import Testing

@testable import TributaryDSP

@Suite struct RateChangeTests {
    /// A reproducible test signal: noise, a near-Nyquist tone, a step and an impulse.
    static func signal(_ n: Int, seed: UInt64 = 7) -> [Double] {
        var state = seed
        return (0..<n).map { k in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let noise = Double(state >> 11) / Double(1 << 53) - 0.5
            return noise + 0.7 * cos(0.97 * Double.pi * Double(k)) + (k >= n / 3 ? 1.5 : 0) + (k == n / 2 ? 4 : 0)
        }
    }

    static func wholeDecimation(_ x: [Double], q: Int, filter: DecimationFilter, order: Int? = nil) throws -> [Double] {
        let n = try RateChange.decimateLength(length: x.count, q: q)
        var y = [Double](repeating: 0, count: n)
        try x.withUnsafeBufferPointer { xp in
            try y.withUnsafeMutableBufferPointer { yp in
                try RateChange.decimate(
                    x: xp.baseAddress!, y: yp.baseAddress!, layout: FilterLayout(length: x.count), q: q, order: order,
                    filter: filter, zeroPhase: false)
            }
        }
        return y
    }

    /// Block by block equals whole, bit for bit, for many splits (blocks shorter than q, than the
    /// filter, empty blocks, one long block), IIR and FIR, several q.
    @Test(arguments: [DecimationFilter.iir, .fir], [2, 3, 5, 10])
    func streamEqualsWholeForAnySplit(filter: DecimationFilter, q: Int) throws {
        let x = Self.signal(1_001)
        let whole = try Self.wholeDecimation(x, q: q, filter: filter)
        #expect(whole.count == (x.count + q - 1) / q)
        var generator = SystemRandomNumberGenerator()
        let fixed: [[Int]] = [
            [1_001], Array(repeating: 1, count: 1_001), [0, 3, 0, 998], [q - 1, 1, q + 1, 1_001 - 2 * q - 1],
            [7, 500, 13, 481],
        ]
        let random: [[Int]] = (0..<5).map { _ in
            var sizes: [Int] = [], left = 1_001
            while left > 0 {
                let s = min(left, Int.random(in: 0...90, using: &generator))
                sizes.append(s)
                left -= s
            }
            return sizes
        }
        for sizes in fixed + random {
            var stream = try DecimatorStream(q: q, filter: filter)
            var joined: [Double] = [], start = 0
            for size in sizes {
                let block = Array(x[start..<(start + size)])
                #expect(stream.outputCount(size) <= (size + q - 1) / q)
                joined += stream.process(block)
                start += size
            }
            #expect(joined == whole, "split \(sizes.prefix(8))…")
        }
    }

    /// Channels are independent: interleaving their blocks changes nothing; reset starts again.
    @Test func channelsAreIndependentAndResetRestarts() throws {
        let a = Self.signal(300, seed: 1), b = Self.signal(300, seed: 2)
        var stream = try DecimatorStream(q: 3, channels: 2)
        var ya: [Double] = [], yb: [Double] = []
        for k in stride(from: 0, to: 300, by: 50) {
            ya += stream.process(Array(a[k..<(k + 50)]), channel: 0)
            yb += stream.process(Array(b[k..<(k + 37 < 300 ? k + 37 : 300)]), channel: 1)
            if k + 37 < 300 { yb += stream.process(Array(b[(k + 37)..<(k + 50)]), channel: 1) }
        }
        #expect(ya == (try Self.wholeDecimation(a, q: 3, filter: .iir)))
        #expect(yb == (try Self.wholeDecimation(b, q: 3, filter: .iir)))
        stream.reset()
        #expect(stream.process(a, channel: 0) == ya)
    }

    /// The FIR decimation without zero phase is the causal filter's every q-th output (lfilter of
    /// the firwin taps), to rounding.
    @Test func firStreamEqualsCausalFilter() throws {
        let x = Self.signal(400)
        let taps = try RateChange.decimationTaps(q: 4)
        var stream = try DecimatorStream(q: 4, filter: .fir)
        let decimated = stream.process(x)
        var full = try TransferStream(function: TransferFunction(b: taps, a: [1]))
        let filtered = full.filter(x)
        let picked = stride(from: 0, to: x.count, by: 4).map { filtered[$0] }
        #expect(decimated.count == picked.count)
        let scale = picked.map(abs).max()!
        #expect(zip(decimated, picked).allSatisfy { abs($0 - $1) <= 1e-13 * scale })
    }

    /// resample_poly of a stream in blocks (then `finish`) equals resample_poly of the whole, bit
    /// for bit, for any split, for several up/down pairs; `finish` restarts it at rest.
    @Test func resamplerStreamEqualsWholeResamplePoly() throws {
        let x = Self.signal(997)
        for (up, down) in [(1, 10), (3, 2), (2, 3), (5, 1), (7, 11), (4, 6)] {
            var whole = [Double](repeating: 0, count: try RateChange.resampleLength(length: x.count, up: up, down: down))
            try RateChange.resamplePoly(x: x, y: &whole, layout: FilterLayout(outer: 1, length: x.count, inner: 1), up: up, down: down)
            var seed: UInt64 = 3
            var random: [Int] = []
            var left = x.count
            while left > 0 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1
                let size = min(left, Int(seed >> 33) % 130)
                random.append(size)
                left -= size
            }
            for sizes in [[x.count], [1, 996], [500, 0, 497], Array(repeating: 1, count: 997), random] {
                var stream = try ResamplerStream(up: up, down: down)
                var joined: [Double] = [], start = 0
                for size in sizes {
                    joined += stream.process(Array(x[start..<(start + size)]))
                    start += size
                }
                joined += stream.finish()
                #expect(joined == whole, "up \(up) down \(down) split \(sizes.prefix(8))…")
                #expect(stream.produced() == 0)
                #expect(stream.process(Array(x[0..<100])) + stream.finish() == (try Self.wholeResample(Array(x[0..<100]), up, down)))
            }
        }
    }

    static func wholeResample(_ x: [Double], _ up: Int, _ down: Int) throws -> [Double] {
        var y = [Double](repeating: 0, count: try RateChange.resampleLength(length: x.count, up: up, down: down))
        try RateChange.resamplePoly(x: x, y: &y, layout: FilterLayout(outer: 1, length: x.count, inner: 1), up: up, down: down)
        return y
    }

    /// Empty signals give empty outputs (no buffer is touched), as scipy's.
    @Test func emptySignalsGiveEmptyOutputs() throws {
        let input = [0.0]
        var output = [0.0]
        let layout = FilterLayout(outer: 3, length: 0, inner: 2)
        let resampled = try RateChange.resamplePoly(x: input, y: &output, layout: layout, up: 3, down: 2)
        #expect(resampled.length == 0 && resampled.count == 0)
        let decimated = try RateChange.decimate(x: input, y: &output, layout: layout, q: 4, filter: .fir)
        #expect(decimated.length == 0)
        var stream = try DecimatorStream(q: 3)
        #expect(stream.process([]).isEmpty && stream.outputCount(0) == 0)
    }

    @Test func misuseIsRefused() {
        #expect(throws: FilterError.self) { try DecimatorStream(q: 0) }
        #expect(throws: FilterError.self) { try DecimatorStream(q: RateChange.maxFactor + 1) }
        #expect(throws: FilterError.self) { try DecimatorStream(q: 1, filter: .fir) }
        #expect(throws: FilterError.self) { try DecimatorStream(q: 2, channels: 0) }
        #expect(throws: FilterError.self) { try RateChange.upfirdnLength(taps: 3, length: Int.max / 2, up: 1 << 20, down: 1) }
        #expect(throws: FilterError.self) { try RateChange.resampleLength(length: 10, up: 0, down: 1) }
    }
}
