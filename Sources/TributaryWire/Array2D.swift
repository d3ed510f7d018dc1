/// The element type of a 2D array (SCCT's seven array packages).
public enum ArrayElementType: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case double = 1
    case float = 2
    case int32 = 3
    case int16 = 4
    case int64 = 5
    case bool = 6
    case string = 7

    /// Bytes per element in the payload; 0 for strings (offsets table + UTF-8).
    public var size: Int {
        switch self {
        case .double, .int64: 8
        case .float, .int32: 4
        case .int16: 2
        case .bool: 1
        case .string: 0
        }
    }

    public var description: String {
        switch self {
        case .double: "double"
        case .float: "float"
        case .int32: "int32"
        case .int16: "int16"
        case .int64: "int64"
        case .bool: "bool"
        case .string: "string"
        }
    }
}

/// Row-major elements of an owned 2D array.
public enum ArrayElements: Sendable, Hashable {
    case double([Double])
    case float([Float])
    case int32([Int32])
    case int16([Int16])
    case int64([Int64])
    case bool([Bool])
    case string([String])

    public var elementType: ArrayElementType {
        switch self {
        case .double: .double
        case .float: .float
        case .int32: .int32
        case .int16: .int16
        case .int64: .int64
        case .bool: .bool
        case .string: .string
        }
    }

    var count: Int {
        switch self {
        case .double(let v): v.count
        case .float(let v): v.count
        case .int32(let v): v.count
        case .int16(let v): v.count
        case .int64(let v): v.count
        case .bool(let v): v.count
        case .string(let v): v.count
        }
    }
}

/// An owned 2D array package (SCCT 2DArrayPackage): rows × columns elements, row-major.
public struct Array2D: Sendable, Hashable {
    public var rowCount: Int
    public var columnCount: Int
    /// Position of element [0][0] in the publisher's full array (non-zero for filtered sub-arrays).
    public var rowOrigin: UInt32
    public var columnOrigin: UInt32
    public var elements: ArrayElements

    public var elementType: ArrayElementType { elements.elementType }

    public init(rowCount: Int, columnCount: Int, rowOrigin: UInt32 = 0, columnOrigin: UInt32 = 0, elements: ArrayElements) {
        precondition(elements.count == rowCount * columnCount, "elements must be rows × columns")
        precondition(
            elements.count > 0 || max(rowCount, columnCount) <= WireLimits.maxEmptyDimension,
            "an array without elements has at most \(WireLimits.maxEmptyDimension) rows or columns (docs/PROTOCOL.md §2.4)")
        self.rowCount = rowCount
        self.columnCount = columnCount
        self.rowOrigin = rowOrigin
        self.columnOrigin = columnOrigin
        self.elements = elements
    }

    var contentLength: Int {
        let n = rowCount * columnCount
        if case .string(let strings) = elements {
            return align8(24 + 4 * (n + 1)) + strings.reduce(0) { $0 + $1.utf8.count }
        }
        return 24 + n * elementType.size
    }

    func write(_ w: inout PayloadWriter) {
        ArrayLayout.writePreamble(
            &w, type: elementType, rows: rowCount, columns: columnCount,
            rowOrigin: rowOrigin, columnOrigin: columnOrigin)
        func raw<T>(_ values: [T]) { values.withUnsafeBytes { w.write($0) } }
        switch elements {
        case .double(let v): raw(v)
        case .float(let v): raw(v)
        case .int32(let v): raw(v)
        case .int16(let v): raw(v)
        case .int64(let v): raw(v)
        case .bool(let v): for b in v { w.write(UInt8(b ? 1 : 0)) }
        case .string(let v):
            var offset: UInt32 = 0
            w.write(offset)
            for s in v {
                offset += UInt32(s.utf8.count)
                w.write(offset)
            }
            w.align8()
            for s in v { w.write(Array(s.utf8)) }
        }
    }
}

enum ArrayLayout {
    static let dataOffset = 24

    static func writePreamble(
        _ w: inout PayloadWriter, type: ArrayElementType, rows: Int, columns: Int,
        rowOrigin: UInt32, columnOrigin: UInt32
    ) {
        w.write(type.rawValue)
        w.skip(3)
        w.write(UInt32(rows))
        w.write(UInt32(columns))
        w.write(rowOrigin)
        w.write(columnOrigin)
        w.skip(4)
    }
}

/// A zero-copy view of a received 2D array: numeric elements are read in place.
///
/// `@unchecked Sendable`: `payload` points into `buffer`, which is immutable and kept alive by the view.
public struct ArrayView: @unchecked Sendable {
    public let elementType: ArrayElementType
    public let rowCount: Int
    public let columnCount: Int
    public let rowOrigin: UInt32
    public let columnOrigin: UInt32
    /// For string arrays: offset of the UTF-8 bytes (the offsets table starts at 24).
    let stringBytesOffset: Int
    @usableFromInline let payload: UnsafeRawPointer
    @usableFromInline let buffer: FrameBuffer

    init(payload bytes: UnsafeRawBufferPointer, origin: Int, buffer: FrameBuffer) throws(WireError) {
        var r = PayloadReader(bytes, origin: origin)
        let rawType = try r.read(UInt8.self, "array.element_type")
        guard let type = ArrayElementType(rawValue: rawType) else {
            throw WireError(
                .invalidValue, field: "array.element_type", offset: origin,
                detail: "\(rawType); expected 1-7")
        }
        try r.skip(3, "array.reserved")
        let rows = Int(try r.read(UInt32.self, "array.row_count"))
        let columns = Int(try r.read(UInt32.self, "array.column_count"))
        rowOrigin = try r.read(UInt32.self, "array.row_origin")
        columnOrigin = try r.read(UInt32.self, "array.column_origin")
        try r.skip(4, "array.reserved")
        let available = bytes.count - ArrayLayout.dataOffset
        // rows × columns can reach 2^64 - 2^33 + 1: check before using it as a count.
        let (n, overflow) = rows.multipliedReportingOverflow(by: columns)
        guard !overflow, n <= available else {
            throw WireError(
                .countTooLarge, field: "array.row_count", offset: origin + 4,
                detail: "\(rows) × \(columns) elements cannot fit in the \(available) bytes that follow")
        }
        guard n > 0 || max(rows, columns) <= WireLimits.maxEmptyDimension else {
            throw WireError(
                .countTooLarge, field: rows > columns ? "array.row_count" : "array.column_count",
                offset: origin + (rows > columns ? 4 : 8),
                detail: "an empty \(rows) × \(columns) array: an array without elements has at most "
                    + "\(WireLimits.maxEmptyDimension) rows or columns")
        }
        if type == .string {
            let tableBytes = 4 * (n + 1)
            guard tableBytes <= available else {
                throw WireError(
                    .countTooLarge, field: "array.row_count", offset: origin + 4,
                    detail: "\(rows) × \(columns) strings need an offsets table of \(tableBytes) bytes, "
                        + "\(available) bytes follow")
            }
            let textStart = align8(ArrayLayout.dataOffset + tableBytes)
            guard textStart <= bytes.count else {
                throw WireError(
                    .truncated, field: "array.offsets", offset: origin + bytes.count,
                    detail: "offsets table padding runs past the payload")
            }
            // Offsets start at 0, never decrease, and each string is valid UTF-8 on its own.
            var previous: UInt32 = 0
            for i in 0...n {
                let at = ArrayLayout.dataOffset + 4 * i
                let offset = r.u32(at: at)
                guard (i == 0 && offset == 0) || (i > 0 && offset >= previous) else {
                    throw WireError(
                        .invalidValue, field: "array.offsets[\(i)]", offset: origin + at,
                        detail: i == 0
                            ? "the first offset must be 0, found \(offset)"
                            : "offset \(offset) is below the previous offset \(previous)")
                }
                guard textStart + Int(offset) <= bytes.count else {
                    throw WireError(
                        .lengthMismatch, field: "array.offsets[\(i)]", offset: origin + at,
                        detail: "offset \(offset) runs past the end of the payload")
                }
                if i > 0 {
                    let slice = UnsafeRawBufferPointer(rebasing: bytes[(textStart + Int(previous))..<(textStart + Int(offset))])
                    guard String(validating: slice.bindMemory(to: UInt8.self), as: UTF8.self) != nil else {
                        throw WireError(
                            .invalidUTF8, field: "array.strings[\(i - 1)]",
                            offset: origin + textStart + Int(previous),
                            detail: "element \(i - 1) is not valid UTF-8")
                    }
                }
                previous = offset
            }
            let end = textStart + Int(previous)
            guard align8(end) == bytes.count else {
                throw WireError(
                    .lengthMismatch, field: "array.payload_length", offset: origin + end,
                    detail: "strings end at payload byte \(end) but the payload has \(bytes.count) bytes")
            }
            stringBytesOffset = textStart
        } else {
            let needed = n * type.size
            guard align8(ArrayLayout.dataOffset + needed) == bytes.count else {
                throw WireError(
                    .lengthMismatch, field: "array.row_count", offset: origin + 4,
                    detail: "\(rows) × \(columns) \(type) elements need a payload of "
                        + "\(align8(ArrayLayout.dataOffset + needed)) bytes, the header says \(bytes.count)")
            }
            if type == .bool {
                for i in 0..<n where bytes[ArrayLayout.dataOffset + i] > 1 {
                    throw WireError(
                        .invalidValue, field: "array.elements[\(i)]", offset: origin + ArrayLayout.dataOffset + i,
                        detail: "bool element is \(bytes[ArrayLayout.dataOffset + i]); expected 0 or 1")
                }
            }
            stringBytesOffset = 0
        }
        elementType = type
        rowCount = rows
        columnCount = columns
        payload = bytes.baseAddress!
        self.buffer = buffer
    }

    /// Calls `body` with all elements in place, row-major. `T` must match the element type
    /// (Double, Float, Int32, Int16, Int64, or UInt8 for bool). Not for string arrays.
    public func withElements<T: ArrayElementValue, R>(_ type: T.Type, _ body: (UnsafeBufferPointer<T>) throws -> R) rethrows -> R {
        precondition(T.arrayElementType == elementType, "elements are \(elementType), not \(T.self)")
        let start = (payload + ArrayLayout.dataOffset).assumingMemoryBound(to: T.self)
        return try withExtendedLifetime(buffer) { try body(UnsafeBufferPointer(start: start, count: rowCount * columnCount)) }
    }

    /// Calls `body` with one row in place.
    public func withRow<T: ArrayElementValue, R>(_ type: T.Type, _ row: Int, _ body: (UnsafeBufferPointer<T>) throws -> R) rethrows -> R {
        precondition(row >= 0 && row < rowCount, "row \(row) out of range 0..<\(rowCount)")
        return try withElements(type) { all in
            try body(UnsafeBufferPointer(rebasing: all[(row * columnCount)..<((row + 1) * columnCount)]))
        }
    }

    /// The byte range of string element `index` (row-major), relative to the payload.
    func stringRange(_ index: Int) -> Range<Int> {
        let table = payload + ArrayLayout.dataOffset
        let from = Int(UInt32(littleEndian: (table + 4 * index).loadUnaligned(as: UInt32.self)))
        let to = Int(UInt32(littleEndian: (table + 4 * (index + 1)).loadUnaligned(as: UInt32.self)))
        return (stringBytesOffset + from)..<(stringBytesOffset + to)
    }

    /// Calls `body` with the UTF-8 bytes of a string element, in place.
    public func withStringBytes<R>(row: Int, column: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        precondition(elementType == .string, "elements are \(elementType), not strings")
        let range = stringRange(row * columnCount + column)
        return try withExtendedLifetime(buffer) {
            try body(UnsafeRawBufferPointer(start: payload + range.lowerBound, count: range.count))
        }
    }

    /// A string element (validated as UTF-8 when the frame was decoded).
    public func string(row: Int, column: Int) -> String {
        withStringBytes(row: row, column: column) { String(decoding: $0, as: UTF8.self) }
    }

    /// An owned copy of the package.
    public func materialize() -> Array2D {
        let elements: ArrayElements
        switch elementType {
        case .double: elements = .double(withElements(Double.self) { Array($0) })
        case .float: elements = .float(withElements(Float.self) { Array($0) })
        case .int32: elements = .int32(withElements(Int32.self) { Array($0) })
        case .int16: elements = .int16(withElements(Int16.self) { Array($0) })
        case .int64: elements = .int64(withElements(Int64.self) { Array($0) })
        case .bool: elements = .bool(withElements(UInt8.self) { $0.map { $0 != 0 } })
        case .string:
            // Row-major, as stored: one pass over the elements, whatever the dimensions.
            elements = .string(
                withExtendedLifetime(buffer) {
                    (0..<(rowCount * columnCount)).map { i in
                        let range = stringRange(i)
                        return String(
                            decoding: UnsafeRawBufferPointer(start: payload + range.lowerBound, count: range.count), as: UTF8.self)
                    }
                })
        }
        return Array2D(
            rowCount: rowCount, columnCount: columnCount, rowOrigin: rowOrigin,
            columnOrigin: columnOrigin, elements: elements)
    }
}

/// Element types readable in place from an array frame.
public protocol ArrayElementValue: Sendable {
    static var arrayElementType: ArrayElementType { get }
}
extension Double: ArrayElementValue { public static var arrayElementType: ArrayElementType { .double } }
extension Float: ArrayElementValue { public static var arrayElementType: ArrayElementType { .float } }
extension Int32: ArrayElementValue { public static var arrayElementType: ArrayElementType { .int32 } }
extension Int16: ArrayElementValue { public static var arrayElementType: ArrayElementType { .int16 } }
extension Int64: ArrayElementValue { public static var arrayElementType: ArrayElementType { .int64 } }
/// Bool elements are bytes holding 0 or 1.
extension UInt8: ArrayElementValue { public static var arrayElementType: ArrayElementType { .bool } }
