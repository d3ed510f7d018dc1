import Foundation
import Synchronization
import Testing
import CTimerSlack
@testable import TributaryTransport
import TributaryWire

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
