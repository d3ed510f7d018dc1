import Foundation

/// A file read by byte ranges with pread(2): what the streaming importers use so that memory holds
/// the window being read, never the file (mapped pages of a file count toward a process's resident
/// size as they are touched).
public final class FileRange {
    public let path: String
    /// The file's size in bytes when it was opened.
    public let size: Int
    private let fd: Int32

    /// Opens `path` for reading.
    /// - Throws: `FormatError` ("cannot read: …") when it cannot be opened.
    public init(path: String) throws(FormatError) {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FormatError(file: path, location: "", reason: "cannot read: \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw FormatError(file: path, location: "", reason: "cannot read: \(reason)")
        }
        size = Int(info.st_size)
    }

    deinit { close(fd) }

    /// Fills `buffer` from byte `offset`.
    /// - Throws: `FormatError` when the file cannot be read or ends before the buffer is full.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(FormatError) {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw FormatError(
                    file: path, location: "byte offset \(offset + done)", reason: "cannot read: \(String(cString: strerror(errno)))")
            }
            if n == 0 {
                throw FormatError(
                    file: path, location: "byte offset \(offset + done)", reason: "the file ends early (it shrank while it was read)")
            }
            done += n
        }
    }

    /// `count` bytes from byte `offset` (at most what the file holds from there).
    public func bytes(at offset: Int, count: Int) throws(FormatError) -> [UInt8] {
        let n = max(0, min(count, size - offset))
        var out = [UInt8](repeating: 0, count: n)
        if n > 0 {
            try typedFormatError { try out.withUnsafeMutableBytes { try read(into: $0, at: offset) } }
        }
        return out
    }

    /// Reads `count` values of `T` from byte `offset` into an array (their bytes as stored; the caller swaps).
    func values<T>(_: T.Type, at offset: Int, count: Int) throws(FormatError) -> [T] {
        guard count > 0 else { return [] }
        let bytes = count * MemoryLayout<T>.stride
        return try typedFormatError {
            try [T](unsafeUninitializedCapacity: count) { buffer, initialized in
                try read(into: UnsafeMutableRawBufferPointer(start: buffer.baseAddress, count: bytes), at: offset)
                initialized = count
            }
        }
    }
}
