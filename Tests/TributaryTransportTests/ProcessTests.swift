import Foundation
import Synchronization
import Testing
import TributaryDSP
import TributarySources
import TributaryWire

@testable import TributaryTransport

/// A TransportPeer process (Tests/TransportPeer) whose stdout lines are collected.
final class PeerProcess: @unchecked Sendable {
    // `@unchecked Sendable`: `lines` is behind its lock; `process` is used from the test thread only.
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var collected: [String] = []
    private var partial = ""

    init(_ arguments: [String]) throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("TransportPeer")
        process.executableURL = binary
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock {
                self.partial += String(decoding: data, as: UTF8.self)
                while let newline = self.partial.firstIndex(of: "\n") {
                    self.collected.append(String(self.partial[..<newline]))
                    self.partial = String(self.partial[self.partial.index(after: newline)...])
                }
            }
        }
        try process.run()
    }

    var lines: [String] { lock.withLock { collected } }

    /// The last JSON line, decoded.
    var lastCounters: [String: Any]? {
        guard let line = lines.last(where: { $0.hasPrefix("{") }) else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Closes stdin (a subscriber peer then prints its final counters and exits) and waits for the exit.
    func finish() {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate() }
    }

    func killNow() {
        signal(SIGKILL)
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning { killNow() }
    }
}

@Suite(.serialized) struct ProcessTests {
    @Test func aKilledPublisherIsALostConnectionAndTheStreamResumesWithTheSameFilters() throws {
        let port = try freePort()
        var peer = try PeerProcess(["publish", "\(port)", "200"])
        #expect(waitUntil { peer.lines.contains("ready \(port)") })
        let reconnects = Atomic<Int>(0)
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), maxDelay: .milliseconds(400)) { error, _ in
            reconnects.add(1, ordering: .relaxed)
            return ReconnectPolicy.defaultShouldReconnect(error, 1)
        }
        let subject = try Subject(options: SubjectOptions(reconnect: policy))
        let recorder = Recorder()
        subject.register(recorder)
        try subject.open(address: "127.0.0.1", port: port, apiKey: "peer-key", description: "resume", timeout: 3)
        let filter = try subject.sendFilter(try AnalogFilterRequest(query: "1-2"))
        #expect(filter == 1)
        try subject.start()
        #expect(waitUntil { recorder.analog.count >= 5 })
        let killedAt = ContinuousClock.now
        peer.killNow()
        #expect(waitUntil(.seconds(3)) { recorder.errors.contains { $0.code == .lostConnection } })
        // Within the session timeout (3 s): the broken TCP connection is seen at once.
        #expect(ContinuousClock.now - killedAt < .seconds(3))
        let countAtLoss = recorder.analog.count
        peer = try PeerProcess(["publish", "\(port)", "200"])
        #expect(waitUntil { peer.lines.contains("ready \(port)") })
        #expect(waitUntil(.seconds(10)) { recorder.of("reconnect").count == 1 })
        #expect(waitUntil { recorder.analog.count >= countAtLoss + 5 })
        // Same filter id as the application was given, same channel selection, after the reconnection.
        for (header, data) in recorder.analog[countAtLoss...] {
            #expect(header.filterID == filter)
            #expect(data.channelIndexes == [1, 2])
        }
        #expect(reconnects.load(ordering: .relaxed) >= 1)
        #expect(subject.statistics().reconnections == 1)
        subject.close()
        peer.killNow()
    }

    @Test func aStoppedSubscriberDoesNotSlowAnotherAndItsGapsEqualTheDrops() throws {
        // 64 KiB frames at 400 frames/s (26 MB/s): a stopped subscriber fills its queues and TCP
        // buffers within a second, after which the publisher must drop its frames.
        let frames = 1_400
        let source = SimulatedDeviceSource(
            spec: try SimulationSpec(parsing: "id=1,name=fast,rate=409600,channels=8,freq=1,noise=0,block=1024"),
            paced: true, frameLimit: frames)
        let gate = GatedSource(source)
        // 64 queued frames (160 ms at this rate) let the running subscriber ride out a loaded machine's
        // scheduling hiccups; the stopped one still overflows them within a second.
        let publisher = try makePublisher(apiKey: "peer-key", sources: [gate]) { $0.subscriberQueueFrames = 64 }
        defer { publisher.stop() }
        let stopped = try PeerProcess(["subscribe", "\(publisher.port!)", "stopped"])
        let (subject, recorder) = try recordingSubject()
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "peer-key", description: "running")
        try subject.start()
        #expect(waitUntil { publisher.subscribers().filter(\.isStarted).count == 2 })
        gate.open()
        #expect(waitUntil { recorder.analog.count >= 100 })
        stopped.signal(SIGSTOP)
        // Once the stopped subscriber's queue is full (the publisher drops its frames), the other one
        // keeps receiving: it must get a further 300 frames while the first is still stopped. The
        // conditions are on progress, not on time (a loaded 2-core CI machine ran this 7× slower than
        // real time once), so the timeouts are generous.
        func stoppedDrops() -> UInt64 { publisher.subscribers().first { $0.description == "stopped" }?.framesDropped ?? 0 }
        #expect(waitUntil(.seconds(30)) { stoppedDrops() > 0 })
        let countAtFirstDrop = recorder.analog.count
        #expect(waitUntil(.seconds(30)) { recorder.analog.count >= min(frames, countAtFirstDrop + 300) })
        let dropsWhileStopped = stoppedDrops()
        stopped.signal(SIGCONT)
        #expect(dropsWhileStopped > 0)
        // Wait until the source is done and the stopped subscriber has everything or its gap notice for it.
        #expect(
            waitUntil(.seconds(30)) {
                guard let counters = stopped.lastCounters, let analog = counters["analog"] as? Int,
                    let missing = counters["missing"] as? Int
                else { return false }
                return analog + missing == frames
            })
        let drops = publisher.subscribers().first { $0.description == "stopped" }?.framesDropped
        let counters = stopped.lastCounters ?? [:]
        #expect((counters["missing"] as? Int).map(UInt64.init) == drops)
        #expect(counters["unaccounted"] as? Int == 0)
        #expect(waitUntil(.seconds(10)) { recorder.analog.count >= frames })
        #expect(recorder.analog.count == frames)
        #expect(recorder.of("gap").isEmpty)
        #expect(subject.statistics().unaccountedLoss == 0)
        stopped.finish()
        subject.close()
    }
}

/// Holds a source back until the test opens the gate (so every subscriber sees the first frame).
final class GatedSource: Source {
    let inner: SimulatedDeviceSource
    private let gate = DispatchSemaphore(value: 0)
    init(_ inner: SimulatedDeviceSource) { self.inner = inner }
    var info: SourceInfo { inner.info }
    var configuration: Configuration { inner.configuration }
    var delivery: SourceDelivery { inner.delivery }
    func open() { gate.signal() }
    func run(_ sink: SourceSink) {
        while gate.wait(timeout: .now() + .milliseconds(50)) == .timedOut { if sink.isCancelled { return } }
        inner.run(sink)
    }
}
