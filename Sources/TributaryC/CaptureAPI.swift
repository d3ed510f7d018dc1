import Foundation
import TributaryAnalysis
import TributaryCapture
import TributaryInterchange
import TributaryText
import TributaryWire

/// Sample types of include/tributary.h (`TRIBUTARY_FLOAT64`, …): the values of the wire format.
enum CSampleType: Int32 {
    case float64 = 1
    case float32 = 2
    case int16 = 3
    case int32 = 4

    init(_ format: SampleFormat) {
        switch format {
        case .float64: self = .float64
        case .float32: self = .float32
        case .int16: self = .int16
        case .int32: self = .int32
        }
    }

    /// Bytes per sample.
    var size: Int {
        switch self {
        case .float64: 8
        case .float32: 4
        case .int16: 2
        case .int32: 4
        }
    }
}

extension APIError {
    /// The status of a failed window read: damage is a format error, the rest range and buffer errors.
    init(_ error: SampleReadError) {
        switch error {
        case .noAnalogData(let message), .range(let message): self.init(.range, message)
        case .buffer(let message): self.init(.buffer, message)
        case .damaged(let message): self.init(.format, message)
        }
    }
}

/// An open capture behind a `tributary_capture *`. A capture reader serves one thread at a time:
/// every call holds `lock`.
final class CaptureHandle {
    let reader: CaptureReader
    /// The capture's path made absolute when it was opened, so that `tributary_capture_export` reads
    /// the same file after the process changed its working directory (MATLAB's `cd`, a script's chdir).
    let absolutePath: String
    let lock = NSLock()
    private var shapes: [UInt32: AnalogShape?] = [:]
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
    func shape(_ source: UInt32) throws(APIError) -> AnalogShape? {
        if let known = shapes[source] { return known }
        _ = try summary(source)
        let found = AnalogShape(reader: reader, source: source)
        shapes[source] = .some(found)
        return found
    }

    /// The window read of the source's analog data (`SampleWindow`).
    func window(_ source: UInt32) throws(APIError) -> SampleWindow {
        guard let shape = try self.shape(source) else { throw APIError(.range, "source \(source) has no analog data") }
        return SampleWindow(reader: reader, source: source, shape: shape)
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
        let origins = reader.sourceOrigins
        for summary in reader.sources.sorted(by: { $0.sourceID < $1.sourceID }) {
            let id = summary.sourceID
            let configuration = reader.configuration(source: id)
            let properties = reader.properties(source: id)
            let shape = try self.shape(id)
            let channels: [JSON] = (shape?.channelIndexes ?? []).enumerated().map { row, index in
                let c = configuration?.channels.first { $0.index == index }
                return .object([
                    ("row", .int(row)), ("index", .uint(UInt64(index))),
                    ("name", .string(c?.description ?? "ch\(index)")), ("unit", .string(c?.unit ?? "")),
                    ("sample_rate", c.map { .double($0.samplingRate) } ?? .null),
                    ("min", c.map { .double($0.minValue) } ?? .null), ("max", c.map { .double($0.maxValue) } ?? .null),
                    ("scale", .double(shape!.scale[row])), ("offset", .double(shape!.offset[row])),
                    ("properties", FrameDescription.properties(properties.channel(index))),
                ])
            }
            let gaps = reader.gaps.filter { $0.sourceID == id }
            sources.append(
                .object([
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
                    ("properties", FrameDescription.properties(properties.source)),
                    (
                        "lines",
                        .array(
                            (configuration?.lines ?? []).map {
                                .object([("index", .uint(UInt64($0.index))), ("name", .string($0.description))])
                            })
                    ),
                    (
                        "gaps",
                        .array(
                            gaps.map { g in
                                .object([
                                    ("first_missing_sequence", .uint(g.firstMissingSequence)), ("missing_count", .uint(g.missingCount)),
                                    ("cause", g.cause.map { .string($0.description) } ?? .null), ("time_ns", .int(Int(g.timeNs))),
                                ])
                            })
                    ),
                    ("origin", origins.first { $0.sourceID == id }.map(Self.originJSON) ?? .null),
                ]))
        }
        return .object([
            ("path", .string(reader.path)),
            ("recovered", .bool(reader.wasRecovered)),
            ("damage", .strings(reader.damage.map(\.description))),
            ("sources", .array(sources)),
        ])
    }

    /// Where a source of a recording of several publishers came from (docs/CAPTURE.md §6, source origin).
    static func originJSON(_ o: CaptureSourceOrigin) -> JSON {
        .object([
            ("publisher_index", .uint(UInt64(o.publisherIndex))), ("address", .string(o.address)), ("publisher", .string(o.publisher)),
            ("publisher_source_id", .uint(UInt64(o.publisherSourceID))),
        ])
    }

    /// The sampling rate that gives `source`'s samples their times: the one rate its configuration
    /// gives the recorded channels, as `export` takes it (`SourceSeries.rate`).
    func timeRate(_ source: UInt32) throws(APIError) -> Double {
        guard let shape = try self.shape(source) else { throw APIError(.range, "source \(source) has no analog data") }
        guard let rate = SourceSeries.rate(reader: reader, source: source, channels: shape.channelIndexes) else {
            throw APIError(
                .format, "source \(source) has no single sampling rate in its configuration: its samples have numbers, not times")
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
        let (selected, starts): ([IndexEntry], [UInt64])
        do { (selected, starts) = try reader.analogChunks(source: source, first: first, last: last) } catch { throw APIError(error) }
        var blocks: [SeriesBlock] = []
        var position: UInt64 = 0
        for (entry, start) in zip(selected, starts) {
            let frames: [Frame]
            do { frames = try reader.frames(of: entry, samples: false) } catch {
                throw APIError(.format, "\(error); run 'tributary repair' to read what is intact")
            }
            let chunkEnd = start + entry.envelope.sampleCount  // cannot overflow: analogChunks checked it
            let mismatch = APIError(
                .format,
                "the chunk of source \(source) at byte \(entry.offset) holds other samples than its record says "
                    + "(\(entry.envelope.sampleCount)); run 'tributary repair' to read what is intact")
            position = start
            for frame in frames where frame.header.kind == .analog && frame.header.sourceID == source {
                guard let view = try? frame.analog() else { continue }
                let n = UInt64(view.sampleCount)
                guard n <= chunkEnd - position else { throw mismatch }
                guard let at = Int(exactly: position), Int(exactly: position + n) != nil else {
                    throw APIError(
                        .format,
                        "the analog frames of source \(source) claim samples past \(Int.max); run 'tributary repair' to read what is intact"
                    )
                }
                blocks.append(
                    SeriesBlock(start: at, count: view.sampleCount, timestampNs: frame.header.timestampNs, firstSample: view.firstSample))
                position += n
            }
            guard position == chunkEnd else { throw mismatch }
        }
        guard let lower = Int(exactly: max(first, starts.first ?? first)), let upper = Int(exactly: min(last, position)), lower < upper
        else { return 0 }
        SourceSeries.sampleTimes(
            of: blocks, since: shape.firstTimeNs, rate: rate, in: lower..<upper,
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
        guard position < UInt(ids.count) else {
            throw APIError(.range, "source position \(position) is out of range (the capture has \(ids.count) sources)")
        }
        result.pointee = ids[Int(position)]
    }
}

/// The shape of a source's analog data; any out-pointer may be NULL.
@_cdecl("tributary_capture_shape")
public func tributary_capture_shape(
    _ capture: OpaquePointer?, _ source: UInt32, _ channels: UnsafeMutablePointer<UInt32>?,
    _ samples: UnsafeMutablePointer<UInt64>?, _ sampleType: UnsafeMutablePointer<Int32>?,
    _ rate: UnsafeMutablePointer<Double>?
) -> Int32 {
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
public func tributary_capture_gaps(
    _ capture: OpaquePointer?, _ source: UInt32, _ gaps: UnsafeMutablePointer<UInt>?,
    _ missingFrames: UnsafeMutablePointer<UInt64>?
) -> Int32 {
    withCapture("tributary_capture_gaps", capture) { handle in
        _ = try handle.summary(source)
        let list = handle.reader.gaps.filter { $0.sourceID == source }
        gaps?.pointee = UInt(list.count)
        missingFrames?.pointee = list.reduce(0) { $0 &+ $1.missingCount }
    }
}

/// Reads samples [first_sample, first_sample + sample_count) of some channels of a source.
@_cdecl("tributary_capture_read")
public func tributary_capture_read(
    _ capture: OpaquePointer?, _ source: UInt32, _ channels: UnsafePointer<UInt32>?, _ channelCount: UInt,
    _ firstSample: UInt64, _ sampleCount: UInt64, _ sampleType: Int32,
    _ buffer: UnsafeMutableRawPointer?, _ bufferBytes: UInt, _ samplesRead: UnsafeMutablePointer<UInt64>?
) -> Int32 {
    withCapture("tributary_capture_read", capture) { handle in
        samplesRead?.pointee = 0
        guard let type = CSampleType(rawValue: sampleType) else {
            throw APIError(
                .argument,
                "sample_type \(sampleType) is not TRIBUTARY_FLOAT64 (1), TRIBUTARY_FLOAT32 (2), TRIBUTARY_INT16 (3) or TRIBUTARY_INT32 (4)")
        }
        let window = try handle.window(source)
        let shape = window.shape
        var rows: [Int]?
        if channelCount > 0 {
            guard let channels else { throw APIError(.argument, "channels is NULL but channel_count is \(channelCount)") }
            guard channelCount <= UInt(shape.channelCount) * 64 else {
                throw APIError(.range, "channel_count \(channelCount) is too large")
            }
            rows = (0..<Int(channelCount)).map { Int(channels[$0]) }
        }
        if type != .float64 && type != CSampleType(shape.format) {
            throw APIError(.type, "source \(source) stores \(shape.format); read it as float64 or as \(shape.format)")
        }
        let values: SampleValues = type == CSampleType(shape.format) ? .stored : .physical
        let bytes: Int
        do throws(SampleReadError) {
            bytes = try window.byteCount(
                rows: rows?.count ?? shape.channelCount, samples: sampleCount, as: values, buffer: Int(clamping: bufferBytes))
        } catch { throw APIError(error) }
        if bytes == 0 { return }
        guard let buffer else { throw APIError(.argument, "buffer is NULL") }
        let n: Int
        do throws(SampleReadError) {
            n = try window.read(
                rows: rows, first: firstSample, count: Int(sampleCount), as: values,
                into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(clamping: bufferBytes))
            ).samples
        } catch { throw APIError(error) }
        samplesRead?.pointee = UInt64(n)
    }
}

/// The times of samples [first_sample, first_sample + sample_count) of a source, in seconds since its
/// first sample, from the recorded frame times: the time column of `tributary export --time-column`.
@_cdecl("tributary_capture_times")
public func tributary_capture_times(
    _ capture: OpaquePointer?, _ source: UInt32, _ firstSample: UInt64, _ sampleCount: UInt64,
    _ seconds: UnsafeMutablePointer<Double>?, _ bufferBytes: UInt,
    _ samplesRead: UnsafeMutablePointer<UInt64>?
) -> Int32 {
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
public func tributary_capture_next_package(
    _ capture: OpaquePointer?, _ kindMask: UInt32,
    _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
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
