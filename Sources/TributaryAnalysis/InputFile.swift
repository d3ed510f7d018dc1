import Foundation

/// An input file read in blocks with read(2), for the commands that stream files (`inspect`,
/// `filter`, `analyze`).
///
/// Foundation's `FileHandle.readData` traps on a read error (a directory gives EISDIR, a failing
/// disk EIO); this reports every failure as a `CommandError` naming the file, and refuses a
/// directory when it is opened.
package final class InputFile {
    package let path: String
    private let fd: Int32
    private let owned: Bool
    private var buffer: [UInt8]

    /// Opens `path` for reading ("-": standard input).
    /// - Throws: `CommandError` when it cannot be opened or is a directory.
    package init(_ path: String, blockSize: Int = 1 << 20) throws(CommandError) {
        self.path = path
        buffer = [UInt8](repeating: 0, count: blockSize)
        if path == "-" {
            fd = STDIN_FILENO
            owned = false
        } else {
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else { throw CommandError("cannot open '\(path)': \(String(cString: strerror(errno)))") }
            var status = stat()
            if fstat(opened, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
                close(opened)
                throw CommandError("'\(path)' is a directory, not a file")
            }
            fd = opened
            owned = true
        }
    }

    deinit { if owned { close(fd) } }

    /// Opens and checks `path` only (a directory or an unreadable file is an error).
    package static func check(_ path: String) throws(CommandError) { _ = try InputFile(path, blockSize: 0) }

    /// Reads the next block (up to the block size; fewer bytes only at the end of the file).
    /// - Parameter body: called with the bytes read unless the end of the file was reached.
    /// - Returns: false at the end of the file.
    /// - Throws: `CommandError` for a read error; what `body` throws.
    package func readBlock(_ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        let capacity = buffer.count
        let count = try buffer.withUnsafeMutableBytes { raw throws(CommandError) -> Int in
            var filled = 0
            while filled < capacity {
                let n = read(fd, raw.baseAddress! + filled, capacity - filled)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CommandError("cannot read '\(path)': \(String(cString: strerror(errno)))")
                }
                if n == 0 { break }
                filled += n
            }
            return filled
        }
        guard count > 0 else { return false }
        try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        return true
    }

    /// The first `count` bytes of the file (fewer when it is shorter); for magic numbers.
    package static func head(_ path: String, count: Int) throws(CommandError) -> [UInt8] {
        let file = try InputFile(path, blockSize: count)
        var head: [UInt8] = []
        do { _ = try file.readBlock { head = Array($0) } } catch let error as CommandError { throw error } catch {}
        return head
    }
}
