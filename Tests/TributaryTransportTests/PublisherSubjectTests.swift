import Foundation
import Testing
import TributaryWire
@testable import TributaryTransport

@Suite struct PublisherSubjectTests {
    @Test func openStartReceiveAndCloseOverLoopback() throws {
        let source = SimulatedSource(id: 7, description: "sim", channels: [SimulatedChannel(frequency: 50)],
                                     sampleRate: 1_000, samplesPerFrame: 100, paced: true)
        let publisher = try makePublisher(sources: [source])
        defer { publisher.stop() }
        let subject = try Subject()
        let recorder = Recorder()
        subject.register(recorder)
        let welcome = try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret",
                                       description: "test client", timeout: 5)
        #expect(welcome.sources == [SourceInfo(id: 7, description: "sim")])
        #expect(welcome.publisherDescription == "test publisher")
        #expect(waitUntil { recorder.of("configuration").count == 1 })
        #expect(recorder.of("configuration").first?.header?.sourceID == 7)
        // Nothing flows before start.
        usleep(150_000)
        #expect(recorder.analog.isEmpty)
        try subject.start()
        #expect(waitUntil { recorder.analog.count >= 3 })
        let subscribers = publisher.subscribers()
        #expect(subscribers.count == 1)
        #expect(subscribers.first?.description == "test client")
        #expect(subscribers.first?.address == "127.0.0.1")
        #expect(subscribers.first?.isStarted == true)
        let frames = recorder.analog
        // Consecutive frames of the source, in order, as the source generated them.
        for (header, data) in frames {
            #expect(header.sourceID == 7)
            let index = Int(data.firstSample) / 100
            guard case .analog(let expected) = try source.frame(index, timestampNs: 0).payload().materialize() else {
                Issue.record("not analog"); continue
            }
            #expect(data == expected)
        }
        #expect(recorder.all.allSatisfy { $0.callbackThread == "tributary-cb" }, "\(Set(recorder.all.map(\.callbackThread)))")
        try subject.stop()
        subject.close()
        #expect(waitUntil { publisher.subscribers().isEmpty })
        #expect(subject.statistics().unaccountedLoss == 0)
    }
}
