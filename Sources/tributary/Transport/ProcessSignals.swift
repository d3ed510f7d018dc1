// swift-format-ignore-file: OrderedImports
// Glibc comes before Foundation on purpose: Foundation re-exports Glibc, and the first import decides
// whether Glibc is @preconcurrency here; sorted, the uses of `stdout` below do not compile.
import Dispatch
@preconcurrency import Glibc
import Foundation
import Synchronization

/// Turns POSIX signals (SIGINT, SIGTERM, SIGUSR1) into calls on a private queue, so that long-running
/// commands can stop cleanly (close a capture, stop a publisher) instead of dying mid-write.
///
/// `@unchecked Sendable`: `sources` is written once in `init` and only read afterwards (kept to hold
/// the dispatch sources alive); the handler is `@Sendable`.
final class ProcessSignals: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []
    private let queue = DispatchQueue(label: "tributary-signals")

    /// Starts watching `signals`; their default action (terminating the process) is disabled.
    init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            sources.append(source)
        }
    }

    deinit { for source in sources { source.cancel() } }

    /// Makes writes to a closed pipe fail with EPIPE instead of killing the process (`subscribe | head`).
    static func ignoreBrokenPipes() { signal(SIGPIPE, SIG_IGN) }
}

/// Writes lines to standard output and standard error unbuffered, so that a program reading the
/// pipe sees each line at once (the endpoint a `serve` binds, each package `subscribe` receives).
///
/// Never traps: a write that fails (the reader of a pipe went away, a full disk, `2>/dev/full`) is
/// remembered, and `main` ends the process quietly with a non-zero status (`exitStatus`). SIGPIPE is
/// ignored for the whole process (`main`), so a closed pipe is an EPIPE error here, not a signal.
enum StandardOutput {
    /// The errno of the first failed write to standard output (0: none).
    private static let outputFailure = Atomic<Int32>(0)
    /// The errno of the first failed write to standard error (0: none).
    private static let errorFailure = Atomic<Int32>(0)

    /// Writes `line` and a newline.
    /// - Returns: false when standard output is closed (EPIPE) or cannot be written (ENOSPC, EIO).
    @discardableResult
    static func line(_ line: String) -> Bool {
        write(line + "\n", to: 1)
    }

    /// Writes `line` and a newline, or throws when standard output cannot be written, so that a long
    /// listing (`inspect`, `analyze`) stops at once when its reader has gone away.
    static func print(_ line: String) throws(StandardOutputFailure) {
        guard write(line + "\n", to: 1) else { throw StandardOutputFailure() }
    }

    /// Writes bytes as they are to standard output.
    /// - Throws: `StandardOutputFailure` when standard output cannot be written.
    static func write(_ bytes: UnsafeRawBufferPointer) throws(StandardOutputFailure) {
        guard write(bytes, to: 1) else { throw StandardOutputFailure() }
    }

    /// Writes text to standard error as is (progress lines use "\r"); a failure is remembered, not fatal.
    @discardableResult
    static func error(_ text: String) -> Bool { write(text, to: 2) }

    /// Why standard output (or standard error) could not be written, or nil when every write worked;
    /// also checks what `print` buffered in stdio (flushed here).
    static func failure() -> (stream: String, errno: Int32)? {
        if fflush(stdout) != 0 || ferror(stdout) != 0 { remember(errno == 0 ? EIO : errno, fd: 1) }
        let out = outputFailure.load(ordering: .relaxed)
        if out != 0 { return ("standard output", out) }
        let err = errorFailure.load(ordering: .relaxed)
        return err != 0 ? ("standard error", err) : nil
    }

    /// The process's exit status once the command returned `status`: non-zero when output was lost.
    /// A closed pipe (the reader went away: `| head`) ends quietly; any other failure is said on
    /// standard error when that still works.
    static func exitStatus(_ status: Int32, command: String) -> Int32 {
        guard let (stream, number) = failure() else { return status }
        if number != EPIPE && stream == "standard output" {
            _ = write("tributary \(command): cannot write \(stream): \(String(cString: strerror(number)))\n", to: 2)
        }
        return status == 0 ? 1 : status
    }

    private static func remember(_ number: Int32, fd: Int32) {
        if fd == 1 {
            _ = outputFailure.compareExchange(expected: 0, desired: number, ordering: .relaxed)
        } else {
            _ = errorFailure.compareExchange(expected: 0, desired: number, ordering: .relaxed)
        }
    }

    private static func write(_ text: String, to fd: Int32) -> Bool {
        var text = text
        return text.withUTF8 { write(UnsafeRawBufferPointer($0), to: fd) }
    }

    private static func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, base + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                remember(errno, fd: fd)
                return false
            }
            offset += n
        }
        return true
    }
}

/// Standard output cannot be written (its reader went away, or the disk is full): the command stops;
/// `main` turns this into a quiet non-zero exit (`StandardOutput.exitStatus`).
struct StandardOutputFailure: Error, CustomStringConvertible {
    var description: String { "standard output cannot be written" }
}
