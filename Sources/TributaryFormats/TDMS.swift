import Foundation
import TributaryBytes

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
    /// A DAQmx raw data channel's scaler values by scale id (its `data` are the scaled values); empty
    /// for other channels. The writer ignores them.
    public var daqmxScalers: [UInt32: TDMSData] = [:]
    /// Index mode (`TDMSFile.index`): where the values are; `data` is then an empty array of their type.
    public var valueIndex: TDMSValueIndex? = nil
    /// The number of values, read or indexed.
    public var valueCount: Int { valueIndex?.count ?? data.count }
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
        var meta = ByteWriter()
        func string(_ s: String) {
            let u = Array(s.utf8)
            meta.u32(UInt32(u.count))
            meta.write(u)
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
                    var blob = ByteWriter(), text: [UInt8] = []
                    for v in s {
                        text.append(contentsOf: v.utf8)
                        blob.u32(UInt32(text.count))
                    }
                    blob.write(text)
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
        var lead = ByteWriter()
        lead.write(Array("TDSm".utf8))
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
    /// lists, repeated chunks, interleaved and big-endian data, DAQmx raw data scaled by the channels'
    /// NI_Scale properties). A truncated last segment is read as far as whole chunks go.
    public static func read(path: String) throws(FormatError) -> TDMSFile {
        let data = try readWholeFile(path)
        return try typedFormatError { try data.withUnsafeBytes { raw in try read(bytes: raw, file: path) } }
    }

    /// Reads a TDMS file from memory (`file` names it in errors).
    public static func read(bytes: UnsafeRawBufferPointer, file: String = "<memory>") throws(FormatError) -> TDMSFile {
        var reader = TDMSReader(bytes: bytes, file: file)
        try reader.readSegments()
        return try reader.assemble()
    }
}
