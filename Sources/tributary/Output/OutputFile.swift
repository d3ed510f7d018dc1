import Foundation
import TributaryAnalysis

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
