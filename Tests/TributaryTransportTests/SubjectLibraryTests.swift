import Foundation
import Synchronization
import Testing
import TributaryWire

@testable import TributaryTransport

/// The SCCT model from Swift (issue 14 item 7): observers retained as SCCT's register does, errors
/// with the header that carried them, one source selected without an array, a filter's query changed
/// in place.
@Suite(.serialized) struct SubjectLibraryTests {
    /// Records error headers and analog channel indexes; the test keeps no reference to it.
    final class InlineObserver: Observer, @unchecked Sendable {
        let errors = Mutex<[(ErrorReport, FrameHeader)]>([])
        let analog = Mutex<[(UInt32, [UInt32])]>([])
        func didReceiveError(_ error: ErrorReport, header: FrameHeader) { errors.withLock { $0.append((error, header)) } }
        func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) {
            let indexes = (0..<data.channelCount).map { data.channelIndex($0) }
            analog.withLock { $0.append((header.filterID, indexes)) }
        }
    }

    @Test func anObserverRegisteredInlineKeepsReceiving() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let subject = try Subject()
        weak var weakObserver: InlineObserver?
        do {
            let observer = InlineObserver()
            weakObserver = observer
            subject.register(observer)  // the only strong reference is the Subject's
        }
        #expect(weakObserver != nil, "register must retain the observer")
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "inline")
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        publisher.publish(Package.error(ErrorReport(.checksumMismatch, "device 2 says hello")), sourceID: 2, timestampNs: 1_234_567)
        #expect(waitUntil { (weakObserver?.errors.withLock { $0.count } ?? 0) == 1 })
        let (report, header) = try #require(weakObserver?.errors.withLock { $0.first })
        #expect(report.code == .checksumMismatch)
        #expect(header.sourceID == 2)
        #expect(header.timestampNs == 1_234_567)
        let observer = try #require(weakObserver)
        subject.unregister(observer)
        subject.close()
    }

    @Test func aFiltersQueryChangesInPlaceAndOneSourceIsSelectedByID() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let subject = try Subject()
        let observer = InlineObserver()
        subject.register(observer)
        try subject.open(
            address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "filters",
            sourceFilterEnabled: true)
        let id = try subject.sendFilter(AnalogFilterRequest(query: "0-1"))
        try subject.selectSource(1)
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        #expect(
            waitUntil {
                publisher.publish(rampFrame(channels: 4, samples: 8, sourceID: 1))
                publisher.publish(rampFrame(channels: 4, samples: 8, sourceID: 2))  // not selected
                return observer.analog.withLock { $0.contains { $0.1 == [0, 1] } }
            })
        try subject.changeFilter(id, to: AnalogFilterRequest(query: "2,3"))
        #expect(
            waitUntil {
                publisher.publish(rampFrame(channels: 4, samples: 8, sourceID: 1))
                return observer.analog.withLock { $0.contains { $0.1 == [2, 3] } }
            })
        // The data of the changed filter carries the same id; source 2 never arrived.
        #expect(observer.analog.withLock { $0.allSatisfy { $0.0 == id } })
        #expect(publisher.subscribers().first?.filters.analog.count == 1)
        #expect(throws: ErrorReport.self) { try subject.changeFilter(99, to: AnalogFilterRequest()) }
        subject.unregister(observer)
        subject.close()
    }
}
