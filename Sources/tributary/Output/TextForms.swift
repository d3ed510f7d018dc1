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
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec)
            + String(repeating: "0", count: 9 - frac.count) + frac
            + (offset < 0 ? "-" : "+") + String(format: "%02d:%02d", Int32(abs(offset) / 3600), Int32((abs(offset) % 3600) / 60))
    }

    /// "2026-11-30T15:04:05.123456789Z (local 2026-11-30T16:04:05.123456789+01:00, 1764515045123456789 ns)".
    static func both(_ ns: Int64) -> String { "\(utc(ns)) (local \(local(ns)), \(ns) ns)" }
}
