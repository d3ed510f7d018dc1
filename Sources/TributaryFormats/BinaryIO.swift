import Foundation
import TributaryBytes

/// Reads a file's fields (TributaryBytes' reader, reporting `FormatError`s that name the file and the byte offset).
typealias FileReader = ByteReader<FormatError>

extension FormatError: ByteFailure {
    /// A format's words for a reader's error: where ("byte offset N") and what ("<field>: needs N bytes,
    /// M left in the file").
    public init(_ error: ByteError, source: String) {
        let reason =
            switch error.reason {
            case .truncated(let needed): "needs \(needed) bytes, \(error.remaining) left in the file"
            case .countTooLarge(let count, let limit): "\(count) exceeds the limit \(limit)"
            case .countExceedsBytes(let count, let elementSize):
                "\(count) elements of \(elementSize) bytes do not fit in the \(error.remaining) bytes left in the file"
            case .invalidUTF8(let length): "\(length) bytes are not valid UTF-8"
            }
        self.init(file: source, location: "byte offset \(error.offset)", reason: "\(error.field): \(reason)")
    }
}

extension ByteReader where Failure == FormatError {
    /// An error at `at` (default: the current position) of the file, saying `what`.
    func fail(_ what: String, at: Int? = nil) -> FormatError {
        FormatError(file: source, location: "byte offset \(origin + (at ?? position))", reason: what)
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
