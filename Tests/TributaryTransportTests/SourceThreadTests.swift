import CTimers
import Foundation
import Synchronization
import Testing
import TributaryWire

@testable import TributaryTransport

/// The threads the publisher runs its sources on.
@Suite struct SourceThreadTests {
    /// Reads, on the source's own thread, what the kernel says of that thread's timer slack, and how a
    /// paced sleep ends relative to its deadline.
    final class ProbeSource: Source {
        let info = SourceInfo(id: 7, description: "probe")
        let configuration = Configuration(deviceName: "probe", deviceType: "test")
        let delivery = SourceDelivery.live
        let slack = Mutex<Int?>(nil)
        let wokeEarly = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)

        func run(_ sink: SourceSink) {
            let value = tributary_timer_slack()
            slack.withLock { $0 = value }
            for step in 1...5 {
                let deadline = monotonicNanoseconds() + UInt64(step) * 300_000
                sink.sleep(untilMonotonicNanoseconds: deadline)
                if monotonicNanoseconds() < deadline { wokeEarly.store(true, ordering: .relaxed) }
            }
            done.signal()
        }
    }

    /// Publishes, once a subscriber has started: two frames due later (source 8), one due at once
    /// after them (source 8: must wait for them), and one of source 9 at once (must not wait).
    final class ScheduledSource: Source {
        let info: SourceInfo
        let configuration = Configuration(deviceName: "scheduled", deviceType: "test")
        let delivery = SourceDelivery.live
        let dues = Mutex<[UInt64]>([])
        init(id: UInt32) { info = SourceInfo(id: id, description: "scheduled \(id)") }

        func run(_ sink: SourceSink) {
            guard sink.waitForStartedSubscribers(1) else { return }
            if info.id == 8 {
                let now = monotonicNanoseconds()
                let plan: [UInt64] = [now + 40_000_000, now + 80_000_000, 0]
                dues.withLock { $0 = plan }
                for (index, due) in plan.enumerated() {
                    sink.publish(rampFrame(channels: 1, samples: 4, first: index, sourceID: 8), dueAtMonotonicNanoseconds: due)
                }
            } else {
                sink.sleep(untilMonotonicNanoseconds: monotonicNanoseconds() + 5_000_000)
                sink.publish(rampFrame(channels: 1, samples: 4, first: 100, sourceID: 9))
            }
        }
    }

    final class ArrivalLog: Observer {
        let arrivals = Mutex<[(source: UInt32, first: UInt64, at: UInt64)]>([])
        func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) {
            let now = monotonicNanoseconds()
            arrivals.withLock { $0.append((header.sourceID, data.firstSample, now)) }
        }
    }

    /// Subscribes to `publisher`, waits until `count` analog frames have arrived, closes, and returns
    /// them in the order they arrived.
    func arrivals(from publisher: Publisher, count: Int) throws -> [(source: UInt32, first: UInt64, at: UInt64)] {
        let subject = try Subject()
        let log = ArrivalLog()
        subject.register(log)
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "arrivals")
        try subject.start()
        #expect(waitUntil { log.arrivals.withLock { $0.count } == count })
        subject.close()
        return log.arrivals.withLock { $0 }
    }

    @Test func framesPublishedForLaterGoOutAtTheirTimeInTheirSourcesOrder() throws {
        let scheduled = ScheduledSource(id: 8), immediate = ScheduledSource(id: 9)
        let publisher = try makePublisher(sources: [scheduled, immediate])
        defer { publisher.stop() }
        let arrivals = try arrivals(from: publisher, count: 4)
        let dues = scheduled.dues.withLock { $0 }
        // Source 9's frame did not wait for source 8's.
        #expect(arrivals.first.map { $0.source } == 9)
        let eight = arrivals.filter { $0.source == 8 }
        #expect(eight.map(\.first) == [0, 1, 2])
        // Never early (one monotonic clock: the same process); the third, due at once, waited for the second.
        for (arrival, due) in zip(eight, [dues[0], dues[1], dues[1]]) { #expect(arrival.at >= due) }
    }

    /// Hands frames over ahead of their time, the way a paced device does, so that the hand-off queue's
    /// timer (not a loop wake-up a frame) brings them out: source 10 sends `count` frames 2 ms apart,
    /// each handed over 1 ms early; once they are out, source 10 hands over one due in 150 ms and then
    /// source 11 one due in 30 ms, which must re-arm the timer earlier rather than wait behind it.
    final class AheadSource: Source {
        let info: SourceInfo
        let configuration = Configuration(deviceName: "ahead", deviceType: "test")
        let delivery = SourceDelivery.live
        static let count = 40
        let dues = Mutex<[UInt64]>([])
        /// Shared by the two sources: source 10 has handed over its last frame.
        final class Gate: Sendable { let pacedOut = Atomic<Bool>(false) }
        let gate: Gate
        init(id: UInt32, gate: Gate) {
            info = SourceInfo(id: id, description: "ahead \(id)")
            self.gate = gate
        }

        func run(_ sink: SourceSink) {
            guard sink.waitForStartedSubscribers(1) else { return }
            if info.id == 10 {
                let start = monotonicNanoseconds() + 5_000_000
                for index in 0..<Self.count {
                    let due = start + UInt64(index) * 2_000_000
                    sink.sleep(untilMonotonicNanoseconds: due - 1_000_000)
                    dues.withLock { $0.append(due) }
                    sink.publish(rampFrame(channels: 1, samples: 4, first: index, sourceID: 10), dueAtMonotonicNanoseconds: due)
                }
                sink.sleep(untilMonotonicNanoseconds: start + UInt64(Self.count) * 2_000_000 + 20_000_000)
                let late = monotonicNanoseconds() + 150_000_000
                dues.withLock { $0.append(late) }
                sink.publish(rampFrame(channels: 1, samples: 4, first: Self.count, sourceID: 10), dueAtMonotonicNanoseconds: late)
                gate.pacedOut.store(true, ordering: .releasing)
            } else {
                while !gate.pacedOut.load(ordering: .acquiring) && !sink.isCancelled { usleep(500) }
                let soon = monotonicNanoseconds() + 30_000_000
                dues.withLock { $0.append(soon) }
                sink.publish(rampFrame(channels: 1, samples: 4, first: 500, sourceID: 11), dueAtMonotonicNanoseconds: soon)
            }
        }
    }

    @Test func framesHandedOverAheadComeOutOnTheQueuesTimerAndAnEarlierDueTimeReArmsIt() throws {
        let gate = AheadSource.Gate()
        let paced = AheadSource(id: 10, gate: gate), other = AheadSource(id: 11, gate: gate)
        let publisher = try makePublisher(sources: [paced, other])
        defer { publisher.stop() }
        let arrivals = try arrivals(from: publisher, count: AheadSource.count + 2)
        let tens = arrivals.filter { $0.source == 10 }
        #expect(tens.map(\.first) == (0...UInt64(AheadSource.count)).map { $0 })
        let dues = paced.dues.withLock { $0 }
        // Never early (one monotonic clock), in order, and out as they fall due.
        for (arrival, due) in zip(tens, dues) { #expect(arrival.at >= due) }
        // Source 11's frame, due 30 ms after source 10's last was handed over for 150 ms, came first,
        // long before that one: the timer was re-armed for it.
        let eleven = try #require(arrivals.first { $0.source == 11 })
        let otherDues = other.dues.withLock { $0 }
        #expect(otherDues.count == 1 && eleven.at >= otherDues[0])
        let lastTen = try #require(tens.last)
        #expect(arrivals.last?.source == 10)
        #expect(eleven.at + 60_000_000 < lastTen.at)
        #expect(publisher.statistics().framesPublished == UInt64(AheadSource.count + 2))
    }

    /// Hands over, 2 ms apart, more frames than the hand-off queue holds, each due long after the last
    /// is handed over: a queue that kept them all until the first is due would refuse the ninth.
    final class FarAheadSource: Source {
        let info = SourceInfo(id: 12, description: "far ahead")
        let configuration = Configuration(deviceName: "far ahead", deviceType: "test")
        let delivery = SourceDelivery.live
        static let count = 20
        func run(_ sink: SourceSink) {
            guard sink.waitForStartedSubscribers(1) else { return }
            let start = monotonicNanoseconds() + 80_000_000
            for index in 0..<Self.count {
                sink.publish(
                    rampFrame(channels: 1, samples: 4, first: index, sourceID: 12),
                    dueAtMonotonicNanoseconds: start + UInt64(index) * 1_000_000)
                sink.sleep(untilMonotonicNanoseconds: monotonicNanoseconds() + 2_000_000)
            }
        }
    }

    @Test func framesHandedOverFarAheadDoNotFillTheHandOffQueue() throws {
        // A queue of 8: past 4 waiting for their time the loop is woken to take them, so none is refused.
        let publisher = try makePublisher(sources: [FarAheadSource()]) { $0.handOffCapacity = 8 }
        defer { publisher.stop() }
        let arrivals = try arrivals(from: publisher, count: FarAheadSource.count)
        #expect(arrivals.map(\.first) == (0..<UInt64(FarAheadSource.count)).map { $0 })
        let statistics = publisher.statistics()
        #expect(statistics.handOffRefused == 0)
        #expect(statistics.framesAccepted == UInt64(FarAheadSource.count))
    }

    @Test func sourcesRunWithATimerSlackOfOneNanosecondAndNeverWakeEarly() throws {
        let source = ProbeSource()
        let publisher = try makePublisher(sources: [source])
        defer { publisher.stop() }
        #expect(source.done.wait(timeout: .now() + 10) == .success)
        // Linux's default is 50 000 ns for every thread; the publisher sets 1 on its source threads.
        #expect(source.slack.withLock { $0 } == 1)
        let wokeEarly = source.wokeEarly.load(ordering: .relaxed)
        #expect(!wokeEarly)
    }
}
