import Testing
import TributaryWire

@testable import TributaryTransport

/// `digitalOnChangeOnly` without sockets: a digital frame goes out only when some line changes
/// from the last state sent for its source.
@Suite struct DigitalChangeFilterTests {
    func frame(_ lines: [[Bool]], source: UInt32 = 1) -> Frame {
        Frame(encoding: .digital(DigitalData(lines: lines)), sourceID: source)
    }

    @Test func theFirstFrameOfASourceIsAChangeThenOnlyChangesAre() {
        var filter = DigitalChangeFilter()
        let v1 = filter.changes(frame([[false, false], [true, true]]))
        #expect(v1)
        let v2 = filter.changes(frame([[false, false], [true, true]]))
        #expect(!v2)
        // A change within a frame counts, even when it ends where the last one did.
        let v3 = filter.changes(frame([[false, true, false], [true, true, true]]))
        #expect(v3)
        let v4 = filter.changes(frame([[false], [true]]))
        #expect(!v4)
        // The first sample is compared with the last state sent, not with false.
        let v5 = filter.changes(frame([[true], [true]]))
        #expect(v5)
    }

    @Test func sourcesAreTrackedApart() {
        var filter = DigitalChangeFilter()
        let v6 = filter.changes(frame([[true]], source: 1))
        #expect(v6)
        let v7 = filter.changes(frame([[true]], source: 2))
        #expect(v7)
        let v8 = filter.changes(frame([[true]], source: 1))
        #expect(!v8)
        let v9 = filter.changes(frame([[false]], source: 2))
        #expect(v9)
        let v10 = filter.changes(frame([[true]], source: 1))
        #expect(!v10)
    }

    @Test func anotherLineCountIsAChange() {
        var filter = DigitalChangeFilter()
        let v11 = filter.changes(frame([[false]]))
        #expect(v11)
        let v12 = filter.changes(frame([[false], [false]]))
        #expect(v12)
        let v13 = filter.changes(frame([[false], [false]]))
        #expect(!v13)
    }

    @Test func aFrameThatIsNotDigitalIsNeverSuppressed() {
        var filter = DigitalChangeFilter()
        let message = Frame(encoding: .message(Message("x")), sourceID: 1)
        let v14 = filter.changes(message)
        #expect(v14)
        let v15 = filter.changes(message)
        #expect(v15)
    }
}
