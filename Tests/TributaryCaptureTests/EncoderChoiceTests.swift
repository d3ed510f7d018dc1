import Foundation
import Testing
import TributaryTestSupport

@testable import TributaryCapture

/// The encoder's measured choices (docs/CAPTURE.md §5.1): they decide only sizes, never what
/// decodes, so each faster form is checked against the slower one it replaced.
@Suite struct EncoderChoiceTests {
    /// The least-squares fit as first written: the normal equations summed term by term.
    static func directFit(_ x: [Int64]) -> (usable: Int, coefficients: [Int64]) {
        let m = x.count, maxOrder = 8
        guard m > 4 * maxOrder else { return (0, []) }
        let mean = x.reduce(0.0) { $0 + Double($1) } / Double(m)
        var r = [Double](repeating: 0, count: 64), b = [Double](repeating: 0, count: 8)
        for i in maxOrder..<m {
            let lag = (0...maxOrder).map { Double(x[i - $0]) - mean }
            for j in 0..<maxOrder {
                b[j] += lag[0] * lag[j + 1]
                for k in j..<maxOrder { r[8 * j + k] += lag[j + 1] * lag[k + 1] }
            }
        }
        for j in 0..<maxOrder { for k in 0..<j { r[8 * j + k] = r[8 * k + j] } }
        var usable = 0
        var out = [Int64](repeating: 0, count: 24)
        for candidate in 0..<3 {
            let order = 2 << candidate
            var a = [Double](repeating: 0, count: order * (order + 1))
            var trace = 0.0
            for j in 0..<order {
                for k in 0..<order { a[(order + 1) * j + k] = r[8 * j + k] }
                a[(order + 1) * j + order] = b[j]
                trace += r[8 * j + j]
            }
            for j in 0..<order { a[(order + 1) * j + j] += 1e-9 * trace / Double(order) + 1e-300 }
            var ok = true
            for col in 0..<order {
                var pivot = col
                for row in col..<order where abs(a[(order + 1) * row + col]) > abs(a[(order + 1) * pivot + col]) { pivot = row }
                guard abs(a[(order + 1) * pivot + col]) > 0 else { ok = false; break }
                if pivot != col { for k in 0...order { a.swapAt((order + 1) * col + k, (order + 1) * pivot + k) } }
                for row in (col + 1)..<order {
                    let f = a[(order + 1) * row + col] / a[(order + 1) * col + col]
                    for k in col...order { a[(order + 1) * row + k] -= f * a[(order + 1) * col + k] }
                }
            }
            guard ok else { continue }
            var c = [Double](repeating: 0, count: order)
            for row in stride(from: order - 1, through: 0, by: -1) {
                var v = a[(order + 1) * row + order]
                for k in (row + 1)..<order { v -= a[(order + 1) * row + k] * c[k] }
                c[row] = v / a[(order + 1) * row + row]
            }
            guard c.allSatisfy({ $0.isFinite && abs($0) < 1024 }) else { continue }
            for j in 0..<order { out[8 * candidate + j] = Int64((c[j] * Double(1 << NumericCodec.linearShift)).rounded()) }
            usable |= 1 << candidate
        }
        return (usable, out)
    }

    /// The fit from the first row of sums and the recursion gives the directly summed coefficients,
    /// to within one unit of the last fixed-point bit (the sums round differently).
    @Test func fitFromTheFirstRowEqualsTheDirectSums() {
        var rng = SplitMix64(seed: 11)
        func noise() -> Double { Double(rng.next() >> 11) * 0x1p-53 - 0.5 }
        var signals: [[Int64]] = []
        for (length, amplitude, noiseLevel) in [
            (2048, 30000.0, 30.0), (2048, 1e9, 1e5), (100, 500.0, 3.0), (33, 10.0, 1.0), (1500, 0.0, 400.0),
        ] {
            signals.append(
                (0..<length).map { i in
                    let t = Double(i)
                    let tones: Double = amplitude * sin(t * 0.031) + 0.3 * amplitude * sin(t * 0.47)
                    return Int64((tones + noiseLevel * noise()).rounded())
                })
        }
        var walk: Int64 = 0
        signals.append(
            (0..<2048).map { _ in
                walk += Int64(noise() * 2000); return walk
            })
        signals.append([Int64](repeating: 42, count: 512))  // no variance: nothing usable either way
        for x in signals {
            let expected = Self.directFit(x)
            var fitted = [Int64](repeating: 0, count: 24)
            let usable = x.withUnsafeBufferPointer { NumericCodec.fitLinear($0.baseAddress!, count: x.count, into: &fitted) }
            #expect(usable == expected.usable, "usable candidates for a signal of \(x.count)")
            for candidate in 0..<3 where usable & expected.usable & (1 << candidate) != 0 {
                for j in 0..<(2 << candidate) {
                    #expect(
                        abs(fitted[8 * candidate + j] - expected.coefficients[8 * candidate + j]) <= 1,
                        "candidate \(candidate), coefficient \(j) of a signal of \(x.count)")
                }
            }
        }
    }

    /// A long block is planned on every fourth value: values the sample never saw, far outside its
    /// bins, still come back exactly (as escapes).
    @Test func outliersTheSampledPlanNeverSawComeBack() throws {
        var rng = SplitMix64(seed: 5)
        let n = 65_536
        let r: [Int64] = (0..<n).map { i in
            i % 4 == 1 && i % 1000 < 4 ? Int64(bitPattern: rng.next()) : Int64(rng.next() % 101) - 50
        }
        let block = try LatentBlockTests.encode(r)
        let escapes = block[24..<28].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        #expect(escapes >= 60, "the unseen outliers are escapes")
        #expect(try LatentBlockTests.decode(block, count: n) == r)
    }

    /// The mode of a float segment without a grid, chosen on estimated costs: the fixed-point grid
    /// for smooth full-mantissa data, the bit patterns for magnitudes over many decades (where the
    /// fixed-point adjustments would hold nearly every bit).
    @Test func floatSegmentsWithoutAGridTakeTheCheaperMode() throws {
        var rng = SplitMix64(seed: 9)
        func uniform() -> Double { Double(rng.next() >> 11) * 0x1p-53 }
        let n = 8192
        var y = 0.0
        let filtered: [Double] = (0..<n).map { i in
            y = 0.9 * y + 0.1 * (3 * sin(Double(i) * 0.01) + 0.01 * (uniform() - 0.5))
            return y
        }
        let decades: [Double] = (0..<n).map { _ in pow(10, 20 * uniform() - 10) * (uniform() < 0.5 ? -1 : 1) }
        let codec = try NumericCodec()
        for (values, mode) in [(filtered, UInt8(1)), (decades, UInt8(2))] {
            var out = [UInt8](repeating: 0, count: NumericCodec.workingSize(elementCount: n))
            let size = try #require(
                values.withUnsafeBytes { raw in
                    out.withUnsafeMutableBytes { codec.encode(raw, elementType: .float64, into: $0.baseAddress!, capacity: $0.count) }
                })
            // Stream header (16 bytes), then the one segment: u32 count, u8 mode.
            #expect(out[NumericCodec.streamHeaderSize + 4] == mode)
            var back = [Double](repeating: 0, count: n)
            _ = try out.withUnsafeBytes { stored in
                try back.withUnsafeMutableBytes {
                    try codec.decode(UnsafeRawBufferPointer(rebasing: stored[..<size]), elementType: .float64, into: $0)
                }
            }
            #expect(back.map(\.bitPattern) == values.map(\.bitPattern))
        }
    }
}
