import Foundation

/// Little-endian byte building for the binary formats (TDMS, XDF).
struct ByteSink {
    var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    mutating func f64(_ v: Double) { u64(v.bitPattern) }
    mutating func raw(_ b: [UInt8]) { bytes.append(contentsOf: b) }
    mutating func raw(_ p: UnsafeRawBufferPointer) { bytes.append(contentsOf: p) }
}

/// Bounds-checked little- or big-endian reads from a file's bytes; every failure names the byte offset.
struct ByteSource {
    let bytes: UnsafeRawBufferPointer
    let file: String
    var offset: Int
    var bigEndian = false

    init(_ bytes: UnsafeRawBufferPointer, file: String, offset: Int = 0) {
        self.bytes = bytes
        self.file = file
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    func fail(_ what: String, at: Int? = nil) -> FormatError {
        FormatError(file: file, location: "byte offset \(at ?? offset)", reason: what)
    }

    mutating func need(_ n: Int, _ what: String) throws(FormatError) {
        guard n >= 0, n <= remaining else {
            throw fail("\(what): needs \(n) bytes, \(max(0, remaining)) left in the file")
        }
    }

    mutating func load<T: FixedWidthInteger>(_: T.Type, _ what: String) throws(FormatError) -> T {
        try need(MemoryLayout<T>.size, what)
        let v = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
        return bigEndian ? T(bigEndian: v) : T(littleEndian: v)
    }

    mutating func u8(_ what: String) throws(FormatError) -> UInt8 { try load(UInt8.self, what) }
    mutating func u16(_ what: String) throws(FormatError) -> UInt16 { try load(UInt16.self, what) }
    mutating func u32(_ what: String) throws(FormatError) -> UInt32 { try load(UInt32.self, what) }
    mutating func u64(_ what: String) throws(FormatError) -> UInt64 { try load(UInt64.self, what) }
    mutating func i64(_ what: String) throws(FormatError) -> Int64 { Int64(bitPattern: try load(UInt64.self, what)) }
    mutating func f64(_ what: String) throws(FormatError) -> Double { Double(bitPattern: try load(UInt64.self, what)) }
    mutating func f32(_ what: String) throws(FormatError) -> Float { Float(bitPattern: try load(UInt32.self, what)) }

    mutating func slice(_ n: Int, _ what: String) throws(FormatError) -> UnsafeRawBufferPointer {
        try need(n, what)
        let s = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)])
        offset += n
        return s
    }

    mutating func utf8(_ n: Int, _ what: String) throws(FormatError) -> String {
        let s = try slice(n, what)
        return String(decoding: s, as: UTF8.self)
    }
}

/// Reads a whole file (memory-mapped when possible).
func readWholeFile(_ path: String) throws(FormatError) -> Data {
    do {
        return try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
    } catch {
        throw FormatError(file: path, location: "", reason: "cannot read: \(error.localizedDescription)")
    }
}

/// A file written in pieces with write(2): large sample arrays go straight from their buffers to the file.
final class FileSink {
    let path: String
    private let fd: Int32

    init(path: String) throws(FormatError) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FormatError(file: path, location: "", reason: "cannot create: \(String(cString: strerror(errno)))") }
    }

    func write(_ p: UnsafeRawBufferPointer) throws(FormatError) {
        var done = 0
        while done < p.count {
            let n = Glibc.write(fd, p.baseAddress! + done, p.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw FormatError(file: path, location: "", reason: "write failed: \(String(cString: strerror(errno)))")
            }
            done += n
        }
    }

    func write(_ bytes: [UInt8]) throws(FormatError) {
        try typedFormatError { try bytes.withUnsafeBytes { p in try write(p) } }
    }

    func write<T>(array: [T]) throws(FormatError) {
        try typedFormatError { try array.withUnsafeBytes { p in try write(p) } }
    }

    /// Writes the elements at `range` of `array` in one call, straight from its storage.
    func write<T>(array: [T], range: Range<Int>) throws(FormatError) {
        try typedFormatError {
            try array.withUnsafeBytes { p in
                let size = MemoryLayout<T>.stride
                try write(UnsafeRawBufferPointer(rebasing: p[(range.lowerBound * size)..<(range.upperBound * size)]))
            }
        }
    }

    func close() throws(FormatError) {
        guard Glibc.close(fd) == 0 else {
            throw FormatError(file: path, location: "", reason: "close failed: \(String(cString: strerror(errno)))")
        }
    }

    /// Closes without reporting (after an earlier error) and removes the file.
    func discard() {
        _ = Glibc.close(fd)
        unlink(path)
    }
}

/// Appends `count` elements of `T` read (unaligned, little-endian host) from `src` to `array`.
@inline(__always)
func appendRaw<T>(_ array: inout [T], from src: UnsafeRawBufferPointer, count: Int, zero: T) {
    let old = array.count
    array.append(contentsOf: repeatElement(zero, count: count))
    array.withUnsafeMutableBytes { dst in
        dst.baseAddress!.advanced(by: old * MemoryLayout<T>.stride).copyMemory(
            from: src.baseAddress!, byteCount: count * MemoryLayout<T>.stride)
    }
}

/// Runs `body`, whose closures lose the typed error, and gives its `FormatError` back typed.
func typedFormatError<R>(_ body: () throws -> R) throws(FormatError) -> R {
    do { return try body() } catch let e as FormatError { throw e } catch {
        throw FormatError(file: "", location: "", reason: "\(error)")
    }
}
