import Testing
import TributaryWire

@testable import TributaryTransport

/// A session's numbering of what the publisher sends, without sockets: drops consume numbers and are
/// counted once, runs of drops become one gap, and the gap notice takes a number of its own.
@Suite struct OutboundSequenceTests {
    @Test func framesSentConsumeOneNumberEach() {
        var numbering = OutboundSequence()
        numbering.sent()
        numbering.sent()
        #expect(numbering.next == 2 && numbering.framesSent == 2 && numbering.framesDropped == 0)
        #expect(numbering.pendingGap == nil)
    }

    @Test func aPropertiesFrameCarriesTheNextNumberWithoutConsumingIt() {
        var numbering = OutboundSequence()
        numbering.sent(consumesNumber: false)
        #expect(numbering.next == 0 && numbering.framesSent == 1)
    }

    @Test func aDroppedFrameIsCountedOnceAndJoinsOneGap() throws {
        var numbering = OutboundSequence()
        numbering.sent()  // 0
        numbering.dropped()  // 1
        numbering.dropped()  // 2
        numbering.dropped()  // 3
        #expect(numbering.framesDropped == 3 && numbering.next == 4 && numbering.framesSent == 1)
        let gap = try #require(numbering.pendingGap)
        #expect(gap.firstMissingSequence == 1 && gap.missingCount == 3)
        // The notice goes out as number 4; the next frame is 5 and no gap is pending.
        numbering.gapAnnounced()
        #expect(numbering.next == 5 && numbering.framesSent == 2 && numbering.pendingGap == nil)
        #expect(numbering.framesDropped == 3)
        numbering.dropped()  // 5
        #expect(numbering.pendingGap == Gap(firstMissingSequence: 5, missingCount: 1))
        #expect(numbering.framesDropped == 4)
    }
}
