// Numbers that come from outside the process — a peer's frame, a file, a flag, a C or Python
// caller — go through these before they are converted or summed, so that a hostile or damaged
// value becomes an error or a saturated count, never a runtime trap (a trap reachable from input
// is a remote crash).

extension FixedWidthInteger {
    /// `self + other`, or the type's bound where the sum would overflow: for counters that a peer
    /// can drive (losses, gaps, bytes) and that only report.
    @inlinable
    public func addingSaturated(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other < 0 ? .min : .max
    }

    /// `self - other`, or the type's bound where the difference would overflow.
    @inlinable
    public func subtractingSaturated(_ other: Self) -> Self {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other < 0 ? .max : .min
    }

    /// `self * other`, or the type's bound where the product would overflow.
    @inlinable
    public func multipliedSaturated(by other: Self) -> Self {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) != (other < 0) ? .min : .max
    }

    /// `value` rounded toward zero and clamped to the type's range; nil for NaN. For a Double that
    /// only reports or sizes something already bounded elsewhere (a display width, a period).
    @inlinable
    public init?(saturating value: Double) {
        guard !value.isNaN else { return nil }
        if value <= Double(Self.min) {
            self = .min
        } else if value >= Double(Self.max) {
            // Double(Self.max) rounds up to 2^bits for 64-bit types: anything at or above it is max.
            self = .max
        } else {
            self.init(value.rounded(.towardZero))
        }
    }
}

extension Double {
    /// Whole nanoseconds in `self` seconds when `self` is finite, not negative and at most
    /// `limit` seconds; else nil. The one conversion of a timeout or duration from outside.
    @inlinable
    public func nanoseconds(atMostSeconds limit: Double) -> UInt64? {
        guard isFinite, self >= 0, self <= limit, limit < 1.8e10 else { return nil }
        return UInt64((self * 1e9).rounded(.towardZero))
    }
}
