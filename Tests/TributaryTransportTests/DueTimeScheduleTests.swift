import Testing
import TributaryWire

@testable import TributaryTransport

/// The publisher's due-time hold and release of frames handed over ahead of their time, without
/// sockets or clocks: each source's frames in hand-off order, held frames released when due, the
/// oldest sent early when the schedule is full.
@Suite struct DueTimeScheduleTests {
    func item(source: UInt32, sequence: UInt64, due: UInt64) -> HandOffItem {
        HandOffItem(
            frame: Frame(encoding: .message(Message("")), sequence: sequence, sourceID: source), target: .all, lossless: false,
            due: due)
    }

    /// Holds the frames in order; none may push an older one out.
    func holdAll(_ schedule: inout DueTimeSchedule, _ items: [HandOffItem]) {
        for item in items {
            let evicted = schedule.hold(item)
            #expect(evicted == nil, "holding \(item.frame.header.sequence) sent \(evicted?.frame.header.sequence ?? 0) early")
        }
    }

    func released(_ schedule: inout DueTimeSchedule, at now: UInt64) -> [UInt64] {
        var out: [UInt64] = []
        schedule.release(now: now) { out.append($0.frame.header.sequence) }
        return out
    }

    @Test func framesDueNowGoAtOnceAndLaterOnesWait() {
        let schedule = DueTimeSchedule(capacity: 8, sources: 2)
        #expect(!schedule.mustWait(item(source: 1, sequence: 0, due: 100), now: 100))
        #expect(!schedule.mustWait(item(source: 1, sequence: 0, due: 0), now: 100))
        #expect(schedule.mustWait(item(source: 1, sequence: 0, due: 101), now: 100))
    }

    @Test func heldFramesAreReleasedWhenDueEachSourceInHandOffOrder() {
        var schedule = DueTimeSchedule(capacity: 8, sources: 2)
        // Source 1's second frame is due before its first: it still waits for the first.
        holdAll(
            &schedule,
            [item(source: 1, sequence: 10, due: 300), item(source: 1, sequence: 11, due: 200), item(source: 2, sequence: 20, due: 250)])
        // A later frame of a source with held frames must wait even when it is due.
        #expect(schedule.mustWait(item(source: 1, sequence: 12, due: 0), now: 1_000))
        #expect(!schedule.mustWait(item(source: 3, sequence: 30, due: 0), now: 1_000))
        let v4 = schedule.earliestDue()
        #expect(v4 == 250)  // source 1's first (300) and source 2's (250)
        #expect(released(&schedule, at: 200).isEmpty)
        #expect(released(&schedule, at: 260) == [20])
        let v5 = schedule.earliestDue()
        #expect(v5 == 300)
        #expect(released(&schedule, at: 300) == [10, 11])
        let v6 = schedule.earliestDue()
        #expect(schedule.isEmpty && v6 == nil)
    }

    @Test func aFullScheduleSendsItsOldestFrameEarly() throws {
        var schedule = DueTimeSchedule(capacity: 2, sources: 1)
        holdAll(&schedule, [item(source: 1, sequence: 1, due: 500), item(source: 1, sequence: 2, due: 600)])
        let v9 = schedule.hold(item(source: 1, sequence: 3, due: 700))
        let evicted = try #require(v9)
        #expect(evicted.frame.header.sequence == 1)
        #expect(schedule.count == 2)
        #expect(released(&schedule, at: 10_000) == [2, 3])
    }
}
