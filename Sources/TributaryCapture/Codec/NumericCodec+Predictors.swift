import CKernels
import CLinearPredictor
import Foundation

/// The predictors of `NumericCodec` (none, delta, delta of delta, linear of order 2, 4 or 8), their
/// inverses for one channel, and the choice among them by measurement.
extension NumericCodec {
    /// Order-preserving map of a float's bit pattern (sign-extended) to an integer; its own inverse.
    @inline(__always) static func ordered(_ bits: Int64) -> Int64 { bits >= 0 ? bits : bits ^ Int64.max }
    @inline(__always) static func ordered32(_ bits: Int64) -> Int64 { bits >= 0 ? bits : bits ^ Int64(Int32.max) }

    /// Replaces `v` by its residuals of the given order (0 none, 1 delta, 2 delta of delta), from 0.
    static func predict(_ v: UnsafeMutablePointer<Int64>, count n: Int, order: Int) {
        for _ in 0..<order {
            var i = n - 1
            while i > 0 { v[i] = v[i] &- v[i - 1]; i -= 1 }
        }
    }

    /// Undoes `predict`, handing each latent to `out` (which may be `v` itself: the latent at i is
    /// stored after v[i] is read and before v[i + 1] is).
    static func integrate<Out: LatentOutput>(_ v: UnsafeMutablePointer<Int64>, count n: Int, order: Int, into out: Out) {
        if order == 1 {
            var s: Int64 = 0
            for i in 0..<n { s = s &+ v[i]; out.store(i, s) }
        } else if order == 2 {
            var s: Int64 = 0, d: Int64 = 0
            for i in 0..<n { d = d &+ v[i]; s = s &+ d; out.store(i, s) }
        } else {
            for i in 0..<n { out.store(i, v[i]) }
        }
    }

    /// Fractional bits of the linear predictor's coefficients.
    static let linearShift = 20

    /// Residuals of the linear predictor `(2^(shift−1) + Σ c[j] × v[i−1−j]) >> shift` (wrapping
    /// 64-bit arithmetic; missing history counts as 0), written in place from the end.
    static func predictLinear(_ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>, order p: Int) {
        let half: Int64 = 1 << (Int64(linearShift) - 1)
        var i = n - 1
        // Backwards, so every prediction reads samples not yet replaced.
        if p == 8 {
            // The C kernel (eight residuals at a time with VPMULLQ where the processor has it)
            // computes exactly `predictLinearReference` for i ≥ 8.
            if n > 8 { tributary_predict_linear8(v, n, c, UInt32(linearShift)) }
            i = min(i, 7)
        } else if p == 4 {
            let c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3]
            while i >= 4 {
                let sum = half &+ c0 &* v[i - 1] &+ c1 &* v[i - 2] &+ c2 &* v[i - 3] &+ c3 &* v[i - 4]
                v[i] = v[i] &- (sum &>> Int64(linearShift))
                i -= 1
            }
        } else if p == 2 {
            let c0 = c[0], c1 = c[1]
            while i >= 2 {
                v[i] = v[i] &- ((half &+ c0 &* v[i - 1] &+ c1 &* v[i - 2]) &>> Int64(linearShift))
                i -= 1
            }
        }
        while i >= 0 {
            var sum = half
            for j in 0..<min(p, i) { sum = sum &+ c[j] &* v[i - 1 - j] }
            v[i] = v[i] &- (sum &>> Int64(linearShift))
            i -= 1
        }
    }

    /// `predictLinear`'s order-8 rule in Swift (the kernel's reference in the tests).
    static func predictLinearReference8(_ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>) {
        let half: Int64 = 1 << (Int64(linearShift) - 1)
        var i = n - 1
        while i >= 0 {
            var sum = half
            for j in 0..<min(8, i) { sum = sum &+ c[j] &* v[i - 1 - j] }
            v[i] = v[i] &- (sum &>> Int64(linearShift))
            i -= 1
        }
    }

    /// Undoes `predictLinear` for one channel, handing each latent to `out` (`decode` takes order 8
    /// four or eight channels at a time where it can: `finishLanes`). The last latents are kept in registers
    /// (no store-to-load round trip in the dependency chain) and shifts mask (`&>>`: `shift` is
    /// checked to be 1 … 62). The conversion `out` makes to the element type costs little here: the
    /// loop is bound by its multiplies (8 per sample at order 8).
    static func integrateLinear<Out: LatentOutput>(
        _ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>,
        order p: Int, shift: Int, into out: Out
    ) {
        if p == 8 {
            if !integrateLinear8Split(v, count: n, coefficients: c, shift: shift, into: out) {
                integrateLinear8(v, count: n, coefficients: c, shift: shift, into: out)
            }
            return
        }
        let half: Int64 = 1 &<< (Int64(shift) - 1)
        let q = Int64(shift)
        // Orders 2 and 4 from sample 0 with the missing history as zeros, on the prediction t
        // (x = v + t) rather than the latent: t(i) = (r + c0 × t(i−1)) >> shift, where r = the
        // sum's other terms + c0 × v(i−1) (the same sum modulo 2^64, as c0 × x = c0 × v + c0 × t).
        // The dependency chain is then a multiply, an add and the shift — one add shorter than on
        // the latent — and bounds these loops (one more multiply per sample is off the chain).
        if p == 2 {
            let c0 = c[0], c1 = c[1]
            var t: Int64 = 0, a1: Int64 = 0, r = half
            for i in 0..<n {
                t = (r &+ c0 &* t) &>> q
                let vi = v[i]
                let x = vi &+ t
                r = half &+ c0 &* vi &+ c1 &* a1
                out.store(i, x)
                a1 = x
            }
            return
        }
        if p == 4 {
            let c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3]
            var t: Int64 = 0, a1: Int64 = 0, a2: Int64 = 0, a3: Int64 = 0, r = half
            for i in 0..<n {
                t = (r &+ c0 &* t) &>> q
                let vi = v[i]
                let x = vi &+ t
                r = half &+ c0 &* vi &+ c1 &* a1 &+ c2 &* a2 &+ c3 &* a3
                out.store(i, x)
                a3 = a2; a2 = a1; a1 = x
            }
            return
        }
        // Other orders (1, 3, 5, 6, 7: never written by the encoder) in place, then handed on.
        for i in 0..<n {
            var sum = half
            for j in 0..<min(p, i) { sum = sum &+ c[j] &* v[i - 1 - j] }
            v[i] = v[i] &+ (sum &>> q)
        }
        for i in 0..<n { out.store(i, v[i]) }
    }

    /// The predictor whose residuals cost least on runs sampled over the segment: an order of
    /// differences (0 … 2), or linear (`linear`, its order, coefficients left in `chosen`).
    func choosePredictor(_ v: UnsafePointer<Int64>, count n: Int) -> (order: Int, linear: Bool) {
        guard n >= 16 else { return (0, false) }
        let run = min(n, 1024), runs = min(2, n / run)
        var best = (order: 0, linear: false), bestBits = Double.infinity
        let sample = predictorSample.base
        let usable = Self.fitLinear(v, count: min(n, 2048), into: fitted.base)
        for candidate in 0..<6 {
            let linear = candidate >= 3
            if linear && usable & (1 << (candidate - 3)) == 0 { continue }
            let order = linear ? 2 << (candidate - 3) : candidate
            for j in 0..<runs {
                let start = (n - run) / max(1, runs - 1) * j
                for i in 0..<run { sample[j * run + i] = v[start + i] }
                if linear {
                    Self.predictLinear(sample + j * run, count: run, coefficients: fitted.base + 8 * (candidate - 3), order: order)
                } else {
                    Self.predict(sample + j * run, count: run, order: order)
                }
                // The first residuals of a run lack history: not representative.
                for i in 0..<order { sample[j * run + i] = sample[j * run + order] }
            }
            let bits =
                LatentCoder.plan(
                    sample, count: run * runs, histogram: histogram.base, robust: false,
                    fineBits: 10
                ).bits
                + Double(linear ? order * 64 : 0) * Double(run * runs) / Double(n)
            if bits < bestBits * 0.995 {
                best = (order, linear)
                bestBits = bits
                if linear { for j in 0..<order { chosen.base[j] = fitted.base[8 * (candidate - 3) + j] } }
            }
        }
        return best
    }
}
