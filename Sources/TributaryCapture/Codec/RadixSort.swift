/// Sorting the encoder's samples of doubles (grid detection sorts 2 048 per segment): an LSD radix
/// sort on order-preserving keys, eight passes of 8 bits, a pass skipped when every key has the same
/// byte there (the exponent bytes of a segment's samples mostly agree). Several times faster than
/// a quicksort of the same values, whose comparisons mispredict on noisy data.
enum RadixSort {
    /// The key of a double: its bits with the sign flipped when positive and every bit flipped when
    /// negative, so that unsigned order is numeric order (−0.0 just before +0.0).
    @inline(__always) static func key(_ x: Double) -> UInt64 {
        let bits = x.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    @inline(__always) static func value(_ key: UInt64) -> Double {
        Double(bitPattern: key & (1 << 63) != 0 ? key & ~(1 << 63) : ~key)
    }

    /// Sorts `n` finite doubles (no NaN) in place, ascending.
    /// - Parameters:
    ///   - scratch: room for `2 × n` keys.
    ///   - counts: room for `countsSize` counters.
    static func sort(
        _ a: UnsafeMutablePointer<Double>, count n: Int, scratch: UnsafeMutablePointer<UInt64>,
        counts c: UnsafeMutablePointer<Int>
    ) {
        guard n > 1 else { return }
        var from = scratch, to = scratch + n
        // Every pass's byte counts, in one pass over the keys.
        c.initialize(repeating: 0, count: countsSize)
        for i in 0..<n {
            let k = key(a[i])
            from[i] = k
            for byte in 0..<8 { c[byte << 8 | Int((k >> UInt64(8 * byte)) & 0xFF)] += 1 }
        }
        for byte in 0..<8 {
            let shift = UInt64(8 * byte)
            let pass = c + byte << 8
            if pass[Int((from[0] >> shift) & 0xFF)] == n { continue }
            var sum = 0
            for d in 0..<256 { let count = pass[d]; pass[d] = sum; sum += count }
            for i in 0..<n {
                let k = from[i], d = Int((k >> shift) & 0xFF)
                to[pass[d]] = k
                pass[d] += 1
            }
            swap(&from, &to)
        }
        for i in 0..<n { a[i] = value(from[i]) }
    }

    /// Counters `sort` needs.
    static let countsSize = 8 * 256
}
