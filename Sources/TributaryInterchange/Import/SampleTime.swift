import Foundation

/// Sample times as Int64 nanoseconds since 1970, computed from numbers a file gives (a time in
/// seconds, a rate, a sample index). A file can give any of them, so every step is checked:
/// `nanoseconds` and `adding` return nil where the time does not fit an Int64 (about ±292 years
/// around 1970), which the importer reports as an error of the file; the saturating form stamps
/// frames of sources already checked (`FormatImport.forEachFrame`), so that a source that was not
/// checked gets the ends of the range rather than a trap. (`SourceSeries.seconds(_:since:)` takes
/// the distance of two times.)
enum SampleTime {
    /// `seconds` as whole nanoseconds (rounded to the nearest); nil when it is NaN, infinite or
    /// beyond the range of Int64.
    static func nanoseconds(seconds: Double) -> Int64? {
        Int64(exactly: (seconds * 1e9).rounded())
    }

    /// `time` + `seconds`, nil when `seconds` or the sum does not fit an Int64 of nanoseconds.
    static func adding(_ seconds: Double, to time: Int64) -> Int64? {
        guard let ns = nanoseconds(seconds: seconds) else { return nil }
        let (sum, overflow) = time.addingReportingOverflow(ns)
        return overflow ? nil : sum
    }

    /// `time` + `seconds`, saturated at Int64.min / Int64.max (a NaN adds nothing).
    static func adding(saturating seconds: Double, to time: Int64) -> Int64 {
        if let sum = adding(seconds, to: time) { return sum }
        if seconds.isNaN { return time }
        return seconds < 0 ? .min : .max
    }
}
