import Testing

@testable import TributaryTransport

/// The subscriber's lossless credit: a window in frames, bounded in bytes, replenished at half.
@Suite struct CreditWindowTests {
    /// Streams `count` frames of `size` bytes through a publisher that sends only with credit, the
    /// subscriber granting as `CreditWindow` says (grants arrive at once). Returns the most credit
    /// the publisher held after the first window was used up, and whether it ever ran dry.
    private func stream(_ window: inout CreditWindow, count: Int, size: (Int) -> Int) -> (peak: UInt32, dry: Bool) {
        var publisherCredit = window.opened()
        window.granted(publisherCredit)
        var peak: UInt32 = 0, dry = false, sent = 0
        let first = Int(publisherCredit)
        while sent < count {
            guard publisherCredit > 0 else {
                dry = true
                break
            }
            publisherCredit -= 1
            if let grant = window.received(size: size(sent)) {
                window.granted(grant)
                publisherCredit += grant
            }
            sent += 1
            if sent > first { peak = max(peak, publisherCredit) }
            #expect(publisherCredit == window.outstanding)
        }
        return (peak, dry)
    }

    @Test func largeFramesAreBoundedByBytes() {
        var window = CreditWindow(frames: 256, bytes: 8 << 20)
        let frame = 65_536 + 40
        let (peak, dry) = stream(&window, count: 20_000, size: { _ in frame })
        #expect(!dry)
        #expect(peak == UInt32((8 << 20) / frame))  // 127: two-part frames stay within one 256-part pipe chunk
        #expect(window.target == 127)
        #expect(window.due == nil)  // right after a grant, nothing more is due (the housekeeping asks)
    }

    @Test func smallFramesKeepTheFrameWindow() {
        var window = CreditWindow(frames: 256, bytes: 8 << 20)
        let (peak, dry) = stream(&window, count: 20_000, size: { _ in 1_064 })
        #expect(!dry)
        #expect(peak == 256)
        // Replenished at half a window, back to the whole.
        var fresh = CreditWindow(frames: 256, bytes: 8 << 20)
        fresh.granted(fresh.opened())
        var grants: [UInt32] = []
        for _ in 0..<1_000 { if let grant = fresh.received(size: 1_064) { grants.append(grant); fresh.granted(grant) } }
        #expect(grants.allSatisfy { $0 == 128 })
        #expect(grants.count == 1_000 / 128)
    }

    @Test func hugeFramesKeepAMinimumAndTinyWindowsStayTiny() {
        var huge = CreditWindow(frames: 256, bytes: 8 << 20)
        #expect(!stream(&huge, count: 500, size: { _ in 16 << 20 }).dry)
        #expect(huge.target == CreditWindow.minimumFrames)
        var tiny = CreditWindow(frames: 4, bytes: 8 << 20)
        let (peak, dry) = stream(&tiny, count: 100, size: { _ in 1_000 })
        #expect(!dry && peak == 4)
        var one = CreditWindow(frames: 1, bytes: 1)
        #expect(!stream(&one, count: 50, size: { _ in 1 << 20 }).dry)
        #expect(one.target == 1)
    }

    @Test func meanSizeSinceTheLastGrantDecides() {
        var window = CreditWindow(frames: 256, bytes: 1 << 20)
        window.granted(window.opened())
        // Alternating 64 KiB and 1 KiB frames: a mean near 33 280 bytes, so about 31 frames of 1 MiB.
        var grantsSeen = 0
        for index in 0..<2_000 {
            if let grant = window.received(size: index % 2 == 0 ? 65_536 : 1_024) {
                window.granted(grant)
                grantsSeen += 1
            }
        }
        #expect(grantsSeen > 0)
        #expect((29...34).contains(window.target))
        #expect(window.outstanding <= 34 && window.outstanding >= 14, "outstanding \(window.outstanding) target \(window.target)")
        #expect(window.due == nil)  // nothing more until frames arrive
    }

    @Test func aGrantNotSentStaysDue() {
        var window = CreditWindow(frames: 8, bytes: 8 << 20)
        window.granted(window.opened())
        var due: UInt32?
        for _ in 0..<4 { due = window.received(size: 100) }
        #expect(due == 4)
        // Not sent (a full queue): still due, and it grows with the frames that keep coming.
        #expect(window.due == 4)
        #expect(window.received(size: 100) == 5)
        window.granted(5)
        #expect(window.outstanding == 8 && window.due == nil)
        // A new session starts from nothing.
        #expect(window.opened() == 8 && window.outstanding == 0)
    }
}
