import Dispatch
import Foundation
import Synchronization
import TributaryCapture
import TributaryText
import TributaryTransport
import TributaryView
import TributaryWire

/// `view --record-dir DIR`: the recorder behind the page's endpoints (docs/VIEW.md §6). One recording
/// at a time, of the publishers and sources the operator ticked, made by the code of `record A B …`
/// (`PublishersRecording.Running`), so the capture is what that command writes.
///
/// `@unchecked Sendable`: `options` is set once in `init`; everything else is behind `state`'s lock.
final class BrowserRecorder: RecorderBackend, @unchecked Sendable {
    /// The recording under way.
    private struct Current {
        var running: PublishersRecording.Running
        var plan: RecorderPlan
        /// Per capture source id: the samples counted at the last rate reading, and when (monotonic ns).
        var previous: [UInt32: (samples: Int, ns: UInt64)] = [:]
        /// Per capture source id: samples per second over the last interval of at least 1 s.
        var rates: [UInt32: Double] = [:]
    }

    private struct State {
        var current: Current?
        /// A start is connecting (the lock is not held meanwhile).
        var starting = false
        /// The summary of the last recording stopped.
        var last: JSON?
        /// The view is closing: no recording starts any more.
        var closing = false
    }

    /// The view's subscription options without its filters and sources: each recording asks for the
    /// ticked sources of each publisher and nothing else.
    private let options: SubscriptionOptions
    private let state = Mutex(State())

    /// `--record-dir DIR` checked: an existing directory this process may write in; its absolute path.
    static func directory(_ text: String) throws -> String {
        var st = stat()
        guard !text.isEmpty, stat(text, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw UsageError("option --record-dir: '\(text.terminalSafe)' is not a directory (create it first)")
        }
        guard access(text, W_OK | X_OK) == 0 else {
            throw UsageError("option --record-dir: '\(text.terminalSafe)' is not writable by this process")
        }
        guard let resolved = realpath(text, nil) else {
            throw UsageError("option --record-dir: '\(text.terminalSafe)': \(String(cString: strerror(errno)))")
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    init(_ viewOptions: SubscriptionOptions) {
        var o = viewOptions
        o.request = SubscriptionRequest()
        o.outgoing = []
        o.duration = nil
        o.description = "tributary view --record-dir"
        options = o
    }

    func start(_ plan: RecorderPlan) throws(RecorderRefusal) -> JSON {
        try state.withLock { s throws(RecorderRefusal) in
            if let current = s.current {
                throw RecorderRefusal(409, "a recording is under way (\(current.plan.name)): stop it first; one recording at a time")
            }
            guard !s.starting else { throw RecorderRefusal(409, "a recording is starting; one recording at a time") }
            guard !s.closing else { throw RecorderRefusal(503, "the view is closing") }
            s.starting = true
        }
        defer { state.withLock { $0.starting = false } }
        let destination: CaptureDestination
        do { destination = try CaptureDestination(path: plan.path, replace: false) } catch {
            throw RecorderRefusal(409, "\(plan.name): \(error)")
        }
        let targets = plan.publishers.map {
            PublishersRecording.Target(host: $0.host, port: $0.port, address: $0.found.description.address, sources: $0.sources)
        }
        let running: PublishersRecording.Running
        do { running = try PublishersRecording.Running.start(options, targets: targets, destination: destination, fastCodec: false) } catch
        {
            throw RecorderRefusal(502, "\(error)")
        }
        printError("recorder: recording \(counted(targets.count, "publisher")) to \(running.writer.partialPath)")
        return state.withLock { s in
            s.current = Current(running: running, plan: plan)
            return describe(&s.current!)
        }
    }

    func stop() throws(RecorderRefusal) -> JSON {
        let taken = state.withLock { s -> Current? in
            defer { s.current = nil }
            return s.current
        }
        guard var current = taken else { throw RecorderRefusal(409, "nothing is recording") }
        let summary = try finish(&current)
        state.withLock { $0.last = summary }
        return summary
    }

    /// The view is closing: no recording starts any more, and the one under way (once started, if
    /// it is connecting) is stopped and its capture closed complete.
    func stopIfRecording() {
        state.withLock { $0.closing = true }
        // A start connects for at most --timeout per publisher.
        let deadline = Date().addingTimeInterval(options.timeout * Double(RecorderEndpoints.maxStreams) + 1)
        while state.withLock({ $0.starting }) && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if state.withLock({ $0.current != nil }) { _ = try? stop() }
    }

    func status() -> JSON {
        state.withLock { s in
            let recording: JSON = s.current == nil ? .null : describe(&s.current!)
            return .object([("recording", recording), ("last", s.last ?? .null)])
        }
    }

    /// Stops every session and closes the capture; the summary.
    private func finish(_ current: inout Current) throws(RecorderRefusal) -> JSON {
        let running = current.running
        running.stop(.interrupted)
        let closed: (ends: [SubscriptionEnd], path: String, fileBytes: Int, closeNs: UInt64?, complete: Bool)
        do { closed = try running.close(out: current.plan.path) } catch {
            throw RecorderRefusal(500, "the capture could not be closed: \(error)")
        }
        let all = running.recording.allCounters
        for (i, s) in running.sessions.enumerated() {
            printError(
                "recorder: "
                    + PublishersRecording.publisherLine(i, session: s, end: closed.ends[i], counters: all[i], recording: running.recording))
        }
        printError("recorder: recorded \(closed.path), \(closed.fileBytes) bytes")
        var summary = describe(&current)
        if case .object(var members) = summary {
            members = members.filter { $0.0 != "file_bytes" && $0.0 != "state" }
            members.insert(("state", .string("stopped")), at: 0)
            members.append(("file_bytes", .int(closed.fileBytes)))
            summary = .object(members)
        }
        return summary
    }

    /// The status of a recording (docs/VIEW.md §6): per publisher its session and clock, per stream
    /// its counters and rate.
    private func describe(_ current: inout Current) -> JSON {
        let running = current.running
        let now = DispatchTime.now().uptimeNanoseconds
        let counters = running.recording.sourceCounters
        let ends = running.sessionEnds
        var publishers: [JSON] = []
        var streams: [JSON] = []
        for (i, p) in current.plan.publishers.enumerated() {
            let session = running.sessions[i]
            let statistics = session.subject.statistics()
            let clock = session.subject.clockEstimate
            let offset: JSON = clock.map { .double(Double($0.offsetNs) / 1e9) } ?? .null
            publishers.append(
                .object([
                    ("address", .string(p.found.description.address)), ("name", .string(session.welcome.publisherDescription)),
                    ("session", .string(ends[i].map(Self.ended) ?? "recording")),
                    ("clock_offset", offset), ("clock_rtt", clock.map { .double(Double($0.rttNs) / 1e9) } ?? .null),
                    ("unaccounted", .uint(statistics.unaccountedLoss)), ("reconnections", .uint(statistics.reconnections)),
                ]))
            let mapping = running.recording.mapping(publisher: i)
            for source in p.sources {
                let captureID = mapping.first { $0.source == source }?.captureID
                let c = captureID.flatMap { counters[$0] } ?? SharedRecording.SourceCounters()
                if let captureID { updateRate(&current, captureID, samples: c.samples, now: now) }
                let described = p.found.description.sources.first { $0.id == source }
                streams.append(
                    .object([
                        ("address", .string(p.found.description.address)), ("source", .uint(UInt64(source))),
                        ("capture_source", captureID.map { .uint(UInt64($0)) } ?? .null),
                        ("device", .string(described?.device ?? "")), ("nominal_rate", .double(described?.rate ?? .nan)),
                        ("rate", captureID.flatMap { current.rates[$0] }.map { .double($0) } ?? .null),
                        ("frames", .int(c.frames)), ("samples", .int(c.samples)), ("bytes", .int(c.bytes)),
                        ("gaps", .int(c.gaps)), ("frames_missing", .uint(c.framesMissing)), ("clock_offset", offset),
                    ]))
            }
        }
        var st = stat()
        let fileBytes = stat(running.writer.partialPath, &st) == 0 ? Int(st.st_size) : 0
        return .object([
            ("state", .string("recording")), ("file", .string(current.plan.name)),
            ("started", .double(running.started.timeIntervalSince1970)),
            ("duration", .double(Date().timeIntervalSince(running.started))),
            ("bytes", .int(counters.values.reduce(0) { $0 + $1.bytes })), ("file_bytes", .int(fileBytes)),
            ("publishers", .array(publishers)), ("streams", .array(streams)),
        ])
    }

    /// Samples per second of a source over the last interval of at least 1 s (none before the first).
    private func updateRate(_ current: inout Current, _ id: UInt32, samples: Int, now: UInt64) {
        guard let previous = current.previous[id] else {
            current.previous[id] = (samples, now)
            return
        }
        let elapsed = Double(now &- previous.ns) / 1e9
        guard elapsed >= 1 else { return }
        current.rates[id] = Double(samples - previous.samples) / elapsed
        current.previous[id] = (samples, now)
    }

    private static func ended(_ end: SubscriptionEnd) -> String {
        switch end {
        case .durationElapsed: "ended: duration elapsed"
        case .interrupted: "stopped"
        case .publisherClosed(let reason): "ended: \(reason)"
        case .failed(let report): "FAILED: error \(report.code): \(report.message)"
        case .handlerStopped(let reason): "FAILED: recording stopped: \(reason)"
        }
    }
}
