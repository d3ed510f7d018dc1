import CZMQ
import Dispatch
import Foundation
import Synchronization

/// Why a `ZMQLoop` refused a command or failed to start.
public enum ZMQLoopError: Error, Sendable, CustomStringConvertible {
    /// The loop has stopped (shut down, or its context terminated); the command did not run.
    case stopped(loop: String)
    /// `performAndWait` was called from the loop's own thread, which would wait for itself forever.
    case calledFromLoopThread(loop: String)
    /// The wake-up eventfd could not be created (errno).
    case eventFDFailed(loop: String, errno: Int32)

    public var description: String {
        switch self {
        case .stopped(let loop): "ZMQ loop '\(loop)' has stopped; the command did not run"
        case .calledFromLoopThread(let loop): "performAndWait called on ZMQ loop '\(loop)' from its own thread"
        case .eventFDFailed(let loop, let errno): "ZMQ loop '\(loop)': eventfd failed: \(String(cString: strerror(errno)))"
        }
    }
}

/// A dedicated thread that owns a set of libzmq sockets and polls them; the base of the publisher and
/// of each subscriber connection.
///
/// libzmq sockets are not thread-safe, so every socket of a loop is created, used and closed on the
/// loop's thread, which is a real `Thread` (not a Task, which could hop threads, nor a GCD pool thread).
/// The loop's `State` — the owner's socket-side object, e.g. the publisher's fan-out state — is created
/// on that thread by `makeState` and never leaves it. Other threads talk to the loop with `perform`
/// (fire and forget) or `performAndWait` (returns a value), which queue a closure under a `Mutex` and
/// wake the thread.
///
/// **Wake-up: an eventfd polled beside the sockets' `ZMQ_FD`s** (`ZMQLoopScope.poll`), rather than an inproc PAIR pair:
/// waking costs one `write(2)` of 8 bytes (the PAIR pair would allocate a message, go through libzmq's
/// pipe and then signal its own eventfd anyway); commands stay typed Swift closures instead of being
/// serialised into bytes; and the eventfd counter coalesces many commands into one wake-up. A
/// `wakePending` flag under the same lock skips the syscall when a wake-up is already on its way.
///
/// `shutdown()` stops the loop and joins its thread; sockets registered with the scope are closed on
/// the loop thread (monitors first), then the state is released there too. `deinit` shuts down.
public final class ZMQLoop<State>: Sendable {
    /// A name for the thread and for errors.
    public let name: String
    /// The context the loop's sockets are created on.
    public let context: ZMQContext
    private let shared: ZMQLoopShared<State>

    /// Starts the loop thread and creates its state there.
    /// - Parameters:
    ///   - name: Thread name (Linux keeps the first 15 bytes) and error label.
    ///   - context: Context for the loop's sockets.
    ///   - makeState: Runs first on the loop thread; creates sockets, registers them with the scope and
    ///     returns the state later commands receive.
    /// - Throws: `ZMQLoopError.eventFDFailed`, or whatever `makeState` throws (the thread has then exited).
    public init(
        name: String, context: ZMQContext,
        makeState: @escaping @Sendable (ZMQLoopScope) throws -> State
    ) throws {
        self.name = name
        self.context = context
        let eventFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard eventFD >= 0 else { throw ZMQLoopError.eventFDFailed(loop: name, errno: errno) }
        let shared = ZMQLoopShared<State>(name: name, eventFD: eventFD)
        self.shared = shared
        let started = DispatchSemaphore(value: 0)
        let startError = ZMQLoopBox<(any Error)?>(nil)
        let thread = Thread { [context] in
            // Named from inside: Foundation then also sets the kernel name (15 bytes), seen in top -H and gdb;
            // a name set before start() is not applied on Linux (the thread keeps its creator's name).
            nameCurrentThread(name)
            shared.markLoopThread()
            let scope = ZMQLoopScope(context: context, eventFD: eventFD)
            var state: State?
            do {
                state = try makeState(scope)
            } catch {
                startError.value.withLock { $0 = error }
                scope.closeAll()
                shared.finish()
                started.signal()
                return
            }
            started.signal()
            shared.run(state: &state, scope: scope)
        }
        thread.start()
        started.wait()
        if let error = startError.value.withLock({ $0 }) { throw error }
    }

    deinit { shutdown() }

    /// Whether the loop still accepts commands.
    public var isRunning: Bool { shared.isAcceptingCommands }

    /// Queues `command` to run on the loop thread with the loop's state and scope; returns at once.
    /// - Throws: `ZMQLoopError.stopped` when the loop no longer runs.
    public func perform(_ command: @escaping @Sendable (State, ZMQLoopScope) -> Void) throws(ZMQLoopError) {
        try shared.enqueue(ZMQLoopCommand(run: command, cancel: nil))
    }

    /// Queues a command built beforehand (`perform` builds one per call, and converting its closure
    /// to the generic command's form costs a heap object each time).
    func enqueue(_ command: ZMQLoopCommand<State>) throws(ZMQLoopError) {
        try shared.enqueue(command)
    }

    /// Runs `body` on the loop thread and returns its result (or rethrows its error) to the caller.
    /// - Throws: What `body` throws; `ZMQLoopError.stopped` when the loop stopped before running it;
    ///   `ZMQLoopError.calledFromLoopThread` when called from the loop thread itself.
    @discardableResult
    public func performAndWait<T: Sendable>(
        _ body: @escaping @Sendable (State, ZMQLoopScope) throws -> T
    ) throws -> T {
        if shared.isLoopThread { throw ZMQLoopError.calledFromLoopThread(loop: name) }
        let result = ZMQLoopBox<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let name = self.name
        try shared.enqueue(
            ZMQLoopCommand(
                run: { state, scope in
                    let outcome = Result { try body(state, scope) }
                    result.value.withLock { $0 = outcome }
                    done.signal()
                },
                cancel: {
                    result.value.withLock { $0 = .failure(ZMQLoopError.stopped(loop: name)) }
                    done.signal()
                }))
        done.wait()
        return try result.value.withLock { $0! }.get()
    }

    /// Stops the loop and waits for its thread to finish (sockets closed, state released). Idempotent.
    /// Called from the loop thread itself it only requests the stop (a thread cannot join itself).
    public func shutdown() {
        shared.requestStop()
        if !shared.isLoopThread { shared.join() }
    }
}

/// A value handed between threads under a lock (escaping closures cannot capture a `Mutex` itself).
final class ZMQLoopBox<Value>: Sendable {
    let value: Mutex<Value>
    init(_ value: sending Value) { self.value = Mutex(value) }
}

/// A queued command, and what to do instead when the loop stops before running it.
struct ZMQLoopCommand<State>: Sendable {
    var run: @Sendable (State, ZMQLoopScope) -> Void
    var cancel: (@Sendable () -> Void)?
}

/// The part of a loop shared between its handle (any thread) and its thread.
///
/// `@unchecked Sendable`: the mutable state is inside `Mutex`; `eventFD` is a plain descriptor written
/// (wake) from any thread and read only by the loop thread; `loopThread` is written once by the loop
/// thread before it signals `started`, which every reader waits for in `ZMQLoop.init`.
final class ZMQLoopShared<State>: @unchecked Sendable {
    struct Queue: ~Copyable {
        var commands: [ZMQLoopCommand<State>] = []
        var wakePending = false
        var stopRequested = false
        var finished = false
    }

    let name: String
    let eventFD: Int32
    let queue = Mutex(Queue())
    private let exited = DispatchSemaphore(value: 0)
    private let joined = Mutex(false)
    private var loopThread: pthread_t?

    init(name: String, eventFD: Int32) {
        self.name = name
        self.eventFD = eventFD
    }

    deinit { close(eventFD) }

    func markLoopThread() { loopThread = pthread_self() }

    var isLoopThread: Bool {
        guard let loopThread else { return false }
        return pthread_equal(loopThread, pthread_self()) != 0
    }

    var isAcceptingCommands: Bool { queue.withLock { !$0.stopRequested && !$0.finished } }

    func enqueue(_ command: ZMQLoopCommand<State>) throws(ZMQLoopError) {
        let needsWake = try queue.withLock { (queue) throws(ZMQLoopError) -> Bool in
            if queue.stopRequested || queue.finished { throw .stopped(loop: name) }
            queue.commands.append(command)
            defer { queue.wakePending = true }
            return !queue.wakePending
        }
        if needsWake { wake() }
    }

    func requestStop() {
        let needsWake = queue.withLock { queue -> Bool in
            if queue.stopRequested || queue.finished { return false }
            queue.stopRequested = true
            defer { queue.wakePending = true }
            return !queue.wakePending
        }
        if needsWake { wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        // Cannot fail: the counter would need 2^64-2 unread wakes, and a non-blocking eventfd write is
        // not interrupted by signals.
        _ = write(eventFD, &one, MemoryLayout<UInt64>.size)
    }

    /// Waits once for the loop thread to exit.
    func join() {
        let first = joined.withLock { joined -> Bool in
            defer { joined = true }
            return !joined
        }
        if first {
            exited.wait()
        } else {
            // Another caller is joining or has joined: wait for the same exit and pass it on.
            exited.wait()
        }
        exited.signal()
    }

    /// Marks the loop finished, cancels commands that will never run, and releases joiners.
    func finish() {
        let orphans = queue.withLock { queue -> [ZMQLoopCommand<State>] in
            queue.finished = true
            defer { queue.commands.removeAll() }
            return queue.commands
        }
        for command in orphans { command.cancel?() }
        exited.signal()
    }

    /// The loop: poll, run due timers, dispatch ready sockets, run queued commands; until stopped.
    func run(state: inout State?, scope: ZMQLoopScope) {
        var pending: [ZMQLoopCommand<State>] = []
        pending.reserveCapacity(16)
        var stop = false
        while !stop && !scope.stopRequested {
            let ready: Int32
            do throws(ZMQError) {
                ready = try scope.poll()
            } catch {
                // `.terminated`: the context was shut down under us. Anything else is unrecoverable
                // for this loop too; either way stop, closing everything on this thread.
                scope.failure = error
                break
            }
            if ready > 0 { scope.dispatchReady() }
            scope.runPreciseWake()
            scope.runDueTimers()
            if scope.wakeSignalled {
                var counter: UInt64 = 0
                _ = read(eventFD, &counter, MemoryLayout<UInt64>.size)
                queue.withLock { queue in
                    swap(&queue.commands, &pending)
                    queue.wakePending = false
                    stop = queue.stopRequested
                }
                for command in pending { command.run(state!, scope) }
                pending.removeAll(keepingCapacity: true)
            }
        }
        // Close sockets before the state goes: monitors first (ZMQSocket.close does that), all on
        // this thread. Then release the state here, so that its deinit also runs on the owning thread.
        scope.closeAll()
        state = nil
        finish()
    }
}
