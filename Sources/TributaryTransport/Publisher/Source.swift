import Foundation
import Synchronization
import TributaryWire

/// How a source's frames may be delivered.
public enum SourceDelivery: Sendable, Equatable {
    /// A live acquisition: frames a subscriber cannot take are dropped and counted (at most once).
    case live
    /// A replay: nothing is dropped; the source waits until every subscriber that should receive a frame
    /// has credit for it (docs/PROTOCOL.md §4.5), i.e. it runs at the pace of the slowest subscriber.
    case lossless
}

/// A producer of frames for a `Publisher`: a simulated acquisition device, a capture replay, an
/// application's own acquisition loop.
///
/// The publisher calls `run(_:)` once on a dedicated thread after it has bound its socket; the source
/// publishes its frames through the sink and returns when the sink is cancelled (the publisher stops)
/// or when it has nothing more to send. Frames carry the source's id in `header.sourceID` (the sink
/// sets it).
public protocol Source: AnyObject, Sendable {
    /// The source's id (non-zero, unique within the publisher) and description, listed in the welcome.
    var info: SourceInfo { get }
    /// The configuration sent to each subscriber after the welcome (`source_id` = `info.id`).
    var configuration: Configuration { get }
    /// Free-form properties of the source and its channels, sent in a properties frame right after
    /// each configuration frame the publisher sends for it (none when empty).
    var properties: SourceProperties { get }
    /// Live (drop and count) or lossless (credit-based, waits for the slowest subscriber).
    var delivery: SourceDelivery { get }
    /// Produces frames until `sink.isCancelled` or the end of the data.
    func run(_ sink: SourceSink)
    /// The wire's sample format of its analog frames, announced in discovery answers (nil: not said).
    var sampleFormat: SampleFormat? { get }
}

extension Source {
    public var sampleFormat: SampleFormat? { nil }
    public var properties: SourceProperties { SourceProperties() }
}

/// Where a source hands its frames to the publisher.
public final class SourceSink: Sendable {
    let publisher: PublisherCore
    /// The source this sink belongs to.
    public let sourceID: UInt32
    let delivery: SourceDelivery
    private let cancelled = Atomic<Bool>(false)

    init(publisher: PublisherCore, sourceID: UInt32, delivery: SourceDelivery) {
        self.publisher = publisher
        self.sourceID = sourceID
        self.delivery = delivery
    }

    /// True once the publisher is stopping: return from `run`.
    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    func cancel() {
        cancelled.store(true, ordering: .releasing)
        publisher.handOff.wakeWaiters()
    }

    /// Publishes a package of the publisher itself (source id 0: a message, a file … that a replay
    /// recorded from the publisher as a whole), losslessly, as it is: its source id is not stamped.
    /// - Returns: Whether the publisher took the frame (false once cancelled).
    public func publishAsPublisher(_ frame: Frame) -> Bool {
        let item = HandOffItem(frame: frame, target: .all, lossless: true)
        return publisher.handOff.pushWaiting(item, while: { !self.isCancelled })
    }

    /// Publishes a frame of this source. Live sources never wait: when the publisher's hand-off queue
    /// is full the frame is refused (false, counted in `PublisherStatistics.handOffRefused`). Lossless
    /// sources wait for room and for credit.
    /// - Returns: Whether the publisher took the frame (false also once cancelled).
    @discardableResult
    public func publish(_ frame: Frame) -> Bool { publish(frame, dueAtMonotonicNanoseconds: 0) }

    /// Publishes a frame of this source as `publish(_:)` does, except that a lossless source waits for
    /// room and credit at most until `deadline` (CLOCK_MONOTONIC nanoseconds): for an application that
    /// pushes from its acquisition thread and must not wait for ever on a stalled subscriber. A live
    /// source never waits.
    /// - Returns: Whether the publisher took the frame (false when full, live; at the deadline or
    ///   once cancelled, lossless).
    public func publish(_ frame: Frame, waitingUntilMonotonicNanoseconds deadline: UInt64) -> Bool {
        var header = frame.header
        header.sourceID = sourceID
        let item = HandOffItem(
            frame: header == frame.header ? frame : frame.withHeader(header), target: .all,
            lossless: delivery == .lossless)
        switch delivery {
        case .live: return publisher.handOff.push(item)
        case .lossless:
            return publisher.handOff.pushWaiting(item, while: { !self.isCancelled && monotonicNanoseconds() < deadline })
        }
    }

    /// Publishes a frame of this source to go out at `due` (CLOCK_MONOTONIC nanoseconds, as
    /// `sleep(untilMonotonicNanoseconds:)`) rather than at once: handed over ahead of time, it is sent
    /// by the publisher's loop when its time comes (a timerfd, to within the machine's wake-up
    /// latency), which takes the hand-off between this thread and the loop's out of the frame's
    /// latency. For a paced source that makes its frames ahead, as the simulated device does. A
    /// source's frames keep their order (one due later, or published with 0, waits for the earlier);
    /// the loop holds at most the hand-off queue's capacity of frames (beyond that the oldest go at
    /// once); frames still waiting when the publisher stops are not sent. Refusal as `publish(_:)`.
    @discardableResult
    public func publish(_ frame: Frame, dueAtMonotonicNanoseconds due: UInt64) -> Bool {
        var header = frame.header
        header.sourceID = sourceID
        let item = HandOffItem(
            frame: header == frame.header ? frame : frame.withHeader(header), target: .all,
            lossless: delivery == .lossless, due: due)
        switch delivery {
        case .live: return publisher.handOff.push(item)
        case .lossless: return publisher.handOff.pushWaiting(item, while: { !self.isCancelled })
        }
    }

    /// Sleeps until `deadline` (CLOCK_MONOTONIC nanoseconds) or until the sink is cancelled, in steps of
    /// at most 50 ms; for pacing sources. The publisher's source threads have a timer slack of 1 ns, so
    /// the wake-up comes as close to the deadline as the machine allows.
    public func sleep(untilMonotonicNanoseconds deadline: UInt64) {
        while !isCancelled {
            let now = monotonicNanoseconds()
            if now >= deadline { return }
            // An absolute wake-up time: no drift from the time spent between reading the clock and sleeping.
            let wake = min(deadline, now + 50_000_000)
            var request = timespec(tv_sec: Int(wake / 1_000_000_000), tv_nsec: Int(wake % 1_000_000_000))
            _ = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &request, nil)
        }
    }

    /// Subscribers between start and stop right now (any source selection).
    public var startedSubscribers: Int { publisher.startedSessions.load(ordering: .acquiring) }

    /// Waits until at least `count` subscribers have started (checked every 20 ms); for sources that
    /// should not run before anyone listens, such as a replay.
    /// - Returns: false when the sink was cancelled first.
    public func waitForStartedSubscribers(_ count: Int) -> Bool {
        while !isCancelled {
            if startedSubscribers >= count { return true }
            sleep(untilMonotonicNanoseconds: monotonicNanoseconds() + 20_000_000)
        }
        return false
    }

    /// Waits until every lossless frame handed to the publisher has been sent to the subscribers that
    /// should receive it (or discarded because none should), checked every 10 ms.
    /// - Returns: false when the sink was cancelled first.
    public func waitUntilLosslessFramesSent() -> Bool {
        while !isCancelled {
            if publisher.handOff.losslessPending == 0 { return true }
            sleep(untilMonotonicNanoseconds: monotonicNanoseconds() + 10_000_000)
        }
        return false
    }
}
