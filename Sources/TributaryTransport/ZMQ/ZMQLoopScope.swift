import CTimers
import CZMQ
import Foundation

/// Identifies a repeating timer of a `ZMQLoopScope`.
public struct ZMQTimerID: Hashable, Sendable {
    let rawValue: Int
}

/// What a loop's commands and handlers see of their loop, on the loop thread only: register sockets to
/// poll, add timers, stop the loop.
///
/// Not `Sendable` on purpose: it holds the loop's sockets and non-Sendable handlers, and exists only
/// on the loop thread.
public final class ZMQLoopScope {
    /// The context to create the loop's sockets on.
    public let context: ZMQContext
    /// The error that stopped the loop's poll, if any (`.terminated` after a context shutdown).
    public internal(set) var failure: ZMQError?
    /// Set by `stop()`; the loop exits after the current round.
    private(set) var stopRequested = false

    private final class Registration {
        let socket: ZMQSocket
        var events: ZMQPollEvents
        let handler: (ZMQSocket, ZMQPollEvents) -> Void
        var active = true
        init(socket: ZMQSocket, events: ZMQPollEvents, handler: @escaping (ZMQSocket, ZMQPollEvents) -> Void) {
            self.socket = socket
            self.events = events
            self.handler = handler
        }
    }

    private final class Timer {
        let id: ZMQTimerID
        let interval: UInt64
        var deadline: UInt64
        let handler: () -> Void
        var active = true
        init(id: ZMQTimerID, interval: UInt64, deadline: UInt64, handler: @escaping () -> Void) {
            self.id = id
            self.interval = interval
            self.deadline = deadline
            self.handler = handler
        }
    }

    /// A file descriptor polled for reading (`register(readable:handler:)`); not owned by the scope.
    private final class DescriptorRegistration {
        let fd: Int32
        let handler: () -> Void
        init(fd: Int32, handler: @escaping () -> Void) {
            self.fd = fd
            self.handler = handler
        }
    }

    private let eventFD: Int32
    private var registrations: [Registration] = []
    private var descriptors: [DescriptorRegistration] = []
    /// What is polled (with its readiness in `revents`, as `zmq_poll` reports it): index 0 is the wake-up
    /// eventfd, index i + 1 is `polledSockets[i]`, then
    /// `polledDescriptors`, then the precise wake-up's timerfd (last).
    private var items: [zmq_pollitem_t]
    /// What `poll(2)` waits on, index for index with `items`: a socket's `ZMQ_FD`, or the descriptor.
    private var pollFDs: [pollfd]
    /// The registrations the items were built from (handlers may change `registrations` meanwhile).
    private var polledSockets: [Registration] = []
    private var polledDescriptors: [DescriptorRegistration] = []
    private var itemsStale = false
    private var timers: [Timer] = []
    private var nextTimerID = 0
    /// The precise wake-up: a timerfd polled after the sockets (-1 until first used, or when the
    /// kernel refused one: then the poll's millisecond timeout stands in), its handler and deadline
    /// (0: none).
    private var preciseFD: Int32 = -1
    private var preciseHandler: (() -> Void)?
    private var preciseDeadline: UInt64 = 0

    init(context: ZMQContext, eventFD: Int32) {
        self.context = context
        self.eventFD = eventFD
        items = [zmq_pollitem_t(socket: nil, fd: eventFD, events: Int16(ZMQ_POLLIN), revents: 0)]
        pollFDs = [pollfd(fd: eventFD, events: Int16(POLLIN), revents: 0)]
    }

    deinit { if preciseFD >= 0 { close(preciseFD) } }

    // MARK: Sockets

    /// Polls `socket` for `events` and calls `handler` on the loop thread when any of them is ready.
    /// The scope keeps the socket and closes it when the loop stops. Registering a socket again
    /// replaces its events and handler.
    /// - Parameters:
    ///   - socket: A socket created on this loop's thread.
    ///   - events: `.readable`, `.writable` or both.
    ///   - handler: Called with the socket and the events that are ready.
    public func register(
        _ socket: ZMQSocket, events: ZMQPollEvents = .readable,
        handler: @escaping (ZMQSocket, ZMQPollEvents) -> Void
    ) {
        if let index = registrations.firstIndex(where: { $0.socket === socket }) {
            registrations[index].active = false
            registrations.remove(at: index)
        }
        registrations.append(Registration(socket: socket, events: events, handler: handler))
        itemsStale = true
    }

    /// Changes the events polled for a registered socket (e.g. add `.writable` while a backlog waits).
    public func setEvents(_ events: ZMQPollEvents, for socket: ZMQSocket) {
        guard let registration = registrations.first(where: { $0.socket === socket }) else { return }
        registration.events = events
        itemsStale = true
    }

    /// Stops polling `socket`; closes it unless `close` is false.
    public func unregister(_ socket: ZMQSocket, close: Bool = true) {
        if let index = registrations.firstIndex(where: { $0.socket === socket }) {
            registrations[index].active = false
            registrations.remove(at: index)
            itemsStale = true
        }
        if close { socket.close() }
    }

    /// Number of sockets being polled.
    public var registeredSocketCount: Int { registrations.count }

    /// Polls the file descriptor `fd` for reading and calls `handler` on the loop thread when it is
    /// readable. The handler must consume what made it readable (read the eventfd or timerfd), or
    /// every poll returns at once. The scope never closes `fd`; its owner keeps it open while the loop runs.
    public func register(readable fd: Int32, handler: @escaping () -> Void) {
        descriptors.removeAll { $0.fd == fd }
        descriptors.append(DescriptorRegistration(fd: fd, handler: handler))
        itemsStale = true
    }

    // MARK: Timers

    /// Calls `handler` on the loop thread every `interval` (at least 1 ms apart; a late round does not
    /// cause a burst of catch-up calls).
    /// - Returns: An identifier for `cancelTimer`.
    @discardableResult
    public func addTimer(every interval: Duration, _ handler: @escaping () -> Void) -> ZMQTimerID {
        let nanoseconds = max(UInt64(clamping: Int64(milliseconds(interval))) * 1_000_000, 1_000_000)
        nextTimerID += 1
        let id = ZMQTimerID(rawValue: nextTimerID)
        timers.append(Timer(id: id, interval: nanoseconds, deadline: monotonicNanoseconds() + nanoseconds, handler: handler))
        return id
    }

    /// Stops a timer; unknown identifiers are ignored.
    public func cancelTimer(_ id: ZMQTimerID) {
        if let index = timers.firstIndex(where: { $0.id == id }) {
            timers[index].active = false
            timers.remove(at: index)
        }
    }

    /// Stops the loop after the current round (from a command or handler).
    public func stop() { stopRequested = true }

    // MARK: Precise wake-up

    /// Sets what runs on the loop thread when the time given to `wake(atMonotonicNanoseconds:)` comes.
    public func setPreciseWakeHandler(_ handler: @escaping () -> Void) {
        preciseHandler = handler
        if preciseFD < 0 {
            preciseFD = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
            itemsStale = true
        }
    }

    /// Runs the precise-wake handler once at `deadline` (CLOCK_MONOTONIC nanoseconds; a later call
    /// replaces it): to within the machine's wake-up latency, where timers fire on the poll's
    /// millisecond timeout. The deadline is a timerfd's (no timer slack), in the poll set.
    public func wake(atMonotonicNanoseconds deadline: UInt64) {
        let deadline = max(deadline, 1)
        guard deadline != preciseDeadline else { return }
        preciseDeadline = deadline
        guard preciseFD >= 0 else { return }
        var setting = itimerspec()
        setting.it_value = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        _ = timerfd_settime(preciseFD, Int32(TFD_TIMER_ABSTIME), &setting, nil)
    }

    /// Clears the timerfd when the last poll found it readable, and calls the precise-wake handler
    /// when its deadline has passed. (Cleared whatever the deadline: the clock may pass a deadline a
    /// moment before its timerfd fires, and a readable timerfd left unread would make every later
    /// poll return at once.)
    func runPreciseWake() {
        if preciseFD >= 0, let last = items.last, last.socket == nil, last.fd == preciseFD,
            last.revents & Int16(ZMQ_POLLIN) != 0
        {
            var expirations: UInt64 = 0
            _ = read(preciseFD, &expirations, MemoryLayout<UInt64>.size)
        }
        guard preciseDeadline != 0, monotonicNanoseconds() >= preciseDeadline else { return }
        preciseDeadline = 0
        preciseHandler?()
    }

    // MARK: Loop machinery

    /// Polls until a socket, the wake-up or the next timer is due; returns the number of ready items.
    ///
    /// What `zmq_poll` does, with fewer system calls on the path of every wake-up: a socket's `ZMQ_EVENTS`
    /// (each read costs libzmq a `getpid` and a `poll` of its mailbox: two system calls) is read before
    /// sleeping, for every socket — the loop's own sends and receives may have left events pending that
    /// no descriptor shows — and after waking only for the sockets whose `ZMQ_FD` fired. `zmq_poll`
    /// reads every socket's twice per round and polls once more without waiting, so an eventfd or timer
    /// wake-up paid four `ZMQ_EVENTS` reads, two of them before the loop could act on the wake-up.
    /// Nothing is missed: once `ZMQ_EVENTS` has found a socket idle, libzmq signals its `ZMQ_FD` for
    /// anything new (which is what `zmq_poll`'s own sleep relies on), and only this thread uses the socket.
    func poll() throws(ZMQError) -> Int32 {
        // A socket closed directly by its owner (instead of `unregister`) must leave the poll set now:
        // polling a closed libzmq socket is a use-after-free.
        if registrations.contains(where: { $0.socket.isClosed }) {
            for registration in registrations where registration.socket.isClosed { registration.active = false }
            registrations.removeAll { $0.socket.isClosed }
            itemsStale = true
        }
        if itemsStale { try rebuildItems() }
        var pending = false
        for index in items.indices {
            items[index].revents = 0
            pollFDs[index].revents = 0
        }
        for index in 1..<(polledSockets.count + 1) {
            items[index].revents = try pendingEvents(index)
            if items[index].revents != 0 { pending = true }
        }
        let timeout = pending ? 0 : Int32(clamping: pollTimeoutMilliseconds())
        let count = pollFDs.count
        _ = try retryingOnInterrupt("poll") {
            pollFDs.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t(count), timeout) }
        }
        var ready: Int32 = 0
        for index in items.indices {
            let fired = pollFDs[index].revents
            if items[index].socket != nil {
                if fired != 0 { items[index].revents |= try pendingEvents(index) }
            } else {
                var events: Int16 = 0
                if fired & Int16(POLLIN) != 0 { events |= Int16(ZMQ_POLLIN) }
                if fired & Int16(POLLOUT) != 0 { events |= Int16(ZMQ_POLLOUT) }
                if fired & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { events |= Int16(ZMQ_POLLERR) }
                items[index].revents = events & (items[index].events | Int16(ZMQ_POLLERR))
            }
            if items[index].revents != 0 { ready += 1 }
        }
        return ready
    }

    /// `ZMQ_EVENTS` reads so far (each a `getpid` and a `poll` inside libzmq): tests count them per wake-up.
    private(set) var socketEventReads = 0

    /// The events of `items[index]` (a socket) that are pending now and that it is polled for.
    private func pendingEvents(_ index: Int) throws(ZMQError) -> Int16 {
        socketEventReads &+= 1
        var events: Int32 = 0
        var size = MemoryLayout<Int32>.size
        let socket = items[index].socket
        _ = try retryingOnInterrupt("zmq_getsockopt", detail: "ZMQ_EVENTS") { zmq_getsockopt(socket, ZMQ_EVENTS, &events, &size) }
        return Int16(truncatingIfNeeded: events) & items[index].events
    }

    /// True when the last poll saw the wake-up eventfd readable.
    var wakeSignalled: Bool { items[0].revents & Int16(ZMQ_POLLIN) != 0 }

    /// Calls the handlers of the sockets and descriptors the last poll found ready.
    func dispatchReady() {
        // Iterate over the registrations the poll was built from; handlers may (un)register sockets,
        // which only marks the items stale until the next round.
        for (index, registration) in polledSockets.enumerated() {
            let ready = ZMQPollEvents(rawValue: items[index + 1].revents)
            if !ready.isEmpty && registration.active && !registration.socket.isClosed {
                registration.handler(registration.socket, ready)
            }
        }
        let firstDescriptor = polledSockets.count + 1
        for (index, descriptor) in polledDescriptors.enumerated() where items[firstDescriptor + index].revents & Int16(ZMQ_POLLIN) != 0 {
            descriptor.handler()
        }
    }

    /// Calls the handlers of timers whose deadline has passed.
    func runDueTimers() {
        guard !timers.isEmpty else { return }
        let now = monotonicNanoseconds()
        let current = timers
        for timer in current where timer.active && timer.deadline <= now {
            timer.deadline = max(timer.deadline + timer.interval, now + 1)
            timer.handler()
        }
    }

    /// Closes every registered socket (each closes its monitor first) and drops the timers.
    func closeAll() {
        for registration in registrations {
            registration.active = false
            registration.socket.close()
        }
        registrations.removeAll()
        descriptors.removeAll()
        polledSockets.removeAll()
        polledDescriptors.removeAll()
        timers.removeAll()
        preciseHandler = nil
        preciseDeadline = 0
        itemsStale = true
    }

    private func rebuildItems() throws(ZMQError) {
        items.removeSubrange(1...)
        pollFDs.removeSubrange(1...)
        polledSockets = registrations
        polledDescriptors = descriptors
        for registration in registrations {
            // Checked by `poll` before: only open sockets are registered.
            let handle = registration.socket.handle!
            var fd: Int32 = -1
            var size = MemoryLayout<Int32>.size
            guard zmq_getsockopt(handle, ZMQ_FD, &fd, &size) == 0 else { throw ZMQError.last("zmq_getsockopt", detail: "ZMQ_FD") }
            items.append(zmq_pollitem_t(socket: handle, fd: 0, events: registration.events.rawValue, revents: 0))
            pollFDs.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
        }
        for descriptor in descriptors {
            items.append(zmq_pollitem_t(socket: nil, fd: descriptor.fd, events: Int16(ZMQ_POLLIN), revents: 0))
            pollFDs.append(pollfd(fd: descriptor.fd, events: Int16(POLLIN), revents: 0))
        }
        // Last, where `runPreciseWake` looks for it.
        if preciseFD >= 0 {
            items.append(zmq_pollitem_t(socket: nil, fd: preciseFD, events: Int16(ZMQ_POLLIN), revents: 0))
            pollFDs.append(pollfd(fd: preciseFD, events: Int16(POLLIN), revents: 0))
        }
        itemsStale = false
    }

    private func pollTimeoutMilliseconds() -> Int {
        var earliest = timers.lazy.map(\.deadline).min()
        // The precise deadline bounds the timeout too (rounded up, so the timerfd comes first): the
        // fallback when there is no timerfd.
        if preciseDeadline != 0 { earliest = min(earliest ?? .max, preciseDeadline) }
        guard let deadline = earliest else { return -1 }
        let now = monotonicNanoseconds()
        if deadline <= now { return 0 }
        // Round up: waking a little late is fine, spinning on a 0 ms timeout is not.
        return Int((deadline - now + 999_999) / 1_000_000)
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of due times (`SourceSink.publish(_:dueAtMonotonicNanoseconds:)`).
public func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
