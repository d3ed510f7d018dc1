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
    private struct Session: Sendable {
        var run: SubscriptionRun
        var subject: Subject
        var welcome: Welcome
    }

    static func run(_ options: SubscriptionOptions, addresses: [String], out: String, force: Bool, fastCodec: Bool) throws -> Int32 {
        let targets = try resolveTargets(addresses)
        let destination: CaptureDestination
        destination = try CaptureDestination(path: out, replace: force)
        let writerOptions = RecordCommand.writerOptions(fastCodec: fastCodec)
        // Every publisher is connected before any file is created: one that refuses or cannot be
        // reached at the start fails the command, as with one ADDRESS.
        let sessions = try connectAll(targets, options: options)
        let writer: CaptureWriter
        do { writer = try CaptureWriter(destination: destination, options: writerOptions) } catch {
            for s in sessions { s.run.abandon(); s.subject.close() }
            throw error
        }
        let recording = SharedRecording(
            writer: writer,
            publishers: zip(targets, sessions).enumerated().map { i, pair in
                SharedRecording.Publisher(
                    index: i, address: pair.0.address, name: pair.1.welcome.publisherDescription, welcomed: pair.1.welcome.sources.map(\.id)
                )
            }, reconnect: options.reconnect)
        do { try recording.recordWelcomedOrigins() } catch {
            for s in sessions { s.run.abandon(); s.subject.close() }
            writer.abandon()
            throw CommandError("\(error) (the recording so far is in \(writer.partialPath))")
        }
        printError("recording \(sessions.count) publishers to \(writer.partialPath):")
        for (i, s) in sessions.enumerated() {
            printError(
                "  publisher \(i + 1): \(targets[i].address) '\(s.welcome.publisherDescription.terminalSafe)' (session \(s.welcome.sessionID)), "
                    + "sources " + describe(recording.mapping(publisher: i)))
        }
        let recordingStarted = Date()
        let ends = drive(sessions, recording: recording, duration: options.duration)
        for (i, s) in sessions.enumerated() { _ = recording.recordClock(s.subject.clockEstimate, publisher: i) }
        return try finish(
            sessions, ends: ends, recording: recording, writer: writer, destination: destination, out: out, started: recordingStarted)
    }

    /// What each ADDRESS names (host, port), `resolve:QUERY` asked of discovery; the same publisher
    /// named twice is refused.
    private static func resolveTargets(_ addresses: [String]) throws -> [(host: String, port: Int, address: String)] {
        var targets: [(host: String, port: Int, address: String)] = []
        for (i, text) in addresses.enumerated() {
            let (host, port) = try SubscriptionOptions.parseAddress(text)
            let address = "tcp://" + (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
            if let j = targets.firstIndex(where: { $0.host.lowercased() == host.lowercased() && $0.port == port }) {
                throw UsageError(
                    "ADDRESS \(i + 1) ('\(text)') names the publisher ADDRESS \(j + 1) ('\(addresses[j])') named already (\(address)): "
                        + "each publisher is recorded once")
            }
            targets.append((host, port, address))
        }
        return targets
    }

    /// Opens every publisher's session, in address order; if one fails, those already open are closed.
    private static func connectAll(_ targets: [(host: String, port: Int, address: String)], options: SubscriptionOptions) throws
        -> [Session]
    {
        var sessions: [Session] = []
        for (i, target) in targets.enumerated() {
            var o = options
            o.host = target.host
            o.port = target.port
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

    /// Runs every session on its own thread until all have ended: `duration` and SIGINT/SIGTERM stop
    /// them all; a session that ends (its publisher closed it, or it failed) leaves the others running.
    private static func drive(_ sessions: [Session], recording: SharedRecording, duration: Double?) -> [SubscriptionEnd] {
        let stopAll: @Sendable (SubscriptionEnd) -> Void = { end in for s in sessions { s.run.stop(end) } }
        let signals = ProcessSignals([SIGINT, SIGTERM]) { _ in stopAll(.interrupted) }
        let ends = Mutex<[SubscriptionEnd?]>(Array(repeating: nil, count: sessions.count))
        let group = DispatchGroup()
        for (i, session) in sessions.enumerated() {
            group.enter()
            let thread = Thread { [s = session] in
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
        let deadline = duration.map { DispatchTime.now() + $0 }
        let interactive = isatty(2) == 1
        let started = Date()
        var lastProgress = Date.distantPast
        while group.wait(timeout: .now() + .milliseconds(250)) == .timedOut {
            if let deadline, DispatchTime.now() >= deadline { stopAll(.durationElapsed) }
            if interactive, Date().timeIntervalSince(lastProgress) >= 1 {
                lastProgress = Date()
                let running = ends.withLock { $0.filter { $0 == nil }.count }
                StandardOutput.error(
                    "\rrecording: " + progress(RecordCommand.Counters.total(recording.allCounters), since: started)
                        + ", \(running) of \(sessions.count) publishers recording   ")
            }
        }
        if interactive { StandardOutput.error("\n") }
        withExtendedLifetime(signals) {}
        return ends.withLock { $0.map { $0! } }
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
    private static func finish(
        _ sessions: [Session], ends: [SubscriptionEnd], recording: SharedRecording, writer: CaptureWriter,
        destination: CaptureDestination, out: String, started recordingStarted: Date
    ) throws -> Int32 {
        let all = recording.allCounters
        let total = RecordCommand.Counters.total(all)
        var failed: [Int] = []
        for (i, end) in ends.enumerated() {
            switch end {
            case .failed, .handlerStopped: failed.append(i)
            case .durationElapsed, .interrupted, .publisherClosed: break
            }
        }
        let complete = failed.isEmpty && total.dataFrames > 0
        let (recordedPath, fileBytes, closeNs) = try RecordCommand.closeCapture(
            writer, destination: destination, out: out, final: total, complete: complete)
        for (i, s) in sessions.enumerated() {
            printError(publisherLine(i, session: s, end: ends[i], counters: all[i], recording: recording))
        }
        let discarded = destination.existed && !complete && total.frames == 0
        let unaccounted = sessions.reduce(UInt64(0)) { $0.addingSaturated($1.subject.statistics().unaccountedLoss) }
        printError(
            (discarded ? "recorded nothing: " : "recorded \(recordedPath) from \(counted(sessions.count, "publisher")): ")
                + counts(total) + String(format: ", %.3f s", Date().timeIntervalSince(recordingStarted))
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
    private static func publisherLine(
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
