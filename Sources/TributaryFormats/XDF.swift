import Foundation
import TributaryBytes

// XDF (Extensible Data Format, the Lab Streaming Layer's file format), written and read from its public
// specification: the magic "XDF:", then chunks of [length-bytes count (1, 4 or 8)][length][tag u16][content],
// tags 1 FileHeader (XML), 2 StreamHeader (stream id + XML), 3 Samples (stream id, varlen sample count,
// per sample an optional float64 timestamp and the channel values), 4 ClockOffset, 5 Boundary, 6 StreamFooter.
// All numbers little-endian. docs/FORMATS.md says how captures map onto it.

/// The value type of an XDF stream's channels.
public enum XDFChannelFormat: String, Sendable, CaseIterable {
    case float32, double64, string, int8, int16, int32, int64

    /// Bytes per value (nil for strings).
    public var size: Int? {
        switch self {
        case .float32, .int32: 4
        case .double64, .int64: 8
        case .int8: 1
        case .int16: 2
        case .string: nil
        }
    }
}

/// One channel's description in a stream header (`<desc><channels><channel>`).
public struct XDFChannelInfo: Sendable, Equatable {
    public var label: String
    public var unit: String
    public var type: String
    /// Free-form properties (`<properties><property><key>…</key><value>…</value></property>…`).
    public var properties: [XDFProperty]
    public init(label: String, unit: String = "", type: String = "", properties: [XDFProperty] = []) {
        self.label = label
        self.unit = unit
        self.type = type
        self.properties = properties
    }
}

/// One key/value property in a stream's or a channel's description.
public struct XDFProperty: Sendable, Equatable {
    public var key: String
    public var value: String
    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }

    /// `<properties><property><key>K</key><value>V</value></property>…</properties>`, "" for none.
    static func xml(_ list: [XDFProperty]) -> String {
        guard !list.isEmpty else { return "" }
        return "<properties>"
            + list.map { "<property><key>\(XML.escape($0.key))</key><value>\(XML.escape($0.value))</value></property>" }.joined()
            + "</properties>"
    }

    /// The properties of the first `<properties>` element of `xml` (none when absent).
    static func parse(_ xml: String) -> [XDFProperty] {
        guard let open = xml.range(of: "<properties>"), let close = xml.range(of: "</properties>", range: open.upperBound..<xml.endIndex)
        else { return [] }
        return XML.elements(String(xml[open.upperBound..<close.lowerBound]), "property").map {
            XDFProperty(XML.value($0, "key") ?? "", XML.value($0, "value") ?? "")
        }
    }
}

/// A stream header's fields.
public struct XDFStreamHeader: Sendable, Equatable {
    public var streamID: UInt32
    public var name: String
    public var type: String
    public var channelCount: Int
    /// Samples per second; 0 for irregular streams.
    public var nominalRate: Double
    public var format: XDFChannelFormat
    public var sourceID: String
    public var channels: [XDFChannelInfo]
    /// Further XML elements placed inside `<desc>` after `<channels>` (already escaped), e.g. device metadata.
    public var extraDescription: String
    /// The stream's free-form properties: a `<properties>` element of `<desc>` (outside `<channels>`).
    public var properties: [XDFProperty] = []

    public init(
        streamID: UInt32, name: String, type: String, channelCount: Int, nominalRate: Double, format: XDFChannelFormat,
        sourceID: String = "", channels: [XDFChannelInfo] = [], extraDescription: String = ""
    ) {
        self.streamID = streamID
        self.name = name
        self.type = type
        self.channelCount = channelCount
        self.nominalRate = nominalRate
        self.format = format
        self.sourceID = sourceID
        self.channels = channels
        self.extraDescription = extraDescription
    }

    /// The header's XML.
    public var xml: String {
        var s = "<?xml version=\"1.0\"?><info><name>\(XML.escape(name))</name><type>\(XML.escape(type))</type>"
        s += "<channel_count>\(channelCount)</channel_count><nominal_srate>\(XML.number(nominalRate))</nominal_srate>"
        s += "<channel_format>\(format.rawValue)</channel_format><source_id>\(XML.escape(sourceID))</source_id>"
        s += "<version>1.1</version><created_at>0</created_at><uid>\(streamID)</uid><session_id>default</session_id><hostname></hostname>"
        s += "<desc>"
        if !channels.isEmpty {
            s += "<channels>"
            for c in channels {
                s +=
                    "<channel><label>\(XML.escape(c.label))</label><unit>\(XML.escape(c.unit))</unit><type>\(XML.escape(c.type))</type>\(XDFProperty.xml(c.properties))</channel>"
            }
            s += "</channels>"
        }
        s += XDFProperty.xml(properties) + extraDescription + "</desc></info>"
        return s
    }

    /// The most channels a stream header may declare (LSL's channel count is an int32).
    public static let maxChannelCount = Int(Int32.max)

    /// Parses a stream header's XML.
    /// - Throws: `FormatError` when `channel_count` is missing or not a count in 0...2147483647, the
    ///   `channel_format` is unknown, or `nominal_srate` is NaN or infinite.
    public init(streamID: UInt32, xml: String) throws(FormatError) {
        let countText = XML.value(xml, "channel_count")?.trimmingCharacters(in: .whitespaces)
        guard let countText else { throw FormatError(file: "<stream \(streamID) header>", location: "", reason: "no channel_count") }
        guard let count = Int(countText), (0...Self.maxChannelCount).contains(count) else {
            throw FormatError(
                file: "<stream \(streamID) header>", location: "",
                reason: "channel_count '\(countText.prefix(40))' is not a count in 0...\(Self.maxChannelCount)")
        }
        let formatText = XML.value(xml, "channel_format")?.trimmingCharacters(in: .whitespaces) ?? ""
        guard let format = XDFChannelFormat(rawValue: formatText) else {
            throw FormatError(file: "<stream \(streamID) header>", location: "", reason: "unknown channel_format '\(formatText)'")
        }
        var channels: [XDFChannelInfo] = []
        if let list = XML.value(xml, "channels") {
            for element in XML.elements(list, "channel") {
                channels.append(
                    XDFChannelInfo(
                        label: XML.value(element, "label") ?? "", unit: XML.value(element, "unit") ?? "",
                        type: XML.value(element, "type") ?? "", properties: XDFProperty.parse(element)))
            }
        }
        // An unreadable rate means an irregular stream (0), as before; a NaN or infinite one is refused.
        let rateText = XML.value(xml, "nominal_srate")?.trimmingCharacters(in: .whitespaces) ?? ""
        let rate = Double(rateText) ?? 0
        guard rate.isFinite else {
            throw FormatError(
                file: "<stream \(streamID) header>", location: "", reason: "nominal_srate '\(rateText.prefix(40))' is not a finite number")
        }
        self.init(
            streamID: streamID, name: XML.value(xml, "name") ?? "", type: XML.value(xml, "type") ?? "", channelCount: count,
            nominalRate: rate, format: format, sourceID: XML.value(xml, "source_id") ?? "", channels: channels)
        // The stream's own properties: those of <desc> once its <channels> are left out.
        var outside = xml
        if let open = outside.range(of: "<channels>"),
            let close = outside.range(of: "</channels>", range: open.upperBound..<outside.endIndex)
        {
            outside.removeSubrange(open.lowerBound..<close.upperBound)
        }
        properties = XDFProperty.parse(outside)
    }
}

/// Minimal XML helpers for the flat documents XDF uses.
public enum XML {
    public static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    public static func unescape(_ s: String) -> String {
        guard s.contains("&") else { return s }
        return s.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// A number as XML text that reads back exactly.
    public static func number(_ v: Double) -> String {
        v == v.rounded() && v.magnitude < 1e15 ? String(Int64(v)) : "\(v)"
    }

    /// The unescaped text of the first `<tag>…</tag>` (or "" for `<tag/>`), nil when absent. Nested
    /// elements are returned as raw XML.
    public static func value(_ xml: String, _ tag: String) -> String? {
        if let open = xml.range(of: "<\(tag)>") {
            guard let close = xml.range(of: "</\(tag)>", range: open.upperBound..<xml.endIndex) else { return nil }
            let inner = String(xml[open.upperBound..<close.lowerBound])
            return inner.contains("<") ? inner : unescape(inner)
        }
        return xml.contains("<\(tag)/>") ? "" : nil
    }

    /// The inner XML of every `<tag>…</tag>` in order.
    public static func elements(_ xml: String, _ tag: String) -> [String] {
        var out: [String] = []
        var from = xml.startIndex
        while let open = xml.range(of: "<\(tag)>", range: from..<xml.endIndex),
            let close = xml.range(of: "</\(tag)>", range: open.upperBound..<xml.endIndex)
        {
            out.append(String(xml[open.upperBound..<close.lowerBound]))
            from = close.upperBound
        }
        return out
    }
}

/// Chunk tags.
public enum XDFTag: UInt16, Sendable {
    case fileHeader = 1
    case streamHeader = 2
    case samples = 3
    case clockOffset = 4
    case boundary = 5
    case streamFooter = 6
}

/// The 16 bytes of a boundary chunk (XDF specification).
let xdfBoundaryUUID: [UInt8] = [0x43, 0xA5, 0x46, 0xDC, 0xCB, 0xF5, 0x41, 0x0F, 0xB3, 0x0E, 0xD5, 0x46, 0x73, 0x83, 0xCB, 0xE4]

/// Values XDF sample chunks carry.
public protocol XDFSampleType: Sendable {
    static var xdfFormat: XDFChannelFormat { get }
}
extension Double: XDFSampleType { public static var xdfFormat: XDFChannelFormat { .double64 } }
extension Float: XDFSampleType { public static var xdfFormat: XDFChannelFormat { .float32 } }
extension Int16: XDFSampleType { public static var xdfFormat: XDFChannelFormat { .int16 } }
extension Int32: XDFSampleType { public static var xdfFormat: XDFChannelFormat { .int32 } }

/// Writes an XDF file chunk by chunk.
public final class XDFWriter {
    private let sink: FileSink
    private var buffer = ByteWriter()
    public let path: String

    /// Creates the file and writes the magic and the file header (`<info><version>1.0</version>…</info>`).
    public init(path: String, fileInfo: String = "") throws(FormatError) {
        self.path = path
        sink = try FileSink(path: path)
        buffer.write(Array("XDF:".utf8))
        chunk(.fileHeader, Array("<?xml version=\"1.0\"?><info><version>1.0</version>\(fileInfo)</info>".utf8))
    }

    private func varlen(_ n: Int, into b: inout ByteWriter<[UInt8]>) {
        if n <= 0xFF { b.u8(1); b.u8(UInt8(n)) } else if n <= 0xFFFF_FFFF { b.u8(4); b.u32(UInt32(n)) } else { b.u8(8); b.u64(UInt64(n)) }
    }

    private func chunk(_ tag: XDFTag, _ content: [UInt8]) {
        varlen(content.count + 2, into: &buffer)
        buffer.u16(tag.rawValue)
        buffer.write(content)
    }

    private func flushIfLarge() throws(FormatError) {
        if buffer.bytes.count >= 1 << 20 { try flush() }
    }

    private func flush() throws(FormatError) {
        try sink.write(buffer.bytes)
        buffer.removeAll()
    }

    public func streamHeader(_ header: XDFStreamHeader) throws(FormatError) {
        var c = ByteWriter()
        c.u32(header.streamID)
        c.write(Array(header.xml.utf8))
        chunk(.streamHeader, c.bytes)
        try flushIfLarge()
    }

    /// A samples chunk of `count` samples taken channel-major from `channels` rows of `values`
    /// (row r's samples at `values[r * stride + start ..< r * stride + start + count]`), the first
    /// sample stamped with `firstTimestamp` (seconds) and the rest deduced from the nominal rate
    /// (timestamp bytes 0), unless `timestamps` gives every sample's time.
    public func samples<T: XDFSampleType>(
        streamID: UInt32, values: UnsafeBufferPointer<T>, channels: Int, stride: Int, start: Int, count: Int,
        firstTimestamp: Double?, timestamps: [Double]? = nil
    ) throws(FormatError) {
        guard count > 0 else { return }
        let size = MemoryLayout<T>.size
        var header = ByteWriter()
        header.u32(streamID)
        varlen(count, into: &header)
        let perSample = channels * size
        let stamped = timestamps != nil ? count : (firstTimestamp != nil ? 1 : 0)
        let content = header.bytes.count + count * (1 + perSample) + stamped * 8
        varlen(content + 2, into: &buffer)
        buffer.u16(XDFTag.samples.rawValue)
        buffer.write(header.bytes)
        // The transposition runs on fixed-width words (this generic function is not specialised for
        // callers in other modules; per-value generic stores would go through value witnesses).
        let src = UnsafeRawPointer(values.baseAddress!)
        buffer.withRegion(count: content - header.bytes.count) { out in
            let o = out.baseAddress!
            switch size {
            case 8: Self.interleave(UInt64.self, src, o, channels, stride, start, count, firstTimestamp, timestamps)
            case 4: Self.interleave(UInt32.self, src, o, channels, stride, start, count, firstTimestamp, timestamps)
            case 2: Self.interleave(UInt16.self, src, o, channels, stride, start, count, firstTimestamp, timestamps)
            default: Self.interleave(UInt8.self, src, o, channels, stride, start, count, firstTimestamp, timestamps)
            }
        }
        try flushIfLarge()
    }

    /// Writes `count` samples sample-major at `out` (each: timestamp byte count, optional float64
    /// timestamp, one `W` per channel) from the channel-major rows of `src`.
    @inline(__always)
    private static func interleave<W: FixedWidthInteger>(
        _: W.Type, _ src: UnsafeRawPointer, _ out: UnsafeMutableRawPointer, _ channels: Int,
        _ stride: Int, _ start: Int, _ count: Int, _ firstTimestamp: Double?, _ timestamps: [Double]?
    ) {
        let size = MemoryLayout<W>.size
        var p = 0
        timestamps.withOptionalBuffer { stamps in
            for s in 0..<count {
                if let t = stamps.map({ $0[s] }) ?? (s == 0 ? firstTimestamp : nil) {
                    out.storeBytes(of: 8, toByteOffset: p, as: UInt8.self)
                    out.storeBytes(of: t.bitPattern.littleEndian, toByteOffset: p + 1, as: UInt64.self)
                    p += 9
                } else {
                    out.storeBytes(of: 0, toByteOffset: p, as: UInt8.self)
                    p += 1
                }
                for c in 0..<channels {
                    out.storeBytes(
                        of: src.loadUnaligned(fromByteOffset: (c * stride + start + s) * size, as: W.self), toByteOffset: p, as: W.self)
                    p += size
                }
            }
        }
    }

    /// A samples chunk of a string stream (one channel per string in each sample).
    public func stringSamples(streamID: UInt32, samples: [[String]], timestamps: [Double?]) throws(FormatError) {
        var c = ByteWriter()
        c.u32(streamID)
        varlen(samples.count, into: &c)
        for (k, sample) in samples.enumerated() {
            if let t = timestamps[k] { c.u8(8); c.f64(t) } else { c.u8(0) }
            for s in sample {
                let u = Array(s.utf8)
                varlen(u.count, into: &c)
                c.write(u)
            }
        }
        chunk(.samples, c.bytes)
        try flushIfLarge()
    }

    public func clockOffset(streamID: UInt32, collectionTime: Double, offset: Double) throws(FormatError) {
        var c = ByteWriter()
        c.u32(streamID)
        c.f64(collectionTime)
        c.f64(offset)
        chunk(.clockOffset, c.bytes)
    }

    public func boundary() throws(FormatError) {
        chunk(.boundary, xdfBoundaryUUID)
        try flushIfLarge()
    }

    /// The stream footer: first and last timestamps, sample count and the clock offsets written.
    public func streamFooter(
        streamID: UInt32, firstTimestamp: Double, lastTimestamp: Double, sampleCount: Int,
        clockOffsets: [(time: Double, value: Double)] = [], extra: String = ""
    ) throws(FormatError) {
        var xml = "<?xml version=\"1.0\"?><info><first_timestamp>\(firstTimestamp)</first_timestamp>"
        xml += "<last_timestamp>\(lastTimestamp)</last_timestamp><sample_count>\(sampleCount)</sample_count>"
        xml += "<clock_offsets>"
        for o in clockOffsets { xml += "<offset><time>\(o.time)</time><value>\(o.value)</value></offset>" }
        xml += "</clock_offsets>\(extra)</info>"
        var c = ByteWriter()
        c.u32(streamID)
        c.write(Array(xml.utf8))
        chunk(.streamFooter, c.bytes)
    }

    public func close() throws(FormatError) {
        do {
            try flush()
            try sink.close()
        } catch {
            sink.discard()
            throw error
        }
    }

    /// Abandons the file (after an error) and removes it.
    public func discard() { sink.discard() }
}

/// The samples of a stream, channel-major (all of channel 0, then channel 1, …).
public enum XDFData: Sendable, Equatable {
    case float64([Double])
    case float32([Float])
    case int16([Int16])
    case int32([Int32])
    case strings([String])
}

/// A stream read from an XDF file.
public struct XDFStream: Sendable {
    public var header: XDFStreamHeader
    public var headerXML: String
    public var footerXML: String?
    public var sampleCount: Int
    /// Channel-major values: int8 / int16 as int16, float32 as float32, int32 / int64 / double64 as float64.
    public var data: XDFData
    /// Each sample's timestamp (seconds), deduced ones included.
    public var timestamps: [Double]
    /// Sample indexes where a chunk starts with a written timestamp (where a new block starts).
    public var stampedSamples: [Int]
    public var clockOffsets: [(time: Double, value: Double)]
    /// The first and last sample's timestamps.
    public var firstTimestamp: Double? = nil
    public var lastTimestamp: Double? = nil
    /// For a stream with a nominal rate: the samples with a written timestamp that breaks the pace
    /// (the previous sample's timestamp + 1 / rate) by more than half a sample, and that timestamp.
    public var timeBreaks: [(sample: Int, time: Double)] = []
    /// For a stream with a nominal rate: the largest distance (seconds) of a sample's timestamp
    /// from the time its run gives it — the run's first timestamp + k / nominal rate, runs cut at
    /// `timeBreaks` — and the longest run's span (seconds from its first timestamp); 0 otherwise.
    /// An import needs no timestamps beyond the index when the clock offsets keep these small.
    public var paceDrift: Double = 0
    public var runSpan: Double = 0
    /// Index mode (`XDFFile.index`): where the numeric values are in the file (read them with
    /// `XDFFile.Values`); `data` is then empty, and `timestamps` / `stampedSamples` are empty
    /// for streams with a nominal rate. nil when the values are in `data`.
    public var valueExtents: [XDFValueExtent]? = nil
}

/// Samples of a stream in one samples chunk: where the first begins, where the chunk ends, how many.
public struct XDFValueExtent: Sendable {
    public var offset: Int
    public var end: Int
    public var count: Int
}

/// An XDF file's streams.
public struct XDFFile: Sendable {
    public var fileHeaderXML: String
    public var streams: [XDFStream]

    /// Reads every chunk; a truncated last chunk ends the file (as a crashed recorder leaves it).
    public static func read(path: String) throws(FormatError) -> XDFFile {
        let data = try readWholeFile(path)
        return try typedFormatError { try data.withUnsafeBytes { raw in try read(bytes: raw, file: path) } }
    }

    /// Reads an XDF file's chunks without reading its numeric values into memory: headers, footers,
    /// clock offsets, string streams, and for each numeric stream its sample count, first and last
    /// timestamps, timing breaks and where its values are (`XDFStream.valueExtents`); for streams
    /// without a nominal rate every timestamp too. The file is mapped and its pages given back as
    /// the walk passes them: memory stays bounded whatever the file's size.
    public static func index(path: String) throws(FormatError) -> XDFFile {
        let mapped = try MappedFile(path: path)
        var reader = XDFReader(bytes: mapped.bytes, file: path)
        reader.mapped = mapped
        try reader.readChunks()
        return reader.assemble()
    }

    /// Reads an XDF file from memory (`file` names it in errors).
    public static func read(bytes: UnsafeRawBufferPointer, file: String = "<memory>") throws(FormatError) -> XDFFile {
        var reader = XDFReader(bytes: bytes, file: file)
        try reader.readChunks()
        return reader.assemble()
    }
}

extension Optional where Wrapped == [Double] {
    /// Calls `body` with the array's buffer, or nil.
    @inline(__always)
    func withOptionalBuffer<R>(_ body: (UnsafeBufferPointer<Double>?) -> R) -> R {
        switch self {
        case .some(let a): a.withUnsafeBufferPointer { body($0) }
        case .none: body(nil)
        }
    }
}
