import Foundation
import Synchronization

/// `serve --control -|FIFO`: JSON lines from a script, read on a thread of their own.
///
/// Standard input is read until its end. A FIFO (named pipe) is opened again after each writer
/// closes it, so that one script after another can write to it; reading stops when the command does.
/// Each complete line is handed to `handle` with its line number; blank lines are skipped.
final class ControlInput: Sendable {
    private let path: String
    private let handle: @Sendable (_ line: String, _ number: Int) -> Void
    private let stopped = Atomic<Bool>(false)

    /// - Throws: `UsageError` when `path` is neither "-" nor an existing FIFO or file.
    init(path: String, handle: @escaping @Sendable (_ line: String, _ number: Int) -> Void) throws {
        if path != "-" {
            var info = stat()
            guard stat(path, &info) == 0 else {
                throw UsageError(
                    "option --control: \(path): \(String(cString: strerror(errno))) (give - for standard input, or a FIFO made with mkfifo)"
                )
            }
            guard Self.isFIFO(info) || info.st_mode & 0o170000 == 0o100000 else {
                throw UsageError("option --control: \(path) is neither a FIFO nor a regular file")
            }
        }
        self.path = path
        self.handle = handle
    }

    private static func isFIFO(_ info: stat) -> Bool { info.st_mode & 0o170000 == 0o010000 }

    /// Starts the reading thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "tributary-control"
        thread.start()
    }

    /// Stops handing lines on (the thread may stay blocked in a read until the process ends).
    func stop() { stopped.store(true, ordering: .relaxed) }

    private var shouldStop: Bool { stopped.load(ordering: .relaxed) }

    private func run() {
        var number = 0
        var isFIFO = false
        if path != "-" {
            var info = stat()
            isFIFO = stat(path, &info) == 0 && Self.isFIFO(info)
        }
        repeat {
            let fd = path == "-" ? 0 : open(path, O_RDONLY)
            guard fd >= 0 else {
                printError("tributary serve: --control \(path): \(String(cString: strerror(errno)))")
                return
            }
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while !shouldStop {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                pending += buffer[0..<n]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    number += 1
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    if !line.allSatisfy(\.isWhitespace) && !shouldStop { handle(line, number) }
                }
            }
            if !pending.isEmpty && !shouldStop {
                number += 1
                let line = String(decoding: pending, as: UTF8.self)
                if !line.allSatisfy(\.isWhitespace) { handle(line, number) }
            }
            if fd != 0 { close(fd) }
        } while isFIFO && !shouldStop
    }
}
