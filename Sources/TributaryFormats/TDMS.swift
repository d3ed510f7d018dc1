import Foundation

// NI TDMS, written and read from NI's public description "TDMS File Format Internal Structure":
// segments of a 28-byte lead-in ("TDSm", ToC flags, version 4713, next-segment and raw-data offsets),
// metadata (objects by path "/", "/'group'", "/'group'/'channel'", each with a raw-data index and
// properties) and raw data (per chunk: each channel's values in turn, or interleaved).
// docs/FORMATS.md says how captures map onto it.

/// A TDMS timestamp: seconds since 1904-01-01T00:00:00Z and positive fractions of 2⁻⁶⁴ s.
public struct TDMSTimestamp: Sendable, Hashable {
    /// Seconds between the LabVIEW epoch (1904) and the Unix epoch (1970).
    public static let unixEpochOffset: Int64 = 2_082_844_800
    public var seconds: Int64
    public var fraction: UInt64

    public init(seconds: Int64, fraction: UInt64) {
        self.seconds = seconds
        self.fraction = fraction
    }

    /// The timestamp of `ns` nanoseconds since 1970 (exact: converting back gives `ns`).
    public init(unixNanoseconds ns: Int64) {
        var s = ns / 1_000_000_000
        var r = ns % 1_000_000_000
        if r < 0 { r += 1_000_000_000; s -= 1 }
        seconds = s + Self.unixEpochOffset
        // ceil(r · 2⁶⁴ / 10⁹); r < 10⁹ so the quotient fits 64 bits.
        let q = UInt64(1_000_000_000).dividingFullWidth((high: UInt64(r), low: 0))
        fraction = q.quotient &+ (q.remainder == 0 ? 0 : 1)  // rounded up, so readers that truncate still get `ns`
    }

    /// Nanoseconds since 1970, rounded to the nearest nanosecond; nil when that is beyond the range
    /// of an Int64 (about the years 1678 to 2262): a file may hold any seconds.
    public var unixNanoseconds: Int64? {
        let p = fraction.multipliedFullWidth(by: 1_000_000_000)
        let ns = Int64(p.high) + (p.low >= (1 << 63) ? 1 : 0)  // 0 ... 10⁹
        let (d, o1) = seconds.subtractingReportingOverflow(Self.unixEpochOffset)
        // Before 1970 the whole seconds alone may pass Int64.min where the sum does not (Int64.min itself).
        let (s, part) = d < 0 && ns > 0 ? (d + 1, ns - 1_000_000_000) : (d, ns)
        let (whole, o2) = s.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, o3) = whole.addingReportingOverflow(part)
        return o1 || o2 || o3 ? nil : sum
    }

    /// Seconds since 1970 as float64, for every timestamp (also those `unixNanoseconds` cannot hold).
    public var unixSeconds: Double {
        unixNanoseconds.map { Double($0) / 1e9 } ?? (Double(seconds) - Double(Self.unixEpochOffset) + Double(fraction) / 0x1p64)
    }
}

/// A property value.
public enum TDMSValue: Sendable, Hashable {
    case int32(Int32)
    case int64(Int64)
    case uint32(UInt32)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case bool(Bool)
    case timestamp(TDMSTimestamp)

    /// The value as a number (timestamps as Unix seconds), if it is one.
    public var number: Double? {
        switch self {
        case .int32(let v): Double(v)
        case .int64(let v): Double(v)
        case .uint32(let v): Double(v)
        case .uint64(let v): Double(v)
        case .double(let v): v
        case .bool(let v): v ? 1 : 0
        case .timestamp(let t): t.unixSeconds
        case .string(let s): Double(s)
        }
    }

    /// The value as text.
    public var text: String {
        switch self {
        case .string(let s): s
        case .int32(let v): "\(v)"
        case .int64(let v): "\(v)"
        case .uint32(let v): "\(v)"
        case .uint64(let v): "\(v)"
        case .double(let v): "\(v)"
        case .bool(let v): "\(v)"
        case .timestamp(let t): t.unixNanoseconds.map { "\($0)" } ?? "\(t.unixSeconds) s"
        }
    }
}

/// A named property of the file, a group or a channel.
public struct TDMSProperty: Sendable, Hashable {
    public var name: String
    public var value: TDMSValue
    public init(_ name: String, _ value: TDMSValue) {
        self.name = name
        self.value = value
    }
}

/// A channel's values. Numeric types other than these are read as float64.
public enum TDMSData: Sendable, Equatable {
    case float64([Double])
    case float32([Float])
    case int16([Int16])
    case int32([Int32])
    case strings([String])
    /// float64 values at `range` of a shared buffer (a row of a channel-major matrix), written
    /// without being copied out of it. The reader never produces it.
    case float64Row([Double], Range<Int>)
    /// int16 values at `range` of a shared buffer, as `float64Row`.
    case int16Row([Int16], Range<Int>)

    public var count: Int {
        switch self {
        case .float64Row(_, let r), .int16Row(_, let r): r.count
        case .float64(let v): v.count
        case .float32(let v): v.count
        case .int16(let v): v.count
        case .int32(let v): v.count
        case .strings(let v): v.count
        }
    }

    /// TDMS data type code.
    var typeCode: UInt32 {
        switch self {
        case .float64, .float64Row: TDMSType.double
        case .float32: TDMSType.single
        case .int16, .int16Row: TDMSType.i16
        case .int32: TDMSType.i32
        case .strings: TDMSType.string
        }
    }

    /// Numeric values as float64 (nil for strings).
    public var doubles: [Double]? {
        switch self {
        case .float64(let v): v
        case .float32(let v): v.map(Double.init)
        case .int16(let v): v.map(Double.init)
        case .int32(let v): v.map(Double.init)
        case .float64Row(let v, let r): Array(v[r])
        case .int16Row(let v, let r): v[r].map(Double.init)
        case .strings: nil
        }
    }
}

public struct TDMSChannel: Sendable, Equatable {
    public var name: String
    public var properties: [TDMSProperty]
    public var data: TDMSData
    public init(name: String, properties: [TDMSProperty] = [], data: TDMSData) {
        self.name = name
        self.properties = properties
        self.data = data
    }
    public func property(_ name: String) -> TDMSValue? { properties.last { $0.name == name }?.value }
}

public struct TDMSGroup: Sendable, Equatable {
    public var name: String
    public var properties: [TDMSProperty]
    public var channels: [TDMSChannel]
    public init(name: String, properties: [TDMSProperty] = [], channels: [TDMSChannel] = []) {
        self.name = name
        self.properties = properties
        self.channels = channels
    }
    public func property(_ name: String) -> TDMSValue? { properties.last { $0.name == name }?.value }
}

/// Data type codes of the TDMS specification.
enum TDMSType {
    static let void: UInt32 = 0, i8: UInt32 = 1, i16: UInt32 = 2, i32: UInt32 = 3, i64: UInt32 = 4
    static let u8: UInt32 = 5, u16: UInt32 = 6, u32: UInt32 = 7, u64: UInt32 = 8
    static let single: UInt32 = 9, double: UInt32 = 10, extended: UInt32 = 11
    static let singleUnit: UInt32 = 0x19, doubleUnit: UInt32 = 0x1A
    static let string: UInt32 = 0x20, bool: UInt32 = 0x21, timestamp: UInt32 = 0x44
    static let complexSingle: UInt32 = 0x08_000C, complexDouble: UInt32 = 0x10_000D

    /// Bytes per value of fixed-size types (nil for strings and unknown types).
    static func size(_ t: UInt32) -> Int? {
        switch t {
        case i8, u8, bool: 1
        case i16, u16: 2
        case i32, u32, single, singleUnit: 4
        case i64, u64, double, doubleUnit, complexSingle: 8
        case extended, timestamp, complexDouble: 16
        default: nil
        }
    }
}

/// ToC flags of a segment's lead-in.
enum TDMSToC {
    static let metaData: UInt32 = 1 << 1
    static let newObjList: UInt32 = 1 << 2
    static let rawData: UInt32 = 1 << 3
    static let interleaved: UInt32 = 1 << 5
    static let bigEndian: UInt32 = 1 << 6
    static let daqmxRawData: UInt32 = 1 << 7
}

/// A TDMS file: file properties and groups of channels.
public struct TDMSFile: Sendable, Equatable {
    public var properties: [TDMSProperty]
    public var groups: [TDMSGroup]

    public init(properties: [TDMSProperty] = [], groups: [TDMSGroup] = []) {
        self.properties = properties
        self.groups = groups
    }

    public func property(_ name: String) -> TDMSValue? { properties.last { $0.name == name }?.value }

    /// An object path component: the name in single quotes, quotes doubled.
    static func quoted(_ name: String) -> String { "'" + name.replacingOccurrences(of: "'", with: "''") + "'" }

    // MARK: Writing

    /// Writes the file as one segment (metadata for every object, then each channel's values in turn),
    /// the sample arrays going straight from memory to the file.
    public func write(to path: String) throws(FormatError) {
        var meta = ByteSink()
        func string(_ s: String) {
            let u = Array(s.utf8)
            meta.u32(UInt32(u.count))
            meta.raw(u)
        }
        func props(_ list: [TDMSProperty]) {
            meta.u32(UInt32(list.count))
            for p in list {
                string(p.name)
                switch p.value {
                case .int32(let v): meta.u32(TDMSType.i32); meta.i32(v)
                case .int64(let v): meta.u32(TDMSType.i64); meta.i64(v)
                case .uint32(let v): meta.u32(TDMSType.u32); meta.u32(v)
                case .uint64(let v): meta.u32(TDMSType.u64); meta.u64(v)
                case .double(let v): meta.u32(TDMSType.double); meta.f64(v)
                case .string(let s): meta.u32(TDMSType.string); string(s)
                case .bool(let b): meta.u32(TDMSType.bool); meta.u8(b ? 1 : 0)
                case .timestamp(let t): meta.u32(TDMSType.timestamp); meta.u64(t.fraction); meta.i64(t.seconds)
                }
            }
        }
        var objectCount: UInt32 = 1
        for g in groups { objectCount += 1 + UInt32(g.channels.count) }
        meta.u32(objectCount)
        string("/")
        meta.u32(0xFFFF_FFFF)
        props(properties)
        var rawLength: UInt64 = 0
        var stringBlobs: [[UInt8]] = []
        for g in groups {
            let gp = "/" + Self.quoted(g.name)
            string(gp)
            meta.u32(0xFFFF_FFFF)
            props(g.properties)
            for c in g.channels {
                string(gp + "/" + Self.quoted(c.name))
                if c.data.count == 0 {
                    meta.u32(0xFFFF_FFFF)
                } else if case .strings(let s) = c.data {
                    var blob = ByteSink(), text: [UInt8] = []
                    for v in s {
                        text.append(contentsOf: v.utf8)
                        blob.u32(UInt32(text.count))
                    }
                    blob.raw(text)
                    meta.u32(28); meta.u32(TDMSType.string); meta.u32(1); meta.u64(UInt64(s.count)); meta.u64(UInt64(blob.bytes.count))
                    rawLength += UInt64(blob.bytes.count)
                    stringBlobs.append(blob.bytes)
                } else {
                    meta.u32(20); meta.u32(c.data.typeCode); meta.u32(1); meta.u64(UInt64(c.data.count))
                    rawLength += UInt64(c.data.count * TDMSType.size(c.data.typeCode)!)
                }
                props(c.properties)
            }
        }
        var lead = ByteSink()
        lead.raw(Array("TDSm".utf8))
        lead.u32(TDMSToC.metaData | TDMSToC.newObjList | (rawLength > 0 ? TDMSToC.rawData : 0))
        lead.u32(4713)
        lead.u64(UInt64(meta.bytes.count) + rawLength)
        lead.u64(UInt64(meta.bytes.count))
        let out = try FileSink(path: path)
        do {
            try out.write(lead.bytes)
            try out.write(meta.bytes)
            var nextString = 0
            for g in groups {
                for c in g.channels where c.data.count > 0 {
                    switch c.data {
                    case .float64(let v): try out.write(array: v)
                    case .float32(let v): try out.write(array: v)
                    case .int16(let v): try out.write(array: v)
                    case .int32(let v): try out.write(array: v)
                    case .float64Row(let v, let r): try out.write(array: v, range: r)
                    case .int16Row(let v, let r): try out.write(array: v, range: r)
                    case .strings:
                        try out.write(stringBlobs[nextString])
                        nextString += 1
                    }
                }
            }
            try out.close()
        } catch {
            out.discard()
            throw error
        }
    }

    // MARK: Reading

    /// Reads every segment of a TDMS file (metadata carried over between segments, incremental object
    /// lists, repeated chunks, interleaved and big-endian data). DAQmx raw data is not supported. A
    /// truncated last segment is read as far as whole chunks go.
    public static func read(path: String) throws(FormatError) -> TDMSFile {
        let data = try readWholeFile(path)
        return try typedFormatError { try data.withUnsafeBytes { raw in try read(bytes: raw, file: path) } }
    }

    /// Reads a TDMS file from memory (`file` names it in errors).
    public static func read(bytes: UnsafeRawBufferPointer, file: String = "<memory>") throws(FormatError) -> TDMSFile {
        final class Object {
            let path: String
            var properties: [TDMSProperty] = []
            var type: UInt32?
            var f64: [Double] = [], f32: [Float] = [], i16: [Int16] = [], i32: [Int32] = [], strings: [String] = []
            init(path: String) { self.path = path }
        }
        struct RawIndex { var type: UInt32; var count: Int; var stringBytes: Int }
        var objects: [String: Object] = [:]
        var order: [Object] = []
        var lastIndex: [String: RawIndex] = [:]
        var list: [(path: String, index: RawIndex?)] = []
        var listPosition: [String: Int] = [:]  // where each path is in `list`: a lookup per object, not a scan
        var src = ByteSource(bytes, file: file)

        func object(_ path: String) -> Object {
            if let o = objects[path] { return o }
            let o = Object(path: path)
            objects[path] = o
            order.append(o)
            return o
        }
        func readString(_ s: inout ByteSource, _ what: String) throws(FormatError) -> String {
            let n = try s.u32("length of \(what)")
            return try s.utf8(Int(n), what)
        }
        func readValue(_ s: inout ByteSource, type: UInt32, _ what: String) throws(FormatError) -> TDMSValue? {
            switch type {
            case TDMSType.i8: return .int32(Int32(Int8(bitPattern: try s.u8(what))))
            case TDMSType.i16: return .int32(Int32(Int16(bitPattern: try s.u16(what))))
            case TDMSType.i32: return .int32(Int32(bitPattern: try s.u32(what)))
            case TDMSType.i64: return .int64(try s.i64(what))
            case TDMSType.u8: return .uint32(UInt32(try s.u8(what)))
            case TDMSType.u16: return .uint32(UInt32(try s.u16(what)))
            case TDMSType.u32: return .uint32(try s.u32(what))
            case TDMSType.u64: return .uint64(try s.u64(what))
            case TDMSType.single, TDMSType.singleUnit: return .double(Double(try s.f32(what)))
            case TDMSType.double, TDMSType.doubleUnit: return .double(try s.f64(what))
            case TDMSType.string: return .string(try readString(&s, what))
            case TDMSType.bool: return .bool(try s.u8(what) != 0)
            case TDMSType.timestamp:
                let f = try s.u64(what), sec = try s.i64(what)
                return .timestamp(TDMSTimestamp(seconds: sec, fraction: f))
            default:
                guard let n = TDMSType.size(type) else { throw s.fail("\(what): unknown data type 0x\(String(type, radix: 16))") }
                _ = try s.slice(n, what)
                return nil
            }
        }

        func appendValues(_ o: Object, _ type: UInt32, _ n: Int, _ d: inout ByteSource) throws(FormatError) {
            // The channel keeps the type of its first data; a later different type turns it into float64.
            if o.type == nil { o.type = type }
            if o.type != type, o.type != TDMSType.double {
                o.f64 = (o.f32.map(Double.init) + o.i16.map(Double.init) + o.i32.map(Double.init))
                o.f32 = []; o.i16 = []; o.i32 = []
                o.type = TDMSType.double
            }
            let fast = !d.bigEndian && o.type == type
            switch (o.type!, fast) {
            case (TDMSType.double, true), (TDMSType.doubleUnit, true):
                appendRaw(&o.f64, from: try d.slice(n * 8, "values of \(o.path)"), count: n, zero: 0)
            case (TDMSType.single, true), (TDMSType.singleUnit, true):
                appendRaw(&o.f32, from: try d.slice(n * 4, "values of \(o.path)"), count: n, zero: 0)
            case (TDMSType.i16, true):
                appendRaw(&o.i16, from: try d.slice(n * 2, "values of \(o.path)"), count: n, zero: 0)
            case (TDMSType.i32, true):
                appendRaw(&o.i32, from: try d.slice(n * 4, "values of \(o.path)"), count: n, zero: 0)
            case (TDMSType.single, false), (TDMSType.singleUnit, false):
                for _ in 0..<n { o.f32.append(try d.f32("values of \(o.path)")) }
            case (TDMSType.i16, false):
                for _ in 0..<n { o.i16.append(Int16(bitPattern: try d.u16("values of \(o.path)"))) }
            case (TDMSType.i32, false):
                for _ in 0..<n { o.i32.append(Int32(bitPattern: try d.u32("values of \(o.path)"))) }
            default:
                if o.type != TDMSType.double { o.type = TDMSType.double }
                for _ in 0..<n {
                    guard let v = try readValue(&d, type: type, "values of \(o.path)")?.number else { throw d.fail("values of \(o.path): not numbers") }
                    o.f64.append(v)
                }
            }
        }

        while src.remaining >= 28 {
            let segmentStart = src.offset
            let tag = try src.utf8(4, "segment tag")
            guard tag == "TDSm" else {
                throw src.fail("segment tag is '\(tag)', not 'TDSm'" + (tag == "TDSh" ? " (this is a TDMS index file; read the .tdms file)" : ""), at: segmentStart)
            }
            src.bigEndian = false
            let toc = try src.u32("ToC mask")
            _ = try src.u32("version")
            let next = try src.u64("next segment offset")
            let rawOffset = try src.u64("raw data offset")
            let leadEnd = src.offset
            let segmentEnd = next == UInt64.max || next > UInt64(bytes.count - leadEnd) ? bytes.count : leadEnd + Int(next)
            guard rawOffset <= UInt64(segmentEnd - leadEnd) else {
                throw src.fail("raw data offset \(rawOffset) lies beyond the segment (\(segmentEnd - leadEnd) bytes)", at: segmentStart + 20)
            }
            let dataStart = leadEnd + Int(rawOffset)
            guard toc & TDMSToC.daqmxRawData == 0 else {
                throw src.fail("DAQmx raw data segments are not supported; save the file with scaled data", at: segmentStart)
            }
            src.bigEndian = toc & TDMSToC.bigEndian != 0
            if toc & TDMSToC.metaData != 0 {
                var m = ByteSource(UnsafeRawBufferPointer(rebasing: bytes[0..<dataStart]), file: file, offset: leadEnd)
                m.bigEndian = src.bigEndian
                if toc & TDMSToC.newObjList != 0 { list = []; listPosition = [:] }
                let count = try m.u32("object count")
                for _ in 0..<count {
                    let at = m.offset
                    let path = try readString(&m, "object path")
                    let o = object(path)
                    let indexLength = try m.u32("raw data index of \(path)")
                    var index: RawIndex?
                    switch indexLength {
                    case 0xFFFF_FFFF: index = nil
                    case 0:
                        guard let previous = lastIndex[path] else { throw m.fail("\(path) reuses a raw data index it never had", at: at) }
                        index = previous
                    case 0x6912_0000, 0x6913_0000:
                        throw m.fail("\(path) holds DAQmx raw data, which is not supported", at: at)
                    default:
                        let type = try m.u32("data type of \(path)")
                        let dimension = try m.u32("array dimension of \(path)")
                        guard dimension == 1 else { throw m.fail("\(path): array dimension \(dimension), must be 1", at: at) }
                        let n = try m.u64("value count of \(path)")
                        var stringBytes: UInt64 = 0
                        if type == TDMSType.string { stringBytes = try m.u64("string bytes of \(path)") }
                        guard n < UInt64(Int32.max) * 64, stringBytes < UInt64(Int.max / 2) else { throw m.fail("\(path): \(n) values is too many", at: at) }
                        guard type == TDMSType.string || TDMSType.size(type) != nil else {
                            throw m.fail("\(path): unsupported data type 0x\(String(type, radix: 16))", at: at)
                        }
                        index = RawIndex(type: type, count: Int(n), stringBytes: Int(stringBytes))
                        lastIndex[path] = index
                    }
                    if let i = listPosition[path] { list[i].index = index } else { listPosition[path] = list.count; list.append((path, index)) }
                    let propertyCount = try m.u32("property count of \(path)")
                    for _ in 0..<propertyCount {
                        let name = try readString(&m, "property name of \(path)")
                        let type = try m.u32("type of property \(name)")
                        if let v = try readValue(&m, type: type, "property \(name) of \(path)") {
                            if let i = o.properties.firstIndex(where: { $0.name == name }) { o.properties[i].value = v } else { o.properties.append(TDMSProperty(name, v)) }
                        }
                    }
                }
            }
            if toc & TDMSToC.rawData != 0 {
                let dataObjects = list.compactMap { e -> (Object, RawIndex)? in
                    guard let i = e.index, i.count > 0 else { return nil }
                    return (object(e.path), i)
                }
                // Each index is bounded, their sum is not: a chunk larger than any file is an error.
                var chunk = 0
                for (o, i) in dataObjects {
                    let (sum, overflow) = chunk.addingReportingOverflow(i.type == TDMSType.string ? i.stringBytes : i.count * TDMSType.size(i.type)!)
                    guard !overflow else { throw src.fail("raw data indexes up to \(o.path) describe a chunk of more than \(Int.max) bytes", at: segmentStart) }
                    chunk = sum
                }
                if chunk > 0 {
                    var d = ByteSource(UnsafeRawBufferPointer(rebasing: bytes[0..<segmentEnd]), file: file, offset: dataStart)
                    d.bigEndian = src.bigEndian
                    let chunks = (segmentEnd - dataStart) / chunk
                    let interleaved = toc & TDMSToC.interleaved != 0
                    for _ in 0..<chunks {
                        if interleaved {
                            guard let n = dataObjects.first?.1.count, dataObjects.allSatisfy({ $0.1.count == n && $0.1.type != TDMSType.string }) else {
                                throw d.fail("interleaved data of channels with different lengths or strings")
                            }
                            for _ in 0..<n {
                                for (o, i) in dataObjects { try appendValues(o, i.type, 1, &d) }
                            }
                        } else {
                            for (o, i) in dataObjects {
                                if i.type == TDMSType.string {
                                    var ends: [Int] = []
                                    for _ in 0..<i.count { ends.append(Int(try d.u32("string offsets of \(o.path)"))) }
                                    guard i.stringBytes >= 4 * i.count else { throw d.fail("\(o.path): \(i.stringBytes) string bytes cannot hold \(i.count) offsets") }
                                    let blob = try d.slice(i.stringBytes - 4 * i.count, "strings of \(o.path)")
                                    var start = 0
                                    for e in ends {
                                        guard e >= start, e <= blob.count else { throw d.fail("string offsets of \(o.path) out of order") }
                                        o.strings.append(String(decoding: UnsafeRawBufferPointer(rebasing: blob[start..<e]), as: UTF8.self))
                                        start = e
                                    }
                                    if o.type == nil { o.type = TDMSType.string }
                                } else {
                                    try appendValues(o, i.type, i.count, &d)
                                }
                            }
                        }
                    }
                }
            }
            src.offset = segmentEnd
        }

        // Assemble groups and channels from the object paths.
        func components(_ path: String) -> [String]? {
            guard path.hasPrefix("/") else { return nil }
            var parts: [String] = [], current = "", inQuote = false
            var chars = Array(path.dropFirst())[...]
            while let c = chars.popFirst() {
                if inQuote {
                    if c == "'" {
                        if chars.first == "'" { current.append("'"); chars.removeFirst() } else { inQuote = false; parts.append(current); current = "" }
                    } else { current.append(c) }
                } else if c == "'" { inQuote = true } else if c != "/" { return nil }
            }
            return inQuote ? nil : parts
        }
        var file = TDMSFile()
        var groupIndex: [String: Int] = [:]
        func group(_ name: String) -> Int {
            if let i = groupIndex[name] { return i }
            file.groups.append(TDMSGroup(name: name))
            groupIndex[name] = file.groups.count - 1
            return file.groups.count - 1
        }
        for o in order {
            guard let parts = components(o.path) else { continue }
            switch parts.count {
            case 0: file.properties = o.properties
            case 1: file.groups[group(parts[0])].properties = o.properties
            case 2:
                let data: TDMSData
                switch o.type {
                case TDMSType.single, TDMSType.singleUnit: data = .float32(o.f32)
                case TDMSType.i16: data = .int16(o.i16)
                case TDMSType.i32: data = .int32(o.i32)
                case TDMSType.string: data = .strings(o.strings)
                default: data = .float64(o.f64)
                }
                file.groups[group(parts[0])].channels.append(TDMSChannel(name: parts[1], properties: o.properties, data: data))
            default: continue
            }
        }
        return file
    }
}
