import Foundation

// The fuzz target (Fuzz/run.sh) compiles these files into one module together with TributaryWire.
#if canImport(TributaryWire)
    import TributaryWire
#endif

/// A damaged region found in a capture: where it starts, how long it is when known, and why.
public struct CaptureDamage: Sendable, Equatable, CustomStringConvertible {
    /// File offset of the first damaged byte (a record's envelope, or the start of unreadable bytes).
    public var offset: Int
    /// Bytes skipped, when known.
    public var length: Int?
    /// What is wrong.
    public var reason: String

    public init(offset: Int, length: Int?, reason: String) {
        self.offset = offset
        self.length = length
        self.reason = reason
    }

    public var description: String {
        "byte \(offset)" + (length.map { " (+\($0) bytes)" } ?? "") + ": \(reason)"
    }
}

/// A gap record: frames known to be missing.
public struct CaptureGap: Sendable, Equatable {
    public var sourceID: UInt32
    public var firstMissingSequence: UInt64
    public var missingCount: UInt64
    public var cause: GapCause?
    public var timeNs: Int64
    /// File offset of the gap record.
    public var offset: Int
}

/// What the seek table says about one source.
public struct CaptureSourceSummary: Sendable, Equatable {
    public var sourceID: UInt32
    public var chunks: Int
    public var frames: Int
    /// Analog samples per channel.
    public var samples: UInt64
    public var firstTimeNs: Int64
    public var lastTimeNs: Int64
    /// Bytes of chunk payloads in the file.
    public var storedBytes: Int
    /// Bytes of chunk contents once decompressed (after the numeric transforms).
    public var contentBytes: Int
    /// Bytes of the recorded frames (what the chunks decode to).
    public var frameBytes: Int
}

/// Reads a capture file of any size with bounded memory (one chunk at a time), through its seek-table
/// footer when the file was closed cleanly; when it was not (a crashed writer), through its chain of
/// checkpoint records plus a scan of the records after the last one, or by scanning every record
/// when there is no usable chain. Damaged records are skipped and listed in `damage`, never fatal.
///
/// One reader is for one thread at a time; open one reader per thread to read a file in parallel.
public final class CaptureReader {
    public let path: String
    /// The file header; nil when it is damaged (the records are still read).
    public let header: CaptureFileHeader?
    /// Chunk, gap and configuration records in file order (duplicates left out, and a source's chunk
    /// records put back in sequence order when the file holds them out of it: docs/CAPTURE.md §7).
    public internal(set) var index: [IndexEntry] = []
    /// Everything found damaged so far (while opening, and while reading chunks).
    public internal(set) var damage: [CaptureDamage] = []
    /// Where the index came from when the capture was opened.
    public enum IndexSource: Sendable, Equatable {
        /// The seek-table footer of a cleanly closed capture.
        case footer
        /// The chain of checkpoint records (a capture without a valid footer), plus a scan of what follows the last one.
        case checkpoints
        /// A scan of every record from the header on.
        case scan
    }

    /// True when the index came from a valid footer.
    public internal(set) var hasFooter = false
    /// How the index was built (docs/CAPTURE.md §7).
    public internal(set) var indexSource = IndexSource.scan
    /// True when the footer says the file was written by `repair` from a damaged capture.
    public internal(set) var wasRepaired = false
    /// True when the capture needed recovery: no valid footer, or written by `repair`.
    public var wasRecovered: Bool { !hasFooter || wasRepaired }
    /// The format version in the file header (docs/CAPTURE.md §2), also when the rest of the header
    /// is damaged; nil only when the file ends before it.
    public let formatVersion: UInt16?
    /// Bytes in the file.
    public let fileSize: Int
    /// Where the records start.
    public let recordsStart: Int

    let fd: Int32
    /// This reader's record buffer and chunk decoder, from `pool` and given back when it is freed.
    let workspace: DecodeWorkspace
    let pool: DecodeWorkspacePool
    var record: ByteStorage { workspace.record }
    var decoder: ChunkDecoder { workspace.decoder }
    /// Which workspace this reader holds (tests: readers open at once never share one).
    var workspaceIdentity: ObjectIdentifier { ObjectIdentifier(workspace) }
    var damagedOffsets: Set<Int> = []

    /// Opens a capture and builds its index (from the footer, else from checkpoints, else by scanning).
    /// - Parameters:
    ///   - path: the file.
    ///   - scanAll: build the index by scanning every record of the file even when a valid footer or
    ///     checkpoints index it (`repair`: a record the footer does not list, or lists elsewhere, is still
    ///     found). `hasFooter` still says whether the footer was valid.
    /// - Throws: `CaptureError.io` when it cannot be opened, `.notACapture` when it is not a capture.
    public convenience init(path: String, scanAll: Bool = false) throws(CaptureError) {
        try self.init(path: path, scanAll: scanAll, pool: .shared)
    }

    /// `init(path:scanAll:)` with the decode workspaces of `pool` (tests give their own).
    init(path: String, scanAll: Bool = false, pool: DecodeWorkspacePool) throws(CaptureError) {
        self.path = path
        self.pool = pool
        let fd = Foundation.open(path, O_RDONLY | O_CLOEXEC)
        self.fd = fd
        guard fd >= 0 else { throw CaptureError(.io, file: path, "cannot open: \(String(cString: strerror(errno)))") }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            Foundation.close(fd)
            throw CaptureError(.io, file: path, "cannot stat: \(String(cString: strerror(errno)))")
        }
        fileSize = Int(st.st_size)
        do { workspace = try pool.take() } catch {
            Foundation.close(fd)
            throw CaptureError(.io, file: path, "cannot create a zstd context: \(error)")
        }
        var head = [UInt8](repeating: 0, count: min(fileSize, 48 + CaptureFormat.maxWriterLength + 8))
        let descriptor = fd
        let got = head.withUnsafeMutableBytes { preadFully(descriptor, $0, offset: 0) }
        head.removeLast(head.count - max(0, got))
        formatVersion = head.count >= 10 ? head.withUnsafeBytes { RecordReader($0).u16(at: 8) } : nil
        let file = path
        let result: Result<CaptureFileHeader.Parsed, CaptureError> = head.withUnsafeBytes { b in
            do throws(CaptureError) { return .success(try CaptureFileHeader.parse(b, file: file)) } catch { return .failure(error) }
        }
        let parsed: CaptureFileHeader.Parsed
        switch result {
        case .success(let p): parsed = p
        case .failure(let error):
            Foundation.close(fd)
            throw error
        }
        switch parsed {
        case .valid(let h, let length):
            header = h
            recordsStart = length
        case .damaged(let reason, let resume):
            header = nil
            recordsStart = resume
            damage.append(CaptureDamage(offset: 0, length: nil, reason: "file header: \(reason)"))
        }
        if scanAll {
            _ = loadFooter()
            index = []
            scan(from: recordsStart, to: fileSize)
        } else if loadFooter() {
            indexSource = .footer
        } else if let resume = loadCheckpoints() {
            indexSource = .checkpoints
            scan(from: resume, to: fileSize)
        } else {
            scan(from: recordsStart, to: fileSize)
        }
        dropDuplicates()
        restoreSequenceOrder()
    }

    /// Chunk, gap, configuration, clock-offset and source-origin records are indexed (footer, checkpoints, scan).
    static func isIndexed(_ type: RecordType) -> Bool {
        type == .chunk || type == .gap || type == .configuration || type == .clockOffset || type == .sourceOrigin
    }

    /// Leaves out of the index every chunk or gap record that repeats an earlier one of the same source:
    /// the same type, sequence range, times and frame count (docs/CAPTURE.md §7). A copied record would
    /// otherwise be read, exported and repaired twice. Configuration records are copies by design;
    /// source-origin records are not compared (a reader takes the first of a source).
    func dropDuplicates() {
        struct Key: Hashable {
            var type: UInt8, source: UInt32, first: UInt64, last: UInt64, firstTime: Int64, lastTime: Int64, frames: UInt32
        }
        var seen: [Key: Int] = [:]
        seen.reserveCapacity(index.count)
        var kept: [IndexEntry] = []
        kept.reserveCapacity(index.count)
        for entry in index {
            let e = entry.envelope
            guard e.type != .configuration && e.type != .sourceOrigin else { kept.append(entry); continue }
            let key = Key(
                type: e.type.rawValue, source: e.sourceID, first: e.firstSequence, last: e.lastSequence,
                firstTime: e.firstTimeNs, lastTime: e.lastTimeNs, frames: e.frameCount)
            if let original = seen[key] {
                damage.append(
                    CaptureDamage(
                        offset: entry.offset, length: e.recordLength,
                        reason:
                            "duplicate of the \(e.type) record at byte \(original) (source \(e.sourceID), sequences \(e.firstSequence)-\(e.lastSequence)); skipped"
                    ))
                continue
            }
            seen[key] = entry.offset
            kept.append(entry)
        }
        if kept.count != index.count { index = kept }
    }

    /// Puts each source's chunk records back in sequence order where the file holds them out of it
    /// (docs/CAPTURE.md §7 step 5). A chunk record that comes before the previous chunk record of its
    /// source both in sequence numbers and in frame times (its `last_sequence` below the other's
    /// `first_sequence`, its `last_time_ns` below the other's `first_time_ns`) is misplaced — a copy
    /// tool or a storage fault moved it: a new session restarts the sequence numbers, never the times.
    /// Each is reported as damage, and that source's chunk records are sorted by `first_time_ns`, then
    /// `first_sequence`, into the places of the index its chunk records held; other records stay put.
    func restoreSequenceOrder() {
        var previous: [UInt32: IndexEntry] = [:]
        var misplaced = Set<UInt32>()
        for entry in index where entry.envelope.type == .chunk {
            let e = entry.envelope
            if let before = previous[e.sourceID], e.lastSequence < before.envelope.firstSequence, e.lastTimeNs < before.envelope.firstTimeNs
            {
                misplaced.insert(e.sourceID)
                damage.append(
                    CaptureDamage(
                        offset: entry.offset, length: e.recordLength,
                        reason: "chunk record out of sequence order (source \(e.sourceID), sequences \(e.firstSequence)-\(e.lastSequence)) "
                            + "after the one at byte \(before.offset) (sequences \(before.envelope.firstSequence)-\(before.envelope.lastSequence)); "
                            + "put back in sequence order"))
            }
            previous[e.sourceID] = entry
        }
        for source in misplaced {
            let places = index.indices.filter { index[$0].envelope.type == .chunk && index[$0].envelope.sourceID == source }
            let ordered = places.map { index[$0] }.sorted {
                ($0.envelope.firstTimeNs, $0.envelope.firstSequence, $0.offset) < (
                    $1.envelope.firstTimeNs, $1.envelope.firstSequence, $1.offset
                )
            }
            for (place, entry) in zip(places, ordered) { index[place] = entry }
        }
    }

    deinit {
        Foundation.close(fd)
        pool.giveBack(workspace)
    }

    // MARK: Reading

    /// Reads and decodes one chunk record into its frames' bytes.
    /// - Parameter entry: a chunk entry of `index`.
    /// - Returns: the recorded frames, back to back, exactly as they arrived.
    /// - Parameter samples: false to leave the analog sample matrices zero (see `frames(of:samples:)`).
    /// - Throws: `CaptureError.damagedRecord` naming the offset when the record is damaged (also added to `damage`).
    public func readChunk(_ entry: IndexEntry, samples: Bool = true) throws(CaptureError) -> FrameBuffer {
        switch decodeChunk(entry, record: record, decoder: decoder, samples: samples) {
        case .success(let buffer): return buffer
        case .failure(let reason): throw noteDamage(entry, reason.text)
        }
    }

    /// The frames of a decoded chunk, in order.
    /// - Throws: `CaptureError.damagedRecord` if a frame header inside is invalid.
    /// - Parameter samples: false for the frames with their analog sample matrices left zero (the
    ///   numeric streams are not decoded): headers, layouts and every other payload, much faster.
    public func frames(of entry: IndexEntry, samples: Bool = true) throws(CaptureError) -> [Frame] {
        let buffer = try readChunk(entry, samples: samples)
        switch Self.splitFrames(buffer, expected: Int(entry.envelope.frameCount)) {
        case .success(let frames): return frames
        case .failure(let reason): throw noteDamage(entry, reason.text)
        }
    }

    /// Decodes chunks on up to `threads` threads (each with its own buffer and zstd context; the file
    /// is read with `pread`) and calls `body` with each chunk's position in `entries` and its frames.
    /// `body` runs concurrently on the worker threads, once per intact chunk, in no particular order.
    /// Damaged chunks are added to `damage` once all are done; the first of them in `entries` order is
    /// then thrown (the intact chunks have all been delivered by then).
    public func forEachChunkConcurrently(
        _ entries: [IndexEntry], threads: Int,
        _ body: @Sendable (_ position: Int, _ frames: [Frame]) -> Void
    ) throws(CaptureError) {
        nonisolated(unsafe) let reader = self
        try concurrently(entries, threads: threads) { position, entry, record, decoder in
            let frames = reader.decodeChunk(entry, record: record, decoder: decoder).flatMap {
                Self.splitFrames($0, expected: Int(entry.envelope.frameCount))
            }
            switch frames {
            case .success(let frames): body(position, frames); return nil
            case .failure(let reason): return reason
            }
        }
    }

    /// `forEachChunkConcurrently` for readers of analog samples only: `body` gets each chunk's analog
    /// frames with their layouts and rows, decoded without rebuilding the frames (one copy of every
    /// sample fewer; see `ChunkDecoder.analogFrames`), valid during the call.
    /// - Parameter direct: for a chunk's frames (samples not yet decoded), where each channel's
    ///   samples go, by format and channel index; when it places every channel, the chunk is decoded
    ///   there and `body` is not called for it (see `ChunkDecoder.analogFrames`).
    package func forEachAnalogChunkConcurrently(
        _ entries: [IndexEntry], threads: Int,
        direct: (@Sendable (_ position: Int, _ frames: [AnalogChunkFrame]) -> ((SampleFormat, UInt32) -> UnsafeMutableRawPointer?)?)? = nil,
        _ body: @Sendable (_ position: Int, _ frames: [AnalogChunkFrame]) -> Void
    ) throws(CaptureError) {
        nonisolated(unsafe) let reader = self
        try concurrently(entries, threads: threads) { position, entry, record, decoder in
            switch reader.readChecked(entry, record: record) {
            case .failure(let reason): return reason
            case .success(let envelope):
                do throws(RecordEnvelope.Problem) {
                    try decoder.analogFrames(record.bytes, envelope: envelope, direct: direct.map { place in { place(position, $0) } }) {
                        body(position, $0)
                    }
                    return nil
                } catch {
                    return ChunkProblem(text: "\(error)")
                }
            }
        }
    }

    /// Runs `work` on up to `threads` threads for every entry, each thread with its own record buffer
    /// and decoder; the problems it returns are added to `damage`, the first in `entries` order thrown.
    func concurrently(
        _ entries: [IndexEntry], threads: Int,
        _ work: @Sendable (_ position: Int, _ entry: IndexEntry, _ record: ByteStorage, _ decoder: ChunkDecoder) -> ChunkProblem?
    ) throws(CaptureError) {
        let workers = max(1, min(threads, entries.count))
        let claims = WorkClaims(count: entries.count)
        let reasons = DamageReasons()
        nonisolated(unsafe) let reader = self
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            guard let workspace = worker == 0 ? reader.workspace : try? reader.pool.take() else {
                while let position = claims.next() { reasons.add(position, "cannot create a zstd context") }
                return
            }
            defer { if worker != 0 { reader.pool.giveBack(workspace) } }
            while let position = claims.next() {
                if let problem = work(position, entries[position], workspace.record, workspace.decoder) {
                    reasons.add(position, problem.text)
                }
            }
        }
        var first: CaptureError?
        for (position, reason) in reasons.sorted() {
            let error = noteDamage(entries[position], reason)
            if first == nil { first = error }
        }
        if let first { throw first }
    }

    /// Records a damaged chunk (once per record) and returns the error that names it.
    func noteDamage(_ entry: IndexEntry, _ reason: String) -> CaptureError {
        if damagedOffsets.insert(entry.offset).inserted {
            damage.append(CaptureDamage(offset: entry.offset, length: entry.envelope.recordLength, reason: reason))
        }
        return CaptureError(.damagedRecord, file: path, offset: entry.offset, reason)
    }

    /// Why a chunk could not be read (without file and offset, which the caller adds).
    struct ChunkProblem: Error { let text: String }

    /// Reads, checks and decodes one chunk record with the given buffer and decoder. It changes no state
    /// of the reader, so threads with their own buffer and decoder may call it at once.
    func decodeChunk(
        _ entry: IndexEntry, record: ByteStorage, decoder: ChunkDecoder,
        samples: Bool = true
    ) -> Result<FrameBuffer, ChunkProblem> {
        let onDisk: RecordEnvelope
        switch readChecked(entry, record: record) {
        case .success(let envelope): onDisk = envelope
        case .failure(let problem): return .failure(problem)
        }
        do {
            return .success(try decoder.decode(record.bytes, envelope: onDisk, samples: samples))
        } catch {
            return .failure(ChunkProblem(text: "\(error)"))
        }
    }

    /// Reads a chunk record's payload into `record`, checked against its seek-table entry and CRC.
    func readChecked(_ entry: IndexEntry, record: ByteStorage) -> Result<RecordEnvelope, ChunkProblem> {
        guard entry.envelope.type == .chunk else { return .failure(ChunkProblem(text: "not a chunk record")) }
        let onDisk: RecordEnvelope
        do { onDisk = try readEnvelope(at: entry.offset) } catch { return .failure(ChunkProblem(text: "chunk envelope: \(error)")) }
        guard onDisk == entry.envelope else { return .failure(ChunkProblem(text: "the chunk envelope differs from its seek-table entry")) }
        guard readPayload(onDisk, at: entry.offset, into: record) else {
            return .failure(ChunkProblem(text: "chunk payload CRC32C mismatch"))
        }
        return .success(onDisk)
    }

    /// Splits a decoded chunk into its frames.
    static func splitFrames(_ buffer: FrameBuffer, expected: Int) -> Result<[Frame], ChunkProblem> {
        var frames: [Frame] = []
        frames.reserveCapacity(expected)
        var offset = 0
        while offset < buffer.count {
            do {
                let frame = try Frame(decoding: buffer, at: offset, position: offset)
                frames.append(frame)
                offset += frame.header.frameLength
            } catch {
                return .failure(ChunkProblem(text: "frame at chunk byte \(offset): \(error)"))
            }
        }
        return .success(frames)
    }

    /// Calls `body` with every recorded frame in file order (optionally of some sources only, from
    /// an index position). Damaged chunks are skipped and added to `damage`.
    /// - Parameters:
    ///   - sources: the sources wanted, or nil for all.
    ///   - start: position in `index` to start from (see `seek`).
    ///   - threads: threads that decode chunks ahead of `body` (1: none; `body` always runs on the
    ///     calling thread, in order).
    ///   - body: receives each frame; it may keep the frame (the chunk's buffer stays alive with it).
    public func forEachFrame(sources: Set<UInt32>? = nil, from start: Int = 0, threads: Int = 1, _ body: (Frame) throws -> Void) rethrows {
        let entries = index[min(start, index.count)...].filter { entry in
            entry.envelope.type == .chunk && (sources?.contains(entry.envelope.sourceID) ?? true)
        }
        try forEachChunkInOrder(entries, threads: threads) { frames in
            for frame in frames { try body(frame) }
        }
    }

    /// Calls `body` with the frames of each intact chunk of `entries`, in order, on the calling
    /// thread; damaged chunks are added to `damage` and skipped. With `threads` > 1 that many
    /// threads decode ahead, at most 2 × `threads` chunks before the one `body` has (so memory
    /// stays bounded however slow `body` is); they are stopped and awaited before this returns or
    /// throws.
    func forEachChunkInOrder(_ entries: [IndexEntry], threads: Int, _ body: ([Frame]) throws -> Void) rethrows {
        guard threads > 1 && entries.count > 1 else {
            for entry in entries {
                guard let frames = try? frames(of: entry) else { continue }
                try body(frames)
            }
            return
        }
        let workers = min(threads, entries.count)
        let slots = OrderedSlots(count: entries.count, window: 2 * workers, workers: workers)
        nonisolated(unsafe) let reader = self
        for _ in 0..<workers {
            Thread.detachNewThread {
                defer { slots.workerDone() }
                let workspace = try? reader.pool.take()
                defer { if let workspace { reader.pool.giveBack(workspace) } }
                while let position = slots.claim() {
                    let entry = entries[position]
                    guard let workspace else {
                        slots.store(position, .failure(ChunkProblem(text: "cannot create a zstd context")))
                        continue
                    }
                    slots.store(
                        position,
                        reader.decodeChunk(entry, record: workspace.record, decoder: workspace.decoder).flatMap {
                            Self.splitFrames($0, expected: Int(entry.envelope.frameCount))
                        })
                }
            }
        }
        defer { slots.stop() }
        for position in entries.indices {
            switch slots.take(position) {
            case .success(let frames): try body(frames)
            case .failure(let reason): _ = noteDamage(entries[position], reason.text)
            }
        }
    }

    /// Calls `body` with each analog frame of `source`, in order, as a channel-major block viewed in place.
    /// - Parameters:
    ///   - source: the source id.
    ///   - body: receives the header and the zero-copy view of each analog frame.
    ///   - threads: threads that decode chunks ahead of `body` (as for `forEachFrame`).
    public func forEachAnalogBlock(
        source: UInt32, from start: Int = 0, threads: Int = 1,
        _ body: (FrameHeader, AnalogView) throws -> Void
    ) rethrows {
        let entries = index[min(start, index.count)...].filter { entry in
            entry.envelope.type == .chunk && entry.envelope.sourceID == source
                && entry.envelope.kindMask & (1 << UInt32(FrameKind.analog.rawValue)) != 0
        }
        try forEachAnalogBlock(in: entries, threads: threads, body)
    }

    /// `forEachAnalogBlock(source:)` over the chunks `entries` only (in their order).
    package func forEachAnalogBlock(in entries: [IndexEntry], threads: Int = 1, _ body: (FrameHeader, AnalogView) throws -> Void) rethrows {
        try forEachChunkInOrder(entries, threads: threads) { frames in
            for frame in frames where frame.header.kind == .analog {
                guard let view = try? frame.analog() else { continue }
                try body(frame.header, view)
            }
        }
    }

    /// The first analog frame of `source` with its samples left zero (its chunk's numeric streams are
    /// not decoded): its channels, sample format, scales and offsets, for a fraction of a chunk's
    /// decoding. Nil when the source has no intact analog chunk.
    public func firstAnalogLayout(source: UInt32) -> Frame? {
        let mask = UInt32(1) << UInt32(FrameKind.analog.rawValue)
        for entry in index where entry.envelope.type == .chunk && entry.envelope.sourceID == source && entry.envelope.kindMask & mask != 0 {
            guard let frames = try? frames(of: entry, samples: false) else { continue }
            if let frame = frames.first(where: { $0.header.kind == .analog && (try? $0.analog()) != nil }) { return frame }
        }
        return nil
    }

    /// The first configuration recorded for `source`: read from the first chunk that holds one, or, when
    /// every such chunk is damaged, from the first intact configuration record (the copies the writer
    /// makes, docs/CAPTURE.md §6).
    public func configuration(source: UInt32) -> Configuration? {
        let mask = UInt32(1) << UInt32(FrameKind.configuration.rawValue)
        for entry in index where entry.envelope.type == .chunk && entry.envelope.sourceID == source && entry.envelope.kindMask & mask != 0 {
            guard let frames = try? frames(of: entry, samples: false) else { continue }
            for frame in frames where frame.header.kind == .configuration {
                if case .configuration(let c)? = try? frame.payload() { return c }
            }
        }
        for entry in index where entry.envelope.type == .configuration && entry.envelope.sourceID == source {
            if let frame = configurationFrame(entry), case .configuration(let c)? = try? frame.payload() { return c }
        }
        return nil
    }

    /// The properties of `source` and its channels that go with its first configuration: the
    /// properties frame (wire kind 129) that is the next frame of the source after its first
    /// configuration frame, found in the chunks whose `kind_mask` has bit 1 or bit 0 set (docs/CAPTURE.md
    /// §6, properties). Empty when the source has none (a capture written before properties, or a
    /// source without them) or the frame cannot be read.
    public func properties(source: UInt32) -> SourceProperties {
        let mask = UInt32(1) << UInt32(FrameKind.configuration.rawValue) | CaptureKindMask.properties
        var afterConfiguration = false
        for entry in index where entry.envelope.type == .chunk && entry.envelope.sourceID == source && entry.envelope.kindMask & mask != 0 {
            guard let frames = try? frames(of: entry, samples: false) else { continue }
            for frame in frames {
                if afterConfiguration {
                    guard frame.header.kind == .properties, case .properties(let p)? = try? frame.payload() else {
                        return SourceProperties()
                    }
                    return p
                }
                if frame.header.kind == .configuration, case .configuration? = try? frame.payload() { afterConfiguration = true }
            }
        }
        return SourceProperties()
    }

    /// The configuration frame a configuration record holds, or nil (added to `damage`) when it is damaged.
    public func configurationFrame(_ entry: IndexEntry) -> Frame? {
        func damaged(_ reason: String) -> Frame? {
            if damagedOffsets.insert(entry.offset).inserted {
                damage.append(CaptureDamage(offset: entry.offset, length: entry.envelope.recordLength, reason: reason))
            }
            return nil
        }
        guard entry.envelope.type == .configuration else { return nil }
        guard (try? readEnvelope(at: entry.offset)) == entry.envelope else {
            return damaged("configuration record differs from its seek-table entry")
        }
        guard readPayload(entry.envelope, at: entry.offset, into: record) else { return damaged("configuration payload CRC32C mismatch") }
        let buffer = FrameBuffer(copying: record.bytes)
        guard let frame = try? Frame(decoding: buffer, at: 0, position: 0), frame.header.kind == .configuration,
            frame.header.frameLength == buffer.count, frame.header.sourceID == entry.envelope.sourceID
        else {
            return damaged("configuration record does not hold one configuration frame of source \(entry.envelope.sourceID)")
        }
        return frame
    }

    /// Per-source totals from the seek table (no chunk is read).
    public var sources: [CaptureSourceSummary] {
        var byID: [UInt32: CaptureSourceSummary] = [:]
        for entry in index where entry.envelope.type == .chunk {
            let e = entry.envelope
            var s =
                byID[e.sourceID]
                ?? CaptureSourceSummary(
                    sourceID: e.sourceID, chunks: 0, frames: 0, samples: 0,
                    firstTimeNs: e.firstTimeNs, lastTimeNs: e.lastTimeNs, storedBytes: 0, contentBytes: 0, frameBytes: 0)
            s.chunks += 1
            s.frames += Int(e.frameCount)
            // Saturating: the counts are the file's claims (a damaged or hostile seek table may hold any value).
            s.samples = s.samples.addingReportingOverflow(e.sampleCount).overflow ? .max : s.samples + e.sampleCount
            s.firstTimeNs = min(s.firstTimeNs, e.firstTimeNs)
            s.lastTimeNs = max(s.lastTimeNs, e.lastTimeNs)
            s.storedBytes += Int(e.storedLength)
            s.contentBytes += Int(e.contentLength)
            s.frameBytes += Int(e.framesLength)
            byID[e.sourceID] = s
        }
        return byID.values.sorted { $0.sourceID < $1.sourceID }
    }

    /// The gap records.
    public var gaps: [CaptureGap] {
        index.compactMap { entry -> CaptureGap? in
            guard entry.envelope.type == .gap else { return nil }
            var cause: GapCause?
            if readPayload(entry.envelope, at: entry.offset, into: record), record.count == 24 {
                cause = GapCause(rawValue: RecordReader(record.bytes).u32(at: 16))
            }
            return CaptureGap(
                sourceID: entry.envelope.sourceID, firstMissingSequence: entry.envelope.firstSequence,
                missingCount: entry.envelope.lastSequence &- entry.envelope.firstSequence &+ 1,
                cause: cause, timeNs: entry.envelope.firstTimeNs, offset: entry.offset)
        }
    }

    // MARK: Seeking

    /// The position in `index` of the first chunk (of `source`, if given) that holds frames at or after `timeNs`.
    public func seek(timeNs: Int64, source: UInt32? = nil) -> Int? {
        index.firstIndex {
            $0.envelope.type == .chunk && (source == nil || $0.envelope.sourceID == source) && $0.envelope.lastTimeNs >= timeNs
        }
    }

    /// The position in `index` of the first chunk (of `source`, if given) that holds `sequence` or a later one.
    public func seek(sequence: UInt64, source: UInt32? = nil) -> Int? {
        index.firstIndex {
            $0.envelope.type == .chunk && (source == nil || $0.envelope.sourceID == source) && $0.envelope.lastSequence >= sequence
        }
    }

    /// Checks that the record of `entry` is intact on disk (its envelope equals the entry, its payload
    /// CRC holds); a failure is added to `damage`. Needed for gap records indexed from a footer or
    /// checkpoints, whose payloads are not read when the capture is opened.
    func verify(_ entry: IndexEntry) -> Bool {
        let intact = (try? readEnvelope(at: entry.offset)) == entry.envelope && readPayload(entry.envelope, at: entry.offset, into: record)
        if !intact, damagedOffsets.insert(entry.offset).inserted {
            damage.append(
                CaptureDamage(
                    offset: entry.offset, length: entry.envelope.recordLength,
                    reason: "\(entry.envelope.type) record differs from its seek-table entry or fails its payload CRC32C"))
        }
        return intact
    }

    /// Bytes of a record at `offset`, envelope and payload, read raw (for repair).
    func rawRecord(_ entry: IndexEntry) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: entry.envelope.recordLength)
        let n = bytes.withUnsafeMutableBytes { preadFully(fd, $0, offset: entry.offset) }
        return n == bytes.count ? bytes : nil
    }
}

/// Reads up to `buffer.count` bytes at `offset`, retrying short reads; returns the bytes read (0 at end, -1 on error).
func preadFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int) -> Int {
    var done = 0
    while done < buffer.count {
        let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
        if n < 0 {
            if errno == EINTR { continue }
            return done > 0 ? done : -1
        }
        if n == 0 { break }
        done += n
    }
    return done
}
