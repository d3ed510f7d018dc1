import CTimers
import Dispatch
import Foundation
import Synchronization
import TributaryWire

/// Who a frame handed to the publisher's thread goes to.
enum HandOffTarget: Sendable, Equatable {
    /// Every session that should receive it (started, source selected, filters).
    case all
    /// One session (by session id).
    case session(UInt64)
}

/// A frame waiting for the publisher's thread.
struct HandOffItem: Sendable {
    var frame: Frame
    var target: HandOffTarget
    /// From a lossless source: wait for credit instead of dropping.
    var lossless: Bool
    /// When to send it (CLOCK_MONOTONIC nanoseconds; 0: at once): `SourceSink.publish(_:dueAtMonotonicNanoseconds:)`.
    var due: UInt64 = 0
}

/// What schedules a drain of the queue on the publisher's loop thread.
///
/// An object rather than a closure: a closure handed out of the queue's lock (a generic `withLock`)
/// is wrapped in a reabstraction thunk, one heap object per wake-up, and so was the loop command a
/// closure built for each wake-up. The waker holds one prebuilt command.
protocol HandOffWaker: AnyObject, Sendable {
    func wake()
}

/// The bounded queue between the threads that publish and the publisher's socket thread.
///
/// Publishing appends under a lock and, only when no drain is already scheduled, wakes the loop with
/// one prebuilt command (so a burst of frames costs one wake-up, and steady state allocates nothing:
/// both arrays keep their capacity, and the waker is an object with its command built once). A full
/// queue refuses live frames at once — `publish` never blocks on subscribers — while lossless
/// sources wait for room (and for the loop's lossless backlog to shrink below `losslessWindow`).
///
/// A frame handed over ahead of its time (`HandOffItem.due`) does not wake the loop: the publishing
/// thread arms the queue's own timerfd (`dueTimer`, polled by the loop beside its sockets) for the
/// earliest due time not yet drained, so the loop wakes once, when the frame is due, instead of once
/// to take it and again to send it. The timer is armed under the lock that guards the items, so an
/// arm can never hide an earlier due frame; a drain leaves the timer to fire (a drain of nothing).
/// A frame due within `dueTimerLead` wakes the loop at once, as does any frame once half the queue
/// holds frames due later, so that frames handed over far ahead wait in the loop
/// (`SourceSink.publish(_:dueAtMonotonicNanoseconds:)`), not here.
final class HandOffQueue: Sendable {
    private struct State {
        var items: [HandOffItem] = []
        /// A loop command that drains is queued (the loop is woken).
        var drainScheduled = false
        /// The time `dueTimer` is armed for on behalf of items not yet drained (0: none).
        var dueTimerArmed: UInt64 = 0
        var waiters = 0
        var accepted: UInt64 = 0
        var refused: UInt64 = 0
        /// Lossless frames the loop holds waiting for credit.
        var losslessBacklog = 0
        var waker: (any HandOffWaker)?
    }

    let capacity: Int
    /// Lossless frames allowed in flight (queued here or held by the loop) before a lossless source waits.
    let losslessWindow: Int
    private let state: Mutex<State>
    private let space = DispatchSemaphore(value: 0)
    /// How far ahead of its time a frame must be handed over to go by the timer: one due sooner wakes
    /// the loop at once, which holds it on its own timer. Woken that little ahead, the loop is often
    /// still at work when the frame falls due and sends it without sleeping again, where a sleep until
    /// the timer would add a wake-up's latency (measured with frames 20 µs apart, handed over 10 µs
    /// ahead: a higher p50); from about a wake-up's latency ahead on, the timer saves the loop one
    /// wake-up a frame (frames 100 µs apart, 50 µs ahead: less of the publisher's CPU a frame).
    static let dueTimerLead: UInt64 = 30_000

    /// A timerfd (CLOCK_MONOTONIC, non-blocking) that the loop polls and that publishing threads arm
    /// for frames due later; -1 when the kernel gave none (then such frames wake the loop at once).
    let dueTimer: Int32

    init(capacity: Int, losslessWindow: Int = 64) {
        self.capacity = max(1, capacity)
        self.losslessWindow = max(1, losslessWindow)
        var initial = State()
        initial.items.reserveCapacity(self.capacity)
        state = Mutex(initial)
        dueTimer = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
    }

    deinit { if dueTimer >= 0 { close(dueTimer) } }

    /// Sets what schedules a drain on the loop thread (once, before the first push).
    func setWaker(_ waker: any HandOffWaker) { state.withLock { $0.waker = waker } }

    /// Appends an item unless the queue is full; never blocks.
    func push(_ item: HandOffItem) -> Bool {
        let (accepted, waker) = state.withLock { state -> (Bool, (any HandOffWaker)?) in
            let full =
                state.items.count >= capacity
                || (item.lossless && state.items.count + state.losslessBacklog >= losslessWindow)
            if full || state.waker == nil {
                state.refused += 1
                return (false, nil)
            }
            state.items.append(item)
            state.accepted += 1
            if state.drainScheduled { return (true, nil) }
            if item.due > 0 && dueTimer >= 0 && state.items.count <= capacity / 2
                && item.due >= monotonicNanoseconds() &+ Self.dueTimerLead
            {
                // The loop takes it when the earliest undrained due time comes; later ones wait for that
                // drain. (Past half the capacity the loop is woken to take them now, as frames due at
                // once are: it holds what is early, so that early frames never fill the queue.)
                if state.dueTimerArmed == 0 || item.due < state.dueTimerArmed {
                    state.dueTimerArmed = item.due
                    armDueTimer(at: item.due)
                }
                return (true, nil)
            }
            state.drainScheduled = true
            return (true, state.waker)
        }
        waker?.wake()
        return accepted
    }

    /// Sets `dueTimer` to fire at `deadline` (CLOCK_MONOTONIC nanoseconds, absolute); under the lock.
    private func armDueTimer(at deadline: UInt64) {
        var setting = itimerspec()
        setting.it_value = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        _ = timerfd_settime(dueTimer, Int32(TFD_TIMER_ABSTIME), &setting, nil)
    }

    /// The loop's handler for a readable `dueTimer`: clears it and drains.
    func drainOnDueTimer(into items: inout [HandOffItem]) {
        var expirations: UInt64 = 0
        _ = read(dueTimer, &expirations, MemoryLayout<UInt64>.size)
        drain(into: &items)
    }

    /// Appends an item, waiting for room while `keepWaiting()` holds.
    func pushWaiting(_ item: HandOffItem, while keepWaiting: () -> Bool) -> Bool {
        while true {
            if push(item) {
                // `push` counted a refusal for every earlier attempt; those were waits, not refusals.
                return true
            }
            guard keepWaiting() else { return false }
            state.withLock {
                $0.waiters += 1; $0.refused -= 1
            }
            _ = space.wait(timeout: .now() + .milliseconds(20))
            state.withLock { $0.waiters -= 1 }
        }
    }

    /// Takes every queued item (the loop's drain); `into` must be empty and keeps its capacity.
    func drain(into items: inout [HandOffItem]) {
        let waiters = state.withLock { state -> Int in
            swap(&state.items, &items)
            state.drainScheduled = false
            state.dueTimerArmed = 0
            return state.waiters
        }
        for _ in 0..<waiters { space.signal() }
    }

    /// Records the loop's lossless backlog and releases waiting lossless sources when it shrank.
    func setLosslessBacklog(_ count: Int) {
        let waiters = state.withLock { state -> Int in
            let shrank = count < state.losslessBacklog
            state.losslessBacklog = count
            return shrank ? state.waiters : 0
        }
        for _ in 0..<waiters { space.signal() }
    }

    /// Wakes sources waiting for room (when cancelling them).
    func wakeWaiters() {
        let waiters = state.withLock { $0.waiters }
        for _ in 0..<waiters { space.signal() }
    }

    /// Lossless frames not yet sent: queued here or held by the loop waiting for credit.
    var losslessPending: Int {
        state.withLock { state in
            var queued = 0
            for item in state.items where item.lossless { queued += 1 }
            return queued + state.losslessBacklog
        }
    }

    /// Frames accepted and refused so far.
    var counts: (accepted: UInt64, refused: UInt64) { state.withLock { ($0.accepted, $0.refused) } }
}
