import Foundation
import Synchronization
import Testing
import TributaryWire

@testable import TributaryTransport

@Suite struct PackageKindTests {
    static let arrays: [Array2D] = [
        Array2D(rowCount: 2, columnCount: 2, elements: .double([1, 2, 3, 4])),
        Array2D(rowCount: 1, columnCount: 3, elements: .float([1, 2, 3])),
        Array2D(rowCount: 1, columnCount: 2, elements: .int32([-1, 7])),
        Array2D(rowCount: 2, columnCount: 1, elements: .int16([-2, 9])),
        Array2D(rowCount: 1, columnCount: 1, elements: .int64([1 << 40])),
        Array2D(rowCount: 1, columnCount: 3, elements: .bool([true, false, true])),
        Array2D(rowCount: 1, columnCount: 2, elements: .string(["α", "beta"])),
    ]

    @Test func everyPackageKindTravelsFromPublisherToSubject() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let (subject, recorder) = try recordingSubject()
        let welcome = try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "kinds")
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        let configuration = Configuration(
            deviceName: "dev", deviceType: "t", channels: [ChannelConfiguration(index: 0, description: "a", samplingRate: 100)])
        let analog = AnalogData(channels: [[1, 2], [3, 4]])
        let digital = DigitalData(lines: [[true, false, true], [false, false, true]])
        let content = (0..<3_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        publisher.publish(.configuration(configuration), sourceID: 3)
        publisher.publish(.analog(analog), sourceID: 3)
        publisher.publish(.digital(digital), sourceID: 3)
        publisher.publish(.message(Message("hi", code: 4)))
        publisher.publish(.xml("<a/>"))
        publisher.publishFile(content, name: "../etc/data.bin", attributes: ["x"], chunkSize: 1_000)
        publisher.publishFile(content, name: "picture", imageFormat: .png, chunkSize: 2_000)
        for array in Self.arrays { publisher.publish(.array(array)) }
        publisher.publish(.error(ErrorReport(.malformedFrame, "just a test")), to: .session(welcome.sessionID))
        #expect(waitUntil { recorder.of("error").count == 1 })
        #expect(recorder.of("configuration").last?.package == .configuration(configuration))
        #expect(recorder.of("analog").first?.package == .analog(analog))
        #expect(recorder.of("digital").first?.package == .digital(digital))
        #expect(recorder.of("message").first?.package == .message(Message("hi", code: 4)))
        #expect(recorder.of("xml").first?.package == .xml("<a/>"))
        let file = try #require(recorder.of("file").first?.file)
        #expect(file.content == content && file.originalName == "../etc/data.bin" && file.safeName == "data.bin")
        #expect(file.attributes == ["x"] && file.md5 == MD5.digest(content))
        let image = try #require(recorder.of("image").first?.file)
        #expect(image.imageFormat == .png && image.content == content)
        #expect(recorder.of("array").compactMap(\.package) == Self.arrays.map { .array($0) })
        for kind in ["double", "float", "int", "short", "long", "bool", "string"] {
            #expect(recorder.of("array-\(kind)").count == 1, "typed listener \(kind)")
        }
        #expect(recorder.errors == [ErrorReport(.malformedFrame, "just a test")])
        subject.close()
    }

    @Test func everySendablePackageKindTravelsFromSubjectToPublisher() throws {
        let inbox = Inbox()
        let publisher = try makePublisher(inbox: inbox)
        defer { publisher.stop() }
        let subject = try Subject()
        let welcome = try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "sender")
        let content = (0..<2_500).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try subject.sendMessage("hello publisher", code: 9)
        try subject.sendXML("<x>1</x>")
        try subject.sendFile(content, name: "/tmp/../../evil\u{7}.txt", chunkSize: 1_000)
        try subject.sendFile(content, name: "dir/report.csv", attributes: ["author=me"], chunkSize: 1_000)
        try subject.sendImage(content, description: "camera", format: .jpeg)
        for array in Self.arrays { try subject.sendArray(array) }
        try subject.send(.analog(AnalogData(channels: [[0.5, 1.5]])))
        try subject.send(.digital(DigitalData(lines: [[true, true]])))
        #expect(waitUntil { inbox.all.count == 5 + Self.arrays.count + 2 })
        let received = inbox.all
        #expect(received.allSatisfy { $0.sessionID == welcome.sessionID && $0.subscriberDescription == "sender" })
        guard received.count == 14 else { return }
        if case .message(let m) = received[0].package.content {
            #expect(m == Message("hello publisher", code: 9))
        } else {
            Issue.record("message")
        }
        if case .xml(let x) = received[1].package.content { #expect(x == "<x>1</x>") } else { Issue.record("xml") }
        if case .file(let f) = received[2].package.content {
            // A name with a control character has no safe form: it cannot be written.
            #expect(f.safeName == nil && f.content == content)
            #expect(throws: ReceivedFile.WriteError.self) { _ = try f.write(into: NSTemporaryDirectory()) }
        } else {
            Issue.record("file")
        }
        if case .file(let f) = received[3].package.content {
            #expect(f.safeName == "report.csv" && f.attributes == ["author=me"] && f.content == content)
        } else {
            Issue.record("file 2")
        }
        if case .image(let i) = received[4].package.content {
            #expect(i.imageFormat == .jpeg && i.content == content)
        } else {
            Issue.record("image")
        }
        for (index, array) in Self.arrays.enumerated() {
            if case .array(let view) = received[5 + index].package.content {
                #expect(view.materialize() == array)
            } else {
                Issue.record("array \(index)")
            }
        }
        if case .analog(let a) = received[12].package.content {
            #expect(a.materialize() == AnalogData(channels: [[0.5, 1.5]]))
        } else {
            Issue.record("analog")
        }
        if case .digital(let d) = received[13].package.content {
            #expect(d.materialize() == DigitalData(lines: [[true, true]]))
        } else {
            Issue.record("digital")
        }
        // Single-frame packages keep the frame as it arrived (to store or print whole); files and images are reassembled.
        for (index, package) in received.map(\.package).enumerated() {
            let reassembled = package.header.kind == .file || package.header.kind == .image
            #expect((package.frame == nil) == reassembled, "package \(index)")
            if let frame = package.frame {
                #expect(frame.header.kind == package.header.kind && frame.header.sequence == package.header.sequence)
            }
        }
        subject.close()
    }

    @Test func packageStreamDeliversInOrderAndEndsOnClose() async throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let subject = try Subject()
        let stream = subject.packages(capacity: 4)
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "stream")
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        for index in 0..<20 { publisher.publish(.message(Message("m\(index)", code: Int32(index)))) }
        var codes: [Int32] = []
        for await package in stream {
            if case .message(let m) = package.content { codes.append(m.code) }
            if codes.count == 20 { subject.close() }
        }
        #expect(codes == Array(0..<20))
    }

    @Test func packageHandlerRunsOnTheCallbackQueueInOrderAndEndsOnceOnClose() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let subject = try Subject()
        let codes = Mutex<[Int32]>([])
        let ends = Atomic<Int>(0)
        let endedAfterLast = Atomic<Bool>(false)
        subject.addPackageHandler(
            { package in
                if case .message(let m) = package.content { codes.withLock { $0.append(m.code) } }
            },
            ended: {
                endedAfterLast.store(codes.withLock { $0.count } == 20, ordering: .relaxed)
                ends.add(1, ordering: .relaxed)
            })
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "handler")
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        for index in 0..<20 { publisher.publish(.message(Message("m\(index)", code: Int32(index)))) }
        #expect(waitUntil { codes.withLock { $0.count } == 20 })
        subject.close()
        #expect(waitUntil { ends.load(ordering: .relaxed) == 1 })
        #expect(codes.withLock { $0 } == Array(0..<20))
        let endedLast = endedAfterLast.load(ordering: .relaxed)
        #expect(endedLast)
        // Closed: nothing more is handled, and the end is not announced twice.
        subject.close()
        Thread.sleep(forTimeInterval: 0.05)
        #expect(ends.load(ordering: .relaxed) == 1)
    }
}
