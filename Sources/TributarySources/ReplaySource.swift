import Foundation
import Synchronization
import TributaryCapture
import TributaryTransport
import TributaryWire

/// How fast a replay runs.
public enum ReplaySpeed: Sendable, Equatable {
    /// At the recorded pace multiplied by the factor (1 = real time, 2 = twice as fast); > 0.
    case factor(Double)
    /// As fast as the slowest subscriber takes the frames (credit is the only brake).
    case asFastAsCredit
}

/// The clock shared by the sources of one replay, so that frames of different sources keep their
/// recorded relative timing: frame time t is due at start + (t − origin) / speed.
public final class ReplayClock: Sendable {
    /// The recorded time that maps to the start of the replay (the capture's earliest frame).
    public let originNs: Int64
    public let speed: ReplaySpeed
    private let startMonotonic = Mutex<UInt64?>(nil)

    public init(originNs: Int64, speed: ReplaySpeed) {
        self.originNs = originNs
        self.speed = speed
    }

    /// The monotonic start of the replay: set by the first source that begins, shared by the others.
    func begin() -> UInt64 {
        startMonotonic.withLock { start in
            if let start { return start }
            let now = monotonicNanoseconds()
            start = now
            return now
        }
    }

    /// When a frame recorded at `timeNs` is due, or nil when it is due at once.
    func deadline(forRecordedTime timeNs: Int64, start: UInt64) -> UInt64? {
        guard case .factor(let factor) = speed else { return nil }
        let recorded = max(0, Double(timeNs) - Double(originNs))
        // A slow factor over a long recording can put the deadline past UInt64 (centuries away): clamp.
        let delay = recorded / factor
        guard delay < Double(UInt64.max - start) else { return UInt64.max }
        return start + UInt64(delay)
    }
}

/// What a replay source did, for the application's report.
public struct ReplayProgress: Sendable, Equatable {
    /// Frames handed to the publisher.
    public var framesPublished: Int = 0
    /// Recorded frames not replayed: configurations equal to the one subscribers last received, and the
    /// errors, gap notices and other session frames of the recording.
    public var framesSkipped: Int = 0
    /// Whether the source went through the whole capture.
    public var finished = false
    /// Damaged chunks skipped, or why the capture could not be read.
    public var problems: [String] = []
}

/// A lossless source that replays one source of a capture file (docs/CAPTURE.md): every recorded
/// data frame, in order, with its recorded timestamp, first sample and content, flagged `replayed`
/// (docs/PROTOCOL.md §2.3), paced at the recorded pace × a factor or as fast as credit allows.
///
/// The capture is read chunk by chunk, decoded on `decodeThreads` threads ahead of the frames being
/// published (`CaptureReader.forEachFrame(threads:)`; memory stays bounded by the publisher's lossless
/// window, 64 frames, plus 2 × `decodeThreads` + 1 chunks): decoding, not the transport, is what
/// bounds a replay's pace at `--speed max`. A *preloaded* replay (`sources(…, preloadLimit:)`) decodes
/// every frame into memory before it starts instead, so that its pace is the transport's and the
/// subscribers' alone (a link benchmark, or a capture replayed to many subscribers).
///
/// What is replayed (docs/CAPTURE.md §9): analog, digital, array, message,
/// XML, file and image frames, under filter id 0 — the subscribers' own filters then apply as for a
/// live source — and configuration frames that differ from the configuration subscribers last
/// received for the source (the first one, which each welcome carries, then each change sent). Frames
/// that belonged to the recording's session (error, gap, close, control) are not; recorded gaps are
/// not announced as gap notices (the replay's session itself loses nothing): they show as a jump in
/// the analog frames' `first_sample`. The application packages of no source (source id 0: messages,
/// XML, files, images, arrays the publisher sent on its own) are replayed too, by the replay source
/// with the lowest id, in file order with its own frames and under source id 0.
public final class ReplaySource: Source {
    public let info: SourceInfo
    public let configuration: Configuration
    /// The properties announced after the configuration: the capture's (`CaptureReader.properties`),
    /// with those given to `sources(…)` set over them.
    public let properties: SourceProperties
    public let delivery: SourceDelivery = .lossless
    /// The capture file.
    public let path: String
    public let clock: ReplayClock
    /// Started subscribers to wait for before the first frame (0: start at once).
    public let waitForSubscribers: Int
    private let progressState = Mutex(ReplayProgress())
    /// Whether this replay also publishes the capture's application packages of source id 0.
    public let includesSourceZero: Bool
    /// Threads that decode chunks ahead of the one being published (`CaptureReader.forEachFrame(threads:)`).
    public let decodeThreads: Int
    /// The frames to replay, decoded before the replay when it is preloaded; nil: decoded while replaying.
    private let preloaded: Preloaded?

    /// A preloaded replay's frames (this source's, and source 0's when `includesSourceZero`, in file
    /// order) and what was found damaged while decoding them.
    struct Preloaded: Sendable {
        var frames: [Frame]
        var bytes: Int
        var damage: [String]
    }

    /// Makes one replay source per recorded source of a capture. Source id 0 holds the recording's
    /// session frames and the application packages of no source: it gets no replay source of its own,
    /// its application packages are replayed by the first replay source (`includesSourceZero`).
    /// - Parameters:
    ///   - path: the capture (a `.partial` or damaged one is read as far as it is intact).
    ///   - speed: pace of the replay.
    ///   - waitForSubscribers: started subscribers to wait for before the first frame.
    ///   - sourceIDs: the sources to replay (nil: all).
    ///   - decodeThreads: threads decoding chunks ahead, per source (default 2).
    ///   - preloadLimit: nil to decode while replaying; otherwise decode every frame to replay into
    ///     memory now, before the sources are returned, when they come to at most this many bytes.
    ///   - properties: properties by source id, set over the recorded ones (same key: replaced).
    /// - Returns: The sources, sorted by id.
    /// - Throws: `CaptureError` when the file cannot be opened or is not a capture, or (kind `usage`)
    ///   when a preload would exceed `preloadLimit`.
    public static func sources(
        capture path: String, speed: ReplaySpeed, waitForSubscribers: Int = 1,
        sourceIDs: Set<UInt32>? = nil, decodeThreads: Int = 2,
        preloadLimit: Int? = nil, properties: [UInt32: SourceProperties] = [:]
    ) throws(CaptureError) -> [ReplaySource] {
        let reader = try CaptureReader(path: path)
        let summaries = reader.sources.filter { $0.sourceID != 0 && (sourceIDs?.contains($0.sourceID) ?? true) }
        let origin = summaries.map(\.firstTimeNs).min() ?? 0
        let clock = ReplayClock(originNs: origin, speed: speed)
        let sourceZero = reader.sources.first { $0.sourceID == 0 }
        let hasSourceZero = sourceZero != nil && (sourceIDs?.contains(0) ?? true)
        if let limit = preloadLimit {
            // What the index says the frames decode to; checked again frame by frame while decoding
            // (a damaged index may claim anything).
            let claimed = summaries.reduce(hasSourceZero ? sourceZero!.frameBytes : 0) { $0 + $1.frameBytes }
            guard claimed <= limit else {
                throw CaptureError(
                    .usage, file: path,
                    "a preloaded replay needs \(megabytes(claimed)) of memory for its frames, "
                        + "more than the \(megabytes(limit)) allowed; replay it without preloading")
            }
        }
        var sources: [ReplaySource] = []
        var preloadedBytes = 0
        for (k, summary) in summaries.enumerated() {
            let recorded = reader.configuration(source: summary.sourceID)
            let configuration = recorded ?? Configuration(deviceName: "source \(summary.sourceID)", deviceType: "replay")
            let includesSourceZero = k == 0 && hasSourceZero
            var preloaded: Preloaded?
            if let limit = preloadLimit {
                let loaded = try preload(
                    path, sources: includesSourceZero ? [summary.sourceID, 0] : [summary.sourceID],
                    threads: decodeThreads, limit: limit - preloadedBytes)
                preloadedBytes += loaded.bytes
                preloaded = loaded
            }
            sources.append(
                ReplaySource(
                    path: path, info: SourceInfo(id: summary.sourceID, description: configuration.deviceName),
                    configuration: configuration, clock: clock, waitForSubscribers: waitForSubscribers,
                    includesSourceZero: includesSourceZero, decodeThreads: decodeThreads, preloaded: preloaded,
                    properties: reader.properties(source: summary.sourceID).setting(properties[summary.sourceID] ?? SourceProperties())))
        }
        return sources
    }

    /// Decodes the frames of `sources` of a capture into memory, at most `limit` bytes of them.
    private static func preload(_ path: String, sources: Set<UInt32>, threads: Int, limit: Int) throws(CaptureError) -> Preloaded {
        let reader = try CaptureReader(path: path)
        var loaded = Preloaded(frames: [], bytes: 0, damage: [])
        struct Exceeded: Error {}
        do {
            try reader.forEachFrame(sources: sources, threads: threads) { frame in
                loaded.bytes += frame.header.frameLength
                guard loaded.bytes <= limit else { throw Exceeded() }  // stops the decoding there
                loaded.frames.append(frame)
            }
        } catch {
            throw CaptureError(
                .usage, file: path,
                "a preloaded replay's frames exceed the \(megabytes(limit)) of memory allowed "
                    + "(more than the capture's index announced); replay it without preloading")
        }
        loaded.damage = reader.damage.map(\.description)
        return loaded
    }

    private static func megabytes(_ bytes: Int) -> String {
        bytes >= 10_000_000_000 ? "\(bytes / 1_000_000_000) GB" : String(format: "%.1f MB", Double(bytes) / 1e6)
    }

    /// Bytes of frames held in memory by a preloaded replay (0 when it decodes while replaying).
    public var preloadedBytes: Int { preloaded?.bytes ?? 0 }

    /// A replay of source `info.id` of the capture at `path`.
    /// - Parameters:
    ///   - path: the capture.
    ///   - info: the source's id (as recorded) and description.
    ///   - configuration: the configuration announced to subscribers.
    ///   - clock: shared by the sources of one replay.
    ///   - waitForSubscribers: started subscribers to wait for before the first frame.
    ///   - includesSourceZero: also replay the capture's application packages of source id 0.
    ///   - decodeThreads: threads decoding chunks ahead of the one being published (at least 1).
    public convenience init(
        path: String, info: SourceInfo, configuration: Configuration, clock: ReplayClock, waitForSubscribers: Int = 1,
        includesSourceZero: Bool = false, decodeThreads: Int = 2
    ) {
        self.init(
            path: path, info: info, configuration: configuration, clock: clock, waitForSubscribers: waitForSubscribers,
            includesSourceZero: includesSourceZero, decodeThreads: decodeThreads, preloaded: nil, properties: SourceProperties())
    }

    private init(
        path: String, info: SourceInfo, configuration: Configuration, clock: ReplayClock, waitForSubscribers: Int,
        includesSourceZero: Bool, decodeThreads: Int, preloaded: Preloaded?, properties: SourceProperties
    ) {
        self.properties = properties
        self.preloaded = preloaded
        self.includesSourceZero = includesSourceZero
        self.decodeThreads = max(1, decodeThreads)
        self.path = path
        self.info = info
        self.configuration = configuration
        self.clock = clock
        self.waitForSubscribers = waitForSubscribers
    }

    /// What the replay has done so far.
    public var progress: ReplayProgress { progressState.withLock { $0 } }

    private struct Cancelled: Error {}

    public func run(_ sink: SourceSink) {
        guard sink.waitForStartedSubscribers(waitForSubscribers) else { return }
        var reader: CaptureReader?
        if preloaded == nil {
            do throws(CaptureError) {
                reader = try CaptureReader(path: path)
            } catch {
                progressState.withLock { $0.problems.append("\(error)") }
                return
            }
        }
        let start = clock.begin()
        // The configuration subscribers last received for this source: the welcome's, then each change sent.
        var current = configuration
        // Whether the previous frame of the source was a configuration change sent: the recorded
        // properties frame that follows it is sent too (the welcome's are announced with the welcome).
        var followsChange = false
        do {
            /// `frame` flagged as replayed (its filter id cleared), once its recorded time is due.
            func replayedWhenDue(_ frame: Frame) -> Frame {
                if let due = clock.deadline(forRecordedTime: frame.header.timestampNs, start: start) {
                    sink.sleep(untilMonotonicNanoseconds: due)
                }
                var header = frame.header
                header.flags.insert(.replayed)
                header.filterID = 0
                return frame.withHeader(header)
            }
            func replay(_ frame: Frame) throws {
                if sink.isCancelled { throw Cancelled() }
                let kind = frame.header.kind
                if frame.header.sourceID == 0 && info.id != 0 {
                    guard kind.isApplicationPackage else { return }  // application packages, not the recording's session frames
                    // Not through sink.publish, which stamps this source's id: the package keeps id 0.
                    guard sink.publishAsPublisher(replayedWhenDue(frame)) else { throw Cancelled() }
                    progressState.withLock { $0.framesPublished += 1 }
                    return
                }
                var changed: Configuration?
                if kind == .configuration, case .configuration(let recorded)? = try? frame.payload(), recorded != current {
                    changed = recorded
                }
                let sendsProperties = kind == .properties && followsChange
                followsChange = false
                guard kind.isData || changed != nil || sendsProperties else {
                    progressState.withLock { $0.framesSkipped += 1 }
                    return
                }
                guard sink.publish(replayedWhenDue(frame)) else { throw Cancelled() }
                if let changed {
                    current = changed
                    followsChange = true
                }
                progressState.withLock { $0.framesPublished += 1 }
            }
            if let preloaded {
                for frame in preloaded.frames { try replay(frame) }
            } else {
                try reader!.forEachFrame(sources: includesSourceZero ? [info.id, 0] : [info.id], threads: decodeThreads, replay)
            }
        } catch {
            return  // cancelled: the publisher is stopping
        }
        let damage = preloaded?.damage ?? reader!.damage.map(\.description)
        progressState.withLock {
            $0.problems.append(contentsOf: damage)
            $0.finished = true
        }
    }
}
