import Foundation
import Synchronization
import TributaryCapture
import TributaryText
import TributaryTransport
import TributaryWire

/// `tributary record`: connects to a publisher and records everything it receives to a capture.
enum RecordCommand: TableCommand {
    static let name = "record"
    static let streamsFrames = true
    static let summary = "connect to a publisher and record everything received to a capture (.tcap)"
    static let usage = """
        \(SubscriptionOptions.synopsis(command: "record", own: ["--out X.tcap", "[--force]", "[--fast-codec]"], addresses: "ADDRESS [ADDRESS]..."))

        Opens a session like 'tributary subscribe' and appends every frame received to a capture
        (docs/CAPTURE.md): configurations, analog and digital data, messages, XML, arrays and errors
        bit for bit as they arrived, gap notices both as frames and as gap records, files and images
        reassembled and MD5-checked (stored as one transfer in 1 MiB chunks). The capture is written to
        X.tcap.partial and renamed to X.tcap with its seek-table footer when the recording stops: after
        --duration, on SIGINT/SIGTERM, or when the publisher closes the session (e.g. the end of a
        replay). A crash leaves X.tcap.partial, which 'tributary repair' turns into a capture.

        Nothing that exists is destroyed: X.tcap is refused unless --force, X.tcap.partial (maybe a
        crashed recording) is always refused, and both are checked before connecting. With --force an
        existing X.tcap is replaced only by a complete recording: one that received data and ended
        without an error; otherwise X.tcap is left untouched and the recording (if it holds any frame)
        stays in X.tcap.partial, closed with its footer; the exit status is then 1.

        With --reconnect a lost session (the publisher restarted, the network broke) is opened again and
        the recording goes on in the same capture: a lost connection or an expired timeout is recorded
        as an error frame (a publisher's normal close is not), and for each source the analog frames it sent meanwhile (the hole in its
        timestamps, in frame periods) as a gap record with cause 'sequence jump' (docs/CAPTURE.md §6).

        The publisher's clock is probed as the recording goes (docs/PROTOCOL.md §4.9: right after the
        session opens, after each reconnection, and every 5 s): each estimate (its clock minus this one,
        the probe's round-trip time, when) is stored as a clock-offset record (docs/CAPTURE.md §6), listed
        by 'inspect' and exported to XDF as ClockOffset chunks; the summary ends with the last one.

        A progress line (frames, MB, gaps) is updated on stderr about once a second when stderr is a
        terminal; a summary is always printed at the end (the session's duration, and the data's pace:
        its bytes from the first data frame to the capture written and synced). A refused or broken session prints the SCCT
        error ('error 5 (lost connection): ...'), still closes the capture cleanly, and exits with 1.

        Several ADDRESSes record several publishers into the one capture, one session each (with its own
        --reconnect, gaps and clock probes); every subscription option applies to every publisher
        (--sources names each publisher's own ids, which each must have). The
        same publisher named twice (by address or through resolve:) is refused. A publisher's source id
        that a publisher given earlier already has is renumbered to the lowest id no source has (the
        summary and 'inspect' say "1 as 4"); each source's origin (the address, the publisher's
        description, its own id) is kept in a source-origin record (docs/CAPTURE.md §6). Source 0 (the
        publishers' packages of no source) is shared. Every publisher is connected before the capture is
        created: one that refuses or cannot be reached fails the command and nothing is written. Then
        --duration and SIGINT/SIGTERM stop them all, and the recording ends when every session has
        ended; one whose session fails (a lost connection without --reconnect) does not stop the others.
        The summary has a line per publisher (frames, gaps, its sources, its clock, how it ended:
        FAILED for a failure) and a total; the exit status is 1 when a publisher failed (the capture,
        with every publisher's data, is still written; with --force it then stays in X.tcap.partial).

        \(options.help())
        """

    /// The capture writer's options for a recording. Sequence numbers restart with each session and
    /// files are re-chunked: gap frames are the authority on loss, and the Subject counts any
    /// unannounced jump (reported in the summary).
    static func writerOptions(fastCodec: Bool) -> CaptureWriterOptions {
        var options = CaptureWriterOptions()
        options.detectSequenceJumps = false
        options.writerName = "tributary record"
        if fastCodec { options.chunk = .fast }
        return options
    }

    /// Counters shared by the recording task and the progress line.
    struct Counters {
        var frames = 0
        var bytes = 0
        var gaps = 0
        var framesMissing: UInt64 = 0
        var failure: String?
        /// Frames that carry data (not configuration, errors or session frames).
        var dataFrames = 0
        /// With --reconnect: what each source missed while the session was lost.
        var outage = OutageGaps()
        /// Bytes of the data frames, and when the first arrived and the last had been appended
        /// (monotonic ns): the recording's own pace, without the wait for the session to start or
        /// for the publisher to close it.
        var dataBytes = 0
        var firstDataNs: UInt64?
        var lastDataNs: UInt64 = 0
        /// The serial of the last clock estimate written (docs/CAPTURE.md §6, clock-offset records).
        var clockSerial: UInt64 = 0
        var clockRecords = 0
        /// Data frames not flagged as replayed: frames of a live stream, which come at the publisher's pace.
        var liveDataFrames = 0

        /// Counts a package appended to the capture (`arrived`: when it was received, monotonic ns).
        mutating func count(_ package: ReceivedPackage, appended: (frames: Int, bytes: Int), arrived: UInt64) {
            frames += appended.frames
            bytes += appended.bytes
            if appended.frames > 0 && package.header.kind.isData {
                dataFrames += 1
                if !package.header.flags.contains(.replayed) { liveDataFrames += 1 }
                dataBytes += appended.bytes
                if firstDataNs == nil { firstDataNs = arrived }
                lastDataNs = DispatchTime.now().uptimeNanoseconds
            }
            if case .gap(let gap) = package.content { gaps += 1; framesMissing = framesMissing.addingSaturated(gap.missingCount) }
        }

        /// The counts of several recordings together (`record` of several publishers).
        static func total(_ all: [Counters]) -> Counters {
            var t = Counters()
            for c in all {
                t.frames += c.frames
                t.bytes += c.bytes
                t.gaps += c.gaps
                t.framesMissing = t.framesMissing.addingSaturated(c.framesMissing)
                t.dataFrames += c.dataFrames
                t.dataBytes += c.dataBytes
                t.liveDataFrames += c.liveDataFrames
                t.clockRecords += c.clockRecords
                if let first = c.firstDataNs { t.firstDataNs = min(t.firstDataNs ?? first, first) }
                t.lastDataNs = max(t.lastDataNs, c.lastDataNs)
            }
            return t
        }
    }

    /// The pace at which the data was recorded: its bytes over the time from the first data frame's
    /// arrival to the last one's append, plus the close that compressed, wrote and synced what was
    /// still open — the session's start and the wait for the publisher to close it left out.
    /// A replay (every data frame flagged replayed) comes as fast as the recorder takes it, so that
    /// pace is the recorder's; a live stream comes at its publisher's pace, which is what is said then
    /// (a recorder's "0.5 MB/s" for a 0.5 MB/s stream is no measure of the recorder).
    static func dataPace(_ c: Counters, closeNs: UInt64?) -> String {
        guard let first = c.firstDataNs, let closeNs, c.dataFrames > 1 else { return "" }
        let seconds = Double(c.lastDataNs - first + closeNs) / 1e9
        guard seconds > 0 else { return "" }
        if c.liveDataFrames > 0 {
            return String(
                format: "; the stream's data came at %.3f MB/s (the publisher's pace, over %.3f s from the first data frame "
                    + "to the capture written and synced)", Double(c.dataBytes) / 1e6 / seconds, seconds)
        }
        return String(
            format: "; data recorded at %.1f MB/s (%.3f s from the first data frame to the capture written and synced)",
            Double(c.dataBytes) / 1e6 / seconds, seconds)
    }

    /// The command line as given.
    struct Given {
        var subscription = SubscriptionOptions.Given()
        var out: String?
        var force = false
        var fastCodec = false
    }

    /// The sessions to open (one per ADDRESS) and the capture to write.
    struct Configuration {
        var subscription: SubscriptionOptions
        var addresses: [String]
        var out: String
        var force: Bool
        var fastCodec: Bool
    }

    static var options: OptionTable<Given> {
        SubscriptionOptions.options.lifted(\.subscription)
            + OptionTable([
                .text("--out", "X.tcap", "the capture to write (required)", \.out),
                .flag("--force", "replace X.tcap if it exists, once the new recording is complete", \.force),
                .flag(
                    "--fast-codec",
                    """
                    compress with the fast path (bit-shuffle, then zstd -1 with raw literals;
                    no entropy coding): less CPU per MB, larger files
                    """, \.fastCodec),
            ])
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var given = Given()
        let rest = try options.parse(arguments, into: &given)
        var subscription = try SubscriptionOptions(given.subscription, defaultDescription: "tributary record")
        guard let out = given.out else { throw UsageError("missing --out X.tcap") }
        guard !rest.isEmpty else { throw UsageError("missing ADDRESS") }
        if rest.count == 1 { try subscription.setAddress(rest[0]) }
        return Configuration(subscription: subscription, addresses: rest, out: out, force: given.force, fastCodec: given.fastCodec)
    }

    static func run(_ configuration: Configuration) throws -> Int32 {
        let options = configuration.subscription, out = configuration.out, force = configuration.force
        let fastCodec = configuration.fastCodec
        if configuration.addresses.count > 1 {
            return try PublishersRecording.run(options, addresses: configuration.addresses, out: out, force: force, fastCodec: fastCodec)
        }
        // Checked before connecting: a recording must not run for its whole duration and then fail.
        let destination = try CaptureDestination(path: out, replace: force)

        let writerOptions = Self.writerOptions(fastCodec: fastCodec)
        // Connect first: a refused session (wrong API key...) must not create or touch any file.
        let run = SubscriptionRun()
        let (subject, welcome) = try options.connect(run)
        let writer: CaptureWriter
        do { writer = try CaptureWriter(destination: destination, options: writerOptions) } catch {
            run.abandon()
            subject.close()
            throw error
        }
        printError("recording '\(welcome.publisherDescription)' (session \(welcome.sessionID)) to \(writer.partialPath)")
        let counters = Mutex(Counters())
        let interactive = isatty(2) == 1
        let started = Date()
        var lastProgress = Date.distantPast
        func progressText() -> String {
            let c = counters.withLock { $0 }
            return counted(c.frames, "frame") + String(format: ", %.2f MB, ", Double(c.bytes) / 1e6) + counted(c.gaps, "gap")
                + " (\(counted(c.framesMissing, "frame")) missing)" + String(format: ", %.3f s", Date().timeIntervalSince(started))
        }
        let end = run.run(
            subject: subject, duration: options.duration,
            tick: {
                guard interactive, Date().timeIntervalSince(lastProgress) >= 1 else { return }
                lastProgress = Date()
                StandardOutput.error("\rrecording: " + progressText() + "   ")
            }
        ) { [reconnect = options.reconnect, sources = welcome.sources.map(\.id)] package in
            if let failure = recordClock(subject.clockEstimate, sources: sources, into: writer, counters: counters) { return failure }
            return receive(package, into: writer, counters: counters, reconnect: reconnect)
        }
        if interactive { StandardOutput.error("\n") }
        _ = recordClock(subject.clockEstimate, sources: welcome.sources.map(\.id), into: writer, counters: counters)
        let statistics = subject.statistics()
        let final = counters.withLock { $0 }
        let complete: Bool
        switch end {
        case .durationElapsed, .interrupted, .publisherClosed: complete = final.dataFrames > 0
        case .failed, .handlerStopped: complete = false
        }
        let (recordedPath, fileBytes, closeNs) = try closeCapture(
            writer, destination: destination, out: out, final: final, complete: complete)
        let discarded = destination.existed && !complete && final.frames == 0
        printError(
            (discarded ? "recorded nothing: " : "recorded \(recordedPath): ") + progressText()
                + (discarded ? "" : String(format: ", %.2f MB on disk", Double(fileBytes) / 1e6))
                + dataPace(final, closeNs: closeNs)
                + (statistics.unaccountedLoss > 0 ? ", \(counted(statistics.unaccountedLoss, "frame")) lost without a gap notice" : ""))
        if let clock = subject.clockEstimate {
            printError(
                String(format: "publisher clock: offset %+.6f s, RTT %.3f ms (", Double(clock.offsetNs) / 1e9, Double(clock.rttNs) / 1e6)
                    + counted(final.clockRecords, "clock-offset record") + ")")
        }
        switch end {
        case .failed(let report):
            throw CommandError("error \(report.code): \(report.message)")
        case .handlerStopped(let reason):
            throw CommandError("recording stopped: \(reason)")
        case .publisherClosed(let reason):
            printError(reason)
        case .durationElapsed, .interrupted:
            break
        }
        // The capture asked for was not written: say so in the exit status too.
        if destination.existed && !complete { throw CommandError("\(out) was not replaced: no data was received") }
        return 0
    }

    /// Writes the Subject's clock estimate as a clock-offset record when it is new; the error that ends
    /// the recording, or nil.
    private static func recordClock(
        _ estimate: ClockEstimate?, sources: [UInt32], into writer: CaptureWriter, counters: borrowing Mutex<Counters>
    ) -> String? {
        guard let estimate, counters.withLock({ $0.clockSerial }) < estimate.serial else { return nil }
        let record = CaptureClockOffset(
            offsetNs: estimate.offsetNs, rttNs: estimate.rttNs, measuredAtNs: estimate.measuredAtNs,
            samples: UInt32(clamping: estimate.samples), sourceIDs: sources)
        do { try writer.recordClockOffset(record) } catch { return "\(error)" }
        counters.withLock {
            $0.clockSerial = estimate.serial
            $0.clockRecords += 1
        }
        return nil
    }

    /// Appends a received package to the capture (with --reconnect, an outage's gap first), counting
    /// it; the error that ends the recording, or nil.
    private static func receive(
        _ package: ReceivedPackage, into writer: CaptureWriter, counters: borrowing Mutex<Counters>, reconnect: Bool
    ) -> String? {
        do {
            if reconnect {
                if case .error(let report) = package.content {
                    // A normal end by the publisher (it stopped, its replay ended) is said as such, not as error 5.
                    printError(
                        (report.isNormalCloseByPublisher
                            ? report.message.terminalSafe
                            : "session lost: error \(report.code): \(report.message.terminalSafe)") + "; reconnecting")
                    // The chunks before the outage are closed: the frames after it start new ones.
                    try writer.flush()
                }
                if let gap = counters.withLock({ $0.outage.observe(package) }) {
                    try writer.recordGap(
                        sourceID: gap.sourceID, firstMissing: gap.firstMissing, count: gap.count,
                        cause: .sequenceJump, timeNs: gap.timeNs)
                    counters.withLock {
                        $0.gaps += 1; $0.framesMissing = $0.framesMissing.addingSaturated(gap.count)
                    }
                    printError("source \(gap.sourceID) resumed: a gap of \(counted(gap.count, "frame")) recorded for the outage")
                }
            }
            let arrived = DispatchTime.now().uptimeNanoseconds
            let appended = try CaptureRecording.append(package, to: writer)
            counters.withLock { $0.count(package, appended: appended, arrived: arrived) }
            return nil
        } catch {
            counters.withLock { $0.failure = "\(error)" }
            return "\(error)"
        }
    }

    /// Closes the capture: published under its name, or, when it would replace an existing capture
    /// without being complete, kept as its .partial (or removed when it holds nothing), the old one untouched.
    /// - Returns: The path the recording is in, its size, and how long closing took (published only).
    static func closeCapture(
        _ writer: CaptureWriter, destination: CaptureDestination, out: String, final: Counters,
        complete: Bool
    ) throws -> (path: String, fileBytes: Int, closeNs: UInt64?) {
        guard destination.existed && !complete else {
            let closing = DispatchTime.now().uptimeNanoseconds
            let fileBytes: Int
            do { fileBytes = try writer.close().fileBytes } catch {
                throw CommandError("\(error) (the recording so far is in \(writer.partialPath): run 'tributary repair')")
            }
            return (out, fileBytes, DispatchTime.now().uptimeNanoseconds - closing)
        }
        // Replace an existing capture only with a complete one (the old one may be all the user has).
        let reason = final.dataFrames == 0 ? "no data was received" : "the recording ended with an error"
        if final.frames == 0 {
            writer.abandon()
            unlink(writer.partialPath)
            printError("\(out) left untouched: \(reason)")
            return (writer.partialPath, 0, nil)
        }
        let fileBytes: Int
        do { fileBytes = try writer.close(publish: false).fileBytes } catch {
            throw CommandError("\(error) (\(out) is untouched; the recording so far is in \(writer.partialPath): run 'tributary repair')")
        }
        printError("\(out) left untouched: \(reason); this recording is in \(writer.partialPath) (complete, with its footer)")
        return (writer.partialPath, fileBytes, nil)
    }

}
