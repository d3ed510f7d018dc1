import Dispatch
import Foundation
import Synchronization
import TributaryTransport
import TributaryWire

/// How a subscription ended.
enum SubscriptionEnd: Sendable, Equatable {
    /// `--duration` elapsed.
    case durationElapsed
    /// SIGINT or SIGTERM.
    case interrupted
    /// The publisher closed the session normally (it stopped, or its replay ended).
    case publisherClosed(String)
    /// The session ended with an error (lost connection, expired timeout, malformed frame, ...).
    case failed(ErrorReport)
    /// The package handler asked to stop (standard output closed, a write failed).
    case handlerStopped(String)
}

/// Drives an open, started Subject until it should stop: reads its package stream on a task, calls
/// `handle` for every package (in order, one at a time), and returns when `--duration` elapses, a
/// signal arrives, the session ends, or `handle` asks to stop. The Subject is closed on return and
/// every package already received has been handled.
final class SubscriptionRun: Sendable {
    private let outcome = Mutex<SubscriptionEnd?>(nil)
    private let wake = DispatchSemaphore(value: 0)
    private let consumerDone = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - subject: the open and started Subject.
    ///   - stream: its package stream.
    ///   - duration: seconds to run (nil: until something else ends it).
    ///   - tick: called about every 250 ms on the calling thread (progress lines).
    ///   - handle: called for each package; returns nil to go on, or why to stop.
    func run(subject: Subject, stream: PackageStream, duration: Double?, tick: () -> Void = {},
             handle: @escaping @Sendable (ReceivedPackage) -> String?) -> SubscriptionEnd {
        let signals = ProcessSignals([SIGINT, SIGTERM]) { [self] _ in finish(.interrupted) }
        Task.detached { [self] in
            var lastError: ErrorReport?
            for await package in stream {
                if case .error(let report) = package.content { lastError = report }
                if let reason = handle(package) {
                    finish(.handlerStopped(reason))
                    break
                }
            }
            // The stream ends when the session does; the error delivered last says why.
            if let lastError {
                finish(lastError.isNormalCloseByPublisher ? .publisherClosed(lastError.message) : .failed(lastError))
            } else {
                finish(.publisherClosed("the session ended"))
            }
            consumerDone.signal()
        }
        let deadline = duration.map { DispatchTime.now() + $0 }
        while outcome.withLock({ $0 }) == nil {
            _ = wake.wait(timeout: .now() + .milliseconds(250))
            tick()
            if let deadline, DispatchTime.now() >= deadline { finish(.durationElapsed) }
        }
        // Closing ends the stream after the packages it already holds; the consumer handles them.
        subject.close()
        _ = consumerDone.wait(timeout: .now() + .seconds(10))
        withExtendedLifetime(signals) {}
        return outcome.withLock { $0! }
    }

    /// Records the first reason to stop and wakes the waiting thread.
    private func finish(_ end: SubscriptionEnd) {
        let first = outcome.withLock { current -> Bool in
            guard current == nil else { return false }
            current = end
            return true
        }
        if first { wake.signal() }
    }
}
