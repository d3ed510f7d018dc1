import Foundation
import TributaryAnalysis

/// Channel (or other) indexes as sorted ranges: [0, 1, 2, 5, 7, 8] → "0-2,5,7-8".
func indexRanges(_ values: Set<UInt32>) -> String {
    let sorted = values.sorted()
    var parts: [String] = []
    var i = 0
    while i < sorted.count {
        var j = i
        // &+: an index of UInt32.max ends its run instead of trapping.
        while j + 1 < sorted.count, sorted[j + 1] == sorted[j] &+ 1 { j += 1 }
        parts.append(j == i ? "\(sorted[i])" : "\(sorted[i])-\(sorted[j])")
        i = j + 1
    }
    return parts.joined(separator: ",")
}

/// Times as people read them.
enum TimeText {
    /// ISO 8601 UTC with nanoseconds: 2026-11-30T15:04:05.123456789Z.
    static func utc(_ ns: Int64) -> String { FrameDescription.timestamp(ns) }

    /// ISO 8601 in the local time zone (TZ) with nanoseconds and the offset: 2026-11-30T16:04:05.123456789+01:00.
    static func local(_ ns: Int64) -> String {
        let (seconds, fraction) = FrameDescription.secondsAndFraction(ns)
        var t = time_t(seconds)
        var parts = tm()
        localtime_r(&t, &parts)
        let offset = parts.tm_gmtoff
        let frac = String(fraction)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec)
            + String(repeating: "0", count: 9 - frac.count) + frac
            + (offset < 0 ? "-" : "+") + String(format: "%02d:%02d", Int32(abs(offset) / 3600), Int32((abs(offset) % 3600) / 60))
    }

    /// "2026-11-30T15:04:05.123456789Z (local 2026-11-30T16:04:05.123456789+01:00, 1796051045123456789 ns)".
    static func both(_ ns: Int64) -> String { "\(utc(ns)) (local \(local(ns)), \(ns) ns)" }
}

extension TimeText {
    /// Nanoseconds since 1970 from what a user types for a time: ISO 8601 with a date and a time
    /// (`2026-11-30T15:04:05.123456789Z`, an offset `+01:00` or `+0100`, a space for the `T`; without a
    /// zone the local time of TZ), or Unix seconds (`1796051045.123456789`); nil when it is neither, or
    /// out of the range of Int64 nanoseconds (the years 1678 to 2262).
    /// - Returns: The time, and whether it was read as local time.
    static func parse(_ text: String) -> (ns: Int64, local: Bool)? {
        let s = text.trimmingCharacters(in: .whitespaces)
        if let unix = unixSeconds(s) { return (unix, false) }
        let expression = try! NSRegularExpression(
            pattern: #"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|([+-])(\d{2}):?(\d{2}))?$"#)
        guard let m = expression.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) else { return nil }
        func group(_ i: Int) -> String? { Range(m.range(at: i), in: s).map { String(s[$0]) } }
        let field = (1...6).map { Int32(group($0)!)! }
        let (year, month, day, hour, minute, second) = (field[0], field[1], field[2], field[3], field[4], field[5])
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        let f = group(7) ?? ""
        let fraction = Int64(f + String(repeating: "0", count: 9 - f.count))!
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let local = group(8) == nil
        let seconds: Int64
        if local {
            parts.tm_isdst = -1
            seconds = Int64(mktime(&parts))
        } else {
            let sign: Int64 = group(9) == "-" ? -1 : 1
            let offset = group(8) == "Z" ? 0 : sign * (Int64(group(10)!)! * 3600 + Int64(group(11)!)! * 60)
            seconds = Int64(timegm(&parts)) - offset
        }
        // A day past the month's end (30 February) comes back normalised into the next month: refuse it.
        guard parts.tm_mday == day, parts.tm_mon == month - 1 else { return nil }
        let (whole, o1) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (ns, o2) = whole.addingReportingOverflow(fraction)
        return o1 || o2 ? nil : (ns, local)
    }

    /// `[-]digits[.digits]` Unix seconds, exactly to the nanosecond.
    private static func unixSeconds(_ s: String) -> Int64? {
        guard s.range(of: #"^-?\d{1,11}(\.\d{1,9})?$"#, options: .regularExpression) != nil else { return nil }
        let negative = s.hasPrefix("-")
        let body = negative ? String(s.dropFirst()) : s
        let halves = body.split(separator: ".", omittingEmptySubsequences: false)
        guard let whole = Int64(halves[0]) else { return nil }
        let f = halves.count > 1 ? String(halves[1]) : ""
        let fraction = Int64(f + String(repeating: "0", count: 9 - f.count)) ?? 0
        let (w, o1) = whole.multipliedReportingOverflow(by: 1_000_000_000)
        let (ns, o2) = w.addingReportingOverflow(fraction)
        guard !o1, !o2 else { return nil }
        return negative ? -ns : ns
    }
}
