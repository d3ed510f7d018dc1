import Foundation
import Testing
import TributaryWire

@testable import TributaryTransport

@Suite struct FilterTransportTests {
    /// Frames a subscriber with `filters` should receive for `frames`, computed locally by the shared code.
    func locallyFiltered(_ frames: [Frame], _ filters: SubscriberFilters) throws -> [(UInt32, Package)] {
        var out: [(UInt32, Package)] = []
        for frame in frames {
            try filters.outputs(for: frame) { filtered in
                out.append((filtered.header.filterID, try filtered.payload().materialize()))
            }
        }
        return out
    }

    @Test func serverSideFilteredDataEqualsTheLocalFiltersOutput() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let (subject, recorder) = try recordingSubject()
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "filters")
        let range = try AnalogFilterRequest(query: "1-2;5")
        let list = try AnalogFilterRequest(query: "3,0")
        let arrays = try ArrayFilterRequest(elementType: .double, query: "1-2;0-1")
        #expect(try subject.sendFilter(range) == 1)
        #expect(try subject.sendFilter(list) == 2)
        #expect(try subject.sendFilter(arrays) == 3)
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.filters.lastFilterID == 3 && publisher.subscribers().first?.isStarted == true })
        var local = SubscriberFilters()
        try local.add(range, id: 1)
        try local.add(list, id: 2)
        try local.add(arrays, id: 3)

        let frames = [
            rampFrame(channels: 4, samples: 5, sourceID: 5), rampFrame(channels: 4, samples: 3, first: 5, sourceID: 6),
            Frame(encoding: .array(Array2D(rowCount: 3, columnCount: 3, elements: .double((0..<9).map(Double.init))))),
            Frame(encoding: .array(Array2D(rowCount: 1, columnCount: 2, elements: .int32([1, 2])))),
            Frame(encoding: .message(Message("end"))),
        ]
        for frame in frames { publisher.publish(frame) }
        #expect(waitUntil { recorder.of("message").count == 1 })
        let expected = try locallyFiltered(frames, local)
        let received = recorder.all.filter { ["analog", "array", "message"].contains($0.kind) }
            .map { ($0.header!.filterID, $0.package!) }
        #expect(received.map(\.0) == expected.map(\.0))
        #expect(received.map(\.1) == expected.map(\.1))
        // Sanity of the local reference itself: source 5 gets rows 1-2 (filter 1) and 3,0 (filter 2).
        #expect(expected.count == 6)

        // Replace filter 1 by a list filter, remove filter 2: ids go on (4), filter 3 is untouched.
        var replacement = try AnalogFilterRequest(query: "2")
        replacement.replaces = 1
        #expect(try subject.sendFilter(replacement) == 4)
        try subject.removeFilter(2)
        #expect(throws: ErrorReport.self) { try subject.removeFilter(2) }
        try local.add(replacement, id: 4)
        try local.remove(id: 2)
        #expect(waitUntil { publisher.subscribers().first?.filters == local })
        let before = recorder.all.count
        let more = [rampFrame(channels: 4, samples: 2, sourceID: 9), Frame(encoding: .message(Message("end2")))]
        for frame in more { publisher.publish(frame) }
        #expect(waitUntil { recorder.of("message").count == 2 })
        let after = recorder.all[before...].filter { ["analog", "message"].contains($0.kind) }.map { ($0.header!.filterID, $0.package!) }
        let expectedAfter = try locallyFiltered(more, local)
        #expect(after.map(\.0) == expectedAfter.map(\.0))
        #expect(after.map(\.1) == expectedAfter.map(\.1))
        subject.close()
    }

    @Test func sourceSelectionReplacesThePreviousOne() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let (subject, recorder) = try recordingSubject()
        try subject.open(
            address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "sel",
            sourceFilterEnabled: true)
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        func publishRound(_ tag: String) {
            for source: UInt32 in [1, 2, 3] { publisher.publish(rampFrame(channels: 1, samples: 1, sourceID: source)) }
            publisher.publish(.message(Message(tag)))
        }
        // `publish` is asynchronous: wait for each round's closing message before changing the selection.
        publishRound("none")
        #expect(waitUntil { recorder.of("message").count == 1 })
        try subject.selectSources([1, 3])
        #expect(waitUntil { publisher.subscribers().first?.selectedSources == [1, 3] })
        publishRound("one-three")
        #expect(waitUntil { recorder.of("message").count == 2 })
        try subject.selectSources([2])
        #expect(waitUntil { publisher.subscribers().first?.selectedSources == [2] })
        publishRound("two")
        #expect(waitUntil { recorder.of("message").count == 3 })
        #expect(recorder.analog.map(\.0.sourceID) == [1, 3, 2])
        subject.close()
    }
}
