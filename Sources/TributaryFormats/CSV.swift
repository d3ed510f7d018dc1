import Foundation

/// A channels x samples matrix as CSV text: one row per sample, one column per channel, an optional
/// header row of channel names. Numbers are written in the shortest form that reads back to the same
/// float64 (`Double.description`: "0.1", "1e-05", "nan", "inf"), so
/// `numpy.loadtxt(path, delimiter=",", skiprows=1 if header else 0, ndmin=2)` returns exactly the values
/// (transposed: numpy gives samples x channels).
public struct CSVTable: Sendable, Equatable {
    /// Channel names from the header row, or nil when the file has none.
    public var channelNames: [String]?
    /// Number of channels (columns).
    public var channelCount: Int
    /// Samples per channel (data rows).
    public var sampleCount: Int
    /// `channelCount * sampleCount` values, channel-major: sample i of channel c is `values[c * sampleCount + i]`.
    public var values: [Double]

    /// Creates a table from channel-major values.
    /// - Parameters:
    ///   - channelNames: header names (one per channel) or nil for no header row.
    ///   - channelCount: number of channels (at least 1).
    ///   - values: `channelCount * sampleCount` values, channel-major.
    public init(channelNames: [String]? = nil, channelCount: Int, values: [Double]) {
        self.channelNames = channelNames
        self.channelCount = channelCount
        self.sampleCount = channelCount > 0 ? values.count / channelCount : 0
        self.values = values
    }

    /// Whether the first line is channel names.
    public enum Header: Sendable {
        /// Header when any field of the first non-blank line is not a number.
        case automatic
        /// The first non-blank line is names.
        case present
        /// Every line is data.
        case absent
    }

    // MARK: Writing

    /// The CSV text: comma-separated, "\n" line ends, names quoted (RFC 4180) when they contain a
    /// comma, a quote or a line break.
    /// - Throws: `FormatError` when the names or value count do not match the channel count.
    public func encoded(file: String = "<memory>") throws(FormatError) -> String {
        guard channelCount >= 1, values.count == channelCount * sampleCount else {
            throw FormatError(
                file: file, location: "", reason: "\(values.count) values is not \(channelCount) channels x \(sampleCount) samples")
        }
        var text = ""
        text.reserveCapacity(values.count * 12)
        if let names = channelNames {
            guard names.count == channelCount else {
                throw FormatError(file: file, location: "", reason: "\(names.count) channel names for \(channelCount) channels")
            }
            text += names.map(Self.quoted).joined(separator: ",") + "\n"
        }
        for i in 0..<sampleCount {
            for c in 0..<channelCount {
                if c > 0 { text += "," }
                text += values[c * sampleCount + i].description
            }
            text += "\n"
        }
        return text
    }

    /// Writes the CSV file (see `encoded`).
    /// - Parameter path: destination, replaced atomically.
    /// - Throws: `FormatError` from `encoded`, or when the file cannot be written.
    public func write(to path: String) throws(FormatError) {
        let text = try encoded(file: path)
        do { try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
            throw FormatError(file: path, location: "", reason: "cannot write: \(error.localizedDescription)")
        }
    }

    private static func quoted(_ name: String) -> String {
        guard name.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return name }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: Reading

    /// Reads a CSV file, a block at a time: memory holds the values, never the file's text (see `Parser`).
    /// - Parameters:
    ///   - path: the file.
    ///   - header: whether the first line is names.
    ///   - maxColumns: the most columns (fields in a row) accepted; a row with more is refused where
    ///     its field `maxColumns + 1` is met (the error counts its fields, reading at most 64 MiB further).
    /// - Returns: the matrix, channel-major.
    /// - Throws: `FormatError` naming the file, line and column of the first bad field.
    public static func read(path: String, header: Header = .automatic, maxColumns: Int = CSVTable.maxColumns) throws(FormatError)
        -> CSVTable
    {
        var parser = Parser(file: path, header: header, maxColumns: maxColumns)
        let input = try BlockInput(path: path)
        while try input.feed(&parser) {}
        return try parser.finish()
    }

    /// Reads a CSV file through without keeping its values, checking every field as `read` does: its
    /// channel names, channels and data rows (what a stream of it will give).
    /// - Throws: `FormatError` as `read` throws it.
    public static func scan(path: String, header: Header = .automatic, maxColumns: Int = CSVTable.maxColumns) throws(FormatError)
        -> (channelNames: [String]?, channelCount: Int, sampleCount: Int)
    {
        var parser = Parser(file: path, header: header, maxColumns: maxColumns)
        parser.keepValues = false
        let input = try BlockInput(path: path)
        while try input.feed(&parser) {}
        let channels = try parser.end()
        return (parser.names, channels, parser.rows)
    }

    /// Parses CSV text: comma-separated numbers, blank lines skipped, "\n" or "\r\n" line ends,
    /// spaces around fields ignored; the header row may quote names (RFC 4180).
    /// - Parameters:
    ///   - text: the whole file.
    ///   - header: whether the first line is names.
    ///   - file: the name to put in errors.
    ///   - maxColumns: the most columns accepted (as for `read`).
    /// - Returns: the matrix, channel-major.
    /// - Throws: `FormatError` with "line L, column C" (1-based) for a field that is not a number or a row
    ///   with the wrong number of fields.
    public static func decode(
        _ text: String, header: Header = .automatic, file: String = "<memory>",
        maxColumns: Int = CSVTable.maxColumns
    ) throws(FormatError) -> CSVTable {
        var parser = Parser(file: file, header: header, maxColumns: maxColumns)
        let bytes = Array(text.utf8)
        let result: Result<Void, FormatError> = bytes.withUnsafeBufferPointer { b in
            do throws(FormatError) { return .success(try parser.feed(b)) } catch { return .failure(error) }
        }
        try result.get()
        return try parser.finish()
    }

    /// Why a field is not a value.
    struct FieldProblem: Error { var reason: String }

    /// A field as float64: a decimal number (`[+-]digits[.digits][e[+-]digits]`, digits on at least one
    /// side of the point) or `nan`, `inf`, `infinity` with an optional sign, in any case (what this
    /// writer and numpy write). Hexadecimal and other forms Swift's `Double(String)` would take are
    /// refused, and so is a decimal number beyond the range of float64 (it would read as infinity).
    static func number(_ field: String) throws(FieldProblem) -> Double {
        var digitsBefore = 0, digitsAfter = 0, exponentDigits = 0
        var state = 0  // 0 integer part, 1 fraction, 2 after "e", 3 exponent digits, -1 not decimal
        let bytes = field.utf8
        var start = bytes.startIndex
        if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { start = bytes.index(after: start) }
        for byte in bytes[start...] {
            let digit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            switch state {
            case 0:
                if digit {
                    digitsBefore += 1
                } else if byte == UInt8(ascii: ".") {
                    state = 1
                } else if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                    state = 2
                } else {
                    state = -1
                }
            case 1:
                if digit {
                    digitsAfter += 1
                } else if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                    state = 2
                } else {
                    state = -1
                }
            case 2:
                if digit {
                    exponentDigits += 1; state = 3
                } else if byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") {
                    state = 3
                } else {
                    state = -1
                }
            default:
                if digit { exponentDigits += 1 } else { state = -1 }
            }
            if state < 0 { break }
        }
        let decimal = state >= 0 && digitsBefore + digitsAfter > 0 && (state < 2 || exponentDigits > 0)
        if !decimal {
            let word = field.lowercased().drop { $0 == "+" || $0 == "-" }
            let signs = field.utf8.count - word.utf8.count
            if signs <= 1, word == "nan" || word == "inf" || word == "infinity", let value = Double(field.lowercased()) { return value }
            throw FieldProblem(reason: field.isEmpty ? "empty field: not a number" : "\(String(reflecting: field)) is not a decimal number")
        }
        guard let value = Double(field), value.isFinite else {
            throw FieldProblem(reason: "\(field) is out of range of float64 (its magnitude exceeds \(Double.greatestFiniteMagnitude))")
        }
        return value
    }

    /// Splits a header line, honouring RFC 4180 quotes.
    static func headerFields(_ line: Substring, file: String, line number: Int) throws(FormatError) -> [String] {
        var fields: [String] = []
        var current = ""
        var quoted = false, wasQuoted = false
        var chars = line.makeIterator()
        var column = 1
        while let ch = chars.next() {
            if quoted {
                if ch == "\"" {
                    // A doubled quote is a literal quote; a single one ends the quoted field.
                    var lookahead = chars
                    if lookahead.next() == "\"" { current.append("\""); chars = lookahead } else { quoted = false }
                } else {
                    current.append(ch)
                }
            } else if ch == "," {
                fields.append(wasQuoted ? current : current.trimmingCharacters(in: .whitespaces))
                current = ""; wasQuoted = false; column += 1
            } else if ch == "\"" && current.allSatisfy({ $0 == " " }) && !wasQuoted {
                quoted = true; wasQuoted = true; current = ""
            } else if wasQuoted && ch != " " {
                throw FormatError(file: file, location: "line \(number), column \(column)", reason: "text after a closing quote")
            } else {
                current.append(ch)
            }
        }
        guard !quoted else { throw FormatError(file: file, location: "line \(number), column \(column)", reason: "unterminated quote") }
        fields.append(wasQuoted ? current : current.trimmingCharacters(in: .whitespaces))
        return fields
    }
}

/// A file fed to a CSV parser a block (1 MiB) at a time.
final class BlockInput {
    let path: String
    private let fd: Int32
    private var block = [UInt8](repeating: 0, count: 1 << 20)

    init(path: String) throws(FormatError) {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FormatError(file: path, location: "", reason: "cannot read: \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    /// Feeds the next block to `parser`; false at the end of the file.
    func feed(_ parser: inout CSVTable.Parser) throws(FormatError) -> Bool {
        while true {
            let n = block.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw FormatError(file: path, location: "", reason: "cannot read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { return false }
            let result: Result<Void, FormatError> = block.withUnsafeBufferPointer { b in
                do throws(FormatError) { return .success(try parser.feed(UnsafeBufferPointer(rebasing: b[..<n]))) } catch {
                    return .failure(error)
                }
            }
            try result.get()
            return true
        }
    }
}

extension CSVTable {
    /// A CSV file read as rows in order, a block at a time (after `scan` has checked it): memory holds
    /// a block's values, never the file's.
    public final class Stream {
        private var parser: Parser
        private let input: BlockInput
        public let channelCount: Int
        private var pending: [Double] = []
        private var taken = 0
        private var ended = false

        /// Opens the file for a second reading; `channelCount` is what `scan` found.
        public init(path: String, channelCount: Int, header: Header = .automatic, maxColumns: Int = CSVTable.maxColumns) throws(FormatError)
        {
            parser = Parser(file: path, header: header, maxColumns: maxColumns)
            input = try BlockInput(path: path)
            self.channelCount = channelCount
        }

        /// The next `count` rows (fewer at the end), channel-major (`count` values per channel).
        /// - Throws: `FormatError` as `read` throws it (the file changed since `scan`).
        public func next(_ count: Int) throws(FormatError) -> [Double] {
            let width = channelCount
            while (pending.count - taken) / width < count && !ended {
                ended = try !input.feed(&parser)
                if ended { _ = try parser.end() }
                if taken > 0 {
                    pending.removeFirst(taken)
                    taken = 0
                }
                let complete = parser.values.count / width
                pending += parser.takeValues(rows: complete, width: width)
            }
            let rows = min(count, (pending.count - taken) / width)
            var out = [Double](repeating: 0, count: rows * width)
            pending.withUnsafeBufferPointer { v in
                out.withUnsafeMutableBufferPointer { o in
                    for i in 0..<rows {
                        for c in 0..<width { o[c * rows + i] = v[taken + i * width + c] }
                    }
                }
            }
            taken += rows * width
            return out
        }
    }
}
