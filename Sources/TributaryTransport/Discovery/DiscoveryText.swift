/// The text of discovery datagrams (docs/PROTOCOL.md §9.1): printable ASCII lines, each a record name
/// followed by `key=value` fields separated by single spaces; values percent-encoded UTF-8.
enum DiscoveryText {
    /// One line's record name and its fields (values still encoded).
    struct Fields {
        var record: String
        var values: [String: Substring]

        /// A decoded text field, nil when absent; longer than `limit` bytes decoded is refused.
        func text(_ key: String, line: Int, limit: Int) throws(DiscoveryFormatError) -> String? {
            guard let raw = values[key] else { return nil }
            return try DiscoveryText.decode(raw, limit: limit, what: "line \(line): field '\(key)'")
        }

        /// A decimal unsigned field, required.
        func unsigned(_ key: String, line: Int) throws(DiscoveryFormatError) -> UInt64 {
            guard let raw = values[key] else { throw DiscoveryFormatError("line \(line): missing field '\(key)'") }
            guard raw.count <= 20, !raw.isEmpty, raw.allSatisfy({ $0.isASCII && $0.isNumber }), let value = UInt64(raw) else {
                throw DiscoveryFormatError("line \(line): field '\(key)': '\(raw.prefix(24))' is not a number in 0...\(UInt64.max)")
            }
            return value
        }

        /// A comma-separated list of `count` encoded texts, or empty when absent.
        func list(_ key: String, line: Int, count: Int) throws(DiscoveryFormatError) -> [String] {
            guard let raw = values[key] else { return [] }
            let items = raw.split(separator: ",", omittingEmptySubsequences: false)
            guard items.count == count else {
                throw DiscoveryFormatError("line \(line): field '\(key)': \(items.count) items for \(count) channels")
            }
            var result: [String] = []
            result.reserveCapacity(count)
            for (i, item) in items.enumerated() {
                result.append(
                    try DiscoveryText.decode(item, limit: DiscoveryLimits.maxTextBytes, what: "line \(line): field '\(key)' item \(i + 1)"))
            }
            return result
        }
    }

    /// A line: the record name and its fields, values percent-encoded except those of `listFields`
    /// (already lists of encoded items).
    static func line(_ record: String, _ fields: [(String, String)], listFields: Set<String> = []) -> String {
        record + fields.map { " \($0.0)=\(listFields.contains($0.0) ? $0.1 : encode($0.1))" }.joined() + "\n"
    }

    /// `text` cut to at most `DiscoveryLimits.maxTextBytes` UTF-8 bytes, at a character boundary.
    static func cut(_ text: String, limit: Int = DiscoveryLimits.maxTextBytes) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            guard bytes + size <= limit else { break }
            result.append(character)
            bytes += size
        }
        return result
    }

    /// Percent-encoding: every byte outside `!`…`~`, and `%`, `=`, `,`, as `%XX` (upper-case hex).
    static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            if byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "%") && byte != UInt8(ascii: "=") && byte != UInt8(ascii: ",") {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes a percent-encoded value into UTF-8 text of at most `limit` bytes.
    static func decode(_ raw: Substring, limit: Int, what: String) throws(DiscoveryFormatError) -> String {
        var bytes: [UInt8] = []
        var utf8 = raw.utf8[...]
        while let byte = utf8.first {
            utf8 = utf8.dropFirst()
            if byte == UInt8(ascii: "%") {
                guard utf8.count >= 2, let high = hexValue(utf8.first!), let low = hexValue(utf8.dropFirst().first!) else {
                    throw DiscoveryFormatError("\(what): a '%' not followed by two hex digits")
                }
                bytes.append(high << 4 | low)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
            guard bytes.count <= limit else { throw DiscoveryFormatError("\(what): longer than \(limit) bytes") }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw DiscoveryFormatError("\(what): not UTF-8") }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    /// Splits a datagram into its lines after the first (`magic`): at most `limit` bytes, printable
    /// ASCII and line feeds only, every line ended by a line feed, at most `DiscoveryLimits.maxLines`,
    /// each a record name and `key=value` fields with distinct keys.
    static func lines(_ datagram: some Collection<UInt8>, limit: Int, magic: String, what: String) throws(DiscoveryFormatError) -> [Fields]
    {
        guard datagram.count <= limit else { throw DiscoveryFormatError("\(what): \(datagram.count) bytes, more than \(limit)") }
        let bytes = Array(datagram)
        for (offset, byte) in bytes.enumerated() where !(byte == 0x0A || (byte >= 0x20 && byte < 0x7F)) {
            throw DiscoveryFormatError("\(what): byte \(offset) (0x\(String(byte, radix: 16))) is not printable ASCII or a line feed")
        }
        guard bytes.last == 0x0A else { throw DiscoveryFormatError("\(what): the last line does not end with a line feed") }
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        guard lines.first == Substring(magic) else {
            throw DiscoveryFormatError("\(what): the first line is '\(String(lines.first ?? "").prefix(40))', not '\(magic)'")
        }
        lines = lines.dropFirst()
        guard lines.count <= DiscoveryLimits.maxLines else {
            throw DiscoveryFormatError("\(what): \(lines.count + 1) lines, more than \(DiscoveryLimits.maxLines + 1)")
        }
        var result: [Fields] = []
        for (index, line) in lines.enumerated() {
            let number = index + 2
            let tokens = line.split(separator: " ", omittingEmptySubsequences: false)
            guard let record = tokens.first, !record.isEmpty, record.count <= 32, !record.contains("=") else {
                throw DiscoveryFormatError("\(what) line \(number): no record name")
            }
            var values: [String: Substring] = [:]
            for token in tokens.dropFirst() {
                guard let equals = token.firstIndex(of: "="), equals != token.startIndex,
                    token.distance(from: token.startIndex, to: equals) <= 32
                else {
                    throw DiscoveryFormatError("\(what) line \(number): '\(token.prefix(40))' is not key=value")
                }
                let key = String(token[..<equals])
                guard values[key] == nil else { throw DiscoveryFormatError("\(what) line \(number): field '\(key)' given twice") }
                values[key] = token[token.index(after: equals)...]
            }
            result.append(Fields(record: String(record), values: values))
        }
        return result
    }
}
