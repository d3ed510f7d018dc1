/// The least-squares fit of `NumericCodec`'s linear predictors.
extension NumericCodec {
    /// Least-squares linear predictors of orders 2, 4 and 8 fitted on `x`, as fixed-point
    /// coefficients: candidate k (0 … 2) at `out + 8k`; returns which candidates are usable (bit k).
    static func fitLinear(_ x: UnsafePointer<Int64>, count m: Int, into out: UnsafeMutablePointer<Int64>) -> Int {
        let maxOrder = 8
        guard m > 4 * maxOrder else { return 0 }
        var mean = 0.0
        for i in 0..<m { mean += Double(x[i]) }
        mean /= Double(m)
        // P(a, b) = Σ_{i=8}^{m−1} y[i−a]·y[i−b] (y = x − mean, a, b ≤ 8): the normal equations are
        // b[j] = P(0, j+1) and r[j][k] = P(j+1, k+1). The first row takes one pass (nine products
        // per sample); the rest follows from P(a+1, b+1) = P(a, b) + y[7−a]·y[7−b] − y[m−1−a]·y[m−1−b].
        @inline(__always) func y(_ i: Int) -> Double { Double(x[i]) - mean }
        var p0 = 0.0, p1 = 0.0, p2 = 0.0, p3 = 0.0, p4 = 0.0, p5 = 0.0, p6 = 0.0, p7 = 0.0, p8 = 0.0
        var y1 = y(7), y2 = y(6), y3 = y(5), y4 = y(4), y5 = y(3), y6 = y(2), y7 = y(1), y8 = y(0)
        for i in maxOrder..<m {
            let y0 = y(i)
            p0 += y0 * y0; p1 += y0 * y1; p2 += y0 * y2; p3 += y0 * y3; p4 += y0 * y4
            p5 += y0 * y5; p6 += y0 * y6; p7 += y0 * y7; p8 += y0 * y8
            (y8, y7, y6, y5, y4, y3, y2, y1) = (y7, y6, y5, y4, y3, y2, y1, y0)
        }
        var full = InlineArray<81, Double>(repeating: 0)  // P(a, b) at 9a + b, a ≤ b
        let row: InlineArray<9, Double> = [p0, p1, p2, p3, p4, p5, p6, p7, p8]
        for d in 0...maxOrder { full[d] = row[d] }
        for a in 1...maxOrder {
            for c in a...maxOrder {
                full[9 * a + c] = full[9 * (a - 1) + c - 1] + y(8 - a) * y(8 - c) - y(m - a) * y(m - c)
            }
        }
        var r = InlineArray<64, Double>(repeating: 0)
        var b = InlineArray<8, Double>(repeating: 0)
        for j in 0..<maxOrder {
            b[j] = full[j + 1]
            for k in j..<maxOrder { r[8 * j + k] = full[9 * (j + 1) + k + 1] }
        }
        for j in 0..<maxOrder { for k in 0..<j { r[8 * j + k] = r[8 * k + j] } }
        var usable = 0
        for candidate in 0..<3 {
            let order = 2 << candidate
            // Augmented matrix `order` × (`order` + 1), row stride 9.
            var a = InlineArray<72, Double>(repeating: 0)
            var trace = 0.0
            for j in 0..<order {
                for k in 0..<order { a[9 * j + k] = r[8 * j + k] }
                a[9 * j + order] = b[j]
                trace += r[8 * j + j]
            }
            let ridge = 1e-9 * trace / Double(order) + 1e-300
            for j in 0..<order { a[9 * j + j] += ridge }
            // Gaussian elimination with partial pivoting.
            var ok = true
            for col in 0..<order {
                var pivot = col
                for row in col..<order where abs(a[9 * row + col]) > abs(a[9 * pivot + col]) { pivot = row }
                guard abs(a[9 * pivot + col]) > 0 else { ok = false; break }
                if pivot != col { for k in 0...order { let t = a[9 * col + k]; a[9 * col + k] = a[9 * pivot + k]; a[9 * pivot + k] = t } }
                for row in (col + 1)..<order {
                    let f = a[9 * row + col] / a[9 * col + col]
                    for k in col...order { a[9 * row + k] -= f * a[9 * col + k] }
                }
            }
            guard ok else { continue }
            var coefficients = InlineArray<8, Double>(repeating: 0)
            var finite = true
            for row in stride(from: order - 1, through: 0, by: -1) {
                var v = a[9 * row + order]
                for k in (row + 1)..<order { v -= a[9 * row + k] * coefficients[k] }
                coefficients[row] = v / a[9 * row + row]
                finite = finite && coefficients[row].isFinite && abs(coefficients[row]) < 1024
            }
            guard finite else { continue }
            for j in 0..<order { out[8 * candidate + j] = Int64((coefficients[j] * Double(1 << linearShift)).rounded()) }
            usable |= 1 << candidate
        }
        return usable
    }
}
