import Foundation
import TributaryText

/// How much memory a command that holds data in memory may take: `TRIBUTARY_MEMORY_LIMIT` when set
/// (bytes, or a number with k, m, g or t for powers of 1024), else what the system has available —
/// /proc/meminfo's MemAvailable, and less when the process's cgroup (v2) sets a lower limit.
/// Export checks it before decoding anything; the tool's other commands use its sizes.
public enum MemoryBudget {
    /// A `TRIBUTARY_MEMORY_LIMIT` that is not a size.
    public struct BadLimit: Error, CustomStringConvertible {
        public var description: String
    }

    /// The budget in bytes; nil when neither the variable nor the system says.
    /// - Throws: `BadLimit` for a `TRIBUTARY_MEMORY_LIMIT` that is not a size.
    public static func available(environment: [String: String] = ProcessInfo.processInfo.environment) throws(BadLimit) -> Int? {
        if let text = environment["TRIBUTARY_MEMORY_LIMIT"] {
            guard let bytes = parse(text) else {
                throw BadLimit(description: "TRIBUTARY_MEMORY_LIMIT: '\(text)' is not a size (bytes, or a number with k, m, g or t)")
            }
            return bytes
        }
        var budget: Int?
        if let meminfo = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8),
            let line = meminfo.split(separator: "\n").first(where: { $0.hasPrefix("MemAvailable:") }),
            let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        {
            budget = kib.multipliedReportingOverflow(by: 1024).overflow ? Int.max : kib * 1024
        }
        if let limit = cgroupValue("memory.max"), let used = cgroupValue("memory.current") {
            budget = min(budget ?? Int.max, max(0, limit - used))
        }
        return budget
    }

    /// "123", "1.5g", "512M", "2TiB" → bytes.
    public static func parse(_ text: String) -> Int? {
        var digits = text.trimmingCharacters(in: .whitespaces).lowercased()
        for suffix in ["ib", "b"] where digits.hasSuffix(suffix) && digits.count > suffix.count { digits.removeLast(suffix.count); break }
        let units: [Character: Double] = ["k": 0x1p10, "m": 0x1p20, "g": 0x1p30, "t": 0x1p40]
        var factor = 1.0
        if let last = digits.last, let unit = units[last] { factor = unit; digits.removeLast() }
        guard let value = Double(digits), value.isFinite, value >= 0, value * factor < 0x1p62 else { return nil }
        return Int(value * factor)
    }

    /// A value of this process's cgroup v2 memory controller ("max" is no limit).
    private static func cgroupValue(_ name: String) -> Int? {
        guard let membership = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
            let line = membership.split(separator: "\n").first(where: { $0.hasPrefix("0::") })
        else { return nil }
        let path = "/sys/fs/cgroup" + line.dropFirst(3) + "/" + name
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// "21.0 GiB", "512.0 MiB", "300 bytes".
    public static func describe(_ bytes: Int) -> String {
        let units = [("TiB", 0x1p40), ("GiB", 0x1p30), ("MiB", 0x1p20), ("KiB", 0x1p10)]
        for (name, size) in units where Double(bytes) >= size { return String(format: "%.1f", Double(bytes) / size) + " " + name }
        return counted(bytes, "byte")
    }
}
