import Dispatch
import Foundation

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

/// Writes lines to standard output unbuffered, so that a program reading the pipe sees each line
/// at once (the endpoint a `serve` binds, each package `subscribe` receives).
enum StandardOutput {
    /// Writes `line` and a newline.
    /// - Returns: false when standard output is closed (EPIPE): the reader went away.
    @discardableResult
    static func line(_ line: String) -> Bool {
        write(line + "\n", to: 1)
    }

    /// Writes text to standard error as is (progress lines use "\r").
    @discardableResult
    static func error(_ text: String) -> Bool { write(text, to: 2) }

    private static func write(_ text: String, to fd: Int32) -> Bool {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        bytes.removeAll()
        return true
    }
}
