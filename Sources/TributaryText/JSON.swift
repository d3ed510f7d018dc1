import Foundation
import TributaryBytes

/// A JSON value, rendered so that numbers read back exactly.
///
/// Doubles print with Swift's shortest round-trip representation (`description`), floats with
/// Float's, so `float(repr)` in Python gives back the same bits. JSON has no NaN or infinity:
/// those print as `null`.
package enum JSON {
    case null
    case bool(Bool)
    case int(Int)
    case uint(UInt64)
    case double(Double)
    case float(Float)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    /// Renders compactly (one line).
    package func render() -> String {
        var out = ""
        render(into: &out)
        return out
    }

    package func render(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .uint(let u): out += String(u)
        case .double(let d): out += d.isFinite ? d.description : "null"
        case .float(let f): out += f.isFinite ? f.description : "null"
        case .string(let s): Self.quote(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.render(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                Self.quote(key, into: &out)
                out += ":"
                value.render(into: &out)
            }
            out += "}"
        }
    }

    /// Swift prints 1e+20 as "1e+20" and 5.0 as "5.0": both are valid JSON numbers.
    private static func number(_ text: String) -> String { text }

    /// `s` as a JSON string literal.
    /// - Parameter inScript: also escapes `<` (as `\u003c`), so that the literal can stand in an HTML
    ///   script element, which it then never closes (the live view's page and its messages).
    package static func quoted(_ s: String, inScript: Bool = false) -> String {
        var out = ""
        quote(s, into: &out, inScript: inScript)
        return out
    }

    /// Whether `s` is printable ASCII without quote or backslash (nor `<` in a script), scanned over
    /// its contiguous UTF-8 bytes when it has them (a base64 array is megabytes long).
    private static func isPlain(_ s: String, inScript: Bool) -> Bool {
        let lessThan: UInt8 = inScript ? 0x3C : 0x22
        func plain(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            // Branch-free over blocks of 64 bytes, which the compiler turns into vector compares.
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + 64)
                var bad: UInt8 = 0
                for i in start..<end {
                    let b = bytes[i]
                    // Outside 0x20 … 0x7E (wrapping), a quote, a backslash, or `<` in a script.
                    bad |= (b &- 0x20 >= 0x5F ? 1 : 0) | (b == 0x22 ? 1 : 0) | (b == 0x5C ? 1 : 0) | (b == lessThan ? 1 : 0)
                }
                if bad != 0 { return false }
                start = end
            }
            return true
        }
        if let result = s.utf8.withContiguousStorageIfAvailable(plain) { return result }
        var copy = s
        return copy.withUTF8(plain)
    }

    /// Appends `s` as a JSON string literal to `out` (see `quoted(_:inScript:)`).
    package static func quote(_ s: String, into out: inout String, inScript: Bool = false) {
        out += "\""
        // Printable ASCII without quote or backslash (names, units, base64 arrays) goes in whole.
        if isPlain(s, inScript: inScript) {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "<" where inScript: out += "\\u003c"
            case _ where scalar.isUnsafeForTerminal:
                // C0 (required by JSON) and DEL, C1, U+2028/2029 and bidi controls (`terminalSafe`):
                // a line of JSON output shown on a terminal cannot be forged or reordered either.
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

extension JSON {
    package static func doubles(_ values: some Sequence<Double>) -> JSON { .array(values.map { .double($0) }) }
    /// `values` as one string: base64 (RFC 4648, padded) of their little-endian IEEE 754 binary64 bytes.
    /// Exact for every value, NaN and infinities included, and far cheaper to write and to read than
    /// decimal text.
    package static func float64Base64(_ values: [Double]) -> JSON {
        var bytes = [UInt8](repeating: 0, count: values.count * 8)
        bytes.withUnsafeMutableBytes { raw in
            var w = ByteWriter(raw)
            for v in values { w.write(v) }
        }
        return .string(Data(bytes).base64EncodedString())
    }
    /// The compact JSON text.
    package var text: String { render() }
    package static func strings(_ values: [String]) -> JSON { .array(values.map { .string($0) }) }
    package static func ids(_ values: [UInt32]) -> JSON { .array(values.map { .uint(UInt64($0)) }) }
}
