import Dispatch
import Synchronization
import TributaryCapture
import TributaryText
import TributaryTransport
import TributaryWire

/// The capture of a recording of several publishers (`tributary record A B …`), fed by one session
/// each: every write to the capture — frames, gaps, clock offsets, source origins — goes through one
/// lock, so the sessions' callback threads take turns at the one `CaptureWriter` (whose `append` is for
/// one thread at a time) and the numbering of their sources (`CaptureSourceNumbering`) is decided once.
final class SharedRecording: Sendable {
    /// One publisher of the recording.
    struct Publisher: Sendable {
        /// Its position among the addresses (0, 1, …).
        var index: Int
        /// The address connected to (`tcp://HOST:PORT`).
        var address: String
        /// Its welcome's description of itself.
        var name: String
        /// Its welcome's source ids.
        var welcomed: [UInt32]
    }

    /// What one source of the capture has recorded so far (the view's recorder shows it).
    struct SourceCounters: Sendable {
        /// Frames and their bytes appended under the source's capture id.
        var frames = 0
        var bytes = 0
        /// Samples of its analog and digital frames.
        var samples = 0
        /// Gap notices and outage gaps recorded, and the frames they say are missing.
        var gaps = 0
        var framesMissing: UInt64 = 0
        /// When its first and last data frame arrived (monotonic ns).
        var firstDataNs: UInt64?
        var lastDataNs: UInt64 = 0

        mutating func count(_ package: ReceivedPackage, appended: (frames: Int, bytes: Int), arrived: UInt64) {
            frames += appended.frames
            bytes += appended.bytes
            switch package.content {
            case .analog(let a): samples += a.sampleCount
            case .digital(let d): samples += d.sampleCount
            case .gap(let gap): gaps += 1; framesMissing = framesMissing.addingSaturated(gap.missingCount)
            default: break
            }
            if appended.frames > 0 && package.header.kind.isData {
                if firstDataNs == nil { firstDataNs = arrived }
                lastDataNs = arrived
            }
        }
    }

    private struct State: ~Copyable {
        var numbering: CaptureSourceNumbering
        var counters: [RecordCommand.Counters]
        /// By capture source id.
        var sources: [UInt32: SourceCounters] = [:]
        /// The first write that failed: every session stops on it.
        var failure: String?
    }

    let publishers: [Publisher]
    /// Used only with `state`'s lock held.
    private let writer: CaptureWriter
    private let state: Mutex<State>
    private let reconnect: Bool

    init(writer: CaptureWriter, publishers: [Publisher], reconnect: Bool) {
        self.writer = writer
        self.publishers = publishers
        self.reconnect = reconnect
        let (numbering, _) = CaptureSourceNumbering.plan(welcomed: publishers.map(\.welcomed))
        state = Mutex(State(numbering: numbering, counters: publishers.map { _ in RecordCommand.Counters() }))
    }

    /// Writes the origin of every source the welcomes listed (address order, then welcome order),
    /// before any frame: a reader meets a source's origin before its data.
    func recordWelcomedOrigins() throws {
        let (_, order) = CaptureSourceNumbering.plan(welcomed: publishers.map(\.welcomed))
        try state.withLock { s in
            for key in order {
                guard let id = s.numbering.ids[key] else { continue }
                try recordOrigin(captureID: id, key: key)
            }
        }
    }

    private func recordOrigin(captureID: UInt32, key: CaptureSourceNumbering.Key) throws(CaptureError) {
        let p = publishers[key.publisher]
        try writer.recordSourceOrigin(
            CaptureSourceOrigin(
                sourceID: captureID, publisherSourceID: key.source, publisherIndex: UInt32(key.publisher), address: p.address,
                publisher: p.name),
            timeNs: wallClockNanoseconds())
    }

    /// The mapping so far, per publisher: (its id, the capture's), by its id.
    func mapping(publisher: Int) -> [(source: UInt32, captureID: UInt32)] {
        state.withLock { s in
            s.numbering.ids.filter { $0.key.publisher == publisher }.map { ($0.key.source, $0.value) }.sorted { $0.0 < $1.0 }
        }
    }

    func counters(publisher: Int) -> RecordCommand.Counters { state.withLock { $0.counters[publisher] } }
    /// Each capture source's counters, by capture id.
    var sourceCounters: [UInt32: SourceCounters] { state.withLock { $0.sources } }
    var allCounters: [RecordCommand.Counters] { state.withLock { $0.counters } }

    /// Writes publisher `p`'s clock estimate as a clock-offset record naming the capture ids of its
    /// sources, when it is new and the publisher has a source; the error that ends the recording, or nil.
    func recordClock(_ estimate: ClockEstimate?, publisher p: Int) -> String? {
        guard let estimate else { return nil }
        return state.withLock { s -> String? in
            if let failure = s.failure { return failure }
            let ids = s.numbering.captureIDs(publisher: p)
            // No source yet: a record naming no source would mean every source of the capture.
            guard s.counters[p].clockSerial < estimate.serial, !ids.isEmpty else { return nil }
            let record = CaptureClockOffset(
                offsetNs: estimate.offsetNs, rttNs: estimate.rttNs, measuredAtNs: estimate.measuredAtNs,
                samples: UInt32(clamping: estimate.samples), sourceIDs: ids)
            do { try writer.recordClockOffset(record) } catch {
                s.failure = "\(error)"
                return s.failure
            }
            s.counters[p].clockSerial = estimate.serial
            s.counters[p].clockRecords += 1
            return nil
        }
    }

    /// Appends a package publisher `p` sent (with --reconnect, an outage's gap first) under the capture's
    /// id for its source, recording that source's origin first when it is new; the error that ends
    /// the recording, or nil.
    func receive(_ package: ReceivedPackage, publisher p: Int) -> String? {
        let label = "publisher \(p + 1) (\(publishers[p].address))"
        return state.withLock { s -> String? in
            if let failure = s.failure { return failure }
            do {
                if reconnect { try noteOutage(package, publisher: p, label: label, state: &s) }
                guard let (id, isNew) = s.numbering.id(publisher: p, source: package.header.sourceID) else {
                    throw CommandError("\(label): no source id is left in the capture for its source \(package.header.sourceID)")
                }
                if isNew { try recordOrigin(captureID: id, key: CaptureSourceNumbering.Key(publisher: p, source: package.header.sourceID)) }
                let arrived = DispatchTime.now().uptimeNanoseconds
                let appended = try CaptureRecording.append(package, to: writer, captureSourceID: id)
                s.counters[p].count(package, appended: appended, arrived: arrived)
                s.sources[id, default: SourceCounters()].count(package, appended: appended, arrived: arrived)
                return nil
            } catch {
                s.failure = "\(error)"
                s.counters[p].failure = s.failure
                return s.failure
            }
        }
    }

    /// With --reconnect: says that a session was lost, and records the gap an outage left in a source.
    private func noteOutage(_ package: ReceivedPackage, publisher p: Int, label: String, state s: inout State) throws {
        if case .error(let report) = package.content {
            printError(
                "\(label): "
                    + (report.isNormalCloseByPublisher
                        ? report.message.terminalSafe : "session lost: error \(report.code): \(report.message.terminalSafe)")
                    + "; reconnecting")
            try writer.flush()
        }
        guard let gap = s.counters[p].outage.observe(package) else { return }
        // Outage gaps are of sources that sent analog frames before: numbered already.
        guard let id = s.numbering.ids[CaptureSourceNumbering.Key(publisher: p, source: gap.sourceID)] else { return }
        try writer.recordGap(sourceID: id, firstMissing: gap.firstMissing, count: gap.count, cause: .sequenceJump, timeNs: gap.timeNs)
        s.counters[p].gaps += 1
        s.counters[p].framesMissing = s.counters[p].framesMissing.addingSaturated(gap.count)
        s.sources[id, default: SourceCounters()].gaps += 1
        s.sources[id, default: SourceCounters()].framesMissing = s.sources[id, default: SourceCounters()].framesMissing.addingSaturated(
            gap.count)
        printError("\(label): source \(gap.sourceID) resumed: a gap of \(counted(gap.count, "frame")) recorded for the outage")
    }
}
