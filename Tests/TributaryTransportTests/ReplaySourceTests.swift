import Foundation
import Testing
import TributaryCapture
import TributaryDSP
import TributaryWire

@testable import TributarySources
@testable import TributaryTransport

@Suite struct ReplaySourceTests {
    /// A capture of two devices as a recorder would have written it, with session frames (gap, error)
    /// that a replay must not re-send. Returns the path and the recorded data frames per source.
    private func makeCapture(in directory: String) throws -> (String, [UInt32: [Frame]]) {
        let path = (directory as NSString).appendingPathComponent("replay-source.tcap")
        let writer = try CaptureWriter(path: path)
        var first = SimulatedDevice(try SimulationSpec(parsing: "id=1,name=int16 device,rate=1000,channels=3,freq=20,bits=12,block=50"))
        var second = SimulatedDevice(try SimulationSpec(parsing: "id=2,name=float device,rate=2000,channels=2,freq=5,block=100,lines=2"))
        var recorded: [UInt32: [Frame]] = [1: [], 2: []]
        var sequence: UInt64 = 0
        func append(_ frame: Frame) throws {
            try writer.append(
                frame.withHeader(
                    {
                        var h = frame.header; h.sequence = sequence; return h
                    }()))
            sequence += 1
        }
        let t0: Int64 = 1_764_489_600_000_000_000
        try append(first.configurationFrame(timestampNs: t0))
        try append(second.configurationFrame(timestampNs: t0))
        for block in 0..<40 {
            let t = t0 + Int64(block) * 50_000_000
            let a = first.nextAnalogFrame(timestampNs: t)
            try append(a)
            recorded[1]!.append(a)
            if block % 2 == 0 {
                let b = second.nextAnalogFrame(timestampNs: t)
                try append(b)
                recorded[2]!.append(b)
                let d = second.digitalFrame(forBlockEndingAt: second.nextSample, timestampNs: t)!
                try append(d)
                recorded[2]!.append(d)
            }
            if block == 10 {
                let m = Frame(encoding: .message(Message("calibrated", code: 3)), timestampNs: t, sourceID: 1)
                try append(m)
                recorded[1]!.append(m)
                // Session frames of the recording: not replayed.
                try append(Frame(encoding: .gap(Gap(firstMissingSequence: 3, missingCount: 2)), timestampNs: t, sourceID: 1))
                try append(Frame(encoding: .error(ErrorReport(.checksumMismatch, "a file was damaged")), timestampNs: t, sourceID: 2))
            }
        }
        try writer.close()
        return (path, recorded)
    }

    /// Decoding while replaying and replaying a preload (`serve --preload`) deliver the same frames.
    @Test(arguments: [false, true])
    func everyRecordedDataFrameIsReplayedExactlyToEverySubscriber(preloaded: Bool) throws {
        let directory = NSTemporaryDirectory() + "replay-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (path, recorded) = try makeCapture(in: directory)

        let sources = try ReplaySource.sources(
            capture: path, speed: .asFastAsCredit, waitForSubscribers: 2,
            preloadLimit: preloaded ? 1 << 30 : nil)
        let frameBytes = try CaptureReader(path: path).sources.reduce(0) { $0 + $1.frameBytes }
        #expect(sources.reduce(0) { $0 + $1.preloadedBytes } == (preloaded ? frameBytes : 0))
        if preloaded {
            // The file is not read again: the replay does not depend on it any more.
            try FileManager.default.removeItem(atPath: path)
        }
        #expect(sources.map(\.info.id) == [1, 2])
        #expect(sources[0].info.description == "int16 device")
        #expect(sources[1].configuration.lines.count == 2)
        let publisher = try makePublisher(sources: sources)
        defer { publisher.stop() }
        // A second subscriber with a tiny credit window: the replay waits for it, nothing is dropped.
        var subjects: [(Subject, Recorder)] = []
        for window in [UInt32(256), 4] {
            let subject = try Subject(options: SubjectOptions(creditWindow: window))
            let recorder = Recorder()
            subject.register(recorder)
            try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "window \(window)")
            subjects.append((subject, recorder))
        }
        for (subject, _) in subjects { try subject.start() }
        let expected = recorded.values.reduce(0) { $0 + $1.count }
        for (_, recorder) in subjects {
            #expect(
                waitUntil(.seconds(20)) { recorder.all.filter { ["analog", "digital", "message"].contains($0.kind) }.count == expected })
        }
        #expect(waitUntil { sources.allSatisfy { $0.progress.finished } && publisher.losslessFramesPending == 0 })
        #expect(sources.map(\.progress.framesPublished) == [recorded[1]!.count, recorded[2]!.count])
        // Skipped: the recorded configuration (each welcome carries it) and the gap or error frame.
        #expect(sources.map(\.progress.framesSkipped) == [2, 2])

        for (subject, recorder) in subjects {
            for id: UInt32 in [1, 2] {
                let received = recorder.all.filter { ["analog", "digital", "message"].contains($0.kind) && $0.header?.sourceID == id }
                #expect(received.count == recorded[id]!.count)
                for (entry, frame) in zip(received, recorded[id]!) {
                    #expect(entry.header?.timestampNs == frame.header.timestampNs)
                    #expect(entry.header?.flags.contains(.replayed) == true)
                    #expect(entry.header?.filterID == 0)
                    #expect(entry.package == (try frame.payload().materialize()))
                }
            }
            #expect(recorder.of("gap").isEmpty)
            #expect(recorder.errors.isEmpty)
            #expect(subject.statistics().unaccountedLoss == 0)
            subject.close()
        }
    }

    /// A preload is refused, before anything is decoded, when the frames would exceed the limit;
    /// a limit of exactly their size is enough.
    @Test func aPreloadBeyondItsLimitIsRefusedWithTheSizesItNeeds() throws {
        let directory = NSTemporaryDirectory() + "replay-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (path, _) = try makeCapture(in: directory)
        let frameBytes = try CaptureReader(path: path).sources.reduce(0) { $0 + $1.frameBytes }
        #expect(frameBytes > 0)
        do {
            _ = try ReplaySource.sources(capture: path, speed: .asFastAsCredit, preloadLimit: frameBytes - 1)
            Issue.record("a preload of \(frameBytes) bytes was accepted under a limit of \(frameBytes - 1)")
        } catch {
            #expect(error.kind == .usage)
            #expect(error.file == path)
            #expect(error.detail.contains("preloaded replay needs") && error.detail.contains("replay it without preloading"))
        }
        let sources = try ReplaySource.sources(capture: path, speed: .asFastAsCredit, preloadLimit: frameBytes)
        #expect(sources.reduce(0) { $0 + $1.preloadedBytes } == frameBytes)
    }

    @Test func theReplayClockMapsRecordedTimeOverTheSpeedFactor() {
        let clock = ReplayClock(originNs: 1_000, speed: .factor(2))
        #expect(clock.deadline(forRecordedTime: 1_000 + 1_000_000_000, start: 5) == 5 + 500_000_000)
        #expect(clock.deadline(forRecordedTime: 0, start: 5) == 5)  // before the origin: due at once
        #expect(ReplayClock(originNs: 0, speed: .asFastAsCredit).deadline(forRecordedTime: 9, start: 5) == nil)
        // A slow factor over a very long recording: the deadline saturates instead of trapping.
        #expect(ReplayClock(originNs: 0, speed: .factor(0.001)).deadline(forRecordedTime: .max, start: 5) == .max)
        let start = clock.begin()
        #expect(clock.begin() == start)  // shared by every source of the replay
    }

    @Test func aSimulatedDeviceSourcePublishesItsDigitalLines() throws {
        let spec = try SimulationSpec(parsing: "id=3,name=lines,rate=20000,channels=1,freq=5,block=200,lines=3")
        let publisher = try makePublisher(sources: [SimulatedDeviceSource(spec: spec)])
        defer { publisher.stop() }
        let (subject, recorder) = try recordingSubject()
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "lines")
        try subject.start()
        #expect(waitUntil { recorder.of("digital").count >= 5 })
        subject.close()
        let device = SimulatedDevice(spec)
        for entry in recorder.of("digital") {
            guard case .digital(let data)? = entry.package else { Issue.record("not digital"); continue }
            let expected = device.digitalFrame(forBlockEndingAt: data.firstSample + 200, timestampNs: 0)!
            #expect(Package.digital(data) == (try expected.payload().materialize()))
        }
    }
}
