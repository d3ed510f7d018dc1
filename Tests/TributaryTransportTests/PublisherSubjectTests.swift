import Foundation
import Testing
import TributaryDSP
import TributarySources
import TributaryWire

@testable import TributaryTransport

@Suite struct PublisherSubjectTests {
    @Test func openStartReceiveAndCloseOverLoopback() throws {
        let source = SimulatedDeviceSource(
            spec: try SimulationSpec(parsing: "id=7,name=sim,rate=1000,channels=1,freq=50,noise=0.01,block=100"))
        let publisher = try makePublisher(sources: [source])
        defer { publisher.stop() }
        let (subject, recorder) = try recordingSubject()
        let welcome = try subject.open(
            address: "127.0.0.1", port: publisher.port!, apiKey: "secret",
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
        // Consecutive frames of the source, in order, as the device generated them (same seed); the
        // frames before the start went to nobody.
        var device = SimulatedDevice(source.spec)
        while device.nextSample < (frames.first?.1.firstSample ?? 0) { _ = device.nextAnalogFrame(timestampNs: 0) }
        for (index, (header, data)) in frames.enumerated() {
            #expect(header.sourceID == 7)
            #expect(data.firstSample == (frames.first?.1.firstSample ?? 0) + UInt64(index * 100))
            guard case .analog(let expected) = try device.nextAnalogFrame(timestampNs: 0).payload().materialize() else {
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
