import Foundation
import Synchronization
import Testing
import TributaryDSP
import TributarySources
import TributaryWire

@testable import TributaryTransport

/// A publisher that welcomes a hello and then misbehaves: stays silent, or sends bytes that are no frame.
final class FakePublisher {
    enum Behaviour: Sendable { case silentAfterWelcome, garbageAfterWelcome, strangerAfterWelcome }
    final class State {
        let router: ZMQSocket
        init(router: ZMQSocket) { self.router = router }
    }
    let loop: ZMQLoop<State>
    let port: Int
    let closesReceived = Atomic<Int>(0)

    init(_ behaviour: Behaviour) throws {
        let closes = ZMQLoopBox(0)
        loop = try ZMQLoop(name: "fake-pub", context: try ZMQContext()) { scope in
            let router = try ZMQSocket.publisherRouter(context: scope.context)
            try router.bind("tcp://127.0.0.1:0")
            scope.register(router) { socket, _ in
                while let parts = try? socket.receiveMultipart(flags: .dontWait) {
                    guard case .frame(let frame)? = try? MessageFraming.decode(parts[1...], maxFrameSize: 1 << 20) else { continue }
                    let routingID = parts[0].bytes
                    if frame.header.kind == .close { closes.value.withLock { $0 += 1 } }
                    guard frame.header.kind == .hello else { continue }
                    let welcome = Frame(encoding: .welcome(Welcome(sessionID: 1, publisherDescription: "fake", sources: [])))
                    var payload = try? MessageFraming.payloadMessage(welcome)
                    try? MessageFraming.send(header: welcome.header, payload: &payload, routingID: routingID, on: socket)
                    if behaviour == .garbageAfterWelcome {
                        try? socket.send(multipart: [routingID, Array("this is not a Tributary frame at all....".utf8)], flags: .dontWait)
                    }
                    if behaviour == .strangerAfterWelcome {
                        // One frame of the session, then what a publisher answers a peer it does not
                        // know (the frames a subscriber gets when libzmq reconnected under it):
                        // error 12 and a close, numbered from 0 again.
                        let frames = [
                            Frame(encoding: .message(Message("in session", code: 1)), sequence: 1),
                            Frame(
                                encoding: .error(ErrorReport(.protocolViolation, "no session: the first frame must be a hello")),
                                sequence: 0),
                            Frame(encoding: .close(Close(code: .protocolViolation, reason: "no session")), sequence: 1),
                        ]
                        for frame in frames {
                            var payload = try? MessageFraming.payloadMessage(frame)
                            try? MessageFraming.send(header: frame.header, payload: &payload, routingID: routingID, on: socket)
                        }
                    }
                }
            }
            return State(router: router)
        }
        let endpoint = try loop.performAndWait { state, _ in try state.router.lastEndpoint() }
        port = Int(endpoint.split(separator: ":").last!)!
        self.closes = closes
    }

    private let closes: ZMQLoopBox<Int>
    var closeCount: Int { closes.value.withLock { $0 } }
}

/// A port on which nothing listens (bound once, then released).
func freePort() throws -> Int {
    let context = try ZMQContext()
    let socket = try ZMQSocket(context: context, type: .router)
    try socket.bind("tcp://127.0.0.1:0")
    let port = Int(try socket.lastEndpoint().split(separator: ":").last!)!
    socket.close()
    return port
}

@Suite struct ErrorCodeTests {
    @Test func argumentErrorsAndUnreachableDestinationAreSCCTCodes() throws {
        let subject = try Subject()
        func code(_ body: () throws -> Void) -> UInt32? {
            do { try body(); return nil } catch { return (error as? ErrorReport)?.code.rawValue }
        }
        #expect(code { _ = try subject.open(address: "", port: 5000, apiKey: "k", description: "d", timeout: 5) } == 8)
        #expect(code { _ = try subject.open(address: "  ", port: 5000, apiKey: "k", description: "d", timeout: 5) } == 8)
        #expect(code { _ = try subject.open(address: "127.0.0.1", port: 0, apiKey: "k", description: "d", timeout: 5) } == 9)
        #expect(code { _ = try subject.open(address: "127.0.0.1", port: -4, apiKey: "k", description: "d", timeout: 5) } == 9)
        #expect(code { _ = try subject.open(address: "127.0.0.1", port: 5000, apiKey: "k", description: "d", timeout: 1) } == 2)
        #expect(code { _ = try subject.open(address: "127.0.0.1", port: 5000, apiKey: "k", description: "d", timeout: 0.5) } == 2)
        #expect(code { try subject.start() } == 6)
        #expect(code { try subject.sendMessage("not open") } == 6)
        let port = try freePort()
        #expect(code { _ = try subject.open(address: "127.0.0.1", port: port, apiKey: "k", description: "d", timeout: 1.2) } == 7)
        #expect(!subject.isOpen)
    }

    @Test func theHelloIsRefusedWithCodes1To3AndAWrongKeyGetsNoData() throws {
        let source = SimulatedDeviceSource(spec: try SimulationSpec(parsing: "id=1,name=s,rate=1000,channels=1,freq=5,noise=0,block=10"))
        let publisher = try makePublisher(sources: [source])
        defer { publisher.stop() }
        let (subject, recorder) = try recordingSubject()
        #expect(throws: ErrorReport.self) {
            try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "wrong", description: "x")
        }
        do { try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "wrong", description: "x") } catch {
            #expect(error.code == .wrongAPIKey)
        }
        // Raw clients: wrong key, timeout not above 1 s, clock an hour off; each gets error + close, then nothing.
        for (hello, code) in [
            ({ (c: RawClient) in try c.hello(key: "nope") }, ErrorCode.wrongAPIKey),
            ({ (c: RawClient) in try c.hello(timeout: 1) }, .wrongTimeout),
            ({ (c: RawClient) in try c.hello(timestampNs: wallClockNanoseconds() - 3_600_000_000_000) }, .wrongTimestamp),
        ] {
            let client = try RawClient(port: publisher.port!)
            try hello(client)
            let frames = client.receive(until: .close)
            #expect(errorReport(in: frames)?.code == code)
            try client.send(.start, sequence: 1)
            try client.socket.setOption(.receiveTimeout, 300)
            // Nothing but (rate-limited) refusals: never data.
            while let frame = client.receive() { #expect(frame.header.kind == .error || frame.header.kind == .close) }
        }
        #expect(publisher.subscribers().isEmpty)
        #expect(recorder.analog.isEmpty)
        // The key can change at run time: the new one works, the old one no longer does.
        publisher.setAPIKey("rotated")
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "rotated", description: "ok")
        #expect(publisher.subscribers().count == 1)
        subject.close()
        let before = try Subject()
        do {
            try before.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "old key")
            Issue.record("the key from before the rotation was still accepted")
        } catch {
            #expect(error.code == .wrongAPIKey)
        }
    }

    /// A Subject with a recorder, opened on a fake publisher.
    private func openRecorded(on fake: FakePublisher, timeout: Double) throws -> (Subject, Recorder) {
        let (subject, recorder) = try recordingSubject()
        try subject.open(address: "127.0.0.1", port: fake.port, apiKey: "k", description: "d", timeout: timeout)
        return (subject, recorder)
    }

    @Test func silenceIsExpiredTimeoutAndGarbageIsMalformedFrame() throws {
        let silent = try FakePublisher(.silentAfterWelcome)
        let (subject, recorder) = try openRecorded(on: silent, timeout: 1.5)
        #expect(waitUntil(.seconds(6)) { recorder.errors.contains { $0.code == .expiredTimeout } })
        #expect(waitUntil { !subject.isOpen })

        let garbage = try FakePublisher(.garbageAfterWelcome)
        let (other, second) = try openRecorded(on: garbage, timeout: 5)
        #expect(waitUntil { second.errors.contains { $0.code == .malformedFrame } })
        // The subscriber told the publisher why it is leaving.
        #expect(waitUntil { garbage.closeCount == 1 })
        withExtendedLifetime(other) {}
    }

    @Test func framesNumberedFromZeroAgainAreALostConnectionNotTheirError() throws {
        let stranger = try FakePublisher(.strangerAfterWelcome)
        let (subject, recorder) = try openRecorded(on: stranger, timeout: 5)
        #expect(waitUntil { !recorder.errors.isEmpty })
        #expect(recorder.errors.map(\.code) == [.lostConnection], "\(recorder.errors)")
        #expect(recorder.errors.first?.message.contains("no longer knows this session") == true)
        #expect(waitUntil { !subject.isOpen })
    }

    @Test func aStoppingPublisherIsALostConnection() throws {
        let publisher = try makePublisher()
        let (subject, recorder) = try recordingSubject()
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "d")
        publisher.stop()
        #expect(waitUntil { recorder.errors.map(\.code) == [.lostConnection] })
        #expect(throws: ErrorReport.self) { try subject.sendMessage("gone") }
    }

    @Test func misbehavingClientsAreDroppedWhileOthersContinue() throws {
        let source = SimulatedDeviceSource(spec: try SimulationSpec(parsing: "id=1,name=s,rate=2000,channels=1,freq=5,noise=0,block=10"))
        let publisher = try makePublisher(sources: [source]) {
            $0.maxInboundFrameSize = 4_096
            $0.maxInboundTransferSize = 2_000
        }
        defer { publisher.stop() }
        let (subject, recorder) = try recordingSubject()
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "good")
        try subject.start()
        #expect(waitUntil { recorder.analog.count > 5 })

        // No hello: error 12.
        let noHello = try RawClient(port: publisher.port!)
        try noHello.send(.start)
        #expect(errorReport(in: noHello.receive(until: .close))?.code == .protocolViolation)
        // Garbage after a hello: error 10, session dropped.
        let garbage = try RawClient.welcomed(port: publisher.port!)
        try garbage.socket.send(Array("garbage garbage garbage garbage garbage!".utf8))
        #expect(errorReport(in: garbage.receive(until: .close))?.code == .malformedFrame)
        // A file over the publisher's transfer limit: error 11.
        let large = try RawClient.welcomed(port: publisher.port!)
        let oversized = BlobChunk.chunks(of: [UInt8](repeating: 7, count: 3_000), transferID: 9, name: "big", chunkSize: 1_000)[0]
        try large.send(.file(oversized), sequence: 1)
        #expect(errorReport(in: large.receive(until: .close))?.code == .tooLarge)
        // A message part larger than the frame limit: libzmq drops the connection outright, and the
        // publisher forgets the session with it (no heartbeat needed: the monitor reports it).
        let huge = try RawClient.welcomed(port: publisher.port!)
        try huge.send(.xml(String(repeating: "y", count: 100_000)), sequence: 1)
        // A filter id that is not the next one: error 12.
        let badFilter = try RawClient.welcomed(port: publisher.port!)
        try badFilter.send(.analogFilter(AnalogFilterRequest()), sequence: 1, filterID: 2)
        #expect(errorReport(in: badFilter.receive(until: .close))?.code == .protocolViolation)
        // A file whose MD5 does not match: error 14, and the session goes on.
        let badFile = try RawClient.welcomed(port: publisher.port!)
        var chunk = BlobChunk.chunks(of: [1, 2, 3], transferID: 1, name: "f")[0]
        chunk.md5 = [UInt8](repeating: 0xAB, count: 16)
        try badFile.send(.file(chunk), sequence: 1)
        #expect(errorReport(in: badFile.receive(until: .error))?.code == .checksumMismatch)
        try badFile.send(.message(Message("still here")), sequence: 2)

        #expect(waitUntil { publisher.subscribers().map(\.description).sorted() == ["good", "raw"] })
        let before = recorder.analog.count
        #expect(waitUntil { recorder.analog.count > before + 5 })
        #expect(recorder.errors.isEmpty)
        #expect(subject.statistics().unaccountedLoss == 0)
        subject.close()
    }

    @Test func theDisconnectPolicySendsSlowConsumer() throws {
        let publisher = try makePublisher { configuration in
            configuration.slowConsumerPolicy = .disconnect
            configuration.subscriberQueueFrames = 4
        }
        defer { publisher.stop() }
        let client = try RawClient(port: publisher.port!)
        try client.socket.setOption(.receiveHighWaterMark, 4)
        try client.hello()
        #expect(client.receive(until: .welcome) != nil)
        try client.send(.start, sequence: 1)
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        // The client does not read: its queues and the TCP buffers fill, then a send fails.
        let big = rampFrame(channels: 8, samples: 8_192)
        #expect(
            waitUntil(.seconds(10)) {
                publisher.publish(big)
                return publisher.subscribers().isEmpty
            })
        try client.socket.setOption(.receiveTimeout, 200)
        var frames: [Frame] = []
        while let frame = client.receive() { frames.append(frame) }
        try client.send(.stop, sequence: 2)
        try client.socket.setOption(.receiveTimeout, 3_000)
        if errorReport(in: frames)?.code != .slowConsumer {
            #expect(errorReport(in: client.receive(until: .close))?.code == .slowConsumer)
        }
    }
}
