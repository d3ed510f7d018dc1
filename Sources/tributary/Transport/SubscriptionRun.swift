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

/// Drives an open, started Subject until it should stop: calls `handle` for every package on the
/// Subject's callback queue (in order, one at a time), and returns when `--duration` elapses, a signal
/// arrives, the session ends, or `handle` asks to stop. The Subject is closed on return and every
/// package already received has been handled.
///
/// `attach(to:)` registers the run's package handler before the Subject is opened, so that nothing
/// the publisher sends first (the configuration) is missed; packages that arrive before `run` gives
/// the handler wait on the callback queue (which, when full, makes the Subject stop reading its
/// socket). `abandon()` releases them unhandled when the command fails before `run`.
///
/// With `inline` the handler runs on the Subject's socket thread (`CallbackQueue.Executor.inline`):
/// no hand-off to a callback thread a package, for handlers that take little time (`subscribe
/// --summary`). The socket thread must not wait for `run` — `open` and `start` wait for that thread —
/// so the packages that arrive before it (the configuration, the first frames) are kept in order
/// and handled by `run` before any later one.
final class SubscriptionRun: Sendable {
    /// Whether the handler runs on the Subject's socket thread (`callbackQueue()` is inline).
    let inline: Bool
    /// Inline only: what arrived before `run` or `abandon` (nil once released).
    private let early = Mutex<EarlyArrivals?>(EarlyArrivals())
    private struct EarlyArrivals {
        var packages: [ReceivedPackage] = []
        var ended = false
    }

    init(inline: Bool = false) { self.inline = inline }

    /// The callback queue for the run's Subject: inline, or nil for the Subject's default thread.
    func callbackQueue() -> CallbackQueue? { inline ? CallbackQueue(executor: .inline) : nil }

    private let outcome = Mutex<SubscriptionEnd?>(nil)
    private let wake = DispatchSemaphore(value: 0)
    private let consumerDone = DispatchSemaphore(value: 0)
    /// Set once, by `run`. (A class box: a closure stored directly in a `Mutex` came back from it as
    /// a pair of reabstraction thunks calling each other without end, seen in a Swift 6.3.1 release build.)
    private let handler = Mutex<Handler?>(nil)
    private final class Handler: Sendable {
        let handle: @Sendable (ReceivedPackage) -> String?
        init(_ handle: @escaping @Sendable (ReceivedPackage) -> String?) { self.handle = handle }
    }
    /// `run` or `abandon` has been called: the callback queue need not wait for the handler.
    private let released = Atomic<Bool>(false)
    private let release = DispatchSemaphore(value: 0)
    /// Only touched on the callback queue.
    private let lastError = Mutex<ErrorReport?>(nil)
    private let stopped = Atomic<Bool>(false)

    /// Registers the run's handler on `subject`; call before opening it.
    func attach(to subject: Subject) {
        subject.addPackageHandler({ [self] package in receive(package) }, ended: { [self] in sessionEnded() })
    }

    /// The command fails before `run`: packages are released unhandled.
    func abandon() { releaseWaitingPackages() }

    /// - Parameters:
    ///   - subject: the open and started Subject, `attach(to:)`ed before it was opened.
    ///   - duration: seconds to run (nil: until something else ends it).
    ///   - tick: called about every 250 ms on the calling thread (progress lines).
    ///   - watchSignals: SIGINT and SIGTERM end the run (false: the caller watches them and calls `stop`).
    ///   - handle: called for each package on the callback queue; returns nil to go on, or why to stop.
    func run(
        subject: Subject, duration: Double?, tick: () -> Void = {}, watchSignals: Bool = true,
        handle: @escaping @Sendable (ReceivedPackage) -> String?
    ) -> SubscriptionEnd {
        let signals = watchSignals ? ProcessSignals([SIGINT, SIGTERM]) { [self] _ in finish(.interrupted) } : nil
        handler.withLock { $0 = Handler(handle) }
        releaseWaitingPackages()
        let deadline = duration.map { DispatchTime.now() + $0 }
        while outcome.withLock({ $0 }) == nil {
            _ = wake.wait(timeout: .now() + .milliseconds(250))
            tick()
            if let deadline, DispatchTime.now() >= deadline { finish(.durationElapsed) }
        }
        // Closing ends the session after the packages already queued; the handler takes them.
        subject.close()
        _ = consumerDone.wait(timeout: .now() + .seconds(10))
        withExtendedLifetime(signals) {}
        return outcome.withLock { $0! }
    }

    /// Lets the callback queue go on, with the handler if `run` has set it. Inline, the packages kept
    /// so far are handled (or, without a handler, dropped) here first, holding back the socket thread's
    /// next one until they are.
    private func releaseWaitingPackages() {
        if inline {
            early.withLock { early in
                guard let arrivals = early.take() else { return }
                for package in arrivals.packages { handle(package) }
                if arrivals.ended { endSession() }
                released.store(true, ordering: .releasing)
            }
            return
        }
        released.store(true, ordering: .releasing)
        release.signal()
    }

    /// Inline, before `run`: keeps `package` (or the session's end, when nil) for it; false once released.
    private func keptForRun(_ package: ReceivedPackage?) -> Bool {
        guard inline, !released.load(ordering: .acquiring) else { return false }
        return early.withLock { early in
            guard early != nil else { return false }
            if let package { early!.packages.append(package) } else { early!.ended = true }
            return true
        }
    }

    /// Waits, on the callback queue, until `run` or `abandon` has been called.
    private func awaitRelease() {
        guard !released.load(ordering: .acquiring) else { return }
        release.wait()
        release.signal()  // for the next wait, if any
    }

    private func receive(_ package: ReceivedPackage) {
        if keptForRun(package) { return }
        awaitRelease()
        handle(package)
    }

    private func handle(_ package: ReceivedPackage) {
        guard !stopped.load(ordering: .relaxed), let handler = handler.withLock({ $0 }) else { return }
        if case .error(let report) = package.content { lastError.withLock { $0 = report } }
        if let reason = handler.handle(package) {
            stopped.store(true, ordering: .relaxed)
            finish(.handlerStopped(reason))
        }
    }

    /// The session is over (closed here, or lost for good); the error delivered last says why.
    private func sessionEnded() {
        if keptForRun(nil) { return }
        awaitRelease()
        endSession()
    }

    private func endSession() {
        if let last = lastError.withLock({ $0 }) {
            finish(last.isNormalCloseByPublisher ? .publisherClosed(last.message) : .failed(last))
        } else {
            finish(.publisherClosed("the session ended"))
        }
        consumerDone.signal()
    }

    /// Ends the run from outside (`record` of several publishers: its duration, a signal); the first
    /// reason given, by this or by the session, is the run's.
    func stop(_ end: SubscriptionEnd) { finish(end) }

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
