import Foundation

/// An input file read in blocks with read(2), for the commands that stream files (`inspect`,
/// `filter`, `analyze`).
///
/// Foundation's `FileHandle.readData` traps on a read error (a directory gives EISDIR, a failing
/// disk EIO); this reports every failure as a `CommandError` naming the file, and refuses a
/// directory when it is opened.
final class InputFile {
    let path: String
    private let fd: Int32
    private let owned: Bool
    private var buffer: [UInt8]

    /// Opens `path` for reading ("-": standard input).
    /// - Throws: `CommandError` when it cannot be opened or is a directory.
    init(_ path: String, blockSize: Int = 1 << 20) throws(CommandError) {
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
    static func check(_ path: String) throws(CommandError) { _ = try InputFile(path, blockSize: 0) }

    /// Reads the next block (up to the block size; fewer bytes only at the end of the file).
    /// - Parameter body: called with the bytes read unless the end of the file was reached.
    /// - Returns: false at the end of the file.
    /// - Throws: `CommandError` for a read error; what `body` throws.
    func readBlock(_ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
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
    static func head(_ path: String, count: Int) throws(CommandError) -> [UInt8] {
        let file = try InputFile(path, blockSize: count)
        var head: [UInt8] = []
        do { _ = try file.readBlock { head = Array($0) } } catch let error as CommandError { throw error } catch {}
        return head
    }
}

/// An output file written with write(2) ("-": standard output through `StandardOutput`): a full
/// disk or a closed pipe is an error naming the file, never a trap (`FileHandle.write` traps).
final class OutputFile {
    let path: String
    private let fd: Int32

    /// Creates (or truncates) `path`; refuses to when it is one of `inputs` (that would destroy the
    /// data being read).
    /// - Throws: `CommandError` naming the file.
    init(_ path: String, inputs: [String]) throws(CommandError) {
        self.path = path
        guard path != "-" else {
            fd = STDOUT_FILENO
            return
        }
        var out = stat()
        if stat(path, &out) == 0 {
            for input in inputs {
                var other = stat()
                if stat(input, &other) == 0, other.st_dev == out.st_dev, other.st_ino == out.st_ino {
                    throw CommandError("'\(path)' is the input file '\(input)': writing it would destroy the input")
                }
            }
            if out.st_mode & S_IFMT == S_IFDIR { throw CommandError("'\(path)' is a directory, not a file") }
        }
        let opened = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard opened >= 0 else { throw CommandError("cannot create '\(path)': \(String(cString: strerror(errno)))") }
        fd = opened
    }

    deinit { if fd != STDOUT_FILENO { close(fd) } }

    /// Writes all of `bytes`.
    /// - Throws: `StandardOutputFailure` for standard output, `CommandError` naming the file otherwise.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        if fd == STDOUT_FILENO { return try StandardOutput.write(bytes) }
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, base + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw CommandError("cannot write '\(path)': \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }

    /// Writes `data`.
    func write(_ data: Data) throws { try data.withUnsafeBytes { try write($0) } }
}
