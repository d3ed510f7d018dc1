/// Text that came from a peer or from a file (a subscriber's or publisher's description, a message,
/// a file name, an error a publisher sent, a device name in a capture) made safe to print in a line
/// of a terminal or a log.
///
/// Control characters are shown as escapes, so that a peer can neither forge lines of the output
/// (a newline followed by "subscriber - …") nor send escape sequences to the operator's terminal:
/// C0 controls (\n, \r and \t as such, the others as \u{1B}), DEL, C1 controls (U+0080–U+009F, which
/// some terminals obey like ESC sequences), the line and paragraph separators U+2028/U+2029, and the
/// bidirectional controls that reorder what is shown (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069).
/// JSON output escapes the same characters (`JSON.quote`).
extension String {
    /// The text with every character of `Unicode.Scalar.isUnsafeForTerminal` escaped; the text itself
    /// (no copy) when there is none, the common case.
    package var terminalSafe: String {
        guard unicodeScalars.contains(where: \.isUnsafeForTerminal) else { return self }
        var out = ""
        out.reserveCapacity(utf8.count + 16)
        for scalar in unicodeScalars {
            guard scalar.isUnsafeForTerminal else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default: out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return out
    }
}

extension Unicode.Scalar {
    /// Whether printing this character as is could change what a terminal or a log shows besides
    /// the character itself (see `String.terminalSafe`).
    package var isUnsafeForTerminal: Bool {
        switch value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x2028, 0x2029: true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
