import Foundation
import TributaryAnalysis
import TributaryCapture
import TributaryInterchange
import TributaryWire
import TributaryText

/// Sample types of include/tributary.h (`TRIBUTARY_FLOAT64`, …): the values of the wire format.
enum CSampleType: Int32 {
    case float64 = 1
    case float32 = 2
    case int16 = 3

    init(_ format: SampleFormat) {
        switch format {
        case .float64: self = .float64
        case .float32: self = .float32
        case .int16: self = .int16
        }
    }

    /// Bytes per sample.
    var size: Int {
        switch self {
        case .float64: 8
        case .float32: 4
        case .int16: 2
        }
    }
}

/// What the first analog frame of a source says: its channels as stored, their format and scaling,
/// and its time (the time of the source's first sample, from which `tributary_capture_times` counts).
struct SourceShape {
    var channelIndexes: [UInt32]
    var format: SampleFormat
    var scale: [Double]
    var offset: [Double]
    var firstTimeNs: Int64
}

/// An open capture behind a `tributary_capture *`. A capture reader serves one thread at a time:
/// every call holds `lock`.
final class CaptureHandle {
    let reader: CaptureReader
    /// The capture's path made absolute when it was opened, so that `tributary_capture_export` reads
    /// the same file after the process changed its working directory (MATLAB's `cd`, a script's chdir).
    let absolutePath: String
    let lock = NSLock()
    private var shapes: [UInt32: SourceShape?] = [:]
    /// The cursor of `tributary_capture_next_package`: the next index entry, the frames left of the current chunk.
    var nextEntry = 0
    var pending: ArraySlice<Frame> = []

    init(reader: CaptureReader) {
        self.reader = reader
        absolutePath = reader.path.hasPrefix("/") ? reader.path : FileManager.default.currentDirectoryPath + "/" + reader.path
    }

    /// Source ids in ascending order (from the seek table and the gap records).
    var sourceIDs: [UInt32] { reader.sources.map(\.sourceID).sorted() }

    func summary(_ source: UInt32) throws(APIError) -> CaptureSourceSummary {
        guard let s = reader.sources.first(where: { $0.sourceID == source }) else {
            throw APIError(.range, "the capture has no source \(source) (sources: \(sourceIDs.map(String.init).joined(separator: ", ")))")
        }
        return s
    }

    /// The shape of the source's analog data (nil when it has none), from its first analog frame.
    func shape(_ source: UInt32) throws(APIError) -> SourceShape? {
        if let known = shapes[source] { return known }
        _ = try summary(source)
        var found: SourceShape?
        // Its layout only: the chunk's samples are not decoded.
        if let frame = reader.firstAnalogLayout(source: source), let view = try? frame.analog() {
            found = SourceShape(channelIndexes: view.channelIndexes, format: view.format,
                                scale: (0..<view.channelCount).map(view.scale), offset: (0..<view.channelCount).map(view.offset),
                                firstTimeNs: frame.header.timestampNs)
        }
        shapes[source] = .some(found)
        return found
    }

    /// The configured sampling rate of the source's channels (nil when unknown or not one rate).
    func rate(_ source: UInt32) -> Double? {
        guard let configuration = reader.configuration(source: source) else { return nil }
        let rates = Set(configuration.channels.map(\.samplingRate))
        return rates.count == 1 ? rates.first : nil
    }

    /// The JSON description of the capture (documented in docs/C_API.md).
    func infoJSON() throws(APIError) -> JSON {
        var sources: [JSON] = []
        for summary in reader.sources.sorted(by: { $0.sourceID < $1.sourceID }) {
            let id = summary.sourceID
            let configuration = reader.configuration(source: id)
            let shape = try self.shape(id)
            let channels: [JSON] = (shape?.channelIndexes ?? []).enumerated().map { row, index in
                let c = configuration?.channels.first { $0.index == index }
                return .object([
                    ("row", .int(row)), ("index", .uint(UInt64(index))),
                    ("name", .string(c?.description ?? "ch\(index)")), ("unit", .string(c?.unit ?? "")),
                    ("sample_rate", c.map { .double($0.samplingRate) } ?? .null),
                    ("min", c.map { .double($0.minValue) } ?? .null), ("max", c.map { .double($0.maxValue) } ?? .null),
                    ("scale", .double(shape!.scale[row])), ("offset", .double(shape!.offset[row])),
                ])
            }
            let gaps = reader.gaps.filter { $0.sourceID == id }
            sources.append(.object([
                ("id", .uint(UInt64(id))),
                ("name", configuration.map { .string($0.deviceName) } ?? .null),
                ("device_type", configuration.map { .string($0.deviceType) } ?? .null),
                ("sample_rate", rate(id).map { .double($0) } ?? .null),
                ("sample_type", shape.map { .string($0.format.description) } ?? .null),
                ("channel_count", .int(shape?.channelIndexes.count ?? 0)),
                ("samples", .uint(summary.samples)),
                ("frames", .int(summary.frames)), ("chunks", .int(summary.chunks)),
                ("first_time_ns", .int(Int(summary.firstTimeNs))), ("last_time_ns", .int(Int(summary.lastTimeNs))),
                ("channels", .array(channels)),
                ("lines", .array((configuration?.lines ?? []).map {
                    .object([("index", .uint(UInt64($0.index))), ("name", .string($0.description))])
                })),
                ("gaps", .array(gaps.map { g in
                    .object([("first_missing_sequence", .uint(g.firstMissingSequence)), ("missing_count", .uint(g.missingCount)),
                             ("cause", g.cause.map { .string($0.description) } ?? .null), ("time_ns", .int(Int(g.timeNs)))])
                })),
            ]))
        }
        return .object([
            ("path", .string(reader.path)),
            ("recovered", .bool(reader.wasRecovered)),
            ("damage", .strings(reader.damage.map(\.description))),
            ("sources", .array(sources)),
        ])
    }

    /// Copies samples `first ..< first + count` of the rows `rows` of `source` into `buffer`
    /// (row-major: row k at element k × count), as float64 physical values or in the stored type.
    /// - Returns: samples per row written (less than `count` when the data ends first).
    func read(source: UInt32, rows requested: [Int]?, first: UInt64, count: Int, type: CSampleType,
              buffer: UnsafeMutableRawPointer) throws(APIError) -> Int {
        guard let shape = try self.shape(source) else { throw APIError(.range, "source \(source) has no analog data") }
        let rows = requested ?? Array(0..<shape.channelIndexes.count)
        for r in rows where r < 0 || r >= shape.channelIndexes.count {
            throw APIError(.range, "channel \(r) is out of range: source \(source) has \(shape.channelIndexes.count) channels (0-\(shape.channelIndexes.count - 1))")
        }
        if type != .float64 && type != CSampleType(shape.format) {
            throw APIError(.type, "source \(source) stores \(shape.format); read it as float64 or as \(shape.format)")
        }
        let end = first.addingReportingOverflow(UInt64(count))
        let last = end.overflow ? UInt64.max : end.partialValue
        let (selected, starts) = try analogChunks(source: source, first: first, last: last)
        // Chunks decode on every core, each copying its samples to their place in `buffer`. A large
        // buffer's pages are made present first, in one call: fresh pages first written from two
        // threads at once (each fault zeroing a 2 MiB huge page) stall erratically on this project's
        // 2-core VMs (Benchmarks/kernels/first_touch.c; docs/PERFORMANCE.md, "C kernels and first touches").
        let threads = ProcessInfo.processInfo.activeProcessorCount
        if threads > 1 && selected.count > 1 { populate(buffer, byteCount: rows.count * count * type.size, threads: threads) }
        let copier = SampleCopier(source: source, rows: rows, shape: shape, first: first, last: last, count: count,
                                  type: type, buffer: buffer)
        let damageBefore = reader.damage.count
        let chunkStarts = starts, chunkSamples = selected.map(\.envelope.sampleCount)
        do {
            try reader.forEachAnalogChunkConcurrently(selected, threads: threads, direct: { k, frames in
                copier.places(frames, startingAt: chunkStarts[k], chunkSamples: chunkSamples[k])
            }) { k, frames in
                copier.copy(frames, startingAt: chunkStarts[k], chunkSamples: chunkSamples[k])
            }
        } catch {
            throw APIError(.format, "\(error); run 'tributary repair' to read what is intact")
        }
        if let problem = copier.problem { throw problem }
        if reader.damage.count > damageBefore {
            throw APIError(.format, "\(reader.damage[damageBefore]); run 'tributary repair' to read what is intact")
        }
        guard let lastStart = starts.last, let lastEntry = selected.last else { return 0 }
        return Int(min(last, lastStart + lastEntry.envelope.sampleCount) - max(first, starts[0]))
    }

    /// The analog chunks of `source` that hold any of samples `first ..< last`, with the sample
    /// position each starts at (by the seek table's counts, as `read` numbers the samples).
    private func analogChunks(source: UInt32, first: UInt64, last: UInt64) throws(APIError) -> (entries: [IndexEntry], starts: [UInt64]) {
        let analogBit = UInt32(1) << UInt32(FrameKind.analog.rawValue)
        var selected: [IndexEntry] = []
        var starts: [UInt64] = []
        var position: UInt64 = 0
        for entry in reader.index where entry.envelope.type == .chunk && entry.envelope.sourceID == source && entry.envelope.kindMask & analogBit != 0 {
            if position >= last { break }
            // The counts are the file's claims: a damaged or hostile seek table may hold any value.
            let (next, overflow) = position.addingReportingOverflow(entry.envelope.sampleCount)
            if overflow {
                throw APIError(.format, "the chunk of source \(source) at byte \(entry.offset) claims \(entry.envelope.sampleCount) samples, "
                               + "beyond any capture; run 'tributary repair' to read what is intact")
            }
            if next > first {
                selected.append(entry)
                starts.append(position)
            }
            position = next
        }
        return (selected, starts)
    }

    /// The sampling rate that gives `source`'s samples their times: the one rate its configuration
    /// gives the recorded channels, as `export` takes it (`SourceSeries.rate`).
    func timeRate(_ source: UInt32) throws(APIError) -> Double {
        guard let shape = try self.shape(source) else { throw APIError(.range, "source \(source) has no analog data") }
        guard let rate = SourceSeries.rate(reader: reader, source: source, channels: shape.channelIndexes) else {
            throw APIError(.format, "source \(source) has no single sampling rate in its configuration: its samples have numbers, not times")
        }
        return rate
    }

    /// The times of samples `first ..< first + count` of `source`, in seconds since its first sample,
    /// into `out` (`count` values): each frame's recorded time plus k / rate for its k-th sample,
    /// computed by `SourceSeries.sampleTimes`, as `tributary export --time-column` computes them.
    /// Only the frame headers of the chunks in the range are decoded, not their samples.
    /// - Returns: the times written (fewer than `count` when the data ends first).
    func times(source: UInt32, first: UInt64, count: Int, into out: UnsafeMutablePointer<Double>) throws(APIError) -> Int {
        let rate = try timeRate(source)
        guard let shape = try self.shape(source) else { throw APIError(.range, "source \(source) has no analog data") }
        let end = first.addingReportingOverflow(UInt64(count))
        let last = end.overflow ? UInt64.max : end.partialValue
        let (selected, starts) = try analogChunks(source: source, first: first, last: last)
        var blocks: [SeriesBlock] = []
        var position: UInt64 = 0
        for (entry, start) in zip(selected, starts) {
            let frames: [Frame]
            do { frames = try reader.frames(of: entry, samples: false) } catch {
                throw APIError(.format, "\(error); run 'tributary repair' to read what is intact")
            }
            let chunkEnd = start + entry.envelope.sampleCount  // cannot overflow: analogChunks checked it
            let mismatch = APIError(.format, "the chunk of source \(source) at byte \(entry.offset) holds other samples than its record says "
                                    + "(\(entry.envelope.sampleCount)); run 'tributary repair' to read what is intact")
            position = start
            for frame in frames where frame.header.kind == .analog && frame.header.sourceID == source {
                guard let view = try? frame.analog() else { continue }
                let n = UInt64(view.sampleCount)
                guard n <= chunkEnd - position else { throw mismatch }
                guard let at = Int(exactly: position), Int(exactly: position + n) != nil else {
                    throw APIError(.format, "the analog frames of source \(source) claim samples past \(Int.max); run 'tributary repair' to read what is intact")
                }
                blocks.append(SeriesBlock(start: at, count: view.sampleCount, timestampNs: frame.header.timestampNs, firstSample: view.firstSample))
                position += n
            }
            guard position == chunkEnd else { throw mismatch }
        }
        guard let lower = Int(exactly: max(first, starts.first ?? first)), let upper = Int(exactly: min(last, position)), lower < upper else { return 0 }
        SourceSeries.sampleTimes(of: blocks, since: shape.firstTimeNs, rate: rate, in: lower..<upper,
                                 into: UnsafeMutableBufferPointer(start: out, count: upper - lower))
        return upper - lower
    }

    /// The next frame that is not analog data (and whose kind is in `mask`, when non-zero), in file order.
    func nextPackage(mask: UInt32) -> Frame? {
        let analogBit = UInt32(1) << UInt32(FrameKind.analog.rawValue)
        let wanted = mask == 0 ? ~analogBit : mask & ~analogBit
        while true {
            while let frame = pending.popFirst() {
                if wanted & (UInt32(1) << UInt32(frame.header.kind.rawValue)) != 0 { return frame }
            }
            guard nextEntry < reader.index.count else { return nil }
            let entry = reader.index[nextEntry]
            nextEntry += 1
            guard entry.envelope.type == .chunk, entry.envelope.kindMask & wanted != 0 else { continue }
            // A damaged chunk is skipped (and listed in the capture's damage), as everywhere else.
            pending = ((try? reader.frames(of: entry)) ?? [])[...]
        }
    }
}

/// Makes the pages of a buffer of at least 4 MiB present and writable (Linux's
/// MADV_POPULATE_WRITE, 5.14+), without changing its contents, from two threads at once (each its
/// half, split on a 2 MiB boundary): one thread zeroing the whole buffer first made every large read
/// slower than two (Benchmarks/kernels/first_touch.c). Where the kernel refuses, the pages are
/// faulted as they are written, as before.
private func populate(_ buffer: UnsafeMutableRawPointer, byteCount: Int, threads: Int) {
    guard byteCount >= 4 << 20 else { return }
    let page = max(4096, sysconf(Int32(_SC_PAGESIZE)))
    let start = Int(bitPattern: buffer) & ~(page - 1), end = Int(bitPattern: buffer) + byteCount
    let populateWrite: Int32 = 23  // MADV_POPULATE_WRITE (<linux/mman.h>)
    let middle = max(start, min(end, (start + (end - start) / 2) & ~((2 << 20) - 1)))
    let pieces = threads > 1 && middle > start ? [(start, middle), (middle, end)] : [(start, end)]
    DispatchQueue.concurrentPerform(iterations: pieces.count) { k in
        _ = madvise(UnsafeMutableRawPointer(bitPattern: pieces[k].0), pieces[k].1 - pieces[k].0, populateWrite)
    }
}

/// Opens a capture (.tcap) for reading.
@_cdecl("tributary_capture_open")
public func tributary_capture_open(_ path: UnsafePointer<CChar>?, _ capture: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guarded("tributary_capture_open") {
        let result = try out(capture, "capture")
        result.pointee = nil
        let path = try string(path, "path")
        let reader: CaptureReader
        do { reader = try CaptureReader(path: path) } catch {
            let text = "\(error)"
            let isIO = access(path, R_OK) != 0
            throw APIError(isIO ? .io : .format, text)
        }
        result.pointee = Handles.insert(CaptureHandle(reader: reader))
    }
}

/// Closes a capture; the handle and every string it handed out become invalid.
@_cdecl("tributary_capture_close")
public func tributary_capture_close(_ capture: OpaquePointer?) -> Int32 {
    guarded("tributary_capture_close") {
        _ = try Handles.remove(capture, as: CaptureHandle.self, "capture")
    }
}

private func withCapture(_ function: String, _ capture: OpaquePointer?, _ body: (CaptureHandle) throws -> Void) -> Int32 {
    guarded(function) {
        let handle = try Handles.lookup(capture, as: CaptureHandle.self, "capture")
        handle.lock.lock()
        defer { handle.lock.unlock() }
        try body(handle)
    }
}

/// The capture's sources, channels, gaps and damage as a JSON document (freed with tributary_free).
@_cdecl("tributary_capture_info_json")
public func tributary_capture_info_json(_ capture: OpaquePointer?, _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withCapture("tributary_capture_info_json", capture) { handle in
        let result = try out(json, "json")
        result.pointee = nil
        result.pointee = try ownedCString(handle.infoJSON().text)
    }
}

/// Number of sources in the capture.
@_cdecl("tributary_capture_source_count")
public func tributary_capture_source_count(_ capture: OpaquePointer?, _ count: UnsafeMutablePointer<UInt>?) -> Int32 {
    withCapture("tributary_capture_source_count", capture) { handle in
        try out(count, "count").pointee = UInt(handle.sourceIDs.count)
    }
}

/// The id of the source at `position` (0 ..< count, ascending ids).
@_cdecl("tributary_capture_source_id")
public func tributary_capture_source_id(_ capture: OpaquePointer?, _ position: UInt, _ id: UnsafeMutablePointer<UInt32>?) -> Int32 {
    withCapture("tributary_capture_source_id", capture) { handle in
        let result = try out(id, "id")
        let ids = handle.sourceIDs
        guard position < UInt(ids.count) else { throw APIError(.range, "source position \(position) is out of range (the capture has \(ids.count) sources)") }
        result.pointee = ids[Int(position)]
    }
}

/// The shape of a source's analog data; any out-pointer may be NULL.
@_cdecl("tributary_capture_shape")
public func tributary_capture_shape(_ capture: OpaquePointer?, _ source: UInt32, _ channels: UnsafeMutablePointer<UInt32>?,
                                    _ samples: UnsafeMutablePointer<UInt64>?, _ sampleType: UnsafeMutablePointer<Int32>?,
                                    _ rate: UnsafeMutablePointer<Double>?) -> Int32 {
    withCapture("tributary_capture_shape", capture) { handle in
        let summary = try handle.summary(source)
        let shape = try handle.shape(source)
        channels?.pointee = UInt32(shape?.channelIndexes.count ?? 0)
        samples?.pointee = shape == nil ? 0 : summary.samples
        sampleType?.pointee = shape.map { CSampleType($0.format).rawValue } ?? 0
        rate?.pointee = handle.rate(source) ?? .nan
    }
}

/// Gap records of a source: how many, and how many frames they say are missing; either pointer may be NULL.
@_cdecl("tributary_capture_gaps")
public func tributary_capture_gaps(_ capture: OpaquePointer?, _ source: UInt32, _ gaps: UnsafeMutablePointer<UInt>?,
                                   _ missingFrames: UnsafeMutablePointer<UInt64>?) -> Int32 {
    withCapture("tributary_capture_gaps", capture) { handle in
        _ = try handle.summary(source)
        let list = handle.reader.gaps.filter { $0.sourceID == source }
        gaps?.pointee = UInt(list.count)
        missingFrames?.pointee = list.reduce(0) { $0 &+ $1.missingCount }
    }
}

/// Reads samples [first_sample, first_sample + sample_count) of some channels of a source.
@_cdecl("tributary_capture_read")
public func tributary_capture_read(_ capture: OpaquePointer?, _ source: UInt32, _ channels: UnsafePointer<UInt32>?, _ channelCount: UInt,
                                   _ firstSample: UInt64, _ sampleCount: UInt64, _ sampleType: Int32,
                                   _ buffer: UnsafeMutableRawPointer?, _ bufferBytes: UInt, _ samplesRead: UnsafeMutablePointer<UInt64>?) -> Int32 {
    withCapture("tributary_capture_read", capture) { handle in
        samplesRead?.pointee = 0
        guard let type = CSampleType(rawValue: sampleType) else {
            throw APIError(.argument, "sample_type \(sampleType) is not TRIBUTARY_FLOAT64 (1), TRIBUTARY_FLOAT32 (2) or TRIBUTARY_INT16 (3)")
        }
        guard let shape = try handle.shape(source) else { throw APIError(.range, "source \(source) has no analog data") }
        var rows: [Int]?
        if channelCount > 0 {
            guard let channels else { throw APIError(.argument, "channels is NULL but channel_count is \(channelCount)") }
            guard channelCount <= UInt(shape.channelIndexes.count) * 64 else { throw APIError(.range, "channel_count \(channelCount) is too large") }
            rows = (0..<Int(channelCount)).map { Int(channels[$0]) }
        }
        let rowCount = rows?.count ?? shape.channelIndexes.count
        guard sampleCount <= UInt64(Int.max / 16) else { throw APIError(.range, "sample_count \(sampleCount) is too large") }
        let elementSize = type.size
        let (elements, o1) = rowCount.multipliedReportingOverflow(by: Int(sampleCount))
        let (bytes, o2) = elements.multipliedReportingOverflow(by: elementSize)
        guard !o1, !o2 else { throw APIError(.range, "channels × samples is too large") }
        guard bytes <= Int(clamping: bufferBytes) else {
            throw APIError(.buffer, "the buffer has \(bufferBytes) bytes; \(rowCount) channels × \(sampleCount) samples × \(elementSize) bytes need \(bytes)")
        }
        if bytes == 0 { return }
        guard let buffer else { throw APIError(.argument, "buffer is NULL") }
        let n = try handle.read(source: source, rows: rows, first: firstSample, count: Int(sampleCount), type: type, buffer: buffer)
        samplesRead?.pointee = UInt64(n)
    }
}

/// The times of samples [first_sample, first_sample + sample_count) of a source, in seconds since its
/// first sample, from the recorded frame times: the time column of `tributary export --time-column`.
@_cdecl("tributary_capture_times")
public func tributary_capture_times(_ capture: OpaquePointer?, _ source: UInt32, _ firstSample: UInt64, _ sampleCount: UInt64,
                                    _ seconds: UnsafeMutablePointer<Double>?, _ bufferBytes: UInt,
                                    _ samplesRead: UnsafeMutablePointer<UInt64>?) -> Int32 {
    withCapture("tributary_capture_times", capture) { handle in
        samplesRead?.pointee = 0
        _ = try handle.timeRate(source)
        guard sampleCount <= UInt64(Int.max / 16) else { throw APIError(.range, "sample_count \(sampleCount) is too large") }
        let bytes = Int(sampleCount) * MemoryLayout<Double>.size
        guard bytes <= Int(clamping: bufferBytes) else {
            throw APIError(.buffer, "the buffer has \(bufferBytes) bytes; \(sampleCount) times × 8 bytes need \(bytes)")
        }
        if bytes == 0 { return }
        guard let seconds else { throw APIError(.argument, "seconds is NULL") }
        let n = try handle.times(source: source, first: firstSample, count: Int(sampleCount), into: seconds)
        samplesRead?.pointee = UInt64(n)
    }
}

/// The next package that is not analog data, as the JSON object `tributary inspect --json` prints.
@_cdecl("tributary_capture_next_package")
public func tributary_capture_next_package(_ capture: OpaquePointer?, _ kindMask: UInt32,
                                           _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withCapture("tributary_capture_next_package", capture) { handle in
        let result = try out(json, "json")
        result.pointee = nil
        while let frame = handle.nextPackage(mask: kindMask) {
            guard let payload = try? frame.payload() else { continue }
            result.pointee = try ownedCString(FrameDescription.json(frame, payload: payload).text)
            return
        }
        throw APIError(.end, "no more packages")
    }
}

/// Starts `tributary_capture_next_package` again from the beginning of the capture.
@_cdecl("tributary_capture_rewind")
public func tributary_capture_rewind(_ capture: OpaquePointer?) -> Int32 {
    withCapture("tributary_capture_rewind", capture) { handle in
        handle.nextEntry = 0
        handle.pending = []
    }
}

/// Copies the analog samples of decoded chunks into a caller's buffer; called from several threads at
/// once, each with its own chunk (so each writes its own part of the buffer).
private final class SampleCopier: @unchecked Sendable {
    // @unchecked Sendable: the fields are immutable except `firstProblem`, which is guarded by `lock`;
    // concurrent calls write disjoint sample ranges of `buffer`.
    private let source: UInt32
    private let rows: [Int]
    private let shape: SourceShape
    private let first: UInt64, last: UInt64
    private let count: Int
    private let type: CSampleType
    private let buffer: UnsafeMutableRawPointer
    private let lock = NSLock()
    private var firstProblem: (position: UInt64, error: APIError)?

    init(source: UInt32, rows: [Int], shape: SourceShape, first: UInt64, last: UInt64, count: Int, type: CSampleType,
         buffer: UnsafeMutableRawPointer) {
        (self.source, self.rows, self.shape, self.first, self.last, self.count, self.type, self.buffer) =
            (source, rows, shape, first, last, count, type, buffer)
    }

    /// The problem at the earliest sample position, if any chunk had one.
    var problem: APIError? {
        lock.lock(); defer { lock.unlock() }
        return firstProblem?.error
    }

    private func report(_ position: UInt64, _ message: String) {
        lock.lock(); defer { lock.unlock() }
        if firstProblem == nil || position < firstProblem!.position { firstProblem = (position, APIError(.format, message)) }
    }

    /// Where each channel's samples of a chunk go in `buffer`, when the chunk can be decoded there
    /// directly: it lies wholly inside the range read, every channel is read once, in the stored
    /// type, and its frames all have the source's layout (nil otherwise: it is decoded and copied).
    func places(_ frames: [AnalogChunkFrame], startingAt start: UInt64, chunkSamples: UInt64) -> ((SampleFormat, UInt32) -> UnsafeMutableRawPointer?)? {
        let size = shape.format.size
        guard type == CSampleType(shape.format), start >= first, start + chunkSamples <= last,
              rows.count == shape.channelIndexes.count, Set(rows).count == rows.count,
              Set(shape.channelIndexes).count == shape.channelIndexes.count,  // one row per channel: each place holds one row
              Int(bitPattern: buffer) % size == 0,
              frames.reduce(0, { $0 + UInt64($1.sampleCount) }) == chunkSamples,
              frames.allSatisfy({ frame in
                  frame.header.sourceID == source && frame.channelCount == shape.channelIndexes.count && frame.format == shape.format
                      && shape.channelIndexes.indices.allSatisfy({ frame.channelIndex($0) == shape.channelIndexes[$0]
                          && frame.scale($0) == shape.scale[$0] && frame.offset($0) == shape.offset[$0] })
              }) else { return nil }
        var place: [UInt32: UnsafeMutableRawPointer] = [:]
        for (k, r) in rows.enumerated() {
            place[shape.channelIndexes[r]] = buffer + (k * count + Int(start - first)) * size
        }
        let format = shape.format
        return { f, channel in f == format ? place[channel] : nil }
    }

    /// Copies a chunk's samples, the chunk starting at sample `start` of the source.
    func copy(_ frames: [AnalogChunkFrame], startingAt start: UInt64, chunkSamples: UInt64) {
        var position = start
        for frame in frames where frame.header.sourceID == source {
            let n = UInt64(frame.sampleCount)
            let (end, overflow) = position.addingReportingOverflow(n)
            if overflow {
                report(position, "a chunk of source \(source) holds more samples than its record says (\(chunkSamples))")
                return
            }
            defer { position = end }
            if end <= first { continue }
            if position >= last { continue }
            guard frame.channelCount == shape.channelIndexes.count, frame.format == shape.format,
                  shape.channelIndexes.indices.allSatisfy({ frame.channelIndex($0) == shape.channelIndexes[$0] }),
                  rows.allSatisfy({ frame.scale($0) == shape.scale[$0] && frame.offset($0) == shape.offset[$0] }) else {
                report(position, "the analog frames of source \(source) change channels, format or scaling at sample \(position); read the parts separately")
                return
            }
            let from = Int(max(first, position) - position)
            let to = Int(min(last, end) - position)
            let destinationStart = Int(max(first, position) - first)
            for (k, r) in rows.enumerated() {
                let base = k * count + destinationStart
                let samples = frame.samples(row: r)
                switch (frame.format, type) {
                case (.float64, _):
                    (buffer.assumingMemoryBound(to: Double.self) + base).update(from: samples.assumingMemoryBound(to: Double.self) + from, count: to - from)
                case (.float32, .float32):
                    (buffer.assumingMemoryBound(to: Float.self) + base).update(from: samples.assumingMemoryBound(to: Float.self) + from, count: to - from)
                case (.float32, _):
                    let s = samples.assumingMemoryBound(to: Float.self), d = buffer.assumingMemoryBound(to: Double.self) + base
                    for i in from..<to { d[i - from] = Double(s[i]) }
                case (.int16, .int16):
                    (buffer.assumingMemoryBound(to: Int16.self) + base).update(from: samples.assumingMemoryBound(to: Int16.self) + from, count: to - from)
                case (.int16, _):
                    let scale = frame.scale(r), offset = frame.offset(r)
                    let s = samples.assumingMemoryBound(to: Int16.self), d = buffer.assumingMemoryBound(to: Double.self) + base
                    for i in from..<to { d[i - from] = Double(s[i]) * scale + offset }
                }
            }
        }
        if position != start + chunkSamples {
            report(start, "a chunk of source \(source) holds \(position - start) samples where its record says \(chunkSamples)")
        }
    }
}
