import Foundation

/// A file mapped read-only whose pages are given back as a walk passes them: the index and data
/// passes of the streaming importers (TDMS, XDF) read it front to back, and `release(before:)`
/// drops the pages behind the walk from the process (madvise MADV_DONTNEED; they stay in the page
/// cache), so the resident size stays bounded whatever the file's size.
public final class MappedFile {
    public let path: String
    public let bytes: UnsafeRawBufferPointer
    private let base: UnsafeMutableRawPointer?
    private var released = 0
    private static let page = Int(sysconf(Int32(_SC_PAGESIZE)))
    /// Pages are given back in steps of this many bytes.
    static let step = 8 << 20

    /// Maps `path`.
    /// - Throws: `FormatError` ("cannot read: …") when it cannot be opened or mapped.
    public init(path: String) throws(FormatError) {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FormatError(file: path, location: "", reason: "cannot read: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw FormatError(file: path, location: "", reason: "cannot read: \(String(cString: strerror(errno)))")
        }
        let size = Int(info.st_size)
        if size == 0 {
            base = nil
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        guard let p = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), p != MAP_FAILED else {
            throw FormatError(file: path, location: "", reason: "cannot read: \(String(cString: strerror(errno)))")
        }
        base = p
        bytes = UnsafeRawBufferPointer(start: p, count: size)
    }

    deinit { if let base { munmap(base, bytes.count) } }

    /// Gives back the pages wholly before byte `offset` (in steps of `step` bytes).
    public func release(before offset: Int) {
        guard let base else { return }
        let end = min(offset, bytes.count) / Self.page * Self.page
        guard end - released >= Self.step else { return }
        _ = madvise(base + released, end - released, MADV_DONTNEED)
        released = end
    }

    /// Starts again from the beginning (a new pass): pages are given back from there.
    public func rewind() { released = 0 }
}
