import Testing
import TributaryWire

@testable import TributaryTransport

/// The publisher's lossless backlog, without sockets: frames leave in the order they came, the
/// count handed back to the sources includes the held frames, and storage is compacted.
@Suite struct LosslessBacklogTests {
    func item(_ n: Int) -> HandOffItem {
        HandOffItem(frame: Frame(encoding: .message(Message("\(n)")), sequence: UInt64(n)), target: .all, lossless: true)
    }

    @Test func framesLeaveOldestFirst() {
        var backlog = LosslessBacklog(capacity: 8)
        #expect(!backlog.isWaiting && backlog.first == nil)
        for n in 0..<5 { backlog.append(item(n)) }
        var order: [UInt64] = []
        while let first = backlog.first {
            order.append(first.frame.header.sequence)
            backlog.removeFirst()
            if order.count == 2 { backlog.append(item(5)) }
        }
        #expect(order == [0, 1, 2, 3, 4, 5])
        #expect(!backlog.isWaiting)
    }

    @Test func heldFramesCountAsWaitingAndInTheTotal() {
        var backlog = LosslessBacklog(capacity: 8)
        backlog.append(item(0))
        backlog.append(item(1))
        backlog.held(3)
        #expect(backlog.total == 5 && backlog.waitingForCredit == 2)
        backlog.removeFirst()
        backlog.removeFirst()
        #expect(backlog.isWaiting)  // held frames still wait for room
        backlog.released(2)
        #expect(backlog.total == 1)
        backlog.released(1)
        #expect(!backlog.isWaiting && backlog.total == 0)
    }

    @Test func compactionKeepsWhatWaitsInOrder() {
        var backlog = LosslessBacklog(capacity: 8)
        let count = LosslessBacklog.compactionThreshold + 10
        for n in 0..<count { backlog.append(item(n)) }
        for _ in 0..<(LosslessBacklog.compactionThreshold + 1) { backlog.removeFirst() }
        backlog.compact()
        #expect(backlog.waitingForCredit == 9)
        #expect(backlog.first?.frame.header.sequence == UInt64(LosslessBacklog.compactionThreshold + 1))
        // Below the threshold with frames waiting, nothing moves; once none waits, the storage goes.
        backlog.removeFirst()
        backlog.compact()
        #expect(backlog.first?.frame.header.sequence == UInt64(LosslessBacklog.compactionThreshold + 2))
        while backlog.first != nil { backlog.removeFirst() }
        backlog.compact()
        #expect(backlog.waitingForCredit == 0 && backlog.first == nil)
        backlog.append(item(7))
        #expect(backlog.first?.frame.header.sequence == 7)
    }
}
