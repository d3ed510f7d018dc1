import Foundation
import Testing
import TributaryWire

@testable import TributaryTransport

/// Options of the publisher and subscriber exercised end to end over 127.0.0.1: CURVE with a ZAP
/// allow-list, digital lines on change only, packages to one subscriber, many Subjects at once,
/// and delivery on a caller-supplied DispatchQueue.
@Suite struct TransportOptionTests {
    @Test func curveSessionsCarryDataOnlyForAllowedKeys() throws {
        let context = try ZMQContext()
        let serverKeys = try ZMQCurveKeyPair.generate()
        let allowed = try ZMQCurveKeyPair.generate(), stranger = try ZMQCurveKeyPair.generate()
        // Without a ZAP handler the publisher refuses to start (any key would get in otherwise).
        #expect(throws: (any Error).self) {
            try Publisher(
                configuration: PublisherConfiguration(endpoint: "tcp://127.0.0.1:0", apiKey: "k", curve: PublisherCurve(keys: serverKeys)),
                context: context)
        }
        let zap = try ZMQZAPHandler(context: context, policy: .allow([allowed.publicKey: "lab-client"], domain: "tributary"))
        defer { zap.stop() }
        let publisher = try makeCurvePublisher(keys: serverKeys, context: context)
        defer { publisher.stop() }

        let subject = try Subject(options: SubjectOptions(curve: SubjectCurve(serverKey: serverKeys.publicKey, keys: allowed)))
        let recorder = Recorder()
        subject.register(recorder)
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "k", description: "encrypted", timeout: 3)
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        #expect(publisher.subscribers().first?.userID == "lab-client")
        #expect(publisher.publish(.message(Message("over CURVE", code: 7))))
        #expect(waitUntil { recorder.of("message").count == 1 })
        subject.close()

        // A key that is not on the allow-list never gets a session: nothing answers within the timeout.
        let refused = try Subject(options: SubjectOptions(curve: SubjectCurve(serverKey: serverKeys.publicKey, keys: stranger)))
        #expect(throws: ErrorReport.self) {
            try refused.open(address: "127.0.0.1", port: publisher.port!, apiKey: "k", description: "stranger", timeout: 2)
        }
    }

    @Test func digitalLinesAreSentOnChangeOnlyWhenAsked() throws {
        let publisher = try makePublisher { $0.digitalOnChangeOnly = true }
        defer { publisher.stop() }
        let (subject, recorder) = try recordingSubject()
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "lines", timeout: 5)
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        let steady = DigitalData(lines: [[true, true, true], [false, false, false]])
        let toggled = DigitalData(lines: [[true, true, false], [false, false, false]])  // line 0 falls
        for data in [steady, steady, steady, toggled, steady, steady] {
            #expect(publisher.publish(Frame(encoding: .digital(data), sourceID: 1)))
        }
        #expect(publisher.publish(.message(Message("end"))))
        #expect(waitUntil { recorder.of("message").count == 1 })
        // Sent: the first frame, the one in which line 0 falls, and the next steady one (line 0 rises
        // again between frames); the repeats of an unchanged state are suppressed.
        #expect(recorder.of("digital").count == 3)
        #expect(publisher.statistics().digitalSuppressed == 3)
    }

    @Test func packagesCanGoToOneSubscriberOnly() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        var subjects: [(Subject, Recorder)] = []
        for name in ["first", "second"] {
            let (subject, recorder) = try recordingSubject()
            try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: name, timeout: 5)
            try subject.start()
            subjects.append((subject, recorder))
        }
        #expect(waitUntil { publisher.subscribers().filter(\.isStarted).count == 2 })
        let second = try #require(publisher.subscribers().first { $0.description == "second" })
        #expect(publisher.publish(.message(Message("only for second")), to: .session(second.sessionID)))
        #expect(publisher.publish(.message(Message("for everyone"))))
        #expect(waitUntil { subjects[1].1.of("message").count == 2 && subjects[0].1.of("message").count == 1 })
        usleep(100_000)
        #expect(subjects[0].1.of("message").map(\.package) == [.message(Message("for everyone"))])
        for (subject, _) in subjects { subject.close() }
    }

    @Test func manySubjectsAtOnceEachGetEveryFrameInOrder() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let count = 5
        var subjects: [(Subject, Recorder)] = []
        for i in 0..<count {
            let (subject, recorder) = try recordingSubject()
            try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "s\(i)", timeout: 5)
            try subject.start()
            subjects.append((subject, recorder))
        }
        #expect(waitUntil { publisher.subscribers().filter(\.isStarted).count == count })
        for i in 0..<50 { #expect(publisher.publish(rampFrame(channels: 2, samples: 10, first: i * 10))) }
        for (subject, recorder) in subjects {
            #expect(waitUntil { recorder.analog.count == 50 })
            #expect(recorder.analog.map(\.1.firstSample) == (0..<50).map { UInt64($0 * 10) })
            #expect(subject.statistics().unaccountedLoss == 0)
            subject.close()
        }
    }

    /// Inline delivery: observers run on each Subject's socket thread, in order, and two Subjects
    /// sharing the queue never call them at the same time.
    @Test func observersCanRunInlineOnTheSocketThread() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let queue = CallbackQueue(executor: .inline)
        final class Overlap: Observer, @unchecked Sendable {
            let lock = NSLock()
            var running = 0, most = 0
            func didReceiveMessage(_ message: Message, header: FrameHeader) {
                lock.withLock {
                    running += 1; most = max(most, running)
                }
                usleep(200)  // long enough for the other Subject's message to arrive meanwhile
                lock.withLock { running -= 1 }
            }
        }
        let overlap = Overlap()
        var sessions: [(Subject, Recorder)] = []
        for i in 0..<2 {
            let subject = try Subject(callbackQueue: queue)
            let recorder = Recorder()
            subject.register(recorder)
            subject.register(overlap)
            try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "inline \(i)", timeout: 5)
            try subject.start()
            sessions.append((subject, recorder))
        }
        #expect(waitUntil { publisher.subscribers().filter(\.isStarted).count == 2 })
        for i in 0..<100 { #expect(publisher.publish(.message(Message("m\(i)", code: Int32(i))))) }
        for (subject, recorder) in sessions {
            #expect(waitUntil { recorder.of("message").count == 100 })
            #expect(
                recorder.of("message").map { entry -> Int32 in
                    if case .message(let m)? = entry.package { return m.code } else { return -1 }
                } == (0..<100).map { Int32($0) })
            #expect(recorder.all.allSatisfy { $0.callbackThread == "tributary-sub" }, "\(Set(recorder.all.map(\.callbackThread)))")
            subject.close()
        }
        #expect(overlap.most == 1)
        #expect(queue.statistics.delivered >= 200 && queue.statistics.depth == 0)
    }

    @Test func observersCanRunOnACallersDispatchQueue() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let queue = DispatchQueue(label: "app.observers")
        let subject = try Subject(callbackQueue: CallbackQueue(capacity: 64, executor: .dispatch(queue)))
        let recorder = Recorder()
        subject.register(recorder)
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "gcd", timeout: 5)
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        for i in 0..<20 { #expect(publisher.publish(.message(Message("m\(i)", code: Int32(i))))) }
        #expect(waitUntil { recorder.of("message").count == 20 })
        #expect(
            recorder.of("message").map { entry -> Int32 in
                if case .message(let m)? = entry.package { return m.code } else { return -1 }
            } == (0..<20).map { Int32($0) })
        subject.close()
    }
}

/// `SubjectOptions.receiveBufferBytes` reaches the subscriber's TCP connection (the kernel doubles
/// what is asked, for its bookkeeping), and nil leaves the kernel's autotuned buffer.
@Suite struct ReceiveBufferTests {
    /// The kernel receive buffer of this process's TCP socket connected to 127.0.0.1:`port`, if any.
    private func receiveBuffer(connectedTo port: Int) -> Int32? {
        for fd in Int32(0)..<Int32(4_096) {
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            }
            guard named == 0, peer.sin_family == sa_family_t(AF_INET), Int(UInt16(bigEndian: peer.sin_port)) == port else { continue }
            var value: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, &size) == 0 else { continue }
            return value
        }
        return nil
    }

    private func limit() -> Int {
        Int(
            (try? String(contentsOfFile: "/proc/sys/net/core/rmem_max", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
    }

    @Test func theSubscribersReceiveBufferIsTheOneAskedFor() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let port = publisher.port!
        // 128 KiB is below any Linux rmem_max (212 992 by default): granted as asked, doubled.
        let fixed = try Subject(options: SubjectOptions(receiveBufferBytes: 128 << 10))
        try fixed.open(address: "127.0.0.1", port: port, apiKey: "secret", description: "fixed")
        let granted = receiveBuffer(connectedTo: port)
        #expect(granted == Int32(2 * (128 << 10)), "\(String(describing: granted))")
        fixed.close()
        #expect(waitUntil { receiveBuffer(connectedTo: port) == nil })

        // The default: 4 MiB exactly where the system allows it.
        #expect(SubjectOptions().receiveBufferBytes == (limit() >= 4 << 20 ? 4 << 20 : nil))
        var autotuned = SubjectOptions()
        autotuned.receiveBufferBytes = nil
        let subject = try Subject(options: autotuned)
        try subject.open(address: "127.0.0.1", port: port, apiKey: "secret", description: "autotuned")
        let buffer = receiveBuffer(connectedTo: port)
        #expect(
            buffer != nil && buffer != Int32(2 * (128 << 10)) && buffer != Int32(2 * (4 << 20)), "autotuned: \(String(describing: buffer))")
        subject.close()
    }
}
