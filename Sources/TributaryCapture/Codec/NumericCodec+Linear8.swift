/// The order-8 linear integrators of one channel, unrolled by hand (written once, not generated):
/// the history a ring of eight registers renamed from step to step. They stay long for speed.
extension NumericCodec {
    /// `integrateLinear` of order 8, from sample 0 with the missing history as zeros (the sums are
    /// then those of the first samples' shorter ones). Unrolled by 8 so that the history is a ring of
    /// eight registers renamed from step to step, not moved: the loop is bound by its instruction
    /// count (8 multiplies, each after a copy, and 8 adds per sample), and the moves were a fifth of it.
    static func integrateLinear8<Out: LatentOutput>(_ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>,
                                                    shift: Int, into out: Out) {
        let half: Int64 = 1 &<< (Int64(shift) - 1)
        let q = Int64(shift)
        let c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4], c5 = c[5], c6 = c[6], c7 = c[7]
        // h(k mod 8) holds the latent of sample i + k − 8 …; `rest` is the next sum but for c0 × the newest.
        var h0: Int64 = 0, h1: Int64 = 0, h2: Int64 = 0, h3: Int64 = 0, h4: Int64 = 0, h5: Int64 = 0, h6: Int64 = 0, h7: Int64 = 0
        var rest = half
        var i = 0
        while i + 8 <= n {
            let x0 = v[i + 0] &+ ((rest &+ c0 &* h7) &>> q)
            rest = half &+ c1 &* h7 &+ c2 &* h6 &+ c3 &* h5 &+ c4 &* h4 &+ c5 &* h3 &+ c6 &* h2 &+ c7 &* h1
            out.store(i + 0, x0)
            h0 = x0
            let x1 = v[i + 1] &+ ((rest &+ c0 &* h0) &>> q)
            rest = half &+ c1 &* h0 &+ c2 &* h7 &+ c3 &* h6 &+ c4 &* h5 &+ c5 &* h4 &+ c6 &* h3 &+ c7 &* h2
            out.store(i + 1, x1)
            h1 = x1
            let x2 = v[i + 2] &+ ((rest &+ c0 &* h1) &>> q)
            rest = half &+ c1 &* h1 &+ c2 &* h0 &+ c3 &* h7 &+ c4 &* h6 &+ c5 &* h5 &+ c6 &* h4 &+ c7 &* h3
            out.store(i + 2, x2)
            h2 = x2
            let x3 = v[i + 3] &+ ((rest &+ c0 &* h2) &>> q)
            rest = half &+ c1 &* h2 &+ c2 &* h1 &+ c3 &* h0 &+ c4 &* h7 &+ c5 &* h6 &+ c6 &* h5 &+ c7 &* h4
            out.store(i + 3, x3)
            h3 = x3
            let x4 = v[i + 4] &+ ((rest &+ c0 &* h3) &>> q)
            rest = half &+ c1 &* h3 &+ c2 &* h2 &+ c3 &* h1 &+ c4 &* h0 &+ c5 &* h7 &+ c6 &* h6 &+ c7 &* h5
            out.store(i + 4, x4)
            h4 = x4
            let x5 = v[i + 5] &+ ((rest &+ c0 &* h4) &>> q)
            rest = half &+ c1 &* h4 &+ c2 &* h3 &+ c3 &* h2 &+ c4 &* h1 &+ c5 &* h0 &+ c6 &* h7 &+ c7 &* h6
            out.store(i + 5, x5)
            h5 = x5
            let x6 = v[i + 6] &+ ((rest &+ c0 &* h5) &>> q)
            rest = half &+ c1 &* h5 &+ c2 &* h4 &+ c3 &* h3 &+ c4 &* h2 &+ c5 &* h1 &+ c6 &* h0 &+ c7 &* h7
            out.store(i + 6, x6)
            h6 = x6
            let x7 = v[i + 7] &+ ((rest &+ c0 &* h6) &>> q)
            rest = half &+ c1 &* h6 &+ c2 &* h5 &+ c3 &* h4 &+ c4 &* h3 &+ c5 &* h2 &+ c6 &* h1 &+ c7 &* h0
            out.store(i + 7, x7)
            h7 = x7
            i += 8
        }
        // The last n mod 8 samples: the same steps, each behind its own exit. (Putting those exits in
        // the main loop instead, one body for both, measured slower on the 24-bit and
        // float64-filtered classes, so the steps are written twice, here and in
        // `integrateLinear8Split`.)
        if i < n {
            if i + 0 == n { return }
            let x0 = v[i + 0] &+ ((rest &+ c0 &* h7) &>> q)
            rest = half &+ c1 &* h7 &+ c2 &* h6 &+ c3 &* h5 &+ c4 &* h4 &+ c5 &* h3 &+ c6 &* h2 &+ c7 &* h1
            out.store(i + 0, x0)
            h0 = x0
            if i + 1 == n { return }
            let x1 = v[i + 1] &+ ((rest &+ c0 &* h0) &>> q)
            rest = half &+ c1 &* h0 &+ c2 &* h7 &+ c3 &* h6 &+ c4 &* h5 &+ c5 &* h4 &+ c6 &* h3 &+ c7 &* h2
            out.store(i + 1, x1)
            h1 = x1
            if i + 2 == n { return }
            let x2 = v[i + 2] &+ ((rest &+ c0 &* h1) &>> q)
            rest = half &+ c1 &* h1 &+ c2 &* h0 &+ c3 &* h7 &+ c4 &* h6 &+ c5 &* h5 &+ c6 &* h4 &+ c7 &* h3
            out.store(i + 2, x2)
            h2 = x2
            if i + 3 == n { return }
            let x3 = v[i + 3] &+ ((rest &+ c0 &* h2) &>> q)
            rest = half &+ c1 &* h2 &+ c2 &* h1 &+ c3 &* h0 &+ c4 &* h7 &+ c5 &* h6 &+ c6 &* h5 &+ c7 &* h4
            out.store(i + 3, x3)
            h3 = x3
            if i + 4 == n { return }
            let x4 = v[i + 4] &+ ((rest &+ c0 &* h3) &>> q)
            rest = half &+ c1 &* h3 &+ c2 &* h2 &+ c3 &* h1 &+ c4 &* h0 &+ c5 &* h7 &+ c6 &* h6 &+ c7 &* h5
            out.store(i + 4, x4)
            h4 = x4
            if i + 5 == n { return }
            let x5 = v[i + 5] &+ ((rest &+ c0 &* h4) &>> q)
            rest = half &+ c1 &* h4 &+ c2 &* h3 &+ c3 &* h2 &+ c4 &* h1 &+ c5 &* h0 &+ c6 &* h7 &+ c7 &* h6
            out.store(i + 5, x5)
            h5 = x5
            if i + 6 == n { return }
            let x6 = v[i + 6] &+ ((rest &+ c0 &* h5) &>> q)
            rest = half &+ c1 &* h5 &+ c2 &* h4 &+ c3 &* h3 &+ c4 &* h2 &+ c5 &* h1 &+ c6 &* h0 &+ c7 &* h7
            out.store(i + 6, x6)
            h6 = x6
            if i + 7 == n { return }
            let x7 = v[i + 7] &+ ((rest &+ c0 &* h6) &>> q)
            rest = half &+ c1 &* h6 &+ c2 &* h5 &+ c3 &* h4 &+ c4 &* h3 &+ c5 &* h2 &+ c6 &* h1 &+ c7 &* h0
            out.store(i + 7, x7)
            h7 = x7
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
    static func integrateLinear8Split<Out: LatentOutput>(_ v: UnsafePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>,
                                                         shift: Int, into out: Out) -> Bool {
        var largest: Int64 = 0
        for j in 4..<8 {
            guard c[j] > -(1 << 40), c[j] < 1 << 40 else { return false }
            largest = max(largest, abs(c[j]))
        }
        let bound = (Int64(1) << 51) / (4 * (largest + 1))
        let span = UInt64(2 * bound)
        let half: Int64 = 1 &<< (Int64(shift) - 1)
        let q = Int64(shift)
        let magic = 0x1.8p52, magicBits = Int64(bitPattern: magic.bitPattern)
        let c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3]
        let d4 = Double(c[4]), d5 = Double(c[5]), d6 = Double(c[6]), d7 = Double(c[7])
        var h0: Int64 = 0, h1: Int64 = 0, h2: Int64 = 0, h3: Int64 = 0, h4: Int64 = 0, h5: Int64 = 0, h6: Int64 = 0, h7: Int64 = 0
        var g0 = 0.0, g1 = 0.0, g2 = 0.0, g3 = 0.0, g4 = 0.0, g5 = 0.0, g6 = 0.0, g7 = 0.0
        // t: the last prediction, so that the dependency chain is t → c0 × t → + → >> (the latent
        // v(i−1) enters `rest` as c0 × v(i−1), off the chain: c0 × x = c0 × v + c0 × t modulo 2^64).
        var rest = half, t: Int64 = 0
        var i = 0
        while i + 8 <= n {
            t = (rest &+ c0 &* t) &>> q
            let x0 = v[i + 0] &+ t
            guard UInt64(bitPattern: x0 &+ bound) <= span else { return false }
            let older0 = Int64(bitPattern: ((d4 * g4 + d5 * g3) + (d6 * g2 + d7 * g1) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 0] &+ c1 &* h7 &+ c2 &* h6 &+ c3 &* h5 &+ older0
            out.store(i + 0, x0)
            h0 = x0; g0 = Double(x0)
            t = (rest &+ c0 &* t) &>> q
            let x1 = v[i + 1] &+ t
            guard UInt64(bitPattern: x1 &+ bound) <= span else { return false }
            let older1 = Int64(bitPattern: ((d4 * g5 + d5 * g4) + (d6 * g3 + d7 * g2) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 1] &+ c1 &* h0 &+ c2 &* h7 &+ c3 &* h6 &+ older1
            out.store(i + 1, x1)
            h1 = x1; g1 = Double(x1)
            t = (rest &+ c0 &* t) &>> q
            let x2 = v[i + 2] &+ t
            guard UInt64(bitPattern: x2 &+ bound) <= span else { return false }
            let older2 = Int64(bitPattern: ((d4 * g6 + d5 * g5) + (d6 * g4 + d7 * g3) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 2] &+ c1 &* h1 &+ c2 &* h0 &+ c3 &* h7 &+ older2
            out.store(i + 2, x2)
            h2 = x2; g2 = Double(x2)
            t = (rest &+ c0 &* t) &>> q
            let x3 = v[i + 3] &+ t
            guard UInt64(bitPattern: x3 &+ bound) <= span else { return false }
            let older3 = Int64(bitPattern: ((d4 * g7 + d5 * g6) + (d6 * g5 + d7 * g4) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 3] &+ c1 &* h2 &+ c2 &* h1 &+ c3 &* h0 &+ older3
            out.store(i + 3, x3)
            h3 = x3; g3 = Double(x3)
            t = (rest &+ c0 &* t) &>> q
            let x4 = v[i + 4] &+ t
            guard UInt64(bitPattern: x4 &+ bound) <= span else { return false }
            let older4 = Int64(bitPattern: ((d4 * g0 + d5 * g7) + (d6 * g6 + d7 * g5) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 4] &+ c1 &* h3 &+ c2 &* h2 &+ c3 &* h1 &+ older4
            out.store(i + 4, x4)
            h4 = x4; g4 = Double(x4)
            t = (rest &+ c0 &* t) &>> q
            let x5 = v[i + 5] &+ t
            guard UInt64(bitPattern: x5 &+ bound) <= span else { return false }
            let older5 = Int64(bitPattern: ((d4 * g1 + d5 * g0) + (d6 * g7 + d7 * g6) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 5] &+ c1 &* h4 &+ c2 &* h3 &+ c3 &* h2 &+ older5
            out.store(i + 5, x5)
            h5 = x5; g5 = Double(x5)
            t = (rest &+ c0 &* t) &>> q
            let x6 = v[i + 6] &+ t
            guard UInt64(bitPattern: x6 &+ bound) <= span else { return false }
            let older6 = Int64(bitPattern: ((d4 * g2 + d5 * g1) + (d6 * g0 + d7 * g7) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 6] &+ c1 &* h5 &+ c2 &* h4 &+ c3 &* h3 &+ older6
            out.store(i + 6, x6)
            h6 = x6; g6 = Double(x6)
            t = (rest &+ c0 &* t) &>> q
            let x7 = v[i + 7] &+ t
            guard UInt64(bitPattern: x7 &+ bound) <= span else { return false }
            let older7 = Int64(bitPattern: ((d4 * g3 + d5 * g2) + (d6 * g1 + d7 * g0) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 7] &+ c1 &* h6 &+ c2 &* h5 &+ c3 &* h4 &+ older7
            out.store(i + 7, x7)
            h7 = x7; g7 = Double(x7)
            i += 8
        }
        if i < n {
            if i + 0 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x0 = v[i + 0] &+ t
            guard UInt64(bitPattern: x0 &+ bound) <= span else { return false }
            let older0 = Int64(bitPattern: ((d4 * g4 + d5 * g3) + (d6 * g2 + d7 * g1) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 0] &+ c1 &* h7 &+ c2 &* h6 &+ c3 &* h5 &+ older0
            out.store(i + 0, x0)
            h0 = x0; g0 = Double(x0)
            if i + 1 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x1 = v[i + 1] &+ t
            guard UInt64(bitPattern: x1 &+ bound) <= span else { return false }
            let older1 = Int64(bitPattern: ((d4 * g5 + d5 * g4) + (d6 * g3 + d7 * g2) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 1] &+ c1 &* h0 &+ c2 &* h7 &+ c3 &* h6 &+ older1
            out.store(i + 1, x1)
            h1 = x1; g1 = Double(x1)
            if i + 2 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x2 = v[i + 2] &+ t
            guard UInt64(bitPattern: x2 &+ bound) <= span else { return false }
            let older2 = Int64(bitPattern: ((d4 * g6 + d5 * g5) + (d6 * g4 + d7 * g3) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 2] &+ c1 &* h1 &+ c2 &* h0 &+ c3 &* h7 &+ older2
            out.store(i + 2, x2)
            h2 = x2; g2 = Double(x2)
            if i + 3 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x3 = v[i + 3] &+ t
            guard UInt64(bitPattern: x3 &+ bound) <= span else { return false }
            let older3 = Int64(bitPattern: ((d4 * g7 + d5 * g6) + (d6 * g5 + d7 * g4) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 3] &+ c1 &* h2 &+ c2 &* h1 &+ c3 &* h0 &+ older3
            out.store(i + 3, x3)
            h3 = x3; g3 = Double(x3)
            if i + 4 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x4 = v[i + 4] &+ t
            guard UInt64(bitPattern: x4 &+ bound) <= span else { return false }
            let older4 = Int64(bitPattern: ((d4 * g0 + d5 * g7) + (d6 * g6 + d7 * g5) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 4] &+ c1 &* h3 &+ c2 &* h2 &+ c3 &* h1 &+ older4
            out.store(i + 4, x4)
            h4 = x4; g4 = Double(x4)
            if i + 5 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x5 = v[i + 5] &+ t
            guard UInt64(bitPattern: x5 &+ bound) <= span else { return false }
            let older5 = Int64(bitPattern: ((d4 * g1 + d5 * g0) + (d6 * g7 + d7 * g6) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 5] &+ c1 &* h4 &+ c2 &* h3 &+ c3 &* h2 &+ older5
            out.store(i + 5, x5)
            h5 = x5; g5 = Double(x5)
            if i + 6 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x6 = v[i + 6] &+ t
            guard UInt64(bitPattern: x6 &+ bound) <= span else { return false }
            let older6 = Int64(bitPattern: ((d4 * g2 + d5 * g1) + (d6 * g0 + d7 * g7) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 6] &+ c1 &* h5 &+ c2 &* h4 &+ c3 &* h3 &+ older6
            out.store(i + 6, x6)
            h6 = x6; g6 = Double(x6)
            if i + 7 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x7 = v[i + 7] &+ t
            guard UInt64(bitPattern: x7 &+ bound) <= span else { return false }
            let older7 = Int64(bitPattern: ((d4 * g3 + d5 * g2) + (d6 * g1 + d7 * g0) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 7] &+ c1 &* h6 &+ c2 &* h5 &+ c3 &* h4 &+ older7
            out.store(i + 7, x7)
            h7 = x7; g7 = Double(x7)
        }
        return true
    }
}
