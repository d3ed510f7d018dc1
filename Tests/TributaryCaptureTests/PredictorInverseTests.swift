import Foundation
import Testing
import TributaryTestSupport

@testable import TributaryCapture

/// The decoder's inverses of the coded transform's predictors (`NumericCodec.integrate`,
/// `integrateLinear`: unrolled, on the prediction instead of the latent, partly in binary64, fused
/// with the conversion to the element type) against the rule of docs/CAPTURE.md §5.1 written out plainly: every order,
/// lengths around the unrolling, coefficients and residuals that wrap 64-bit arithmetic.
@Suite struct PredictorInverseTests {
    /// `(2^(shift−1) + Σ c[j] × x[i−1−j]) >> shift` added to each residual, missing history 0, wrapping.
    static func reference(_ residuals: [Int64], coefficients c: [Int64], shift: Int) -> [Int64] {
        var x = residuals
        for i in 0..<x.count {
            var sum: Int64 = 1 &<< Int64(shift - 1)
            for j in 0..<min(c.count, i) { sum = sum &+ c[j] &* x[i - 1 - j] }
            x[i] = x[i] &+ (sum &>> Int64(shift))
        }
        return x
    }

    static let lengths = [1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 1000, 1003]

    @Test(arguments: 1...8)
    func linearOrderMatchesTheRule(order: Int) {
        var rng = SplitMix64(seed: UInt64(order) * 7919)
        for n in Self.lengths {
            for trial in 0..<5 {
                // Trial 0: realistic (small residuals, coefficients below 1/8 at shift 20: a stable filter);
                // trial 4 the same with one residual of 2^45 halfway (order 8's binary64 loop gives
                // up there and the integer loop starts over); the others: anything, so that sums
                // wrap and shifts go up to 62.
                let realistic = trial == 0 || trial == 4
                let shift = realistic ? 20 : Int(rng.next() % 62) + 1
                let c = (0..<order).map { _ in
                    realistic ? Int64(rng.next() % (1 << 18)) - (1 << 17) : Int64(bitPattern: rng.next())
                }
                let residuals = (0..<n).map { i in
                    if trial == 4 && i == n / 2 { return Int64(1) << 45 }
                    return realistic ? Int64(rng.next() % 2001) - 1000 : Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64)
                }
                let expected = Self.reference(residuals, coefficients: c, shift: shift)
                var padded = c + [Int64](repeating: 0x5555, count: 8 - order)  // beyond the order: never read
                // The latents themselves.
                var latents = [Int64](repeating: 0, count: n)
                latents.withUnsafeMutableBufferPointer { lp in
                    Self.integrate(residuals, &padded, order: order, shift: shift, into: LatentArray(d: lp.baseAddress!))
                }
                #expect(latents == expected, "order \(order), n \(n), trial \(trial), latents")
                // Converted to int32 on the way out.
                var out = [Int32](repeating: 0, count: n)
                out.withUnsafeMutableBytes { op in
                    Self.integrate(residuals, &padded, order: order, shift: shift, into: Int32Output(op.baseAddress!))
                }
                #expect(out == expected.map { Int32(truncatingIfNeeded: $0) }, "order \(order), n \(n), trial \(trial), int32")
            }
        }
    }

    /// `NumericCodec.integrateLinear` of a copy of `residuals` (it works in place) into `output`.
    static func integrate<Out: LatentOutput>(_ residuals: [Int64], _ padded: inout [Int64], order: Int, shift: Int, into output: Out) {
        var v = residuals
        v.withUnsafeMutableBufferPointer { vp in
            padded.withUnsafeMutableBufferPointer { cp in
                NumericCodec.integrateLinear(
                    vp.baseAddress!, count: residuals.count, coefficients: cp.baseAddress!, order: order, shift: shift, into: output)
            }
        }
    }

    @Test(arguments: 0...2)
    func differencesMatchTheRule(order: Int) {
        var rng = SplitMix64(seed: UInt64(order) + 11)
        for n in Self.lengths {
            let residuals = (0..<n).map { _ in Int64(bitPattern: rng.next()) }
            var expected = residuals
            for _ in 0..<order { for i in 1..<max(1, n) { expected[i] = expected[i] &+ expected[i - 1] } }
            var v = residuals
            var out = [Int16](repeating: 0, count: n)
            v.withUnsafeMutableBufferPointer { vp in
                out.withUnsafeMutableBytes { op in
                    NumericCodec.integrate(vp.baseAddress!, count: n, order: order, into: Int16Output(op.baseAddress!))
                }
            }
            #expect(out == expected.map { Int16(truncatingIfNeeded: $0) }, "order \(order), n \(n)")
        }
    }
}

/// The latents themselves, into an array of their own.
struct LatentArray: LatentOutput {
    let d: UnsafeMutablePointer<Int64>
    func store(_ i: Int, _ latent: Int64) { d[i] = latent }
}
