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
    /// Bytes of frames waiting now (each package weighs its frame's header and payload).
    public var queuedBytes: Int
    /// The most bytes of frames ever waiting at once.
    public var maxQueuedBytes: Int
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
/// **Bounded**: a Subject stops reading its socket while the queue holds `capacity` items or
/// `byteCapacity` bytes of frames or more, and resumes when it has drained to half of both, so a slow
/// observer pushes back on libzmq (which stops reading the TCP connection; the publisher then drops
/// and counts frames for this subscriber, or waits in a lossless replay) instead of growing memory.
/// Several Subjects may share one queue; each Subject's deliveries stay in order.
///
/// Why bytes as well as items: frames queued beyond what keeps the observer busy only wait, and
/// they cost. 1 024 frames of 64 KiB are 64 MiB that the receiving thread writes into memory the
/// caches no longer hold (pages faulted in for the first time while the queue first fills); 8 MiB
/// are a few milliseconds of an observer's work at any rate this machine reaches, and stay in the
/// last-level cache. `tributary record` of a 64 KiB replay ran faster with the byte bound, with
/// far fewer page faults (alternated pairs of builds). Small frames are bounded by `capacity` as
/// before.
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

    /// The default `byteCapacity`: 8 MiB, as the lossless credit window's bytes (`SubjectOptions.creditWindowBytes`).
    public static let defaultByteCapacity = 8 << 20

    /// Creates a callback queue.
    /// - Parameters:
    ///   - capacity: items before back-pressure (at least 2).
    ///   - byteCapacity: bytes of frames before back-pressure (at least 1; a frame larger than this
    ///     is still delivered, one at a time).
    ///   - executor: a dedicated thread (default), a dispatch queue or inline delivery.
    public init(
        capacity: Int = 1_024, byteCapacity: Int = CallbackQueue.defaultByteCapacity,
        executor: Executor = .dedicatedThread(name: "tributary-cb")
    ) {
        let core = CallbackQueueCore(capacity: capacity, byteCapacity: byteCapacity, executor: executor)
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

    /// Bytes of frames the queue holds before Subjects stop reading.
    public var byteCapacity: Int { core.byteCapacity }

    /// Depth, deliveries and queue latency so far.
    public var statistics: CallbackQueueStatistics { core.statistics }
}

/// The machinery of a `CallbackQueue`, shared with its consumer thread (which must not keep the public
/// handle alive, so that dropping the handle stops the thread).
///
/// **Bounded** by items and by bytes, as `CallbackQueue` says.
///
/// Executors: a dedicated thread (default; an item costs no allocation and no GCD hop), or a
/// `DispatchQueue` such as `.main` for UI code (one `async` per item).
final class CallbackQueueCore: Sendable {
    struct Item: Sendable {
        let target: any CallbackTarget
        let event: SubjectEvent
        let enqueuedNs: UInt64
        /// What it counts against `byteCapacity`.
        let bytes: Int
    }

    /// A package weighs its frame (header and payload); other events nothing.
    static func weight(of event: SubjectEvent) -> Int {
        if case .package(let package) = event { return package.header.frameLength }
        return 0
    }

    private struct State {
        var items: [Item] = []
        var depth = 0
        var maxDepth = 0
        var bytes = 0
        var maxBytes = 0
        var delivered: UInt64 = 0
        var fullEvents: UInt64 = 0
        var consumerSleeping = false
        var stopped = false
        var resumers: [@Sendable () -> Void] = []
        /// The buffer `completed` ran the last resumers from, handed back so that the next pause
        /// appends into it: a pause (a full queue, routine under load) then allocates nothing.
        var spareResumers: [@Sendable () -> Void] = []
        var latencies = [UInt64](repeating: 0, count: 8_192)
        var latencyCount = 0

        /// Counts an item in.
        mutating func added(_ item: Item) {
            depth += 1
            maxDepth = max(maxDepth, depth)
            bytes += item.bytes
            maxBytes = max(maxBytes, bytes)
        }
    }

    let capacity: Int
    let byteCapacity: Int
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
    ///   - byteCapacity: bytes of frames before back-pressure (at least 1).
    ///   - executor: a dedicated thread (default) or a dispatch queue.
    init(capacity: Int, byteCapacity: Int, executor: CallbackQueue.Executor) {
        self.capacity = max(2, capacity)
        self.byteCapacity = max(1, byteCapacity)
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

    /// Whether a Subject may read another message (the queue is below both capacities).
    var hasRoom: Bool { state.withLock { $0.depth < capacity && $0.bytes < byteCapacity } }

    /// Whether a queue of `depth` items and `bytes` bytes has drained to half of both capacities.
    private func drained(depth: Int, bytes: Int) -> Bool {
        depth <= capacity / 2 && bytes <= byteCapacity / 2
    }

    /// Registers `resume` to run (once, on the consumer) when the queue has drained to half; counts a
    /// full event. If it already has, `resume` runs at once.
    func whenDrained(_ resume: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            state.fullEvents += 1
            if drained(depth: state.depth, bytes: state.bytes) { return true }
            state.resumers.append(resume)
            return false
        }
        if runNow { resume() }
    }

    /// Appends an item (always accepted: callers check `hasRoom` before reading a message, so the queue
    /// exceeds `capacity` by at most one item, and `byteCapacity` by at most one frame, per Subject sharing it).
    func enqueue(_ target: any CallbackTarget, _ event: SubjectEvent) {
        let item = Item(target: target, event: event, enqueuedNs: monotonicNanoseconds(), bytes: Self.weight(of: event))
        if isInline {
            // Counted as queued while it runs: a Subject on another thread sees the depth it adds.
            state.withLock { state in
                state.added(item)
            }
            inlineTurn.withLock { _ in
                record(item)
                item.target.deliver(item.event)
            }
            completed(item)
            return
        }
        if let dispatchQueue {
            state.withLock { state in
                state.added(item)
            }
            dispatchQueue.async { [self] in
                record(item)
                item.target.deliver(item.event)
                completed(item)
            }
            return
        }
        let wakeConsumer = state.withLock { state -> Bool in
            state.items.append(item)
            state.added(item)
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
                completed(item)
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

    private func completed(_ item: Item) {
        var resumers = state.withLock { state -> [@Sendable () -> Void] in
            state.depth -= 1
            state.bytes -= item.bytes
            state.delivered += 1
            guard drained(depth: state.depth, bytes: state.bytes), !state.resumers.isEmpty else { return [] }
            // Taken out whole (the queue keeps the spare buffer to append into), run outside the lock.
            var taken: [@Sendable () -> Void] = []
            swap(&taken, &state.spareResumers)
            swap(&taken, &state.resumers)
            return taken
        }
        guard !resumers.isEmpty else { return }
        for resume in resumers { resume() }
        resumers.removeAll(keepingCapacity: true)
        state.withLock { state in
            if state.spareResumers.capacity < resumers.capacity { swap(&state.spareResumers, &resumers) }
        }
    }

    /// Depth, deliveries and queue latency so far.
    var statistics: CallbackQueueStatistics {
        state.withLock { state in
            let count = min(state.latencyCount, state.latencies.count)
            let sorted = state.latencies[0..<count].sorted()
            func quantile(_ q: Double) -> UInt64 { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))] }
            return CallbackQueueStatistics(
                depth: state.depth, maxDepth: state.maxDepth, queuedBytes: state.bytes,
                maxQueuedBytes: state.maxBytes, delivered: state.delivered,
                fullEvents: state.fullEvents, latencyP50Ns: quantile(0.5),
                latencyP99Ns: quantile(0.99), latencyMaxNs: sorted.last ?? 0)
        }
    }
}
