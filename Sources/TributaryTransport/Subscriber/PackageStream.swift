import Dispatch
import Synchronization
import TributaryWire

/// The packages a Subject receives as an `AsyncSequence` (errors included, as `.error` content), for
/// Swift-concurrency code; an alternative to registering an `Observer`.
///
/// Bounded: when `capacity` packages wait unread, the callback queue waits for the reader, which in
/// turn makes the Subject stop reading its socket (so a slow reader slows nothing but itself, and the
/// publisher counts its losses). The sequence ends when the Subject is closed or loses its session
/// without reconnecting. One reader at a time.
public final class PackageStream: AsyncSequence, Sendable {
    public typealias Element = ReceivedPackage

    private struct State {
        var buffer: [ReceivedPackage] = []
        var head = 0
        var waiting: CheckedContinuation<ReceivedPackage?, Never>?
        var finished = false
    }

    private let state = Mutex(State())
    private let space = DispatchSemaphore(value: 0)
    /// Packages held before the producer waits.
    public let capacity: Int

    init(capacity: Int) { self.capacity = Swift.max(1, capacity) }

    /// Called on the callback queue.
    func push(_ package: ReceivedPackage) {
        while true {
            enum Step {
                case resumed(CheckedContinuation<ReceivedPackage?, Never>)
                case stored, full, dropped
            }
            let step = state.withLock { state -> Step in
                if state.finished { return .dropped }
                if let waiting = state.waiting {
                    state.waiting = nil
                    return .resumed(waiting)
                }
                if state.buffer.count - state.head >= capacity { return .full }
                state.buffer.append(package)
                return .stored
            }
            switch step {
            case .resumed(let continuation):
                continuation.resume(returning: package)
                return
            case .stored, .dropped:
                return
            case .full:
                _ = space.wait(timeout: .now() + .milliseconds(50))
            }
        }
    }

    /// Ends the sequence after the packages already buffered.
    func finish() {
        let waiting = state.withLock { state -> CheckedContinuation<ReceivedPackage?, Never>? in
            state.finished = true
            defer { state.waiting = nil }
            return state.buffer.count == state.head ? state.waiting : nil
        }
        waiting?.resume(returning: nil)
        space.signal()
    }

    fileprivate func next() async -> ReceivedPackage? {
        await withCheckedContinuation { (continuation: CheckedContinuation<ReceivedPackage?, Never>) in
            enum Immediate {
                case package(ReceivedPackage)
                case end, wait
            }
            let immediate = state.withLock { state -> Immediate in
                if state.head < state.buffer.count {
                    let package = state.buffer[state.head]
                    state.head += 1
                    if state.head == state.buffer.count {
                        state.buffer.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    return .package(package)
                }
                if state.finished { return .end }
                state.waiting = continuation
                return .wait
            }
            switch immediate {
            case .package(let package):
                space.signal()
                continuation.resume(returning: package)
            case .end:
                continuation.resume(returning: nil)
            case .wait:
                break
            }
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: PackageStream
        public mutating func next() async -> ReceivedPackage? { await stream.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(stream: self) }
}
