import Testing

@testable import TributaryDSP

@Suite struct StatisticsTests {
    /// Two-pass reference; `offset` is subtracted first (exactly, for data near it) so that the
    /// reference's own summation error does not swamp the comparison.
    func reference(_ x: [Double], offset: Double) -> (mean: Double, variance: Double) {
        let mean = offset + x.reduce(0) { $0 + ($1 - offset) } / Double(x.count)
        return (mean, x.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(x.count))
    }

    @Test func knownValues() {
        let s = Statistics([1, 2, 3, 4])
        #expect(s.count == 4)
        #expect(s.min == 1 && s.max == 4 && s.peakToPeak == 3)
        #expect(s.mean == 2.5)
        #expect(abs(s.variance - 1.25) < 1e-15)  // tolerance: 1e-15 absolute
        #expect(abs(s.sampleVariance - 5.0 / 3) < 1e-15)
        #expect(abs(s.rms - (30.0 / 4).squareRoot()) < 1e-15)
    }

    @Test(arguments: [1, 7, 8, 2047, 2048, 2049, 10_000])
    func matchesTwoPassWithLargeOffset(count: Int) {
        // An offset of 1e9 with unit spread: a naive sum-of-squares formula loses every digit.
        let x = SignalGenerator.whiteNoise(count: count, seed: UInt64(count)).map { $0 + 1e9 }
        let s = Statistics(x)
        let r = reference(x, offset: 1e9)
        #expect(abs(s.mean - r.mean) <= 1e-15 * abs(r.mean))  // tolerance: 1e-15 relative
        if count > 1 { #expect(abs(s.variance - r.variance) <= 1e-7 * r.variance) }  // tolerance: 1e-7 relative (offset/spread = 1e9)
        #expect(s.min == x.min()! && s.max == x.max()!)
    }

    @Test func mergeEqualsSinglePass() {
        let x = SignalGenerator.whiteNoise(count: 50_001, sigma: 3, seed: 7).map { $0 + 5 }
        var whole = StatisticsAccumulator()
        whole.add(x)
        var a = StatisticsAccumulator(), b = StatisticsAccumulator(), c = StatisticsAccumulator()
        a.add(Array(x[0..<123]))
        b.add(Array(x[123..<30_000]))
        c.add(Array(x[30_000...]))
        var merged = a
        merged.merge(b)
        merged.merge(c)
        let m = merged.statistics, w = whole.statistics
        #expect(m.count == w.count && m.min == w.min && m.max == w.max)
        #expect(abs(m.mean - w.mean) <= 1e-14 * abs(w.mean))  // tolerance: 1e-14 relative
        #expect(abs(m.variance - w.variance) <= 1e-13 * w.variance)  // tolerance: 1e-13 relative
    }

    @Test func nanAndEmpty() {
        let s = Statistics([1, .nan, 3])
        #expect(s.min.isNaN && s.max.isNaN && s.mean.isNaN)
        let e = StatisticsAccumulator().statistics
        #expect(e.count == 0 && e.mean.isNaN)
        #expect(Statistics([2]).sampleVariance.isNaN)
    }

    @Test func floatAndInt16() {
        var a = StatisticsAccumulator()
        [Float(1.5), 2.5, -1].withUnsafeBufferPointer { a.add($0) }
        #expect(a.statistics.mean == 1)
        var b = StatisticsAccumulator()
        [Int16(-2), 4].withUnsafeBufferPointer { b.add($0, scale: 0.5) }
        #expect(b.statistics.min == -1 && b.statistics.max == 2)
    }

    @Test func multichannelBlocks() {
        var m = MultichannelStatistics(channelCount: 2)
        let block: [Double] = [1, 2, 3, 10, 20, 30]
        block.withUnsafeBufferPointer { m.add(block: $0, samplesPerChannel: 3) }
        #expect(m.channels[0].statistics.mean == 2)
        #expect(m.channels[1].statistics.mean == 20)
    }
}
