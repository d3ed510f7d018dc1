/// Delta coding of integer samples: each element is replaced by its difference from the previous
/// one (wrapping two's-complement arithmetic; the first element is kept), so that smooth signals
/// become small numbers whose high bits are all equal — which bit-shuffle then turns into runs.
public enum Delta {
    /// Writes the wrapping differences of `source` to `destination` (same count; may be the same memory).
    /// - Parameters:
    ///   - source: the samples (Int16 counts, Int32 codes).
    ///   - destination: at least `source.count` elements.
    public static func encode<T: FixedWidthInteger>(_ source: UnsafeBufferPointer<T>, into destination: UnsafeMutableBufferPointer<T>) {
        precondition(destination.count >= source.count, "delta destination too small")
        guard let src = source.baseAddress, let dst = destination.baseAddress, source.count > 0 else { return }
        // Backwards, so that encoding in place reads each element before it is overwritten.
        var i = source.count - 1
        while i > 0 {
            dst[i] = src[i] &- src[i - 1]
            i -= 1
        }
        dst[0] = src[0]
    }

    /// Reverses `encode` by a running wrapping sum (may work in place).
    /// - Parameters:
    ///   - source: the differences.
    ///   - destination: at least `source.count` elements.
    public static func decode<T: FixedWidthInteger>(_ source: UnsafeBufferPointer<T>, into destination: UnsafeMutableBufferPointer<T>) {
        precondition(destination.count >= source.count, "delta destination too small")
        guard let src = source.baseAddress, let dst = destination.baseAddress else { return }
        var running: T = 0
        for i in 0..<source.count {
            running = running &+ src[i]
            dst[i] = running
        }
    }
}
