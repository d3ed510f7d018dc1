import Dispatch
import Foundation
import Synchronization
import TributaryWire

/// Something the callback queue delivers to: a Subject's observers and package streams.
protocol CallbackTarget: AnyObject, Sendable {
    func deliver(_ event: SubjectEvent)
}

/// What a Subject delivers, in publisher order.
enum SubjectEvent: Sendable {
    case package(ReceivedPackage)
    case reconnected(Welcome)
    /// The Subject is closed or lost its session for good: end its package streams (after what was queued).
    case ended
}

/// Measured state of a callback queue.
public struct CallbackQueueStatistics: Sendable, Equatable {
    /// Items waiting now.
    public var depth: Int
    /// The most items ever waiting at once.
    public var maxDepth: Int
    /// Items delivered so far.
    public var delivered: UInt64
    /// Times a Subject stopped reading its socket because the queue was full.
    public var fullEvents: UInt64
    /// Queue latency (enqueue on the socket thread → start of the callback) over the last 8 192 items,
    /// in nanoseconds: median, 99th percentile and maximum; 0 when nothing was delivered.
    public var latencyP50Ns: UInt64
    public var latencyP99Ns: UInt64
    public var latencyMaxNs: UInt64
}

/// The serial queue on which Subjects call their observers, in publisher order, never on a socket thread.
///
/// **Bounded**: a Subject stops reading its socket while the queue holds `capacity` items or more and
/// resumes when it has drained to half, so a slow observer pushes back on libzmq (which stops reading
/// the TCP connection; the publisher then drops and counts frames for this subscriber) instead of
/// growing memory. Several Subjects may share one queue; each Subject's deliveries stay in order.
///
/// Executors: a dedicated thread (default; an item costs no allocation and no GCD hop), a
/// `DispatchQueue` such as `.main` for UI code (one `async` per item), or inline delivery.
public final class CallbackQueue: Sendable {
    /// Where callbacks run.
    public enum Executor: Sendable {
        /// A dedicated thread with this name (Linux keeps 15 bytes).
        case dedicatedThread(name: String)
        /// A serial dispatch queue (e.g. `.main`).
        case dispatch(DispatchQueue)
        /// On the receiving Subject's socket thread, as each message is read: no hand-off to another
        /// thread (the lowest callback latency and CPU per frame). Callbacks of the Subjects sharing
        /// the queue still run one at a time and each Subject's in order. An observer that takes long
        /// holds up that Subject's reading (the publisher then drops and announces, or waits in
        /// lossless mode), and it must not call the Subject's blocking methods (open, close, start,
        /// stop …) from the callback: they wait for the socket thread it is running on.
        case inline
    }

    let core: CallbackQueueCore

    /// Creates a callback queue.
    /// - Parameters:
    ///   - capacity: items before back-pressure (at least 2).
    ///   - executor: a dedicated thread (default), a dispatch queue or inline delivery.
    public init(capacity: Int = 1_024, executor: Executor = .dedicatedThread(name: "tributary-cb")) {
        let core = CallbackQueueCore(capacity: capacity, executor: executor)
        self.core = core
        if case .dedicatedThread(let name) = executor {
            let thread = Thread {
                // Named from inside: on Linux a name set before start() is not applied to the kernel thread.
                nameCurrentThread(name)
                core.consume()
            }
            thread.start()
        }
    }

    deinit { core.stop() }

    /// Items the queue holds before Subjects stop reading.
    public var capacity: Int { core.capacity }

    /// Depth, deliveries and queue latency so far.
    public var statistics: CallbackQueueStatistics { core.statistics }
}

/// The machinery of a `CallbackQueue`, shared with its consumer thread (which must not keep the public
/// handle alive, so that dropping the handle stops the thread).
///
/// **Bounded**: a Subject stops reading its socket while the queue holds `capacity` items or more and
/// resumes when it has drained to half, so a slow observer pushes back on libzmq (which stops reading
/// the TCP connection; the publisher then drops and counts frames for this subscriber) instead of
/// growing memory. Several Subjects may share one queue; each Subject's deliveries stay in order.
///
/// Executors: a dedicated thread (default; an item costs no allocation and no GCD hop), or a
/// `DispatchQueue` such as `.main` for UI code (one `async` per item).
final class CallbackQueueCore: Sendable {
    struct Item: Sendable {
        let target: any CallbackTarget
        let event: SubjectEvent
        let enqueuedNs: UInt64
    }

    private struct State {
        var items: [Item] = []
        var depth = 0
        var maxDepth = 0
        var delivered: UInt64 = 0
        var fullEvents: UInt64 = 0
        var consumerSleeping = false
        var stopped = false
        var resumers: [@Sendable () -> Void] = []
        var latencies = [UInt64](repeating: 0, count: 8_192)
        var latencyCount = 0
    }

    let capacity: Int
    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)
    private let dispatchQueue: DispatchQueue?
    /// The inline executor: callbacks run on the enqueuing thread, holding `inlineTurn` so that
    /// Subjects sharing the queue take turns.
    private let isInline: Bool
    private let inlineTurn = Mutex(())

    /// Creates a callback queue.
    /// - Parameters:
    ///   - capacity: items before back-pressure (at least 2).
    ///   - executor: a dedicated thread (default) or a dispatch queue.
    init(capacity: Int, executor: CallbackQueue.Executor) {
        self.capacity = max(2, capacity)
        var initial = State()
        initial.items.reserveCapacity(self.capacity)
        state = Mutex(initial)
        switch executor {
        case .dispatch(let queue):
            dispatchQueue = queue
            isInline = false
        case .dedicatedThread:
            dispatchQueue = nil
            isInline = false
        case .inline:
            dispatchQueue = nil
            isInline = true
        }
    }

    /// Stops the consumer thread once it has delivered what is queued.
    func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
    }

    /// Whether a Subject may read another message (the queue is below capacity).
    var hasRoom: Bool { state.withLock { $0.depth < capacity } }

    /// Registers `resume` to run (once, on the consumer) when the queue has drained to half; counts a
    /// full event. If it already has, `resume` runs at once.
    func whenDrained(_ resume: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            state.fullEvents += 1
            if state.depth <= capacity / 2 { return true }
            state.resumers.append(resume)
            return false
        }
        if runNow { resume() }
    }

    /// Appends an item (always accepted: callers check `hasRoom` before reading a message, so the queue
    /// exceeds `capacity` by at most one item per Subject sharing it).
    func enqueue(_ target: any CallbackTarget, _ event: SubjectEvent) {
        let item = Item(target: target, event: event, enqueuedNs: monotonicNanoseconds())
        if isInline {
            // Counted as queued while it runs: a Subject on another thread sees the depth it adds.
            state.withLock { state in
                state.depth += 1
                state.maxDepth = max(state.maxDepth, state.depth)
            }
            inlineTurn.withLock { _ in
                record(item)
                item.target.deliver(item.event)
            }
            completed()
            return
        }
        if let dispatchQueue {
            state.withLock { state in
                state.depth += 1
                state.maxDepth = max(state.maxDepth, state.depth)
            }
            dispatchQueue.async { [self] in
                record(item)
                item.target.deliver(item.event)
                completed()
            }
            return
        }
        let wakeConsumer = state.withLock { state -> Bool in
            state.items.append(item)
            state.depth += 1
            state.maxDepth = max(state.maxDepth, state.depth)
            if state.consumerSleeping {
                state.consumerSleeping = false
                return true
            }
            return false
        }
        if wakeConsumer { wake.signal() }
    }

    /// The consumer thread's loop: take everything queued, deliver in order, sleep when empty.
    func consume() {
        var batch: [Item] = []
        batch.reserveCapacity(capacity)
        while true {
            let stop = state.withLock { state -> Bool in
                if state.items.isEmpty {
                    state.consumerSleeping = !state.stopped
                } else {
                    swap(&state.items, &batch)
                }
                return state.stopped && batch.isEmpty
            }
            if stop { return }
            if batch.isEmpty {
                wake.wait()
                continue
            }
            for item in batch {
                record(item)
                item.target.deliver(item.event)
                completed()
            }
            batch.removeAll(keepingCapacity: true)
        }
    }

    private func record(_ item: Item) {
        let latency = monotonicNanoseconds() &- item.enqueuedNs
        state.withLock { state in
            state.latencies[state.latencyCount % state.latencies.count] = latency
            state.latencyCount += 1
        }
    }

    private func completed() {
        let resumers = state.withLock { state -> [@Sendable () -> Void] in
            state.depth -= 1
            state.delivered += 1
            guard state.depth <= capacity / 2, !state.resumers.isEmpty else { return [] }
            defer { state.resumers.removeAll() }
            return state.resumers
        }
        for resume in resumers { resume() }
    }

    /// Depth, deliveries and queue latency so far.
    var statistics: CallbackQueueStatistics {
        state.withLock { state in
            let count = min(state.latencyCount, state.latencies.count)
            let sorted = state.latencies[0..<count].sorted()
            func quantile(_ q: Double) -> UInt64 { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))] }
            return CallbackQueueStatistics(depth: state.depth, maxDepth: state.maxDepth, delivered: state.delivered,
                                           fullEvents: state.fullEvents, latencyP50Ns: quantile(0.5),
                                           latencyP99Ns: quantile(0.99), latencyMaxNs: sorted.last ?? 0)
        }
    }
}

