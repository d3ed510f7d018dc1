// A publisher or subscriber in its own process, for the transport tests that need real processes:
// a publisher killed mid-stream, a SIGSTOPped subscriber.
//
//   TransportPeer publish PORT FRAME_RATE            simulated 4-channel source; prints "ready PORT"
//   TransportPeer subscribe PORT DESCRIPTION         prints one JSON line of counters every 50 ms
//                                                    until stdin closes, then a final line and exits
import Foundation
import TributaryDSP
import TributarySources
import TributaryTransport
import TributaryWire

/// Writes a line unbuffered (the test reads lines as they come).
func emit(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
let arguments = CommandLine.arguments
guard arguments.count >= 4, let port = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: TransportPeer publish PORT RATE | subscribe PORT DESCRIPTION\n".utf8))
    exit(2)
}

/// Counts what a subscriber receives (on the callback queue; read by the main thread under the lock).
final class Counter: Observer, @unchecked Sendable {
    // `@unchecked Sendable`: every field is behind `lock`.
    let lock = NSLock()
    var analog = 0
    var gaps = 0
    var missing: UInt64 = 0
    var errors: [UInt32] = []
    func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) { lock.withLock { analog += 1 } }
    func didReceiveGap(_ gap: Gap, header: FrameHeader) {
        lock.withLock {
            gaps += 1; missing += gap.missingCount
        }
    }
    func didReceiveError(_ error: ErrorReport) { lock.withLock { errors.append(error.code.rawValue) } }
    func line(_ subject: Subject) -> String {
        let statistics = subject.statistics()
        return lock.withLock {
            "{\"analog\":\(analog),\"gaps\":\(gaps),\"missing\":\(missing),\"unaccounted\":\(statistics.unaccountedLoss),\"errors\":\(errors)}"
        }
    }
}

switch arguments[1] {
case "publish":
    let rate = Double(arguments[3]) ?? 100
    let source = SimulatedDeviceSource(
        spec: try SimulationSpec(parsing: "id=1,name=peer source,rate=\(rate * 100),channels=4,freq=10,noise=0.01,block=100"))
    let publisher = try Publisher(
        configuration: PublisherConfiguration(endpoint: "tcp://127.0.0.1:\(port)", apiKey: "peer-key"),
        sources: [source])
    emit("ready \(publisher.port ?? 0)")
    while true { sleep(60) }
case "subscribe":
    let subject = try Subject(options: SubjectOptions(receiveHighWaterMark: 20))
    let counter = Counter()
    subject.register(counter)
    try subject.open(address: "127.0.0.1", port: port, apiKey: "peer-key", description: arguments[3], timeout: 30)
    try subject.start()
    let done = DispatchSemaphore(value: 0)
    Thread {
        while let line = readLine(), !line.isEmpty {}
        done.signal()
    }.start()
    while done.wait(timeout: .now() + .milliseconds(50)) == .timedOut { emit(counter.line(subject)) }
    emit(counter.line(subject))
    subject.close()
default:
    exit(2)
}
