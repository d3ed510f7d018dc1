import Dispatch
import Foundation
import Synchronization
import TributaryCapture
import TributaryText
import TributaryTransport
import TributaryWire

/// `tributary record A B …`: several publishers recorded into one capture, one session each (its own
/// reconnection, gaps and clock probes), their colliding source ids renumbered (`CaptureSourceNumbering`)
/// with each source's origin kept in the capture (docs/CAPTURE.md §6, source origin).
enum PublishersRecording {
    /// One publisher's session.
    struct Session: Sendable {
        var run: SubscriptionRun
        var subject: Subject
        var welcome: Welcome
    }

    /// A publisher to record: where it is, and (nil: the options' `--sources`) the sources to receive.
    struct Target: Sendable {
        var host: String
        var port: Int
        var address: String
        var sources: [UInt32]? = nil
    }

    static func run(_ options: SubscriptionOptions, addresses: [String], out: String, force: Bool, fastCodec: Bool) throws -> Int32 {
        let targets = try resolveTargets(addresses)
        let destination: CaptureDestination
        destination = try CaptureDestination(path: out, replace: force)
        let running = try Running.start(options, targets: targets, destination: destination, fastCodec: fastCodec)
        printError("recording \(running.sessions.count) publishers to \(running.writer.partialPath):")
        for (i, s) in running.sessions.enumerated() {
            printError(
                "  publisher \(i + 1): \(targets[i].address) '\(s.welcome.publisherDescription.terminalSafe)' (session \(s.welcome.sessionID)), "
                    + "sources " + describe(running.recording.mapping(publisher: i)))
        }
        let ends = drive(running, duration: options.duration)
        return try finish(running, ends: ends, out: out)
    }

    /// A recording of several publishers under way: their sessions, each on its own thread, feeding
    /// one capture (`record A B …`, and the view's recorder, docs/VIEW.md §6).
    final class Running: Sendable {
        let sessions: [Session]
        let recording: SharedRecording
        let writer: CaptureWriter
        let destination: CaptureDestination
        /// When the sessions were started (wall clock).
        let started: Date
        private let ends: Mutex<[SubscriptionEnd?]>
        private let group = DispatchGroup()

        private init(sessions: [Session], recording: SharedRecording, writer: CaptureWriter, destination: CaptureDestination) {
            self.sessions = sessions
            self.recording = recording
            self.writer = writer
            self.destination = destination
            started = Date()
            ends = Mutex(Array(repeating: nil, count: sessions.count))
        }

        /// Connects every target (one that refuses or cannot be reached fails it and nothing is written),
        /// creates the capture, records the welcomed sources' origins and starts every session's thread.
        static func start(_ options: SubscriptionOptions, targets: [Target], destination: CaptureDestination, fastCodec: Bool) throws
            -> Running
        {
            let writerOptions = RecordCommand.writerOptions(fastCodec: fastCodec)
            // Every publisher is connected before any file is created: one that refuses or cannot be
            // reached at the start fails the command, as with one ADDRESS.
            let sessions = try connectAll(targets, options: options)
            let writer: CaptureWriter
            do { writer = try CaptureWriter(destination: destination, options: writerOptions) } catch {
                for s in sessions { s.run.abandon(); s.subject.close() }
                throw CommandError("\(error)")
            }
            let recording = SharedRecording(
                writer: writer,
                publishers: zip(targets, sessions).enumerated().map { i, pair in
                    SharedRecording.Publisher(
                        index: i, address: pair.0.address, name: pair.1.welcome.publisherDescription,
                        welcomed: pair.1.welcome.sources.map(\.id))
                }, reconnect: options.reconnect)
            do { try recording.recordWelcomedOrigins() } catch {
                for s in sessions { s.run.abandon(); s.subject.close() }
                writer.abandon()
                throw CommandError("\(error) (the recording so far is in \(writer.partialPath))")
            }
            let running = Running(sessions: sessions, recording: recording, writer: writer, destination: destination)
            running.launch()
            return running
        }

        private func launch() {
            for (i, session) in sessions.enumerated() {
                group.enter()
                let thread = Thread { [self, s = session, recording] in
                    let end = s.run.run(subject: s.subject, duration: nil, watchSignals: false) { package in
                        if let failure = recording.recordClock(s.subject.clockEstimate, publisher: i) { return failure }
                        return recording.receive(package, publisher: i)
                    }
                    ends.withLock { $0[i] = end }
                    group.leave()
                }
                thread.name = "record-publisher-\(i + 1)"
                thread.start()
            }
        }

        /// Stops every session still running.
        func stop(_ end: SubscriptionEnd) { for s in sessions { s.run.stop(end) } }

        /// Waits until every session has ended, at most until `deadline`; true when they all have.
        func wait(until deadline: DispatchTime) -> Bool { group.wait(timeout: deadline) == .success }

        /// How each session ended, nil while it runs.
        var sessionEnds: [SubscriptionEnd?] { ends.withLock { $0 } }

        /// Once every session has ended: their last clock estimates written, the capture closed
        /// (`RecordCommand.closeCapture`); how each ended, the path, size and close time.
        func close(out: String) throws -> (ends: [SubscriptionEnd], path: String, fileBytes: Int, closeNs: UInt64?, complete: Bool) {
            _ = wait(until: .distantFuture)
            for (i, s) in sessions.enumerated() { _ = recording.recordClock(s.subject.clockEstimate, publisher: i) }
            let ended = sessionEnds.map { $0! }
            let total = RecordCommand.Counters.total(recording.allCounters)
            let complete = !ended.contains(where: Self.failed) && total.dataFrames > 0
            let (path, fileBytes, closeNs) = try RecordCommand.closeCapture(
                writer, destination: destination, out: out, final: total, complete: complete)
            return (ended, path, fileBytes, closeNs, complete)
        }

        static func failed(_ end: SubscriptionEnd) -> Bool {
            switch end {
            case .failed, .handlerStopped: true
            case .durationElapsed, .interrupted, .publisherClosed: false
            }
        }
    }

    /// What each ADDRESS names (host, port), `resolve:QUERY` asked of discovery; the same publisher
    /// named twice is refused.
    private static func resolveTargets(_ addresses: [String]) throws -> [Target] {
        var targets: [Target] = []
        for (i, text) in addresses.enumerated() {
            let (host, port) = try SubscriptionOptions.parseAddress(text)
            let address = "tcp://" + (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
            if let j = targets.firstIndex(where: { $0.host.lowercased() == host.lowercased() && $0.port == port }) {
                throw UsageError(
                    "ADDRESS \(i + 1) ('\(text)') names the publisher ADDRESS \(j + 1) ('\(addresses[j])') named already (\(address)): "
                        + "each publisher is recorded once")
            }
            targets.append(Target(host: host, port: port, address: address))
        }
        return targets
    }

    /// Opens every publisher's session, in address order; if one fails, those already open are closed.
    private static func connectAll(_ targets: [Target], options: SubscriptionOptions) throws -> [Session] {
        var sessions: [Session] = []
        for (i, target) in targets.enumerated() {
            var o = options
            o.host = target.host
            o.port = target.port
            if let sources = target.sources { o.request.sources = sources }
            let run = SubscriptionRun()
            do {
                let (subject, welcome) = try o.connect(run)
                sessions.append(Session(run: run, subject: subject, welcome: welcome))
            } catch {
                for s in sessions { s.run.abandon(); s.subject.close() }
                throw CommandError("publisher \(i + 1) (\(target.address)): \(error); nothing was recorded")
            }
        }
        return sessions
    }

    /// Waits for every session to end: `duration` and SIGINT/SIGTERM stop them all; a session that
    /// ends (its publisher closed it, or it failed) leaves the others running.
    private static func drive(_ running: Running, duration: Double?) -> [SubscriptionEnd] {
        let signals = ProcessSignals([SIGINT, SIGTERM]) { _ in running.stop(.interrupted) }
        let deadline = duration.map { DispatchTime.now() + $0 }
        let interactive = isatty(2) == 1
        let started = Date()
        var lastProgress = Date.distantPast
        while !running.wait(until: .now() + .milliseconds(250)) {
            if let deadline, DispatchTime.now() >= deadline { running.stop(.durationElapsed) }
            if interactive, Date().timeIntervalSince(lastProgress) >= 1 {
                lastProgress = Date()
                let still = running.sessionEnds.filter { $0 == nil }.count
                StandardOutput.error(
                    "\rrecording: " + progress(RecordCommand.Counters.total(running.recording.allCounters), since: started)
                        + ", \(still) of \(running.sessions.count) publishers recording   ")
            }
        }
        if interactive { StandardOutput.error("\n") }
        withExtendedLifetime(signals) {}
        return running.sessionEnds.map { $0! }
    }

    private static func progress(_ c: RecordCommand.Counters, since started: Date) -> String {
        counts(c) + String(format: ", %.3f s", Date().timeIntervalSince(started))
    }

    private static func counts(_ c: RecordCommand.Counters) -> String {
        counted(c.frames, "frame") + String(format: ", %.2f MB, ", Double(c.bytes) / 1e6) + counted(c.gaps, "gap")
            + " (\(counted(c.framesMissing, "frame")) missing)"
    }

    /// "1, 2 as 3" (a publisher's source ids, each renumbered one with its capture id).
    private static func describe(_ mapping: [(source: UInt32, captureID: UInt32)]) -> String {
        mapping.isEmpty
            ? "none"
            : mapping.map { $0.source == $0.captureID ? "\($0.source)" : "\($0.source) as \($0.captureID)" }.joined(separator: ", ")
    }

    /// Closes the capture, prints the summary (a line per publisher: what it sent, how its session
    /// ended) and gives the exit status: 0 when every session ended without an error, else 1.
    private static func finish(_ running: Running, ends: [SubscriptionEnd], out: String) throws -> Int32 {
        let (sessions, recording, destination) = (running.sessions, running.recording, running.destination)
        let (_, recordedPath, fileBytes, closeNs, complete) = try running.close(out: out)
        let all = recording.allCounters
        let total = RecordCommand.Counters.total(all)
        let failed = ends.indices.filter { Running.failed(ends[$0]) }
        for (i, s) in sessions.enumerated() {
            printError(publisherLine(i, session: s, end: ends[i], counters: all[i], recording: recording))
        }
        let discarded = destination.existed && !complete && total.frames == 0
        let unaccounted = sessions.reduce(UInt64(0)) { $0.addingSaturated($1.subject.statistics().unaccountedLoss) }
        printError(
            (discarded ? "recorded nothing: " : "recorded \(recordedPath) from \(counted(sessions.count, "publisher")): ")
                + counts(total) + String(format: ", %.3f s", Date().timeIntervalSince(running.started))
                + (discarded ? "" : String(format: ", %.2f MB on disk", Double(fileBytes) / 1e6))
                + RecordCommand.dataPace(total, closeNs: closeNs)
                + (unaccounted > 0 ? ", \(counted(unaccounted, "frame")) lost without a gap notice" : ""))
        if !failed.isEmpty {
            throw CommandError(
                "\(counted(failed.count, "publisher")) of \(sessions.count) failed ("
                    + failed.map { "\($0 + 1): \(recording.publishers[$0].address)" }.joined(separator: ", ")
                    + "); the others were recorded to the end")
        }
        if destination.existed && !complete { throw CommandError("\(out) was not replaced: no data was received") }
        return 0
    }

    /// "publisher 2 (tcp://…) 'name': 1,234 frames, …; sources 1 as 3; clock offset …; ended: …".
    static func publisherLine(
        _ i: Int, session s: Session, end: SubscriptionEnd, counters c: RecordCommand.Counters, recording: SharedRecording
    ) -> String {
        let lost = s.subject.statistics().unaccountedLoss
        var line =
            "publisher \(i + 1) (\(recording.publishers[i].address)) '\(s.welcome.publisherDescription.terminalSafe)': "
            + counts(c) + (lost > 0 ? ", \(counted(lost, "frame")) lost without a gap notice" : "")
            + "; sources " + describe(recording.mapping(publisher: i))
        if let clock = s.subject.clockEstimate {
            line +=
                String(format: "; clock offset %+.6f s, RTT %.3f ms (", Double(clock.offsetNs) / 1e9, Double(clock.rttNs) / 1e6)
                + counted(c.clockRecords, "clock-offset record") + ")"
        }
        switch end {
        case .durationElapsed: line += "; ended: --duration elapsed"
        case .interrupted: line += "; ended: interrupted"
        case .publisherClosed(let reason): line += "; ended: \(reason.terminalSafe)"
        case .failed(let report): line += "; FAILED: error \(report.code): \(report.message.terminalSafe)"
        case .handlerStopped(let reason): line += "; FAILED: recording stopped: \(reason.terminalSafe)"
        }
        return line
    }
}
