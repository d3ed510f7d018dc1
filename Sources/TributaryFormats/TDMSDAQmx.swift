// DAQmx raw data in TDMS, from NI's "TDMS File Format Internal Structure": a channel whose raw data
// index starts with 0x00001269 (format changing scaler) or 0x0000126A / 0x00001369 (digital line
// scaler) describes its values as scalers over raw buffers. Per chunk, each raw buffer is a table of
// rows of `width` bytes (one row per sample, every channel's bytes side by side); a scaler reads its
// value at a byte (or bit) offset of each row. The physical values come from the channel's NI_Scale
// properties (TDMSScaling), whose scales without a type are the scalers by scale id.

/// The DAQmx part of a raw data index: the channel's scalers and the widths of the raw buffers.
struct TDMSDAQmxIndex: Sendable, Equatable {
    struct Scaler: Sendable, Equatable {
        /// The DAQmx data type code (0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 u64, 7 i64, 8 f32, 9 f64).
        var type: UInt32
        var buffer: Int
        /// Byte offset of the value in a row; for a digital line scaler, the bit within it.
        var byteOffset: Int
        var bit: Int?
        var scaleID: UInt32
    }
    var scalers: [Scaler]
    var widths: [Int]
}

/// DAQmx scaler type codes (they differ from the TDMS type codes).
enum DAQmxType {
    static let u8: UInt32 = 0, i8: UInt32 = 1, u16: UInt32 = 2, i16: UInt32 = 3, u32: UInt32 = 4, i32: UInt32 = 5
    static let u64: UInt32 = 6, i64: UInt32 = 7, f32: UInt32 = 8, f64: UInt32 = 9

    /// Bytes per value; nil for codes this reader does not know (timestamp scalers among them).
    static func size(_ t: UInt32) -> Int? {
        switch t {
        case u8, i8: 1
        case u16, i16: 2
        case u32, i32, f32: 4
        case u64, i64, f64: 8
        default: nil
        }
    }
}

/// Raw data index headers of DAQmx channels. NI's description gives the bytes 69 12 00 00 and
/// 69 13 00 00; DAQmx writes digital line scalers as 6A 12 00 00, so both are accepted.
enum DAQmxIndexHeader {
    static let formatChanging: UInt32 = 0x0000_1269
    static let digitalLine: UInt32 = 0x0000_126A
    static let digitalLineDocumented: UInt32 = 0x0000_1369
    /// The channel data type of DAQmx raw data: the values are the scalers'.
    static let rawDataType: UInt32 = 0xFFFF_FFFF
}

extension TDMSReader {
    /// Bounds of the DAQmx index: far beyond any device, small enough that nothing overflows.
    static let maxScalers: UInt32 = 4096, maxBuffers: UInt32 = 1024, maxWidth: UInt32 = 1 << 20

    /// The DAQmx raw data index after its header: data type, dimension, values per chunk, the
    /// scalers and the raw buffer widths. Every field is checked against the others.
    func readDAQmxIndex(_ m: inout FileReader, header: UInt32, path: String, at: Int) throws(FormatError) -> RawIndex {
        let type = try m.u32("data type of \(path)")
        let dimension = try m.u32("array dimension of \(path)")
        guard dimension == 1 else { throw m.fail("\(path): array dimension \(dimension), must be 1", at: at) }
        let n = try m.u64("value count of \(path)")
        guard n < UInt64(Int32.max) * 64 else { throw m.fail("\(path): \(n) values is too many", at: at) }
        let scalerCount = try m.u32("DAQmx scaler count of \(path)")
        guard scalerCount <= Self.maxScalers else {
            throw m.fail("\(path): \(scalerCount) DAQmx scalers, at most \(Self.maxScalers)", at: at)
        }
        var scalers: [TDMSDAQmxIndex.Scaler] = []
        for k in 0..<scalerCount {
            let what = "DAQmx scaler \(k) of \(path)"
            let scalerType = try m.u32("data type of \(what)")
            let buffer = try m.u32("raw buffer index of \(what)")
            let offset = try m.u32("raw byte offset of \(what)")
            let digital = header != DAQmxIndexHeader.formatChanging
            if digital { _ = try m.u8("sample format bitmap of \(what)") } else { _ = try m.u32("sample format bitmap of \(what)") }
            let scaleID = try m.u32("scale id of \(what)")
            guard DAQmxType.size(scalerType) != nil else {
                throw m.fail("\(what): unsupported DAQmx data type 0x\(String(scalerType, radix: 16))", at: at)
            }
            guard buffer < Self.maxBuffers, offset < Self.maxWidth * (digital ? 8 : 1) else {
                throw m.fail("\(what): raw buffer \(buffer), offset \(offset) out of range", at: at)
            }
            scalers.append(
                TDMSDAQmxIndex.Scaler(
                    type: scalerType, buffer: Int(buffer), byteOffset: Int(digital ? offset / 8 : offset),
                    bit: digital ? Int(offset % 8) : nil, scaleID: scaleID))
        }
        let widthCount = try m.u32("raw buffer width count of \(path)")
        guard widthCount <= Self.maxBuffers else { throw m.fail("\(path): \(widthCount) raw buffers, at most \(Self.maxBuffers)", at: at) }
        var widths: [Int] = []
        for k in 0..<widthCount {
            let w = try m.u32("width of raw buffer \(k) of \(path)")
            guard w > 0, w <= Self.maxWidth else {
                throw m.fail("\(path): raw buffer \(k) is \(w) bytes wide, must be 1...\(Self.maxWidth)", at: at)
            }
            widths.append(Int(w))
        }
        for (k, s) in scalers.enumerated() {
            guard s.buffer < widths.count else {
                throw m.fail("DAQmx scaler \(k) of \(path) reads raw buffer \(s.buffer) of \(widths.count)", at: at)
            }
            guard s.byteOffset + DAQmxType.size(s.type)! <= widths[s.buffer] else {
                throw m.fail(
                    "DAQmx scaler \(k) of \(path): \(DAQmxType.size(s.type)!) bytes at offset \(s.byteOffset) pass the row's \(widths[s.buffer]) bytes",
                    at: at)
            }
        }
        if type != DAQmxIndexHeader.rawDataType {
            guard scalers.count == 1, Self.tdmsType(ofDAQmx: scalers[0].type) == type else {
                throw m.fail("\(path): a channel of data type 0x\(String(type, radix: 16)) needs one DAQmx scaler of that type", at: at)
            }
        }
        return RawIndex(type: type, count: Int(n), stringBytes: 0, daqmx: TDMSDAQmxIndex(scalers: scalers, widths: widths))
    }

    /// The TDMS type code of a DAQmx scaler type.
    static func tdmsType(ofDAQmx t: UInt32) -> UInt32? {
        switch t {
        case DAQmxType.u8: TDMSType.u8
        case DAQmxType.i8: TDMSType.i8
        case DAQmxType.u16: TDMSType.u16
        case DAQmxType.i16: TDMSType.i16
        case DAQmxType.u32: TDMSType.u32
        case DAQmxType.i32: TDMSType.i32
        case DAQmxType.u64: TDMSType.u64
        case DAQmxType.i64: TDMSType.i64
        case DAQmxType.f32: TDMSType.single
        case DAQmxType.f64: TDMSType.double
        default: nil
        }
    }

    /// A DAQmx segment's raw data: per chunk, each raw buffer's rows in turn. Every data object must
    /// be DAQmx and agree on the buffer widths; a buffer holds as many rows as its longest channel.
    /// Index mode records where each scaler's column is (`indexScaler`) instead of reading it.
    func readDAQmxData(_ lead: LeadIn, _ dataObjects: [(Object, RawIndex)]) throws(FormatError) {
        let fail = { (what: String) in FileReader(bytes, source: file).fail(what, at: lead.start) }
        guard let widths = dataObjects.first?.1.daqmx?.widths else { return }
        var rows = Array(repeating: 0, count: widths.count)
        for (o, i) in dataObjects {
            guard let d = i.daqmx else { throw fail("segment mixes DAQmx raw data with other raw data (\(o.path))") }
            guard d.widths == widths else { throw fail("\(o.path): raw buffer widths \(d.widths) differ from the segment's \(widths)") }
            for s in d.scalers { rows[s.buffer] = max(rows[s.buffer], i.count) }
        }
        var chunk = 0
        for (n, w) in zip(rows, widths) {
            let (p, o1) = n.multipliedReportingOverflow(by: w)
            let (sum, o2) = chunk.addingReportingOverflow(p)
            guard !o1, !o2 else { throw fail("DAQmx raw buffers describe a chunk of more than \(Int.max) bytes") }
            chunk = sum
        }
        guard chunk > 0 else { return }
        var d = FileReader(UnsafeRawBufferPointer(rebasing: bytes[0..<lead.end]), position: lead.dataStart, source: file)
        for _ in 0..<(lead.end - lead.dataStart) / chunk {
            for (b, (n, w)) in zip(rows, widths).enumerated() where n > 0 {
                let tableStart = d.position
                let table = try d.slice(n * w, "raw buffer \(b)")
                for (o, i) in dataObjects {
                    for s in i.daqmx!.scalers where s.buffer == b {
                        let raw = i.type == DAQmxIndexHeader.rawDataType
                        if mapped != nil {
                            Self.indexScaler(o, s, at: tableStart, rows: n, width: w, bigEndian: lead.bigEndian, raw: raw)
                        } else {
                            Self.appendScaler(o, s, table, rows: n, width: w, bigEndian: lead.bigEndian, raw: raw)
                        }
                    }
                }
            }
        }
    }

    /// One scaler's column of a raw buffer onto the object: its scaler values (DAQmx raw data) or
    /// its values (a channel of the scaler's type). Integers up to 16 bits are kept as int16, up to
    /// 32 bits (u16, i32) as int32, float32 as float32, the rest as float64.
    static func appendScaler(
        _ o: Object, _ s: TDMSDAQmxIndex.Scaler, _ table: UnsafeRawBufferPointer, rows: Int, width: Int, bigEndian: Bool, raw: Bool
    ) {
        let reader = FileReader(table, bigEndian: bigEndian)
        func load<T: FixedWidthInteger>(_: T.Type, _ r: Int) -> T {
            let x = reader.load(T.self, at: r * width + s.byteOffset)
            guard let bit = s.bit else { return x }
            return (x >> bit) & 1
        }
        var column: TDMSData
        switch s.type {
        case DAQmxType.u8: column = .int16((0..<rows).map { Int16(load(UInt8.self, $0)) })
        case DAQmxType.i8: column = .int16((0..<rows).map { Int16(load(Int8.self, $0)) })
        case DAQmxType.i16: column = .int16((0..<rows).map { load(Int16.self, $0) })
        case DAQmxType.u16: column = .int32((0..<rows).map { Int32(load(UInt16.self, $0)) })
        case DAQmxType.i32: column = .int32((0..<rows).map { load(Int32.self, $0) })
        case DAQmxType.u32: column = .float64((0..<rows).map { Double(load(UInt32.self, $0)) })
        case DAQmxType.u64: column = .float64((0..<rows).map { Double(load(UInt64.self, $0)) })
        case DAQmxType.i64: column = .float64((0..<rows).map { Double(load(Int64.self, $0)) })
        case DAQmxType.f32: column = .float32((0..<rows).map { Float(bitPattern: load(UInt32.self, $0)) })
        default: column = .float64((0..<rows).map { Double(bitPattern: load(UInt64.self, $0)) })
        }
        if !raw {
            // A channel of the scaler's own type: its values, as a channel of that type would hold them.
            o.append(column: column, type: tdmsType(ofDAQmx: s.type)!)
            return
        }
        if let existing = o.scalers[s.scaleID] { column = existing.appending(column) }
        o.scalers[s.scaleID] = column
        if o.type == nil { o.type = DAQmxIndexHeader.rawDataType }
    }
}

extension TDMSReader.Object {
    /// Values of a channel of TDMS type `type` (int16, int32 and float32 kept, the rest float64),
    /// turning the channel into float64 when its type changes, as `appendValues` does.
    func append(column: TDMSData, type: UInt32) {
        if takeScalerType(type) {
            f64 = f32.map(Double.init) + i16.map(Double.init) + i32.map(Double.init)
            f32 = []; i16 = []; i32 = []
        }
        switch (self.type, column) {
        case (TDMSType.i16, .int16(let v)): i16 += v
        case (TDMSType.i32, .int32(let v)): i32 += v
        case (TDMSType.single, .float32(let v)): f32 += v
        default: f64 += column.doubles ?? []
        }
    }

    /// The channel's type after values of TDMS type `type` from a DAQmx scaler: int16, int32 and
    /// float32 kept, the rest float64, float64 when it changes. True when it has just turned into
    /// float64 from another type (the values it holds are then converted).
    func takeScalerType(_ type: UInt32) -> Bool {
        let kind = [TDMSType.i16, TDMSType.i32, TDMSType.single].contains(type) ? type : TDMSType.double
        if self.type == nil { self.type = kind }
        guard self.type != kind, self.type != TDMSType.double else { return false }
        self.type = TDMSType.double
        return true
    }
}

extension TDMSData {
    /// These values followed by `other`'s, as float64 when the two kinds differ.
    func appending(_ other: TDMSData) -> TDMSData {
        switch (self, other) {
        case (.int16(let a), .int16(let b)): .int16(a + b)
        case (.int32(let a), .int32(let b)): .int32(a + b)
        case (.float32(let a), .float32(let b)): .float32(a + b)
        default: .float64((doubles ?? []) + (other.doubles ?? []))
        }
    }
}
