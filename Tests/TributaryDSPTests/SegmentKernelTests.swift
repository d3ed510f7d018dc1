import CKernels
import Foundation
import Testing
import TributaryTestSupport

@testable import TributaryDSP

/// The Welch segment's C kernels (dsp_kernels.h) at every instruction-set level this processor
/// has — portable, AVX2, AVX-512 — bit for bit against the Swift loops that state their rule:
/// numpy's pairwise summation (scipy's segment mean), detrend × window, and |X|² accumulated.
@Suite(.serialized)
struct SegmentKernelTests {
    /// A deterministic generator (SplitMix64).
    struct Numbers {
        var generator: SplitMix64
        init(state: UInt64) { generator = SplitMix64(seed: state) }
        mutating func next() -> UInt64 { generator.next() }
        /// Values of very different magnitudes and signs (so that the order of additions shows), a
        /// few special ones among them.
        mutating func value() -> Double {
            switch next() % 64 {
            case 0: return -0.0
            case 1: return [Double.infinity, -.infinity, .nan, .leastNonzeroMagnitude, -.greatestFiniteMagnitude][Int(next() % 5)]
            default:
                let mantissa = Double(next() >> 11) / Double(1 << 53) - 0.5
                return mantissa * pow(2, Double(Int(next() % 80) - 40))
            }
        }
    }

    /// `atEveryLevel` for a body that throws.
    static func atEveryLevelThrowing(_ body: (Int32) throws -> Void) throws {
        defer { _ = tributary_kernels_cap(2) }
        for level: Int32 in 0...2 {
            _ = tributary_kernels_cap(level)
            try body(level)
        }
    }

    /// Runs `body` once at each level (above the processor's, the best it has), restoring the default after.
    static func atEveryLevel(_ body: (Int32) -> Void) {
        defer { _ = tributary_kernels_cap(2) }
        for level: Int32 in 0...2 {
            _ = tributary_kernels_cap(level)
            body(level)
        }
    }

    /// numpy's `pairwise_sum_DOUBLE`, written out as the rule.
    static func referenceSum(_ a: [Double], _ start: Int, _ n: Int) -> Double {
        if n < 8 { return (0..<n).reduce(0.0) { $0 + a[start + $1] } }
        if n <= 128 {
            var r = Array(a[start..<(start + 8)])
            var i = 8
            while i < n - n % 8 {
                for j in 0..<8 { r[j] += a[start + i + j] }
                i += 8
            }
            var result = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
            while i < n { result += a[start + i]; i += 1 }
            return result
        }
        let n2 = n / 2 - (n / 2) % 8
        return referenceSum(a, start, n2) + referenceSum(a, start + n2, n - n2)
    }

    /// Bit for bit, NaN matching any NaN.
    static func same(_ a: [Double], _ b: [Double]) -> Bool {
        a.count == b.count
            && zip(a, b).allSatisfy { (p: Double, q: Double) -> Bool in p.bitPattern == q.bitPattern || (p.isNaN && q.isNaN) }
    }

    static let lengths = Array(0...140) + [255, 256, 257, 1000, 4095, 4096, 4097, 10_007]

    @Test func pairwiseSumMatchesNumpysOrderAtEveryLevel() {
        var numbers = Numbers(state: 11)
        Self.atEveryLevel { level in
            for n in Self.lengths {
                let a = (0..<n).map { _ in numbers.value() }
                let got = a.withUnsafeBufferPointer { tributary_pairwise_sum($0.baseAddress, n) }
                let want = Self.referenceSum(a, 0, n)
                #expect(got.bitPattern == want.bitPattern || (got.isNaN && want.isNaN), "level \(level), n \(n): \(got) vs \(want)")
            }
        }
    }

    @Test func detrendWindowAndPowerMatchTheirLoopsAtEveryLevel() {
        var numbers = Numbers(state: 12)
        Self.atEveryLevel { level in
            for n in Self.lengths {
                let x = (0..<n).map { _ in numbers.value() }, w = (0..<n).map { _ in numbers.value() }
                for mean in [0.0, numbers.value()] {
                    var out = [Double](repeating: 7, count: n + 1)
                    out.withUnsafeMutableBufferPointer { tributary_detrend_window(x, w, mean, $0.baseAddress, n) }
                    let want = (0..<n).map { (i: Int) -> Double in (x[i] - mean) * w[i] }
                    #expect(Self.same(Array(out[0..<n]), want), "level \(level), n \(n), mean \(mean)")
                    #expect(out[n] == 7, "level \(level), n \(n): wrote past n")
                }
                let y = (0..<(2 * n)).map { _ in numbers.value() }
                let start = (0..<n).map { _ in numbers.value() }
                var sums = start + [7]
                sums.withUnsafeMutableBufferPointer { tributary_accumulate_power(y, $0.baseAddress, n) }
                let want = (0..<n).map { (k: Int) -> Double in
                    let re = y[2 * k], im = y[2 * k + 1]
                    return start[k] + (re * re + im * im)
                }
                #expect(Self.same(Array(sums[0..<n]), want), "level \(level), bins \(n)")
                #expect(sums[n] == 7, "level \(level), bins \(n): wrote past the bins")
            }
        }
    }
}
