import Foundation
import Synchronization
import Testing
import TributaryWire

@testable import TributaryTransport

/// An observer that records everything it is given (on the callback queue) for the test thread.
///
/// `@unchecked Sendable`: every stored property is behind the lock.
final class Recorder: Observer, @unchecked Sendable {
    struct Entry: Sendable {
        var header: FrameHeader?
        var kind: String
        var package: Package?
        var error: ErrorReport?
        var file: ReceivedFile?
        var gap: Gap?
        var callbackThread: String
    }

    private let lock = NSLock()
    private var entries: [Entry] = []

    var all: [Entry] { lock.withLock { entries } }
    func of(_ kind: String) -> [Entry] { all.filter { $0.kind == kind } }
    var errors: [ErrorReport] { all.compactMap(\.error) }
    var analog: [(FrameHeader, AnalogData)] {
        all.compactMap { entry in
            guard entry.kind == "analog", case .analog(let data)? = entry.package, let header = entry.header else { return nil }
            return (header, data)
        }
    }

    private func add(
        _ kind: String, _ header: FrameHeader?, package: Package? = nil, error: ErrorReport? = nil,
        file: ReceivedFile? = nil, gap: Gap? = nil
    ) {
        let entry = Entry(
            header: header, kind: kind, package: package, error: error, file: file, gap: gap,
            callbackThread: currentThreadName())
        lock.withLock { entries.append(entry) }
    }

    func didReceiveConfiguration(_ configuration: Configuration, header: FrameHeader) {
        add("configuration", header, package: .configuration(configuration))
    }
    func didReceiveError(_ error: ErrorReport) { add("error", nil, error: error) }
    func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) { add("analog", header, package: .analog(data.materialize())) }
    func didReceiveDigitalData(_ data: DigitalView, header: FrameHeader) { add("digital", header, package: .digital(data.materialize())) }
    func didReceiveMessage(_ message: Message, header: FrameHeader) { add("message", header, package: .message(message)) }
    func didReceiveXML(_ xml: String, header: FrameHeader) { add("xml", header, package: .xml(xml)) }
    func didReceiveFile(_ file: ReceivedFile, header: FrameHeader) { add("file", header, file: file) }
    func didReceiveImage(_ image: ReceivedFile, header: FrameHeader) { add("image", header, file: image) }
    func didReceiveArray(_ array: ArrayView, header: FrameHeader) { add("array", header, package: .array(array.materialize())) }
    func didReceiveDoubleArray(_ array: ArrayView, header: FrameHeader) { add("array-double", header) }
    func didReceiveFloatArray(_ array: ArrayView, header: FrameHeader) { add("array-float", header) }
    func didReceiveIntegerArray(_ array: ArrayView, header: FrameHeader) { add("array-int", header) }
    func didReceiveShortArray(_ array: ArrayView, header: FrameHeader) { add("array-short", header) }
    func didReceiveLongArray(_ array: ArrayView, header: FrameHeader) { add("array-long", header) }
    func didReceiveBoolArray(_ array: ArrayView, header: FrameHeader) { add("array-bool", header) }
    func didReceiveStringArray(_ array: ArrayView, header: FrameHeader) { add("array-string", header) }
    func didReceiveGap(_ gap: Gap, header: FrameHeader) { add("gap", header, gap: gap) }
    func didReconnect(_ welcome: Welcome) { add("reconnect", nil) }
}

/// Collects what subscribers send to a publisher.
final class Inbox: Sendable {
    private let packages = Mutex<[SubscriberPackage]>([])
    var all: [SubscriberPackage] { packages.withLock { $0 } }
    func add(_ package: SubscriberPackage) { packages.withLock { $0.append(package) } }
}

/// A subject with a `Recorder` registered.
func recordingSubject() throws -> (Subject, Recorder) {
    let subject = try Subject()
    let recorder = Recorder()
    subject.register(recorder)
    return (subject, recorder)
}

/// A publisher on 127.0.0.1 with a free port, and its inbox.
func makePublisher(
    apiKey: String = "secret", sources: [any Source] = [], inbox: Inbox? = nil,
    configure: (inout PublisherConfiguration) -> Void = { _ in }
) throws -> Publisher {
    var configuration = PublisherConfiguration(endpoint: "tcp://127.0.0.1:0", apiKey: apiKey, description: "test publisher")
    configure(&configuration)
    var handler: (@Sendable (SubscriberPackage) -> Void)?
    if let inbox { handler = { package in inbox.add(package) } }
    return try Publisher(configuration: configuration, sources: sources, onPackage: handler)
}

/// A CURVE publisher (API key "k") on a free port of 127.0.0.1 with `keys`, in `context` (whose ZAP
/// handler decides which clients get in).
func makeCurvePublisher(keys: ZMQCurveKeyPair, context: ZMQContext) throws -> Publisher {
    try Publisher(
        configuration: PublisherConfiguration(endpoint: "tcp://127.0.0.1:0", apiKey: "k", curve: PublisherCurve(keys: keys)),
        context: context)
}

/// An analog frame of `channels` rows holding `row * 1000 + sample + first`.
func rampFrame(channels: Int, samples: Int, first: Int = 0, sourceID: UInt32 = 1) -> Frame {
    let data = AnalogData(
        channels: (0..<channels).map { row in (0..<samples).map { Double(row * 1000 + $0 + first) } },
        firstSample: UInt64(first))
    return Frame(encoding: .analog(data), timestampNs: wallClockNanoseconds(), sourceID: sourceID)
}

/// Waits until `condition` holds, polling every 2 ms, for at most `timeout` (a bound, not a timing assertion).
@discardableResult
func waitUntil(_ timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool { eventually(timeout: timeout, condition) }

/// A hand-driven DEALER for the tests that must break the protocol (no hello, garbage, raw frames),
/// owned by the test thread.
final class RawClient {
    let context: ZMQContext
    let socket: ZMQSocket

    /// - Parameter routingID: the id the publisher's ROUTER knows this peer by (nil: libzmq's own).
    init(port: Int, maxMessageSize: Int64 = -1, routingID: [UInt8]? = nil) throws {
        context = try ZMQContext()
        socket = try testSocket(context, .dealer)
        try socket.setOption(.maxMessageSize, maxMessageSize)
        if let routingID { try socket.setOption(.routingID, routingID) }
        try socket.connect("tcp://127.0.0.1:\(port)")
    }

    deinit { socket.close() }

    /// A client on `port` that has said hello (with the default key) and been welcomed.
    static func welcomed(port: Int) throws -> RawClient {
        let client = try RawClient(port: port)
        try client.hello()
        #expect(client.receive(until: .welcome) != nil)
        return client
    }

    func send(_ frame: Frame) throws {
        var payload = try MessageFraming.payloadMessage(frame)
        try MessageFraming.send(header: frame.header, payload: &payload, routingID: nil, on: socket)
    }

    func send(_ package: Package, sequence: UInt64 = 0, timestampNs: Int64 = wallClockNanoseconds(), filterID: UInt32 = 0) throws {
        try send(Frame(encoding: package, sequence: sequence, timestampNs: timestampNs, filterID: filterID))
    }

    func hello(key: String = "secret", timeout: Double = 5, timestampNs: Int64 = wallClockNanoseconds()) throws {
        try send(.hello(Hello(apiKey: key, clientDescription: "raw", timeoutSeconds: timeout)), timestampNs: timestampNs)
    }

    /// The next frame, or nil when none comes within the socket's receive timeout.
    func receive() -> Frame? {
        while true {
            guard let parts = try? socket.receiveMultipart() else { return nil }
            if case .frame(let frame)? = try? MessageFraming.decode(parts[...], maxFrameSize: WireLimits.maxFrameSize) { return frame }
        }
    }

    /// Frames until one of `kind` (included), or nil when it does not come.
    func receive(until kind: FrameKind) -> [Frame]? {
        var frames: [Frame] = []
        while let frame = receive() {
            frames.append(frame)
            if frame.header.kind == kind { return frames }
        }
        return nil
    }
}

/// The error frame's report among `frames`.
func errorReport(in frames: [Frame]?) -> ErrorReport? {
    for frame in frames ?? [] { if case .error(let report)? = try? frame.payload() { return report } }
    return nil
}
