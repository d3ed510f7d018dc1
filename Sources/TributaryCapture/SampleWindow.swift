import Foundation
import TributaryWire

/// How a window read delivers the samples.
public enum SampleValues: Sendable, Equatable {
    /// In the type the source stores (int16 and int32 as counts, float32, float64).
    case stored
    /// As float64 physical values: int16 / int32 counts × scale + offset, float32 widened.
    case physical
}

/// Why a window read failed, with a message saying what and where: `noAnalogData` (the source has
/// none), `range` (a row, a sample count or a size out of range), `buffer` (the caller's buffer is
/// smaller than rows × samples), `damaged` (a damaged chunk, also added to the reader's `damage`, or
/// frames that disagree with the seek table or change the source's layout). The C interface maps
/// each case to its status code.
public enum SampleReadError: Error, Sendable, Equatable, CustomStringConvertible {
    case noAnalogData(String)
    case range(String)
    case buffer(String)
    case damaged(String)

    public var message: String {
        switch self {
        case .noAnalogData(let text), .range(let text), .buffer(let text), .damaged(let text): text
        }
    }

    public var description: String { message }
}

/// One analog frame's place among a source's samples.
public struct SeriesBlock: Sendable, Equatable {
    /// Index of the frame's first sample (counted from the first sample of the series or source).
    public var start: Int
    public var count: Int
    /// The frame's `timestamp_ns` (time of its first sample, ns since 1970).
    public var timestampNs: Int64
    /// The frame's `first_sample` counter.
    public var firstSample: UInt64

    public init(start: Int, count: Int, timestampNs: Int64, firstSample: UInt64) {
        (self.start, self.count, self.timestampNs, self.firstSample) = (start, count, timestampNs, firstSample)
    }
}

/// The layout of a source's analog data as its first analog frame gives it: channels as stored,
/// their format and scaling, and the time of the source's first sample.
public struct AnalogShape: Sendable, Equatable {
    public var channelIndexes: [UInt32]
    public var format: SampleFormat
    public var scale: [Double]
    public var offset: [Double]
    public var firstTimeNs: Int64

    public var channelCount: Int { channelIndexes.count }

    /// The shape of `source`'s analog data, from the layout of its first intact analog frame (its
    /// samples are not decoded); nil when the source has none.
    public init?(reader: CaptureReader, source: UInt32) {
        guard let frame = reader.firstAnalogLayout(source: source), let view = try? frame.analog() else { return nil }
        channelIndexes = view.channelIndexes
        format = view.format
        scale = (0..<view.channelCount).map(view.scale)
        offset = (0..<view.channelCount).map(view.offset)
        firstTimeNs = frame.header.timestampNs
    }
}

/// What one window read delivered.
public struct SampleWindowRead {
    /// Samples per row written (fewer than asked when the data ends first).
    public var samples: Int
    /// The analog frames read, in order, with their samples numbered from the source's first
    /// (empty unless asked for).
    public var blocks: [SeriesBlock]
}

/// The one windowed read of a capture's analog samples: some rows of one source, samples
/// `first ..< first + count` (numbered by the seek table's per-chunk counts from the source's
/// first), into a caller's row-major buffer (row k at element k × count), stored or physical, the
/// chunks decoded on `threads` threads, each straight into its place when it can be. What the C
/// interface (and so Python), `export` and the measurement formats read samples with.
public struct SampleWindow {
    public let reader: CaptureReader
    public let source: UInt32
    public let shape: AnalogShape

    /// - Throws: `SampleReadError.noAnalogData` when the source has no analog frame.
    public init(reader: CaptureReader, source: UInt32) throws(SampleReadError) {
        guard let shape = AnalogShape(reader: reader, source: source) else {
            throw SampleReadError.noAnalogData("source \(source) has no analog data")
        }
        self.init(reader: reader, source: source, shape: shape)
    }

    /// A window on `source` whose shape the caller already knows (the C interface keeps it per source).
    public init(reader: CaptureReader, source: UInt32, shape: AnalogShape) {
        (self.reader, self.source, self.shape) = (reader, source, shape)
    }

    /// Bytes per value read as `values`.
    public func valueSize(_ values: SampleValues) -> Int {
        values == .stored ? shape.format.size : MemoryLayout<Double>.size
    }

    /// The bytes that `rows` rows × `samples` samples read as `values` take.
    /// - Throws: `.range` when `samples` or the product is beyond what a buffer can hold, `.buffer`
    ///   when they are more than `buffer` bytes.
    public func byteCount(rows: Int, samples: UInt64, as values: SampleValues, buffer: Int) throws(SampleReadError) -> Int {
        guard samples <= UInt64(Int.max / 16) else { throw SampleReadError.range("sample_count \(samples) is too large") }
        let size = valueSize(values)
        let (elements, o1) = rows.multipliedReportingOverflow(by: Int(samples))
        let (bytes, o2) = elements.multipliedReportingOverflow(by: size)
        guard !o1, !o2 else { throw SampleReadError.range("channels × samples is too large") }
        guard bytes <= buffer else {
            throw SampleReadError.buffer(
                "the buffer has \(buffer) bytes; \(rows) channels × \(samples) samples × \(size) bytes need \(bytes)")
        }
        return bytes
    }

    /// Reads samples `first ..< first + count` of `rows` (nil: every row; a row may repeat) into `buffer`.
    /// - Parameters:
    ///   - threads: chunks decoded at once (1: on the calling thread only).
    ///   - blocks: also list the frames read (`SampleWindowRead.blocks`).
    /// - Returns: samples per row written, and the frames when asked.
    /// - Throws: `.range` for a row outside the source's or a count too large, `.buffer` when `buffer`
    ///   holds fewer than rows × count values, `.damaged` for a damaged chunk (also added to the
    ///   reader's `damage`), a chunk whose frames hold other samples than the seek table says, or
    ///   frames that change channels, format or scaling.
    public func read(
        rows requested: [Int]? = nil, first: UInt64, count: Int, as values: SampleValues,
        into buffer: UnsafeMutableRawBufferPointer, threads: Int = ProcessInfo.processInfo.activeProcessorCount,
        blocks: Bool = false
    ) throws(SampleReadError) -> SampleWindowRead {
        guard count >= 0 else { throw SampleReadError.range("sample_count \(count) is negative") }
        let rows = requested ?? Array(0..<shape.channelCount)
        let bytes = try byteCount(rows: rows.count, samples: UInt64(clamping: count), as: values, buffer: buffer.count)
        for r in rows where r < 0 || r >= shape.channelCount {
            throw SampleReadError.range(
                "channel \(r) is out of range: source \(source) has \(shape.channelCount) channels (0-\(shape.channelCount - 1))")
        }
        guard bytes > 0, let base = buffer.baseAddress else { return SampleWindowRead(samples: 0, blocks: []) }
        let end = first.addingReportingOverflow(UInt64(count))
        let last = end.overflow ? UInt64.max : end.partialValue
        let (selected, starts) = try reader.analogChunks(source: source, first: first, last: last)
        // Chunks decode on every thread, each copying its samples to their place in `buffer`. A large
        // buffer's pages are made present first, in one call: fresh pages first written from two
        // threads at once (each fault zeroing a 2 MiB huge page) stall erratically on 2-core machines
        // (Benchmarks/kernels/first_touch.c; docs/PERFORMANCE.md, "C kernels and first touches").
        let threads = max(1, threads)
        if threads > 1 && selected.count > 1 { populate(base, byteCount: bytes, threads: threads) }
        let copier = SampleCopier(
            source: source, rows: rows, shape: shape, first: first, last: last, count: count,
            values: values, buffer: base, chunks: blocks ? selected : nil)
        let damageBefore = reader.damage.count
        let chunkSamples = selected.map(\.envelope.sampleCount)
        do {
            try reader.forEachAnalogChunkConcurrently(
                selected, threads: threads,
                direct: { k, frames in
                    copier.places(frames, chunk: k, startingAt: starts[k], chunkSamples: chunkSamples[k])
                }
            ) { k, frames in
                copier.copy(frames, chunk: k, startingAt: starts[k], chunkSamples: chunkSamples[k])
            }
        } catch {
            throw SampleReadError.damaged("\(error); run 'tributary repair' to read what is intact")
        }
        if let problem = copier.problem { throw problem }
        if reader.damage.count > damageBefore {
            throw SampleReadError.damaged("\(reader.damage[damageBefore]); run 'tributary repair' to read what is intact")
        }
        guard let lastStart = starts.last, let lastEntry = selected.last else { return SampleWindowRead(samples: 0, blocks: []) }
        return SampleWindowRead(
            samples: Int(min(last, lastStart + lastEntry.envelope.sampleCount) - max(first, starts[0])),
            blocks: copier.blocks())
    }
}

extension CaptureReader {
    /// The analog chunks of `source` that hold any of samples `first ..< last`, with the sample
    /// position each starts at (by the seek table's counts, as `SampleWindow.read` numbers the samples).
    /// - Throws: `SampleReadError.damaged` when the counts add up past UInt64 (a damaged or hostile seek table).
    public func analogChunks(source: UInt32, first: UInt64, last: UInt64) throws(SampleReadError) -> (
        entries: [IndexEntry], starts: [UInt64]
    ) {
        let analogBit = UInt32(1) << UInt32(FrameKind.analog.rawValue)
        var selected: [IndexEntry] = []
        var starts: [UInt64] = []
        var position: UInt64 = 0
        for entry in index
        where entry.envelope.type == .chunk && entry.envelope.sourceID == source && entry.envelope.kindMask & analogBit != 0 {
            if position >= last { break }
            // The counts are the file's claims: a damaged or hostile seek table may hold any value.
            let (next, overflow) = position.addingReportingOverflow(entry.envelope.sampleCount)
            if overflow {
                throw SampleReadError.damaged(
                    "the chunk of source \(source) at byte \(entry.offset) claims \(entry.envelope.sampleCount) samples, "
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

/// Copies the analog samples of decoded chunks into a caller's buffer; called from several threads at
/// once, each with its own chunk (so each writes its own part of the buffer, and its own slot of the
/// frame list).
private final class SampleCopier: @unchecked Sendable {
    // @unchecked Sendable: the fields are immutable except `firstProblem`, which is guarded by `lock`,
    // and the frame slots, of which each chunk (one thread) writes its own; concurrent calls write
    // disjoint sample ranges of `buffer`.
    private let source: UInt32
    private let rows: [Int]
    private let shape: AnalogShape
    private let first: UInt64, last: UInt64
    private let count: Int
    private let values: SampleValues
    private let buffer: UnsafeMutableRawPointer
    /// The row read from each stored channel, when every row is read once in the stored type (the
    /// chunks can then be decoded in place).
    private let rowOfChannel: [UInt32: Int]?
    private let lock = NSLock()
    private var firstProblem: (position: UInt64, error: SampleReadError)?
    /// With frames wanted: each chunk's frames, at the chunk's first slot (its frame count bounds them).
    private let slots: UnsafeMutableBufferPointer<SeriesBlock>?
    private let slotStart: [Int]
    private let slotsUsed: UnsafeMutableBufferPointer<Int>

    init(
        source: UInt32, rows: [Int], shape: AnalogShape, first: UInt64, last: UInt64, count: Int, values: SampleValues,
        buffer: UnsafeMutableRawPointer, chunks: [IndexEntry]?
    ) {
        (self.source, self.rows, self.shape, self.first, self.last, self.count, self.values, self.buffer) =
            (source, rows, shape, first, last, count, values, buffer)
        let oneRowPerChannel =
            rows.count == shape.channelCount && Set(rows).count == rows.count
            && Set(shape.channelIndexes).count == shape.channelCount  // one row per channel: each place holds one row
        rowOfChannel =
            values == .stored && oneRowPerChannel && Int(bitPattern: buffer) % shape.format.size == 0
            ? Dictionary(uniqueKeysWithValues: rows.enumerated().map { (shape.channelIndexes[$0.element], $0.offset) }) : nil
        var starts = [0]
        for chunk in chunks ?? [] { starts.append(starts.last! + Int(chunk.envelope.frameCount)) }
        slotStart = starts
        slotsUsed = .allocate(capacity: starts.count - 1)
        slotsUsed.initialize(repeating: 0)
        slots = chunks == nil ? nil : .allocate(capacity: starts.last!)
    }

    deinit {
        slots?.deallocate()
        slotsUsed.deallocate()
    }

    /// The problem at the earliest sample position, if any chunk had one.
    var problem: SampleReadError? {
        lock.lock(); defer { lock.unlock() }
        return firstProblem?.error
    }

    /// The frames recorded, in chunk order (empty unless asked for).
    func blocks() -> [SeriesBlock] {
        guard let slots else { return [] }
        var out: [SeriesBlock] = []
        out.reserveCapacity(slotsUsed.reduce(0, +))
        for k in slotsUsed.indices { out.append(contentsOf: slots[slotStart[k]..<(slotStart[k] + slotsUsed[k])]) }
        return out
    }

    private func report(_ position: UInt64, _ message: String) {
        lock.lock(); defer { lock.unlock() }
        if firstProblem == nil || position < firstProblem!.position { firstProblem = (position, SampleReadError.damaged(message)) }
    }

    /// Notes a frame of chunk `k` at source sample `position` (when frames are wanted); false when it
    /// is more frames than the chunk's record counts.
    private func note(_ frame: AnalogChunkFrame, chunk k: Int, at position: UInt64) -> Bool {
        guard let slots else { return true }
        guard slotStart[k] + slotsUsed[k] < slotStart[k + 1], let at = Int(exactly: position) else { return false }
        slots[slotStart[k] + slotsUsed[k]] = SeriesBlock(
            start: at, count: frame.sampleCount, timestampNs: frame.header.timestampNs,
            firstSample: frame.firstSample)
        slotsUsed[k] += 1
        return true
    }

    /// Whether `frame` has the source's channels, format and scaling (of every row, or of the rows read).
    private func matches(_ frame: AnalogChunkFrame, allRows: Bool) -> Bool {
        frame.channelCount == shape.channelCount && frame.format == shape.format
            && shape.channelIndexes.indices.allSatisfy({ frame.channelIndex($0) == shape.channelIndexes[$0] })
            && (allRows ? Array(shape.channelIndexes.indices) : rows).allSatisfy({
                frame.scale($0) == shape.scale[$0] && frame.offset($0) == shape.offset[$0]
            })
    }

    /// Where each channel's samples of a chunk go in `buffer`, when the chunk can be decoded there
    /// directly: it lies wholly inside the range read, every channel is read once, in the stored
    /// type, and its frames all have the source's layout (nil otherwise: it is decoded and copied).
    func places(_ frames: [AnalogChunkFrame], chunk k: Int, startingAt start: UInt64, chunkSamples: UInt64) -> (
        (SampleFormat, UInt32) -> UnsafeMutableRawPointer?
    )? {
        guard let rowOfChannel, start >= first, start + chunkSamples <= last,
            frames.reduce(0, { $0 + UInt64($1.sampleCount) }) == chunkSamples,
            frames.allSatisfy({ $0.header.sourceID == source && matches($0, allRows: true) })
        else { return nil }
        var position = start
        for frame in frames {
            guard note(frame, chunk: k, at: position) else { return nil }
            position += UInt64(frame.sampleCount)
        }
        let format = shape.format, size = format.size, count = count, buffer = buffer
        let offset = Int(start - first)
        return { f, channel in
            guard f == format, let row = rowOfChannel[channel] else { return nil }
            return buffer + (row * count + offset) * size
        }
    }

    /// Copies a chunk's samples, the chunk starting at sample `start` of the source.
    func copy(_ frames: [AnalogChunkFrame], chunk k: Int, startingAt start: UInt64, chunkSamples: UInt64) {
        if slots != nil { slotsUsed[k] = 0 }  // `places` may have noted frames of a chunk it then did not place
        var position = start
        for frame in frames where frame.header.sourceID == source {
            let n = UInt64(frame.sampleCount)
            let (end, overflow) = position.addingReportingOverflow(n)
            if overflow || !note(frame, chunk: k, at: position) {
                report(position, "a chunk of source \(source) holds more samples than its record says (\(chunkSamples))")
                return
            }
            defer { position = end }
            if end <= first { continue }
            if position >= last { continue }
            guard matches(frame, allRows: false) else {
                report(
                    position,
                    "the analog frames of source \(source) change channels, format or scaling at sample \(position); read the parts separately"
                )
                return
            }
            copySamples(
                frame, from: Int(max(first, position) - position), to: Int(min(last, end) - position),
                at: Int(max(first, position) - first))
        }
        if position != start + chunkSamples {
            report(start, "a chunk of source \(source) holds \(position - start) samples where its record says \(chunkSamples)")
        }
    }

    /// Copies samples `from ..< to` of every row read of `frame` to element `destination` of each row in `buffer`.
    private func copySamples(_ frame: AnalogChunkFrame, from: Int, to: Int, at destination: Int) {
        for (k, r) in rows.enumerated() {
            let base = k * count + destination
            let samples = frame.samples(row: r)
            switch (frame.format, values) {
            case (.float64, _): copy(Double.self, samples, from: from, to: to, at: base)
            case (.float32, .stored): copy(Float.self, samples, from: from, to: to, at: base)
            case (.float32, .physical):
                let s = samples.assumingMemoryBound(to: Float.self), d = buffer.assumingMemoryBound(to: Double.self) + base
                for i in from..<to { d[i - from] = Double(s[i]) }
            case (.int16, .stored): copy(Int16.self, samples, from: from, to: to, at: base)
            case (.int16, .physical): convert(Int16.self, samples, from: from, to: to, at: base, frame.scale(r), frame.offset(r))
            case (.int32, .stored): copy(Int32.self, samples, from: from, to: to, at: base)
            case (.int32, .physical): convert(Int32.self, samples, from: from, to: to, at: base, frame.scale(r), frame.offset(r))
            }
        }
    }

    /// Copies elements `from ..< to` of `samples` (of type T) to element `index` of `buffer`, as they are.
    @inline(__always)
    private func copy<T>(_: T.Type, _ samples: UnsafeRawPointer, from: Int, to: Int, at index: Int) {
        (buffer.assumingMemoryBound(to: T.self) + index).update(from: samples.assumingMemoryBound(to: T.self) + from, count: to - from)
    }

    /// Converts counts `from ..< to` of `samples` to values (count × scale + offset) at element `index` of `buffer`.
    @inline(__always)
    private func convert<T: BinaryInteger>(
        _: T.Type, _ samples: UnsafeRawPointer, from: Int, to: Int, at index: Int, _ scale: Double, _ offset: Double
    ) {
        let s = samples.assumingMemoryBound(to: T.self), d = buffer.assumingMemoryBound(to: Double.self) + index
        for i in from..<to { d[i - from] = Double(s[i]) * scale + offset }
    }
}
