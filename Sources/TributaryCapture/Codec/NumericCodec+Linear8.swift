/// The order-8 linear integrators of one channel. Each sample's step is written once, as an
/// always-inlined function, and the loops unroll it by 8 so that the history is a ring of eight
/// registers renamed from step to step (the arguments rotate), not moved: the loop is bound by its
/// instruction count (8 multiplies, each after a copy, and 8 adds per sample), and the moves were a
/// fifth of it. The last n mod 8 samples take a plain loop that moves the history (a few samples per
/// channel; one body with exits for both measured slower on the 24-bit and float64-filtered classes).
extension NumericCodec {
    /// The constants of the integer loop: the coefficients, the rounding half and the shift.
    struct Linear8Taps {
        let c0, c1, c2, c3, c4, c5, c6, c7: Int64
        let half: Int64
        let q: Int64

        init(_ c: UnsafePointer<Int64>, shift: Int) {
            (c0, c1, c2, c3, c4, c5, c6, c7) = (c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])
            half = 1 &<< (Int64(shift) - 1)
            q = Int64(shift)
        }

        /// One sample: `a0` … `a6` the seven latents before it, newest first; `rest` is the next sum
        /// but for c0 × the newest. Returns the latent.
        @inline(__always)
        func step(
            _ residual: Int64, _ a0: Int64, _ a1: Int64, _ a2: Int64, _ a3: Int64, _ a4: Int64, _ a5: Int64, _ a6: Int64,
            rest: inout Int64
        ) -> Int64 {
            let x = residual &+ ((rest &+ c0 &* a0) &>> q)
            rest = half &+ c1 &* a0 &+ c2 &* a1 &+ c3 &* a2 &+ c4 &* a3 &+ c5 &* a4 &+ c6 &* a5 &+ c7 &* a6
            return x
        }
    }

    /// `integrateLinear` of order 8, from sample 0 with the missing history as zeros (the sums are
    /// then those of the first samples' shorter ones).
    static func integrateLinear8<Out: LatentOutput>(
        _ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>,
        shift: Int, into out: Out
    ) {
        let k = Linear8Taps(c, shift: shift)
        // h(k mod 8) holds the latent of sample i + k − 8 …
        var h0: Int64 = 0, h1: Int64 = 0, h2: Int64 = 0, h3: Int64 = 0, h4: Int64 = 0, h5: Int64 = 0, h6: Int64 = 0, h7: Int64 = 0
        var rest = k.half
        var i = 0
        while i + 8 <= n {
            h0 = k.step(v[i + 0], h7, h6, h5, h4, h3, h2, h1, rest: &rest); out.store(i + 0, h0)
            h1 = k.step(v[i + 1], h0, h7, h6, h5, h4, h3, h2, rest: &rest); out.store(i + 1, h1)
            h2 = k.step(v[i + 2], h1, h0, h7, h6, h5, h4, h3, rest: &rest); out.store(i + 2, h2)
            h3 = k.step(v[i + 3], h2, h1, h0, h7, h6, h5, h4, rest: &rest); out.store(i + 3, h3)
            h4 = k.step(v[i + 4], h3, h2, h1, h0, h7, h6, h5, rest: &rest); out.store(i + 4, h4)
            h5 = k.step(v[i + 5], h4, h3, h2, h1, h0, h7, h6, rest: &rest); out.store(i + 5, h5)
            h6 = k.step(v[i + 6], h5, h4, h3, h2, h1, h0, h7, rest: &rest); out.store(i + 6, h6)
            h7 = k.step(v[i + 7], h6, h5, h4, h3, h2, h1, h0, rest: &rest); out.store(i + 7, h7)
            i += 8
        }
        var (a0, a1, a2, a3, a4, a5, a6) = (h7, h6, h5, h4, h3, h2, h1)
        while i < n {
            let x = k.step(v[i], a0, a1, a2, a3, a4, a5, a6, rest: &rest)
            out.store(i, x)
            (a0, a1, a2, a3, a4, a5, a6) = (x, a0, a1, a2, a3, a4, a5)
            i += 1
        }
    }

    /// The constants of the split loop: c0 … c3 as integers, c4 … c7 in binary64, and the bound
    /// within which every latent must stay for the binary64 sums to be exact.
    struct Linear8SplitTaps {
        let c0, c1, c2, c3: Int64
        let d4, d5, d6, d7: Double
        let half: Int64
        let q: Int64
        let bound: Int64
        let span: UInt64
        static let magic = 0x1.8p52
        static let magicBits = Int64(bitPattern: magic.bitPattern)

        /// Nil when a coefficient c4 … c7 is too large for the binary64 products to be exact.
        init?(_ c: UnsafePointer<Int64>, shift: Int) {
            var largest: Int64 = 0
            for j in 4..<8 {
                guard c[j] > -(1 << 40), c[j] < 1 << 40 else { return nil }
                largest = max(largest, abs(c[j]))
            }
            bound = (Int64(1) << 51) / (4 * (largest + 1))
            span = UInt64(2 * bound)
            half = 1 &<< (Int64(shift) - 1)
            q = Int64(shift)
            (c0, c1, c2, c3) = (c[0], c[1], c[2], c[3])
            (d4, d5, d6, d7) = (Double(c[4]), Double(c[5]), Double(c[6]), Double(c[7]))
        }

        /// Whether a latent is within ±`bound`.
        @inline(__always)
        func holds(_ x: Int64) -> Bool { UInt64(bitPattern: x &+ bound) <= span }

        /// One sample: `a0` … `a2` the three latents before it, newest first, `b3` … `b6` the four
        /// before those in binary64; `t` the last prediction, so that the dependency chain is t →
        /// c0 × t → + → >> (the latent v(i−1) enters `rest` as c0 × v(i−1), off the chain: c0 × x =
        /// c0 × v + c0 × t modulo 2^64). Returns the latent.
        @inline(__always)
        func step(
            _ residual: Int64, _ a0: Int64, _ a1: Int64, _ a2: Int64, _ b3: Double, _ b4: Double, _ b5: Double, _ b6: Double,
            t: inout Int64, rest: inout Int64
        ) -> Int64 {
            t = (rest &+ c0 &* t) &>> q
            let x = residual &+ t
            let older = Int64(bitPattern: ((d4 * b3 + d5 * b4) + (d6 * b5 + d7 * b6) + Self.magic).bitPattern) &- Self.magicBits
            rest = half &+ c0 &* residual &+ c1 &* a0 &+ c2 &* a1 &+ c3 &* a2 &+ older
            return x
        }
    }

    /// `integrateLinear8` with c4 … c7 × the four older latents in binary64 (exact: every product and
    /// partial sum an integer below 2^51, turned back into an integer by adding 1.5 × 2^52 and reading
    /// the bits) while every latent stays within ±`bound` (4 × max |c4 … c7| × `bound` < 2^51), so
    /// that the sum is the one of wrapping 64-bit arithmetic. The integer loop is bound by its 8
    /// multiplies per sample on the one integer multiplier; this leaves it 4 and gives the others to
    /// the floating-point units. Returns false, having stored part of the output, when a latent
    /// leaves the bound (at once for latents of 2^36, as float64 without a grid has): the caller
    /// starts over with the integer loop from `v`, which this does not write.
    static func integrateLinear8Split<Out: LatentOutput>(
        _ v: UnsafePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>,
        shift: Int, into out: Out
    ) -> Bool {
        guard let k = Linear8SplitTaps(c, shift: shift) else { return false }
        var h0: Int64 = 0, h1: Int64 = 0, h2: Int64 = 0, h3: Int64 = 0, h4: Int64 = 0, h5: Int64 = 0, h6: Int64 = 0, h7: Int64 = 0
        var g0 = 0.0, g1 = 0.0, g2 = 0.0, g3 = 0.0, g4 = 0.0, g5 = 0.0, g6 = 0.0, g7 = 0.0
        var rest = k.half, t: Int64 = 0
        var i = 0
        while i + 8 <= n {
            h0 = k.step(v[i + 0], h7, h6, h5, g4, g3, g2, g1, t: &t, rest: &rest)
            guard k.holds(h0) else { return false }
            out.store(i + 0, h0); g0 = Double(h0)
            h1 = k.step(v[i + 1], h0, h7, h6, g5, g4, g3, g2, t: &t, rest: &rest)
            guard k.holds(h1) else { return false }
            out.store(i + 1, h1); g1 = Double(h1)
            h2 = k.step(v[i + 2], h1, h0, h7, g6, g5, g4, g3, t: &t, rest: &rest)
            guard k.holds(h2) else { return false }
            out.store(i + 2, h2); g2 = Double(h2)
            h3 = k.step(v[i + 3], h2, h1, h0, g7, g6, g5, g4, t: &t, rest: &rest)
            guard k.holds(h3) else { return false }
            out.store(i + 3, h3); g3 = Double(h3)
            h4 = k.step(v[i + 4], h3, h2, h1, g0, g7, g6, g5, t: &t, rest: &rest)
            guard k.holds(h4) else { return false }
            out.store(i + 4, h4); g4 = Double(h4)
            h5 = k.step(v[i + 5], h4, h3, h2, g1, g0, g7, g6, t: &t, rest: &rest)
            guard k.holds(h5) else { return false }
            out.store(i + 5, h5); g5 = Double(h5)
            h6 = k.step(v[i + 6], h5, h4, h3, g2, g1, g0, g7, t: &t, rest: &rest)
            guard k.holds(h6) else { return false }
            out.store(i + 6, h6); g6 = Double(h6)
            h7 = k.step(v[i + 7], h6, h5, h4, g3, g2, g1, g0, t: &t, rest: &rest)
            guard k.holds(h7) else { return false }
            out.store(i + 7, h7); g7 = Double(h7)
            i += 8
        }
        var (a0, a1, a2) = (h7, h6, h5)
        var (b3, b4, b5, b6) = (g4, g3, g2, g1)
        while i < n {
            let x = k.step(v[i], a0, a1, a2, b3, b4, b5, b6, t: &t, rest: &rest)
            guard k.holds(x) else { return false }
            out.store(i, x)
            (b3, b4, b5, b6) = (Double(a2), b3, b4, b5)
            (a0, a1, a2) = (x, a0, a1)
            i += 1
        }
        return true
    }
}
