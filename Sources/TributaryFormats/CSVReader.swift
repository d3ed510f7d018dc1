import Foundation

extension CSVTable {
    /// The most columns a CSV file may have: the most channels a capture's analog frame holds
    /// (`WireLimits.maxChannels`). A row with more is refused when its field `maxColumns + 1` is met.
    public static let maxColumns = 65_535
    /// The longest data field in bytes (spaces included). float64's longest exact decimal form has
    /// 24 characters; a longer field is refused where it is met, so a row is never buffered whole.
    public static let maxFieldBytes = 4_096
    /// The longest first line, which may be the header of channel names and is read whole to tell:
    /// the names of a capture's channels must fit in 32 MiB (`ImportedSignal.validate`).
    public static let maxHeaderLineBytes = 32 << 20
    /// How far past `maxColumns` a refused line is read to say how many fields it has.
    static let maxCountedBytes = 64 << 20

    /// A CSV parser fed bytes as they are read: memory holds the values (8 bytes each), one field
    /// (at most `maxFieldBytes`) and the first line (at most `maxHeaderLineBytes`), never the file or a
    /// data row's text. Lines end at "\n" (a "\r" before it is dropped); fields are split at ",".
    struct Parser {
        let file: String
        let header: Header
        let maxColumns: Int

        private(set) var names: [String]?
        /// Columns of every row: fixed by the header, else by the first data row.
        private(set) var width: Int?
        /// The values row after row (transposed to channel-major at the end), unless `keepValues` is
        /// false (a scan that counts rows) or a stream takes them as it goes (`takeValues`).
        private(set) var values: [Double] = []
        /// Whether values are kept: a scan checks every field and counts the rows, keeping none.
        var keepValues = true
        /// Data rows read so far.
        private(set) var rows = 0

        private var lineNumber = 0
        private var atLineStart = true
        private var headerPending: Bool
        /// The first non-blank line while it is a header candidate.
        private var firstLine: [UInt8] = []
        private var firstLineFields = 1
        private var quoted = false
        /// The data field being read.
        private var field: [UInt8] = []
        /// Fields of the current data row already parsed.
        private var rowFields = 0
        /// True once the current line holds something other than spaces and tabs.
        private var lineHasContent = false
        /// The fields of a refused line counted so far (nil: no line refused), and its bytes counted.
        private var countedFields: Int?
        private var countedBytes = 0

        init(file: String, header: Header, maxColumns: Int) {
            self.file = file
            self.header = header
            self.maxColumns = maxColumns
            headerPending = header != .absent
            field.reserveCapacity(64)
        }

        mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>) throws(FormatError) {
            for byte in bytes {
                if atLineStart {
                    atLineStart = false
                    lineNumber += 1
                }
                if let fields = countedFields {
                    if byte == UInt8(ascii: "\n") { throw refusal(fields: fields, exact: true) }
                    if byte == UInt8(ascii: ",") { countedFields = fields + 1 }
                    countedBytes += 1
                    if countedBytes > CSVTable.maxCountedBytes { throw refusal(fields: countedFields ?? fields, exact: false) }
                    continue
                }
                if headerPending {
                    try firstLineByte(byte)
                } else {
                    try dataByte(byte)
                }
            }
        }

        /// The end of the input (the last line may lack its "\n"): the number of channels.
        mutating func end() throws(FormatError) -> Int {
            if let fields = countedFields { throw refusal(fields: fields, exact: true) }
            if !atLineStart {
                if headerPending { try endFirstLine() } else { try endDataLine() }
            }
            let channels = names?.count ?? width ?? 0
            guard channels >= 1 else { throw FormatError(file: file, location: "", reason: "no columns") }
            return channels
        }

        /// The end of the input: the table.
        mutating func finish() throws(FormatError) -> CSVTable {
            let channels = try end()
            let samples = rows
            // Row-major to channel-major, in place of a second copy per column.
            var out = [Double](repeating: 0, count: values.count)
            values.withUnsafeBufferPointer { v in
                out.withUnsafeMutableBufferPointer { o in
                    for i in 0..<samples {
                        for c in 0..<channels { o[c * samples + i] = v[i * channels + c] }
                    }
                }
            }
            values = []
            return CSVTable(channelNames: names, channelCount: channels, values: out)
        }

        // MARK: The first line (a header, or the first data row)

        private mutating func firstLineByte(_ byte: UInt8) throws(FormatError) {
            if byte == UInt8(ascii: "\n") { return try endFirstLine() }
            if byte == UInt8(ascii: "\"") { quoted.toggle() }
            if byte == UInt8(ascii: ","), !quoted {
                firstLineFields += 1
                if firstLineFields > maxColumns { return startCounting(fields: firstLineFields) }
            }
            guard firstLine.count < CSVTable.maxHeaderLineBytes else {
                throw FormatError(
                    file: file, location: "line \(lineNumber)",
                    reason:
                        "the first line is longer than \(CSVTable.maxHeaderLineBytes) bytes (the most a header of channel names may take)")
            }
            firstLine.append(byte)
        }

        private mutating func endFirstLine() throws(FormatError) {
            atLineStart = true
            var line = firstLine[...]
            while line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            defer {
                firstLine = []
                firstLineFields = 1
                quoted = false
            }
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { return }
            headerPending = false
            let text = String(decoding: line, as: UTF8.self)
            let fields = try CSVTable.headerFields(text[...], file: file, line: lineNumber)
            let numeric = fields.allSatisfy { (try? CSVTable.number($0.trimmingCharacters(in: .whitespaces))) != nil }
            if header == .present || !numeric {
                names = fields
                width = fields.count
                return
            }
            // Data after all: read it as any data row.
            for byte in line { try dataByte(byte) }
            try endDataLine()
        }

        // MARK: Data rows, field by field

        private mutating func dataByte(_ byte: UInt8) throws(FormatError) {
            switch byte {
            case UInt8(ascii: "\n"):
                try endDataLine()
            case UInt8(ascii: ","):
                lineHasContent = true
                try endField(lineEnds: false)
            default:
                if byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") && byte != UInt8(ascii: "\r") { lineHasContent = true }
                guard field.count < CSVTable.maxFieldBytes else {
                    throw FormatError(
                        file: file, location: "line \(lineNumber), column \(rowFields + 1)",
                        reason: "a field longer than \(CSVTable.maxFieldBytes) bytes is not a number")
                }
                field.append(byte)
            }
        }

        private mutating func endDataLine() throws(FormatError) {
            atLineStart = true
            while field.last == UInt8(ascii: "\r") { field.removeLast() }
            if !lineHasContent && rowFields == 0 {
                // A blank line (spaces and tabs only) is skipped.
                field.removeAll(keepingCapacity: true)
                return
            }
            try endField(lineEnds: true)
            let fields = rowFields
            rowFields = 0
            lineHasContent = false
            if width == nil { width = fields }
            guard let width, fields == width else {
                throw FormatError(
                    file: file, location: "line \(lineNumber), column \(fields + 1)",
                    reason: "row has \(fields) fields, \(width ?? 0) expected")
            }
            rows += 1
        }

        /// The values of the first `count` rows held, row-major, taken out of the parser (the values
        /// of a row whose line has not ended stay).
        mutating func takeValues(rows count: Int, width: Int) -> [Double] {
            let n = min(values.count, count * width)
            let out = Array(values[..<n])
            values.removeFirst(n)
            return out
        }

        /// Parses the field read and appends its value, or refuses the row once it has more fields
        /// than the header (or first row), or than `maxColumns`.
        /// - Parameter lineEnds: true at the end of the line, false at a comma (another field follows).
        private mutating func endField(lineEnds: Bool) throws(FormatError) {
            let column = rowFields + 1
            let limit = width ?? maxColumns
            if column > limit {
                field.removeAll(keepingCapacity: true)
                if lineEnds { throw refusal(fields: column, exact: true) }
                return startCounting(fields: column + 1)
            }
            let text = Self.trimmed(field)
            field.removeAll(keepingCapacity: true)
            do {
                let value = try CSVTable.number(text)
                if keepValues { values.append(value) }
            } catch {
                throw FormatError(file: file, location: "line \(lineNumber), column \(column)", reason: error.reason)
            }
            rowFields = column
        }

        /// Reads the rest of a refused line only to count its fields (at most `maxCountedBytes` more),
        /// for the error `refusal` makes at its end.
        private mutating func startCounting(fields: Int) {
            countedFields = fields
            countedBytes = 0
        }

        /// The error for a row with more fields than the header (or first row), or than `maxColumns`.
        private func refusal(fields: Int, exact: Bool) -> FormatError {
            let n = exact ? "\(fields)" : "more than \(fields)"
            if let width {
                return FormatError(
                    file: file, location: "line \(lineNumber), column \(width + 1)", reason: "row has \(n) fields, \(width) expected")
            }
            return FormatError(
                file: file, location: "line \(lineNumber), column \(maxColumns + 1)",
                reason: "\(n) channels (fields) in one row; a capture's analog frame holds at most \(maxColumns), "
                    + "so the file is refused at field \(maxColumns + 1)")
        }

        /// The field without the spaces and tabs around it (and other Unicode spaces, as `.whitespaces`).
        private static func trimmed(_ bytes: [UInt8]) -> String {
            var start = 0, end = bytes.count
            while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") { start += 1 }
            while end > start, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
            let text = String(decoding: bytes[start..<end], as: UTF8.self)
            // Non-ASCII at an edge may be a Unicode space (U+00A0, U+2003...): trim as before.
            if start < end, bytes[start] >= 0x80 || bytes[end - 1] >= 0x80 { return text.trimmingCharacters(in: .whitespaces) }
            return text
        }
    }
}
