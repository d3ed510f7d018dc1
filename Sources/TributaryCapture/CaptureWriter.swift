import CFileSync
import Foundation
import TributaryWire

/// When the writer makes written records durable with `fdatasync`.
public enum FsyncPolicy: Sendable, Equatable {
    /// Never (the kernel writes back when it likes; a power cut may lose more than one chunk).
    case none
    /// After every record: a crash of the machine loses at most the chunk being written.
    case everyChunk
    /// At most every `seconds` seconds of wall time, after a record is written; and, on a thread of
    /// its own that the writers do not wait for, after every `CaptureWriter.durableBytes` written
    /// (so that a fast recording is durable well within the interval, and its close waits for the
    /// last few megabytes only).
    case interval(seconds: Double)
}

/// The settings of a `CaptureWriter`.
public struct CaptureWriterOptions: Sendable, Equatable {
    /// Compression of the chunks.
    public var chunk: ChunkOptions
    /// A source's chunk is closed when its frames span this many seconds of frame time (default 0.5)
    /// and hold at least `minChunkBytes`...
    public var maxChunkDuration: Double
    /// ... the least bytes of frames a chunk needs before `maxChunkDuration` closes it (default 1 MiB,
    /// at most half of `maxChunkBytes`): a slow or int16 source then still gets chunks long enough for
    /// delta and bit-shuffle to pay off (int16 ADC data compresses better in chunks of 1 MiB than in
    /// 0.5 s ones, docs/CAPTURE.md §8); what a crash can lose stays bounded by `maxChunkLatency`.
    public var minChunkBytes: Int
    /// ... or when it reaches this many bytes of frames (default 2 MiB; 64 KiB ... 64 MiB)...
    public var maxChunkBytes: Int
    /// ... or when its frames span this many seconds of frame time, whatever their size (default 2 s,
    /// never less than `maxChunkDuration`): bounds seeking granularity and what a torn import loses
    /// for a slow source that would take long to fill `minChunkBytes`.
    public var maxChunkSpan: Double
    /// ... or when it has been open this long in wall time, so a slow source is still written (default 1 s).
    public var maxChunkLatency: Double
    /// Worker threads that compress chunks (default 2: both cores); records are written in order regardless.
    public var compressionThreads: Int
    /// When to fsync (default every second).
    public var fsync: FsyncPolicy
    /// Seconds of wall time between checkpoint records (default 10; 0 disables them).
    public var checkpointInterval: Double
    /// Record a gap when sequence numbers jump without a gap frame (default on).
    public var detectSequenceJumps: Bool
    /// The writer name stored in the file header.
    public var writerName: String

    public init(
        chunk: ChunkOptions = ChunkOptions(), maxChunkDuration: Double = 0.5, minChunkBytes: Int = 1 << 20, maxChunkBytes: Int = 2 << 20,
        maxChunkSpan: Double = 2,
        maxChunkLatency: Double = 1, compressionThreads: Int = 2, fsync: FsyncPolicy = .interval(seconds: 1),
        checkpointInterval: Double = 10, detectSequenceJumps: Bool = true, writerName: String = "tributary"
    ) {
        self.chunk = chunk
        self.maxChunkDuration = maxChunkDuration
        self.maxChunkBytes = min(max(maxChunkBytes, 64 << 10), 64 << 20)
        self.minChunkBytes = min(max(minChunkBytes, 0), self.maxChunkBytes / 2)
        self.maxChunkSpan = max(maxChunkSpan, maxChunkDuration)
        self.maxChunkLatency = maxChunkLatency
        self.compressionThreads = max(1, compressionThreads)
        self.fsync = fsync
        self.checkpointInterval = checkpointInterval
        self.detectSequenceJumps = detectSequenceJumps
        self.writerName = writerName
    }
}

/// What a closed capture holds.
public struct CaptureWriteSummary: Sendable, Equatable {
    public var path: String
    public var records: Int
    public var frames: Int
    /// Bytes of frames recorded (what the chunks decode to).
    public var frameBytes: Int
    /// Bytes of the file.
    public var fileBytes: Int
}

/// Records a stream of wire frames into a capture file (docs/CAPTURE.md).
///
/// Frames are gathered per source into chunks; a closed chunk is compressed on one of
/// `compressionThreads` workers and the records are written strictly in the order the chunks were
/// closed. The file is `PATH.partial` until `close()` writes the footer and renames it to `PATH`.
/// `append` is for one thread at a time (the recording thread); it blocks when the workers fall
/// behind by more than a few chunks, which bounds memory.
///
/// `@unchecked Sendable`: the recording-side state (`open`, `lastSequence`, counters) is touched only
/// by the one thread that calls `append`/`close`; everything shared with the workers is behind
/// `queueLock` (job queue, free builders) or `writeLock` (file descriptor, index, reorder buffer).
public final class CaptureWriter: @unchecked Sendable {
    /// The final path (the file is `path + ".partial"` until `close()`).
    public let path: String
    public let partialPath: String
    /// Where the capture goes and whether it may replace an existing file.
    public let destination: CaptureDestination
    public let options: CaptureWriterOptions
    public let header: CaptureFileHeader

    /// Called on a worker thread, in file order, after each record is written and synced per the policy.
    public var onDurable: (@Sendable (IndexEntry) -> Void)?

    let fd: Int32
    var open: [UInt32: ChunkBuilder] = [:]
    var lastSequence: UInt64?
    var closed = false
    var appendCount = 0
    var framesAppended = 0
    var frameBytes = 0

    // Shared with the workers under queueLock.
    let queueLock = NSCondition()
    var jobs: [(Int, ChunkBuilder)] = []
    var jobHead = 0
    var free: [ChunkBuilder] = []
    var builders = 0
    let maxBuilders: Int
    var nextSubmit = 0
    var writtenCount = 0
    var stopping = false
    var failure: CaptureError?
    var threads: [Thread] = []
    var running = 0

    // File state under writeLock.
    let writeLock = NSLock()
    var pending: [Int: ChunkBuilder] = [:]
    var nextWrite = 0
    /// The `.partial` file; its offset is the end of the last record written.
    var output: FileOutput
    var goodOffset: Int
    var index: [IndexEntry] = []
    var sinceCheckpoint: [IndexEntry] = []
    var unsynced: [IndexEntry] = []
    var lastCheckpointOffset = 0
    /// The latest configuration frame of each source among the chunks written so far.
    var configurations: [UInt32: ConfigurationCopy] = [:]
    var lastCheckpointTime: UInt64
    var lastSyncTime: UInt64
    /// Where the written bytes whose writeback has not been started begin (`startWritebackLocked`).
    var writebackOffset = 0
    /// Writeback requests made so far (for tests).
    var writebackRequests = 0
    /// How many times the writer has asked the kernel to start writing back (for tests).
    var writebacksStarted: Int { withWriteLockValue { writebackRequests } }
    /// Indexed records written, and how many of them have been reported durable (`onDurable`), in order.
    var indexedCount = 0
    var durableCount = 0
    /// The file offset at the last background sync request.
    var syncRequestOffset = 0
    /// Background syncs completed (for tests).
    var backgroundSyncCount = 0
    /// How many background fdatasyncs have completed (for tests).
    var backgroundSyncs: Int { withWriteLockValue { backgroundSyncCount } }

    // The background syncer (fsync policy `.interval`), under syncLock.
    let syncLock = NSCondition()
    var syncRequested = false
    var syncStopping = false
    var syncerRunning = false

    /// Bytes written between the background syncer's fdatasyncs (fsync policy `.interval`). On the
    /// project's virtual machines an fdatasync costs in proportion to the bytes written since the
    /// last one (the host flushing its own cache), whatever was written back before, so a single
    /// closing fdatasync of a fast recording is long. Syncing every 16 MiB on a thread that nothing
    /// waits for overlaps that with the recording: the closing fdatasync becomes short and the
    /// writes are not slowed (measured with a C model of the writer).
    public static let durableBytes = 16 << 20

    /// Bytes of records written before the writer asks the kernel to start writing them to disk
    /// (`sync_file_range`, not waiting), when an fsync policy is set. The disk then works while the
    /// recording goes on, and an fdatasync (every interval, and at close) waits only for the bytes
    /// since the last request, which shortens a recording's closing fdatasync (what remains is the
    /// host's flush: see `durableBytes`). Dirty pages of a long, fast recording stay bounded too,
    /// instead of piling up for the kernel's own writeback.
    static let writebackBytes = 4 << 20

    /// Creates `PATH.partial` and writes the file header.
    /// - Parameters:
    ///   - path: where the finished capture goes.
    ///   - options: chunking, compression, threads, fsync policy.
    /// - Throws: `CaptureError.io` when the file cannot be created or written, `.usage` for a bad level.
    ///   An existing `PATH` is replaced when the capture is complete (`close()`); an existing
    ///   `PATH.partial` (maybe a crashed recording) is refused, never truncated.
    public convenience init(path: String, options: CaptureWriterOptions = CaptureWriterOptions()) throws(CaptureError) {
        try self.init(destination: CaptureDestination(path: path, replace: true), options: options)
    }

    /// Creates `destination.temporaryPath` exclusively and writes the file header.
    /// - Parameters:
    ///   - destination: the checked output (`CaptureDestination`): whether an existing capture may be replaced.
    ///   - options: chunking, compression, threads, fsync policy.
    /// - Throws: `CaptureError.usage` when the temporary file exists or the level is bad, `.io` when it cannot be written.
    public init(destination: CaptureDestination, options: CaptureWriterOptions = CaptureWriterOptions()) throws(CaptureError) {
        self.destination = destination
        path = destination.path
        partialPath = destination.temporaryPath
        self.options = options
        guard ZstdCompressor.levels.contains(options.chunk.level) else {
            throw CaptureError(.usage, file: path, "zstd level \(options.chunk.level) is outside \(ZstdCompressor.levels)")
        }
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        header = CaptureFileHeader(createdNs: now, writer: options.writerName)
        fd = try destination.createTemporary()
        let bytes = header.encoded()
        output = FileOutput(fd: fd, path: partialPath)
        goodOffset = 0
        lastCheckpointTime = DispatchTime.now().uptimeNanoseconds
        lastSyncTime = lastCheckpointTime
        maxBuilders = 2 * options.compressionThreads + 2 + 8
        do {
            try output.write(bytes)
        } catch {
            Foundation.close(fd)
            throw error
        }
        goodOffset = output.offset
        for _ in 0..<options.compressionThreads {
            let thread = Thread { [self] in workerLoop() }
            thread.name = "capture-compress"
            threads.append(thread)
            running += 1
            thread.start()
        }
        if case .interval = options.fsync {
            syncerRunning = true
            let thread = Thread { [self] in syncerLoop() }
            thread.name = "capture-sync"
            thread.start()
        }
    }

    deinit {
        if !closed { abandon() }
    }

    // MARK: Recording

    /// Records one frame (any kind); the caller may release it at once. Its bytes are copied into the
    /// chunk, except the samples of a frame whose header lies apart (a received frame): the chunk keeps
    /// a reference to its buffer until the samples are regrouped for compression.
    /// - Throws: `CaptureError` when an earlier write failed (disk full...) or the writer is closed.
    public func append(_ frame: Frame) throws(CaptureError) {
        guard !closed else { throw CaptureError(.usage, file: path, "append after close") }
        if let failure = currentFailure() { throw failure }
        let h = frame.header
        if h.kind == .gap, case .gap(let gap)? = try? frame.payload() {
            try recordGap(
                sourceID: h.sourceID, firstMissing: gap.firstMissingSequence, count: gap.missingCount,
                cause: .announced, timeNs: h.timestampNs)
        } else if options.detectSequenceJumps, let last = lastSequence, h.sequence > last &+ 1, last < UInt64.max {
            try recordGap(
                sourceID: h.sourceID, firstMissing: last + 1, count: h.sequence - last - 1,
                cause: .sequenceJump, timeNs: h.timestampNs)
        }
        lastSequence = h.sequence
        let now = DispatchTime.now().uptimeNanoseconds
        var builder = open[h.sourceID]
        if let b = builder, !b.isEmpty,
            b.byteCount + h.frameLength > options.maxChunkBytes
                || closesByTime(b, at: h.timestampNs)
        {
            try seal(h.sourceID)
            builder = nil
        }
        if builder == nil {
            // An open chunk holds its builder until it closes: with as many sources open as there are
            // builders, a new source would wait for one that only this thread could free. The chunk
            // open longest closes early instead (a publisher may use any number of source ids).
            if open.count >= maxBuilders - 1, let oldest = open.min(by: { $0.value.openedAt < $1.value.openedAt })?.key {
                try seal(oldest)
            }
            let b = try takeBuilder(sourceID: h.sourceID)
            open[h.sourceID] = b
            builder = b
        }
        if frame.isContiguous {
            frame.withUnsafeBytes { builder!.append($0, header: h, now: now) }
        } else {
            // A received frame (header and payload in two parts) or one with a replaced header: the
            // header is encoded on the stack and the payload copied into the chunk, except its samples,
            // which the chunk reads from the frame's buffer (kept until the chunk is regrouped) —
            // `withUnsafeBytes` would first join them in a fresh zeroed array (an allocation and two
            // extra passes over every 64 KiB frame a recording receives), and a copy into the chunk
            // showed as a share of its own in a recording's CPU profile.
            withUnsafeTemporaryAllocation(byteCount: h.headerLength, alignment: 8) { bytes in
                bytes.initializeMemory(as: UInt8.self, repeating: 0)
                h.encode(into: bytes.baseAddress!)
                frame.withUnsafePayloadBytes {
                    builder!.append(header: UnsafeRawBufferPointer(bytes), payload: $0, frameHeader: h, now: now, keeping: frame.buffer)
                }
            }
        }
        if h.kind == .configuration {
            // Kept with the chunk so that copies are written once it is (docs/CAPTURE.md §6, configuration copies).
            builder!.configuration = ConfigurationCopy(frame: frame.encodedBytes, sequence: h.sequence, timeNs: h.timestampNs)
        }
        framesAppended += 1
        frameBytes += h.frameLength
        if builder!.byteCount >= options.maxChunkBytes { try seal(h.sourceID) }
        appendCount += 1
        if appendCount & 63 == 0 { try sealStale(now: now) }
    }

    /// The frame-time rules: the target duration once the chunk holds `minChunkBytes`, the span cap always.
    func closesByTime(_ b: ChunkBuilder, at timeNs: Int64) -> Bool {
        let span = Double(timeNs &- b.firstTimeNs)
        return span >= options.maxChunkSpan * 1e9 || (b.byteCount >= options.minChunkBytes && span >= options.maxChunkDuration * 1e9)
    }

    /// Records a gap: frames known to be missing from the stream.
    /// - Parameters:
    ///   - sourceID: the source concerned (0 when unknown or the whole stream).
    ///   - firstMissing: the first missing sequence number.
    ///   - count: how many consecutive frames are missing (≥ 1).
    ///   - cause: who noticed.
    ///   - timeNs: when.
    public func recordGap(sourceID: UInt32, firstMissing: UInt64, count: UInt64, cause: GapCause, timeNs: Int64) throws(CaptureError) {
        guard count > 0 else { return }
        let b = try takeBuilder(sourceID: sourceID)
        b.encoded.reserve(24)
        var w = RecordWriter(UnsafeMutableRawBufferPointer(start: b.encoded.base, count: 24))
        w.write(firstMissing)
        w.write(count)
        w.write(cause.rawValue)
        w.write(UInt32(0))
        b.encoded.setCount(24)
        b.prebuilt = RecordEnvelope(
            type: .gap, codec: .none, sourceID: sourceID, firstSequence: firstMissing,
            lastSequence: firstMissing &+ (count - 1), firstTimeNs: timeNs, lastTimeNs: timeNs,
            storedLength: 24, contentLength: 24, payloadCRC: CRC32C.checksum(b.encoded.bytes))
        try submit(b)
    }

    /// Closes every open chunk and waits until all records are written and synced.
    /// - Throws: `CaptureError` when a write failed.
    public func flush() throws(CaptureError) {
        for id in open.keys.sorted() { try seal(id) }
        try waitForWrites()
        try withWriteLock { () throws(CaptureError) in try syncLocked(force: true) }
    }

    /// Seals open chunks older than `maxChunkLatency`; call it from a timer when frames may stop arriving.
    public func sealStale(now: UInt64 = DispatchTime.now().uptimeNanoseconds) throws(CaptureError) {
        let limit = UInt64(options.maxChunkLatency * 1e9)
        for (id, b) in open where !b.isEmpty && now &- b.openedAt >= limit { try seal(id) }
    }

    /// Writes every open chunk, the configuration copies, the footer and the trailer, syncs, and
    /// (when `publish`) renames `PATH.partial` to `PATH`, replacing an existing `PATH` only if the
    /// destination allows it.
    /// - Parameter publish: false to leave the complete, footed capture at `PATH.partial` (a recording
    ///   that failed must not replace a good capture; the caller tells the user where it is).
    /// - Returns: what the file holds (`path` is where it is).
    /// - Throws: `CaptureError` when a write failed (the `.partial` file then stays for `repair`).
    @discardableResult
    public func close(publish: Bool = true) throws(CaptureError) -> CaptureWriteSummary {
        guard !closed else { throw CaptureError(.usage, file: path, "close called twice") }
        defer { closed = true }
        do {
            for id in open.keys.sorted() { try seal(id) }
            try waitForWrites()
        } catch {
            stopWorkers()
            Foundation.close(fd)
            throw error
        }
        stopWorkers()
        if let failure = currentFailure() {  // the background syncer's
            Foundation.close(fd)
            throw failure
        }
        let summary: CaptureWriteSummary
        do {
            try writeConfigurationCopiesLocked(all: true)
            try writeFooterLocked(flags: 0)
            try syncLocked(force: true)
            summary = CaptureWriteSummary(
                path: publish ? path : partialPath, records: index.count, frames: framesAppended,
                frameBytes: frameBytes, fileBytes: output.offset)
        } catch {
            Foundation.close(fd)
            throw error
        }
        Foundation.close(fd)
        if publish { try destination.publish() }
        return summary
    }

    /// Stops without a footer, leaving `PATH.partial` as a crashed writer would (tests, emergencies).
    public func abandon() {
        guard !closed else { return }
        closed = true
        stopWorkers()
        Foundation.close(fd)
    }

    // MARK: Pipeline

    func currentFailure() -> CaptureError? {
        queueLock.lock()
        defer { queueLock.unlock() }
        return failure
    }

    func takeBuilder(sourceID: UInt32) throws(CaptureError) -> ChunkBuilder {
        queueLock.lock()
        defer { queueLock.unlock() }
        while free.isEmpty && builders >= maxBuilders && failure == nil { queueLock.wait() }
        if let failure { throw failure }
        let b: ChunkBuilder
        if let reused = free.popLast() { b = reused } else { b = ChunkBuilder(); builders += 1 }
        b.reset(sourceID: sourceID)
        return b
    }

    func seal(_ sourceID: UInt32) throws(CaptureError) {
        guard let b = open.removeValue(forKey: sourceID) else { return }
        if b.isEmpty { release(b); return }
        try submit(b)
    }

    func submit(_ b: ChunkBuilder) throws(CaptureError) {
        queueLock.lock()
        defer { queueLock.unlock() }
        if let failure { throw failure }
        jobs.append((nextSubmit, b))
        nextSubmit += 1
        queueLock.signal()
    }

    func release(_ b: ChunkBuilder) {
        queueLock.lock()
        free.append(b)
        queueLock.broadcast()
        queueLock.unlock()
    }

    func waitForWrites() throws(CaptureError) {
        queueLock.lock()
        defer { queueLock.unlock() }
        while writtenCount < nextSubmit && failure == nil { queueLock.wait() }
        if let failure { throw failure }
    }

    func stopWorkers() {
        queueLock.lock()
        stopping = true
        queueLock.broadcast()
        while running > 0 { queueLock.wait() }
        queueLock.unlock()
        syncLock.lock()
        syncStopping = true
        syncLock.broadcast()
        while syncerRunning { syncLock.wait() }
        syncLock.unlock()
    }

    /// The background syncer: an fdatasync whenever `durableBytes` more have been written, then the
    /// records written before it began are reported durable. A failure fails the writer (Linux reports
    /// a writeback error to one fdatasync of a file description only: it must not be lost here).
    func syncerLoop() {
        while true {
            syncLock.lock()
            while !syncRequested && !syncStopping { syncLock.wait() }
            if syncStopping {
                // close() makes the rest durable itself.
                syncerRunning = false
                syncLock.broadcast()
                syncLock.unlock()
                return
            }
            syncRequested = false
            syncLock.unlock()
            let target = withWriteLockValue { indexedCount }
            let started = DispatchTime.now().uptimeNanoseconds
            if fdatasync(fd) != 0 {
                fail(CaptureError(.io, file: partialPath, "fdatasync failed: \(String(cString: strerror(errno)))"))
                continue
            }
            writeLock.lock()
            backgroundSyncCount += 1
            lastSyncTime = max(lastSyncTime, started)
            deliverDurableLocked(upTo: target)
            writeLock.unlock()
        }
    }

    /// Asks the background syncer for an fdatasync once `durableBytes` have been written since the last request.
    func requestBackgroundSyncLocked() {
        guard case .interval = options.fsync, output.offset - syncRequestOffset >= Self.durableBytes else { return }
        syncRequestOffset = output.offset
        syncLock.lock()
        syncRequested = true
        syncLock.signal()
        syncLock.unlock()
    }

    /// Reports the indexed records up to `target` (a count) durable, in order, once each.
    func deliverDurableLocked(upTo target: Int) {
        let count = target - durableCount
        guard count > 0 else { return }
        let entries = unsynced.prefix(count)
        durableCount = target
        if let onDurable { for e in entries { onDurable(e) } }
        unsynced.removeFirst(count)
    }

    func workerLoop() {
        let encoder: ChunkEncoder?
        do { encoder = try ChunkEncoder(options: options.chunk) } catch {
            fail(CaptureError(.usage, file: path, "cannot create a zstd context: \(error)"))
            encoder = nil
        }
        while true {
            queueLock.lock()
            while jobHead == jobs.count && !stopping { queueLock.wait() }
            if jobHead == jobs.count {
                running -= 1
                queueLock.broadcast()
                queueLock.unlock()
                return
            }
            let (sequence, b) = jobs[jobHead]
            jobHead += 1
            if jobHead > 64 && jobHead * 2 > jobs.count {
                jobs.removeFirst(jobHead)
                jobHead = 0
            }
            queueLock.unlock()
            if b.prebuilt == nil, let encoder {
                do { b.prebuilt = try encoder.encode(b) } catch {
                    fail(CaptureError(.io, file: partialPath, "compression failed: \(error)"))
                }
            }
            complete(sequence, b)
        }
    }

    func fail(_ error: CaptureError) {
        queueLock.lock()
        if failure == nil { failure = error }
        queueLock.broadcast()
        queueLock.unlock()
    }

    /// Writes finished records in submission order; whichever worker completes the next one writes it.
    func complete(_ sequence: Int, _ b: ChunkBuilder) {
        writeLock.lock()
        pending[sequence] = b
        var done: [ChunkBuilder] = []
        while let next = pending.removeValue(forKey: nextWrite) {
            nextWrite += 1
            done.append(next)
            if currentFailure() == nil, let envelope = next.prebuilt {
                if let configuration = next.configuration { configurations[next.sourceID] = configuration }
                do { try writeRecordLocked(envelope, payload: next.encoded.bytes) } catch { fail(error) }
            }
        }
        writeLock.unlock()
        queueLock.lock()
        writtenCount += done.count
        free.append(contentsOf: done)
        queueLock.broadcast()
        queueLock.unlock()
    }

    func withWriteLockValue<R>(_ body: () -> R) -> R {
        writeLock.lock()
        defer { writeLock.unlock() }
        return body()
    }

    func withWriteLock<R>(_ body: () throws(CaptureError) -> R) throws(CaptureError) -> R {
        writeLock.lock()
        defer { writeLock.unlock() }
        return try body()
    }
}
