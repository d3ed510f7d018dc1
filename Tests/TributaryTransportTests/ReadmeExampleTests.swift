import Foundation
import Synchronization
import Testing
import TributaryDSP
import TributarySources
import TributaryTransport
import TributaryWire

/// The README's Subject/Observer example, compiled and run against a real publisher, so that the
/// first code a user copies keeps working.
@Suite struct ReadmeExampleTests {
    final class Printer: Observer, Sendable {
        let lines = Mutex<[String]>([])
        func didReceiveConfiguration(_ configuration: Configuration, header: FrameHeader) {
            lines.withLock { $0.append(configuration.deviceName) }
        }
        func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) {
            data.withSamples(Double.self, channel: 0) { samples in
                let first = samples.first ?? .nan
                lines.withLock { $0.append("\(header.filterID) \(first)") }
            }
        }
        func didReceiveError(_ error: ErrorReport) { lines.withLock { $0.append("\(error)") } }
    }

    @Test func readmeSubjectExampleWorks() throws {
        let spec = try SimulationSpec(parsing: "id=1,channels=4,rate=1000,block=100")
        let publisher = try Publisher(
            configuration: PublisherConfiguration(endpoint: "tcp://127.0.0.1:0", apiKey: "lab-key"),
            sources: [SimulatedDeviceSource(spec: spec)])
        defer { publisher.stop() }

        let subject = try Subject()
        let printer = Printer()
        subject.register(printer)
        try subject.open(
            address: "127.0.0.1", port: publisher.port!, apiKey: "lab-key", description: "my client", timeout: 10,
            sourceFilterEnabled: true)
        try subject.sendFilter(AnalogFilterRequest(query: "1-3;1"))  // channels 1-3 of source 1, filter id 1
        try subject.selectSources([1])
        try subject.start()

        #expect(waitUntil { printer.lines.withLock { $0.count } >= 3 })
        subject.close()
        let lines = printer.lines.withLock { $0 }
        #expect(lines.first == "SIM-1")
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("1 ") })
    }
}
