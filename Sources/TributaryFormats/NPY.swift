import Foundation

/// The element types Tributary reads from and writes to NPY files.
public enum NPYDType: String, Sendable, CaseIterable {
    /// Little-endian IEEE 754 double (`<f8`).
    case float64 = "<f8"
    /// Little-endian IEEE 754 single (`<f4`).
    case float32 = "<f4"
    /// Little-endian two's-complement 16-bit integer (`<i2`).
    case int16 = "<i2"
    /// Little-endian two's-complement 32-bit integer (`<i4`).
    case int32 = "<i4"

    /// Bytes per element.
    public var size: Int {
        switch self {
        case .float64: 8
        case .float32: 4
        case .int16: 2
        case .int32: 4
        }
    }
}

/// The samples of an NPY array, channel-major (all of channel 0, then all of channel 1, ...).
public enum NPYSamples: Sendable, Equatable {
    case float64([Double])
    case float32([Float])
    case int16([Int16])
    case int32([Int32])

    /// The element type.
    public var dtype: NPYDType {
        switch self {
        case .float64: .float64
        case .float32: .float32
        case .int16: .int16
        case .int32: .int32
        }
    }

    /// The number of elements.
    public var count: Int {
        switch self {
        case .float64(let v): v.count
        case .float32(let v): v.count
        case .int16(let v): v.count
        case .int32(let v): v.count
        }
    }
}

/// A 1-D (one channel) or 2-D (channels, samples) NPY array, held channel-major in memory.
public struct NPYArray: Sendable, Equatable {
    /// Number of channels (rows of a 2-D array; 1 for a 1-D array).
    public var channels: Int
    /// Samples per channel.
    public var samplesPerChannel: Int
    /// True when the file held a 1-D array (written back as 1-D).
    public var isOneDimensional: Bool
    /// The elements, channel-major.
    public var samples: NPYSamples

    /// Creates an array; `samples.count` must equal `channels * samplesPerChannel`.
    /// - Throws: `NPYError.Problem.shapeMismatch` when the element count does not match the shape.
    public init(channels: Int, samplesPerChannel: Int, samples: NPYSamples, isOneDimensional: Bool = false) throws {
        guard channels >= 0, samplesPerChannel >= 0,
            channels.multipliedReportingOverflow(by: samplesPerChannel).partialValue == samples.count,
            !isOneDimensional || channels == 1
        else {
            throw NPYError(file: "", problem: .shapeMismatch(channels: channels, samples: samplesPerChannel, elements: samples.count))
        }
        self.channels = channels
        self.samplesPerChannel = samplesPerChannel
        self.samples = samples
        self.isOneDimensional = isOneDimensional
    }

    /// Channel `index` converted to Double (int16 and int32 values are the raw counts).
    public func channelAsDouble(_ index: Int) -> [Double] {
        let range = (index * samplesPerChannel)..<((index + 1) * samplesPerChannel)
        switch samples {
        case .float64(let v): return Array(v[range])
        case .float32(let v): return v[range].map(Double.init)
        case .int16(let v): return v[range].map(Double.init)
        case .int32(let v): return v[range].map(Double.init)
        }
    }
}

/// A failure to read or write an NPY file: the file and what is wrong with it.
public struct NPYError: Error, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Problem: Equatable, Sendable {
        /// The file could not be opened, read or written.
        case io(String)
        /// The first six bytes are not `\x93NUMPY`.
        case notNPY
        /// A format version other than 1.0, 2.0, 3.0.
        case unsupportedVersion(major: UInt8, minor: UInt8)
        /// The file ends inside the preamble or header, at byte `at`.
        case truncatedHeader(at: Int)
        /// The header dictionary could not be parsed; `at` is the byte offset in the file.
        case badHeader(String, at: Int)
        /// A dtype other than `<f8`, `<f4`, `<i2`, `<i4`.
        case unsupportedDType(String)
        /// A shape that is not (samples,) or (channels, samples).
        case unsupportedShape([Int])
        /// The data section is shorter than the shape needs: `expected` bytes from byte `at`, `available` present.
        case truncatedData(at: Int, expected: Int, available: Int)
        /// The element count does not match channels x samples.
        case shapeMismatch(channels: Int, samples: Int, elements: Int)
    }

    /// The file's path ("" when not reading a file).
    public var file: String
    /// The problem.
    public var problem: Problem

    public init(file: String, problem: Problem) {
        self.file = file
        self.problem = problem
    }

    public var description: String {
        let what: String
        switch problem {
        case .io(let message): what = message
        case .notNPY: what = "not an NPY file (no \\x93NUMPY magic at byte 0)"
        case .unsupportedVersion(let major, let minor): what = "unsupported NPY format version \(major).\(minor) (byte 6)"
        case .truncatedHeader(let at): what = "truncated header: file ends at byte \(at)"
        case .badHeader(let reason, let at): what = "bad header at byte \(at): \(reason)"
        case .unsupportedDType(let dtype): what = "unsupported dtype '\(dtype)' (supported: <f8, <f4, <i2, <i4)"
        case .unsupportedShape(let shape):
            what = "unsupported shape (\(shape.map(String.init).joined(separator: ", "))): expected (samples,) or (channels, samples)"
        case .truncatedData(let at, let expected, let available):
            what = "truncated data at byte \(at + available): the shape needs \(expected) bytes from byte \(at), \(available) present"
        case .shapeMismatch(let channels, let samples, let elements):
            what = "\(elements) elements do not fill \(channels) channels x \(samples) samples"
        }
        return file.isEmpty ? what : "\(file): \(what)"
    }
}

/// Reads and writes NumPy `.npy` files (format versions 1, 2 and 3).
public enum NPY {
    static let magic: [UInt8] = [0x93, 0x4E, 0x55, 0x4D, 0x50, 0x59]  // \x93NUMPY

    /// Reads an NPY file.
    /// - Parameter path: the file's path (named in every error).
    /// - Returns: the array, channel-major.
    /// - Throws: `NPYError` naming the file and the problem.
    public static func read(path: String) throws -> NPYArray {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe)
        } catch {
            throw NPYError(file: path, problem: .io("cannot read: \((error as NSError).localizedDescription)"))
        }
        do {
            return try decode(data)
        } catch var error as NPYError {
            error.file = path
            throw error
        }
    }

    /// Decodes the bytes of an NPY file.
    /// - Throws: `NPYError` (with an empty file name).
    public static func decode(_ data: Data) throws -> NPYArray {
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws -> NPYArray in
            let header = try parsePreamble(raw)
            let dtype = header.dtype
            let shape = header.shape
            let channels: Int, samples: Int
            switch shape.count {
            case 1: channels = 1; samples = shape[0]
            case 2: channels = shape[0]; samples = shape[1]
            default: throw NPYError(file: "", problem: .unsupportedShape(shape))
            }
            let (elements, overflow1) = channels.multipliedReportingOverflow(by: samples)
            let (bytes, overflow2) = elements.multipliedReportingOverflow(by: dtype.size)
            guard !overflow1, !overflow2 else { throw NPYError(file: "", problem: .unsupportedShape(shape)) }
            let available = raw.count - header.dataOffset
            guard available >= bytes else {
                throw NPYError(file: "", problem: .truncatedData(at: header.dataOffset, expected: bytes, available: available))
            }
            let body = UnsafeRawBufferPointer(rebasing: raw[header.dataOffset..<(header.dataOffset + bytes)])
            // Fortran order of a 2-D (channels, samples) array stores samples-major: transpose while copying.
            let transpose = header.fortranOrder && shape.count == 2 && channels > 1 && samples > 1
            let out: NPYSamples
            switch dtype {
            case .float64:
                out = .float64(
                    copyElements(body, count: elements, channels: channels, samples: samples, transpose: transpose) {
                        Double(bitPattern: UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: $1, as: UInt64.self)))
                    })
            case .float32:
                out = .float32(
                    copyElements(body, count: elements, channels: channels, samples: samples, transpose: transpose) {
                        Float(bitPattern: UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: $1, as: UInt32.self)))
                    })
            case .int16:
                out = .int16(
                    copyElements(body, count: elements, channels: channels, samples: samples, transpose: transpose) {
                        Int16(littleEndian: $0.loadUnaligned(fromByteOffset: $1, as: Int16.self))
                    })
            case .int32:
                out = .int32(
                    copyElements(body, count: elements, channels: channels, samples: samples, transpose: transpose) {
                        Int32(littleEndian: $0.loadUnaligned(fromByteOffset: $1, as: Int32.self))
                    })
            }
            return try NPYArray(channels: channels, samplesPerChannel: samples, samples: out, isOneDimensional: shape.count == 1)
        }
    }

    private static func copyElements<T>(
        _ body: UnsafeRawBufferPointer, count: Int, channels: Int, samples: Int, transpose: Bool,
        _ load: (UnsafeRawBufferPointer, Int) -> T
    ) -> [T] {
        let size = MemoryLayout<T>.size
        return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            if transpose {
                for c in 0..<channels {
                    for s in 0..<samples { buffer[c * samples + s] = load(body, (s * channels + c) * size) }
                }
            } else {
                for i in 0..<count { buffer[i] = load(body, i * size) }
            }
            initialized = count
        }
    }

    struct Header {
        var dtype: NPYDType
        var fortranOrder: Bool
        var shape: [Int]
        var dataOffset: Int
    }

    static func parsePreamble(_ raw: UnsafeRawBufferPointer) throws -> Header {
        guard raw.count >= 6 else {
            if raw.count == 0 || !zip(raw, magic).allSatisfy({ $0 == $1 }) { throw NPYError(file: "", problem: .notNPY) }
            throw NPYError(file: "", problem: .truncatedHeader(at: raw.count))
        }
        guard zip(raw.prefix(6), magic).allSatisfy({ $0 == $1 }) else { throw NPYError(file: "", problem: .notNPY) }
        guard raw.count >= 8 else { throw NPYError(file: "", problem: .truncatedHeader(at: raw.count)) }
        let major = raw[6], minor = raw[7]
        let headerLength: Int, headerStart: Int
        switch (major, minor) {
        case (1, 0):
            guard raw.count >= 10 else { throw NPYError(file: "", problem: .truncatedHeader(at: raw.count)) }
            headerLength = Int(raw[8]) | Int(raw[9]) << 8
            headerStart = 10
        case (2, 0), (3, 0):
            guard raw.count >= 12 else { throw NPYError(file: "", problem: .truncatedHeader(at: raw.count)) }
            headerLength = Int(raw[8]) | Int(raw[9]) << 8 | Int(raw[10]) << 16 | Int(raw[11]) << 24
            headerStart = 12
        default:
            throw NPYError(file: "", problem: .unsupportedVersion(major: major, minor: minor))
        }
        guard raw.count >= headerStart + headerLength else {
            throw NPYError(file: "", problem: .truncatedHeader(at: raw.count))
        }
        let bytes = Array(raw[headerStart..<(headerStart + headerLength)])
        var parser = HeaderParser(bytes: bytes, base: headerStart)
        let dict = try parser.parseDictionary()
        guard let descr = dict["descr"] else { throw NPYError(file: "", problem: .badHeader("no 'descr' key", at: headerStart)) }
        guard case .string(let descrText) = descr else {
            throw NPYError(file: "", problem: .badHeader("'descr' is not a string (structured dtypes are not supported)", at: headerStart))
        }
        guard let dtype = NPYDType(rawValue: descrText) else { throw NPYError(file: "", problem: .unsupportedDType(descrText)) }
        guard case .bool(let fortran)? = dict["fortran_order"] else {
            throw NPYError(file: "", problem: .badHeader("'fortran_order' missing or not True/False", at: headerStart))
        }
        guard case .tuple(let shape)? = dict["shape"] else {
            throw NPYError(file: "", problem: .badHeader("'shape' missing or not a tuple of integers", at: headerStart))
        }
        return Header(dtype: dtype, fortranOrder: fortran, shape: shape, dataOffset: headerStart + headerLength)
    }

    /// Writes an array to an NPY file (format 1.0, or 2.0 when the header needs it), C order.
    /// - Throws: `NPYError` naming the file when it cannot be written.
    public static func write(_ array: NPYArray, path: String) throws {
        do {
            try encode(array).write(to: URL(fileURLWithPath: path))
        } catch {
            throw NPYError(file: path, problem: .io("cannot write: \((error as NSError).localizedDescription)"))
        }
    }

    /// Encodes an array as the bytes of an NPY file.
    public static func encode(_ array: NPYArray) -> Data {
        let shape = array.isOneDimensional ? "(\(array.samplesPerChannel),)" : "(\(array.channels), \(array.samplesPerChannel))"
        var dict = "{'descr': '\(array.samples.dtype.rawValue)', 'fortran_order': False, 'shape': \(shape), }"
        // Pad with spaces and a final newline so that the data starts at a multiple of 64 bytes.
        var version: UInt8 = 1
        var preamble = 10
        if preamble + dict.utf8.count + 1 > 65535 { version = 2; preamble = 12 }
        let total = preamble + dict.utf8.count + 1
        let padded = (total + 63) / 64 * 64
        dict += String(repeating: " ", count: padded - total) + "\n"
        var out = Data(magic)
        out.append(contentsOf: [version, 0])
        let length = dict.utf8.count
        if version == 1 {
            out.append(contentsOf: [UInt8(length & 0xFF), UInt8(length >> 8)])
        } else {
            out.append(contentsOf: (0..<4).map { UInt8((length >> (8 * $0)) & 0xFF) })
        }
        out.append(contentsOf: Array(dict.utf8))
        switch array.samples {
        case .float64(let v): v.withUnsafeBytes { appendLittleEndian($0, size: 8, to: &out) }
        case .float32(let v): v.withUnsafeBytes { appendLittleEndian($0, size: 4, to: &out) }
        case .int16(let v): v.withUnsafeBytes { appendLittleEndian($0, size: 2, to: &out) }
        case .int32(let v): v.withUnsafeBytes { appendLittleEndian($0, size: 4, to: &out) }
        }
        return out
    }

    private static func appendLittleEndian(_ bytes: UnsafeRawBufferPointer, size: Int, to out: inout Data) {
        #if _endian(little)
            out.append(contentsOf: bytes)
        #else
            var swapped = Array(bytes)
            for start in stride(from: 0, to: swapped.count, by: size) { swapped[start..<(start + size)].reverse() }
            out.append(contentsOf: swapped)
        #endif
    }
}

/// A parser for the Python dict literal in an NPY header: string keys, values that are
/// strings, True/False, or tuples of non-negative integers.
struct HeaderParser {
    enum Value: Equatable {
        case string(String)
        case bool(Bool)
        case tuple([Int])
    }

    let bytes: [UInt8]
    /// Offset of `bytes[0]` in the file, so that errors point at file bytes.
    let base: Int
    var index = 0

    init(bytes: [UInt8], base: Int) {
        self.bytes = bytes
        self.base = base
    }

    private func fail(_ reason: String) -> NPYError {
        NPYError(file: "", problem: .badHeader(reason, at: base + index))
    }

    private mutating func skipSpace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x09 || bytes[index] == 0x0D {
            index += 1
        }
    }

    private mutating func expect(_ char: UInt8) throws {
        skipSpace()
        guard index < bytes.count, bytes[index] == char else {
            throw fail("expected '\(Character(UnicodeScalar(char)))'")
        }
        index += 1
    }

    private mutating func peek() -> UInt8? {
        skipSpace()
        return index < bytes.count ? bytes[index] : nil
    }

    mutating func parseDictionary() throws -> [String: Value] {
        try expect(UInt8(ascii: "{"))
        var result: [String: Value] = [:]
        while true {
            if peek() == UInt8(ascii: "}") { index += 1; break }
            guard case .string(let key) = try parseValue() else { throw fail("a key is not a string") }
            try expect(UInt8(ascii: ":"))
            result[key] = try parseValue()
            let next = peek()
            if next == UInt8(ascii: ",") { index += 1; continue }
            if next == UInt8(ascii: "}") { index += 1; break }
            throw fail("expected ',' or '}'")
        }
        return result
    }

    private mutating func parseValue() throws -> Value {
        guard let first = peek() else { throw fail("header ends early") }
        switch first {
        case UInt8(ascii: "'"), UInt8(ascii: "\""):
            index += 1
            let start = index
            while index < bytes.count, bytes[index] != first { index += 1 }
            guard index < bytes.count else { throw fail("unterminated string") }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            index += 1
            return .string(text)
        case UInt8(ascii: "T"), UInt8(ascii: "F"):
            for word in ["True", "False"] {
                let utf8 = Array(word.utf8)
                if index + utf8.count <= bytes.count, Array(bytes[index..<(index + utf8.count)]) == utf8 {
                    index += utf8.count
                    return .bool(word == "True")
                }
            }
            throw fail("expected True or False")
        case UInt8(ascii: "("):
            index += 1
            var items: [Int] = []
            while true {
                guard let c = peek() else { throw fail("unterminated tuple") }
                if c == UInt8(ascii: ")") { index += 1; break }
                var value = 0
                var digits = 0
                while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                    let (m, o1) = value.multipliedReportingOverflow(by: 10)
                    let (s, o2) = m.addingReportingOverflow(Int(bytes[index] - 0x30))
                    guard !o1, !o2 else { throw fail("dimension too large") }
                    value = s
                    index += 1
                    digits += 1
                }
                // numpy may write 'L' suffixes (Python 2 longs).
                if index < bytes.count, bytes[index] == UInt8(ascii: "L") { index += 1 }
                guard digits > 0 else { throw fail("expected a non-negative integer in the shape") }
                items.append(value)
                let next = peek()
                if next == UInt8(ascii: ",") { index += 1; continue }
                if next == UInt8(ascii: ")") { index += 1; break }
                throw fail("expected ',' or ')' in the shape")
            }
            return .tuple(items)
        default:
            throw fail("unexpected character '\(Character(UnicodeScalar(first)))'")
        }
    }
}
