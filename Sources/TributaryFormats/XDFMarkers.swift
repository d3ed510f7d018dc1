import Foundation
import TributaryText

/// A string stream of an XDF file (an LSL marker stream: channel_format string, usually one channel
/// and nominal_srate 0): what `tributary import` records as messages (docs/FORMATS.md).
public struct XDFMarkerStream: Sendable {
    public var header: XDFStreamHeader
    /// One text per sample: its one string, or its strings joined (`XDFMarkers.join`).
    public var texts: [String]
    /// Each sample's timestamp as the file gives it (a sample without one: the previous plus
    /// 1 / nominal_srate, 0 for irregular streams, as pyxdf deduces it).
    public var timestamps: [Double]
    /// The stream's ClockOffset chunks in file order: collection times and values (seconds).
    public var clockTimes: [Double]
    public var clockValues: [Double]

    /// The timestamps as pyxdf's `load_xdf(synchronize_clocks=True)` gives them (`XDFClockSync`).
    public var synchronizedTimestamps: [Double] { XDFClockSync.corrected(timestamps, times: clockTimes, values: clockValues) }
}

/// Reads the string streams of an XDF file in one pass over its chunks that reads only what they
/// need: stream headers, clock offsets and the samples chunks of string streams (numeric samples
/// chunks are skipped by their length, unread), so memory grows with the markers, not the file.
public enum XDFMarkers {
    /// The most bytes one sample's text may have (its strings joined): 1 MiB.
    public static let maxTextBytes = 1 << 20

    /// A sample's strings as one text: one string as it is; several as a JSON array of strings
    /// (`["a","b"]`, TributaryText's JSON: quotes, backslashes and control characters escaped), so
    /// that the channels can be told apart and read back; no channels as "".
    public static func join(_ strings: [String]) -> String {
        guard strings.count != 1 else { return strings[0] }
        guard !strings.isEmpty else { return "" }
        return JSON.strings(strings).render()
    }

    /// The string streams of the XDF file at `path`, in the order of their headers.
    /// - Parameter select: stream names or ids to read (nil: every string stream).
    /// - Throws: `FormatError` when the file is not XDF, a string stream's header, samples or clock
    ///   offsets are malformed (a timestamp or offset that is not a finite number), or a sample's
    ///   text exceeds `maxTextBytes`. A truncated last chunk ends the file, as `XDFFile.read` has it.
    public static func read(path: String, select: Set<String>? = nil) throws(FormatError) -> [XDFMarkerStream] {
        var file = try ChunkFile(path: path)
        guard try file.bytes(at: 0, count: 4).map({ Array($0) }) == Array("XDF:".utf8) else {
            throw FormatError(file: path, location: "byte offset 0", reason: "not an XDF file (no 'XDF:' magic)")
        }
        var streams: [UInt32: XDFMarkerStream] = [:]
        var order: [UInt32] = []
        var offset = 4
        while let chunk = try file.chunk(at: offset) {
            offset = chunk.end
            guard let tag = XDFTag(rawValue: chunk.tag), [.streamHeader, .samples, .clockOffset].contains(tag), chunk.length >= 6 else {
                continue
            }
            let id = chunk.streamID
            if tag == .streamHeader {
                let content = try file.content(chunk)
                let xml = String(decoding: content.dropFirst(4), as: UTF8.self)
                var header: XDFStreamHeader?
                if XML.value(xml, "channel_format")?.trimmingCharacters(in: .whitespaces) == XDFChannelFormat.string.rawValue {
                    do { header = try XDFStreamHeader(streamID: id, xml: xml) } catch {
                        throw FormatError(
                            file: path, location: "byte offset \(chunk.start)", reason: "stream \(id) header: \(error.reason)")
                    }
                }
                guard let header, select.map({ $0.contains(header.name) || $0.contains("\(id)") }) ?? true else {
                    streams[id] = nil
                    continue
                }
                if streams[id] == nil { order.append(id) }
                streams[id] = XDFMarkerStream(header: header, texts: [], timestamps: [], clockTimes: [], clockValues: [])
            } else if streams[id] != nil {
                let content = try file.content(chunk)
                try located(chunk, content) { raw throws(FormatError) in
                    var c = FileReader(raw, position: 4, source: path)
                    if tag == .clockOffset {
                        let t = try c.f64("collection time"), v = try c.f64("offset value")
                        guard t.isFinite, v.isFinite else {
                            throw c.fail(
                                "clock offset of stream \(id): collection time \(t) s, offset \(v) s; both must be finite numbers", at: 4)
                        }
                        streams[id]!.clockTimes.append(t)
                        streams[id]!.clockValues.append(v)
                    } else {
                        try readSamples(&c, into: &streams[id]!)
                    }
                }
            }
        }
        return order.compactMap { streams[$0] }
    }

    /// Runs `body` on a chunk's content (after its tag); the byte offsets its errors name, relative
    /// to the content, become file offsets.
    static func located<R>(
        _ chunk: ChunkFile.Chunk, _ content: [UInt8], _ body: (UnsafeRawBufferPointer) throws(FormatError) -> R
    ) throws(FormatError) -> R {
        do {
            return try typedFormatError { try content.withUnsafeBytes { raw in try body(raw) } }
        } catch {
            let prefix = "byte offset "
            guard error.location.hasPrefix(prefix), let relative = Int(error.location.dropFirst(prefix.count)) else { throw error }
            throw FormatError(file: error.file, location: prefix + "\(chunk.contentStart + 2 + relative)", reason: error.reason)
        }
    }

    /// One samples chunk of a string stream (after its stream id): the count, then per sample its
    /// timestamp (0 or 8 bytes) and one length-prefixed UTF-8 string per channel (invalid UTF-8
    /// read with replacement characters, as pyxdf reads it).
    static func readSamples(_ c: inout FileReader, into s: inout XDFMarkerStream) throws(FormatError) {
        let n = try XDFReader.varlen(&c, "sample count")
        let channels = s.header.channelCount
        let step = s.header.nominalRate > 0 ? 1 / s.header.nominalRate : 0
        // Each sample takes at least 1 byte, each of its strings at least 2: a count beyond that is no count.
        guard n <= c.remaining / (1 + 2 * min(channels, c.remaining)) + 1 else {
            throw c.fail("sample count \(n) exceeds the chunk")
        }
        for _ in 0..<n {
            let at = c.position
            switch try c.u8("timestamp bytes") {
            case 8:
                let t = try c.f64("timestamp")
                guard t.isFinite else {
                    throw c.fail(
                        "timestamp of sample \(s.timestamps.count) of stream \(s.header.streamID) is \(t), not a finite number of seconds",
                        at: at)
                }
                s.timestamps.append(t)
            case 0: s.timestamps.append((s.timestamps.last ?? 0) + step)
            case let tb: throw c.fail("timestamp bytes \(tb), must be 0 or 8", at: at)
            }
            var strings: [String] = []
            var bytes = 0
            for _ in 0..<channels {
                let length = try XDFReader.varlen(&c, "string length")
                bytes += min(length, maxTextBytes + 1) + 3
                guard bytes <= maxTextBytes + 2 else {
                    throw c.fail(
                        "sample \(s.timestamps.count - 1) of string stream \(s.header.streamID) ('\(s.header.name.prefix(40))') "
                            + "holds more than \(maxTextBytes) bytes of text; leave the stream out with --select", at: at)
                }
                strings.append(try c.utf8(length, "string"))
            }
            let text = join(strings)
            guard text.utf8.count <= maxTextBytes else {
                throw c.fail(
                    "sample \(s.timestamps.count - 1) of string stream \(s.header.streamID) ('\(s.header.name.prefix(40))') "
                        + "holds more than \(maxTextBytes) bytes of text; leave the stream out with --select", at: at)
            }
            s.texts.append(text)
        }
    }
}

/// An XDF file read chunk by chunk with pread(2): chunk headers through a small read-ahead window,
/// the content of a chunk only when asked for.
struct ChunkFile {
    struct Chunk {
        /// File offset of the chunk (its length field), of its tag, and just past it.
        var start: Int, contentStart: Int, end: Int
        /// Bytes after the length field: tag and content.
        var length: Int
        var tag: UInt16
        /// The stream id (tags 2, 3, 4, 6), else 0.
        var streamID: UInt32
    }

    private let file: FileRange
    var path: String { file.path }
    var size: Int { file.size }
    private var window: [UInt8] = []
    private var windowStart = 0
    /// Bytes read ahead for chunk headers: small, so that skipping large numeric chunks reads little of them.
    static let windowSize = 1 << 14

    init(path: String) throws(FormatError) { file = try FileRange(path: path) }

    /// Reads `count` bytes at `offset`; fewer at the end of the file.
    func read(at offset: Int, count: Int) throws(FormatError) -> [UInt8] { try file.bytes(at: offset, count: count) }

    /// `count` bytes at `offset` through the read-ahead window (nil past the end of the file).
    mutating func bytes(at offset: Int, count: Int) throws(FormatError) -> ArraySlice<UInt8>? {
        guard offset >= 0, count >= 0, offset <= size - count else { return nil }
        if offset < windowStart || offset + count > windowStart + window.count {
            window = try read(at: offset, count: max(count, Self.windowSize))
            windowStart = offset
        }
        return window[(offset - windowStart)..<(offset - windowStart + count)]
    }

    /// The chunk at `offset`, nil at the end of the file or where a chunk is truncated or malformed.
    mutating func chunk(at offset: Int) throws(FormatError) -> Chunk? {
        guard let first = try bytes(at: offset, count: 1)?.first else { return nil }
        let width = Int(first)
        guard [1, 4, 8].contains(width), let raw = try bytes(at: offset + 1, count: width) else { return nil }
        var value: UInt64 = 0
        for (k, b) in raw.enumerated() { value |= UInt64(b) << (8 * k) }
        let contentStart = offset + 1 + width
        guard value >= 2, value <= UInt64(size - contentStart), let tagBytes = try bytes(at: contentStart, count: 2) else { return nil }
        let length = Int(value)
        let tag = UInt16(tagBytes[tagBytes.startIndex]) | UInt16(tagBytes[tagBytes.startIndex + 1]) << 8
        var id: UInt32 = 0
        if length >= 6, [2, 3, 4, 6].contains(tag), let idBytes = try bytes(at: contentStart + 2, count: 4) {
            for (k, b) in idBytes.enumerated() { id |= UInt32(b) << (8 * k) }
        }
        return Chunk(start: offset, contentStart: contentStart, end: contentStart + length, length: length, tag: tag, streamID: id)
    }

    /// The chunk's content after its tag (stream id first for tags 2, 3, 4, 6).
    mutating func content(_ chunk: Chunk) throws(FormatError) -> [UInt8] {
        if chunk.length - 2 <= Self.windowSize, let slice = try bytes(at: chunk.contentStart + 2, count: chunk.length - 2) {
            return Array(slice)
        }
        return try read(at: chunk.contentStart + 2, count: chunk.length - 2)
    }
}
