/// Reads the segments of a TDMS file (`TDMSFile.read`): the lead-in of each, its metadata (carried
/// over between segments, incremental object lists) and its raw data (repeated chunks, interleaved or
/// not, little- or big-endian, DAQmx raw data in TDMSDAQmx.swift), then assembles groups and channels
/// from the object paths, DAQmx channels scaled by their NI_Scale properties (TDMSScaling). A
/// truncated last segment is read as far as whole chunks go.
struct TDMSReader {
    /// An object of the file ("/", "/'group'", "/'group'/'channel'"), its properties and its values.
    final class Object {
        let path: String
        var properties: [TDMSProperty] = []
        var type: UInt32?
        var f64: [Double] = [], f32: [Float] = [], i16: [Int16] = [], i32: [Int32] = [], strings: [String] = []
        /// DAQmx raw data: each scaler's values by scale id (index mode: an empty array of their kind).
        var scalers: [UInt32: TDMSData] = [:]
        /// Index mode: where the values are and how many (`TDMSValueIndex`), and for DAQmx raw data
        /// where each scaler's values are and how many, by scale id.
        var extents: [TDMSValueExtent] = []
        var count = 0
        var scalerExtents: [UInt32: [TDMSValueExtent]] = [:]
        var scalerCounts: [UInt32: Int] = [:]
        init(path: String) { self.path = path }
    }

    /// An object's raw data index: the type and number of its values in each chunk.
    struct RawIndex {
        var type: UInt32
        var count: Int
        var stringBytes: Int
        var daqmx: TDMSDAQmxIndex? = nil
    }

    /// What a segment's lead-in says.
    struct LeadIn {
        var start: Int
        var toc: UInt32
        /// Where the metadata begins (the end of the lead-in), the raw data begins and the segment ends.
        var metadataStart: Int
        var dataStart: Int
        var end: Int
        var bigEndian: Bool
    }

    let bytes: UnsafeRawBufferPointer
    let file: String
    /// Index mode (`TDMSFile.index`): numeric values are not read but their places recorded, strings
    /// checked but not kept, and the mapped file's pages given back as the walk passes them.
    var mapped: MappedFile?
    var objects: [String: Object] = [:]
    private var order: [Object] = []
    var lastIndex: [String: RawIndex] = [:]
    /// The objects whose raw data the segments hold, in order, with their current index.
    private var list: [(path: String, index: RawIndex?)] = []
    /// Where each path is in `list`: a lookup per object, not a scan.
    private var listPosition: [String: Int] = [:]

    init(bytes: UnsafeRawBufferPointer, file: String) {
        self.bytes = bytes
        self.file = file
    }

    mutating func readSegments() throws(FormatError) {
        var src = FileReader(bytes, source: file)
        while src.remaining >= 28 {
            mapped?.release(before: src.position)
            let lead = try readLeadIn(&src)
            if lead.toc & TDMSToC.metaData != 0 { try readMetadata(lead) }
            if lead.toc & TDMSToC.rawData != 0 { try readRawData(lead) }
            src.position = lead.end
        }
    }

    /// The 28-byte lead-in. The ToC mask is little-endian; the version and both offsets follow the
    /// segment's byte order (ToC bit 6), as the rest of the segment does.
    private func readLeadIn(_ src: inout FileReader) throws(FormatError) -> LeadIn {
        let start = src.position
        let tag = try src.utf8(4, "segment tag")
        guard tag == "TDSm" else {
            throw src.fail(
                "segment tag is '\(tag)', not 'TDSm'" + (tag == "TDSh" ? " (this is a TDMS index file; read the .tdms file)" : ""),
                at: start)
        }
        src.bigEndian = false
        let toc = try src.u32("ToC mask")
        src.bigEndian = toc & TDMSToC.bigEndian != 0
        _ = try src.u32("version")
        let next = try src.u64("next segment offset")
        let rawOffset = try src.u64("raw data offset")
        let leadEnd = src.position
        let end = next == UInt64.max || next > UInt64(bytes.count - leadEnd) ? bytes.count : leadEnd + Int(next)
        guard rawOffset <= UInt64(end - leadEnd) else {
            throw src.fail("raw data offset \(rawOffset) lies beyond the segment (\(end - leadEnd) bytes)", at: start + 20)
        }
        return LeadIn(
            start: start, toc: toc, metadataStart: leadEnd, dataStart: leadEnd + Int(rawOffset), end: end, bigEndian: src.bigEndian)
    }

    private mutating func object(_ path: String) -> Object {
        if let o = objects[path] { return o }
        let o = Object(path: path)
        objects[path] = o
        order.append(o)
        return o
    }

    /// The segment's object list: each object's raw data index and properties.
    private mutating func readMetadata(_ lead: LeadIn) throws(FormatError) {
        var m = FileReader(UnsafeRawBufferPointer(rebasing: bytes[0..<lead.dataStart]), position: lead.metadataStart, source: file)
        m.bigEndian = lead.bigEndian
        if lead.toc & TDMSToC.newObjList != 0 {
            list = []
            listPosition = [:]
        }
        let count = try m.u32("object count")
        for _ in 0..<count {
            let at = m.position
            let path = try Self.readString(&m, "object path")
            let o = object(path)
            let index = try readRawIndex(&m, path: path, at: at)
            if let i = listPosition[path] {
                list[i].index = index
            } else {
                listPosition[path] = list.count
                list.append((path, index))
            }
            let propertyCount = try m.u32("property count of \(path)")
            for _ in 0..<propertyCount {
                let name = try Self.readString(&m, "property name of \(path)")
                let type = try m.u32("type of property \(name)")
                if let v = try Self.readValue(&m, type: type, "property \(name) of \(path)") {
                    if let i = o.properties.firstIndex(where: { $0.name == name }) {
                        o.properties[i].value = v
                    } else {
                        o.properties.append(TDMSProperty(name, v))
                    }
                }
            }
        }
    }

    /// An object's raw data index: none, the previous one again, or a new one (bounded).
    private mutating func readRawIndex(_ m: inout FileReader, path: String, at: Int) throws(FormatError) -> RawIndex? {
        let indexLength = try m.u32("raw data index of \(path)")
        switch indexLength {
        case 0xFFFF_FFFF: return nil
        case 0:
            guard let previous = lastIndex[path] else { throw m.fail("\(path) reuses a raw data index it never had", at: at) }
            return previous
        case DAQmxIndexHeader.formatChanging, DAQmxIndexHeader.digitalLine, DAQmxIndexHeader.digitalLineDocumented:
            let index = try readDAQmxIndex(&m, header: indexLength, path: path, at: at)
            lastIndex[path] = index
            return index
        default:
            let type = try m.u32("data type of \(path)")
            let dimension = try m.u32("array dimension of \(path)")
            guard dimension == 1 else { throw m.fail("\(path): array dimension \(dimension), must be 1", at: at) }
            let n = try m.u64("value count of \(path)")
            var stringBytes: UInt64 = 0
            if type == TDMSType.string { stringBytes = try m.u64("string bytes of \(path)") }
            guard n < UInt64(Int32.max) * 64, stringBytes < UInt64(Int.max / 2) else {
                throw m.fail("\(path): \(n) values is too many", at: at)
            }
            guard type == TDMSType.string || TDMSType.size(type) != nil else {
                throw m.fail("\(path): unsupported data type 0x\(String(type, radix: 16))", at: at)
            }
            let index = RawIndex(type: type, count: Int(n), stringBytes: Int(stringBytes))
            lastIndex[path] = index
            return index
        }
    }

    /// The segment's raw data: as many whole chunks as it holds, each the listed objects' values.
    private mutating func readRawData(_ lead: LeadIn) throws(FormatError) {
        var dataObjects: [(Object, RawIndex)] = []
        for entry in list {
            guard let i = entry.index, i.count > 0 else { continue }
            dataObjects.append((object(entry.path), i))
        }
        if dataObjects.contains(where: { $0.1.daqmx != nil }) { return try readDAQmxData(lead, dataObjects) }
        // Each index is bounded, their sum is not: a chunk larger than any file is an error.
        var chunk = 0
        for (o, i) in dataObjects {
            let (sum, overflow) = chunk.addingReportingOverflow(
                i.type == TDMSType.string ? i.stringBytes : i.count * TDMSType.size(i.type)!)
            guard !overflow else {
                throw FileReader(bytes, source: file).fail(
                    "raw data indexes up to \(o.path) describe a chunk of more than \(Int.max) bytes", at: lead.start)
            }
            chunk = sum
        }
        guard chunk > 0 else { return }
        var d = FileReader(UnsafeRawBufferPointer(rebasing: bytes[0..<lead.end]), position: lead.dataStart, source: file)
        d.bigEndian = lead.bigEndian
        let interleaved = lead.toc & TDMSToC.interleaved != 0
        for _ in 0..<(lead.end - lead.dataStart) / chunk {
            if interleaved {
                guard let n = dataObjects.first?.1.count, dataObjects.allSatisfy({ $0.1.count == n && $0.1.type != TDMSType.string }) else {
                    throw d.fail("interleaved data of channels with different lengths or strings")
                }
                if mapped != nil {
                    try indexInterleaved(dataObjects, n, &d)
                    continue
                }
                for _ in 0..<n {
                    for (o, i) in dataObjects { try Self.appendValues(o, i.type, 1, &d) }
                }
            } else {
                for (o, i) in dataObjects {
                    if i.type == TDMSType.string {
                        try Self.appendStrings(o, i, &d, keep: mapped == nil)
                    } else if mapped != nil {
                        try Self.indexValues(o, i.type, i.count, &d, stride: TDMSType.size(i.type)!)
                    } else {
                        try Self.appendValues(o, i.type, i.count, &d)
                    }
                }
            }
        }
    }

    static func readString(_ s: inout FileReader, _ what: String) throws(FormatError) -> String {
        let n = try s.u32("length of \(what)")
        return try s.utf8(Int(n), what)
    }

    static func readValue(_ s: inout FileReader, type: UInt32, _ what: String) throws(FormatError) -> TDMSValue? {
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
            // Little-endian: fraction then seconds; big-endian files store the seconds first.
            if s.bigEndian {
                let sec = try s.i64(what), f = try s.u64(what)
                return .timestamp(TDMSTimestamp(seconds: sec, fraction: f))
            }
            let f = try s.u64(what), sec = try s.i64(what)
            return .timestamp(TDMSTimestamp(seconds: sec, fraction: f))
        default:
            guard let n = TDMSType.size(type) else { throw s.fail("\(what): unknown data type 0x\(String(type, radix: 16))") }
            _ = try s.slice(n, what)
            return nil
        }
    }

    /// `n` values of `type` onto the object's data. The channel keeps the type of its first data; a
    /// later different type turns it into float64.
    static func appendValues(_ o: Object, _ type: UInt32, _ n: Int, _ d: inout FileReader) throws(FormatError) {
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
                guard let v = try readValue(&d, type: type, "values of \(o.path)")?.number else {
                    throw d.fail("values of \(o.path): not numbers")
                }
                o.f64.append(v)
            }
        }
    }

    /// A chunk's strings of one object: `count` end offsets, then the UTF-8 bytes.
    static func appendStrings(_ o: Object, _ i: RawIndex, _ d: inout FileReader, keep: Bool = true) throws(FormatError) {
        var ends: [Int] = []
        for _ in 0..<i.count { ends.append(Int(try d.u32("string offsets of \(o.path)"))) }
        guard i.stringBytes >= 4 * i.count else { throw d.fail("\(o.path): \(i.stringBytes) string bytes cannot hold \(i.count) offsets") }
        let blob = try d.slice(i.stringBytes - 4 * i.count, "strings of \(o.path)")
        var start = 0
        for e in ends {
            guard e >= start, e <= blob.count else { throw d.fail("string offsets of \(o.path) out of order") }
            if keep { o.strings.append(String(decoding: UnsafeRawBufferPointer(rebasing: blob[start..<e]), as: UTF8.self)) }
            start = e
        }
        if o.type == nil { o.type = TDMSType.string }
    }

    /// A DAQmx channel's values: its scales (`properties`) applied to its scaler values (`scalers`,
    /// by scale id), or its one scaler's values when it has no scales. Errors name `file` and `location`.
    static func daqmxData(
        properties: [TDMSProperty], scalers: [UInt32: TDMSData], file: String, location: String
    ) throws(FormatError) -> TDMSData {
        do {
            if let v = try TDMSScaling.scaled(properties: properties, raw: nil, scalers: scalers) { return .float64(v) }
        } catch {
            throw FormatError(file: file, location: location, reason: error.reason)
        }
        guard scalers.count <= 1 else {
            throw FormatError(
                file: file, location: location,
                reason: "\(scalers.count) DAQmx scalers and no NI_Scale properties that say how to combine them")
        }
        return scalers.first?.value ?? .float64([])
    }

    /// Groups and channels from the object paths, in the order the objects first appeared.
    func assemble() throws(FormatError) -> TDMSFile {
        var file = TDMSFile()
        var groupIndex: [String: Int] = [:]
        func group(_ name: String) -> Int {
            if let i = groupIndex[name] { return i }
            file.groups.append(TDMSGroup(name: name))
            groupIndex[name] = file.groups.count - 1
            return file.groups.count - 1
        }
        for o in order {
            guard let parts = Self.components(o.path) else { continue }
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
                case DAQmxIndexHeader.rawDataType:
                    // Index mode: the scalers are empty arrays of their kinds, so `data` is one of its kind.
                    data = try Self.daqmxData(properties: o.properties, scalers: o.scalers, file: self.file, location: o.path)
                default: data = .float64(o.f64)
                }
                var channel = TDMSChannel(name: parts[1], properties: o.properties, data: data)
                channel.daqmxScalers = o.scalers
                if mapped != nil, o.type != TDMSType.string, o.type != nil {
                    // A DAQmx raw data channel has as many values as each of its scalers (`needsWholeRead`).
                    let count = o.scalerCounts.isEmpty ? o.count : o.scalerCounts.values.max() ?? 0
                    channel.valueIndex = TDMSValueIndex(count: count, extents: o.extents, scalers: o.scalerExtents)
                }
                file.groups[group(parts[0])].channels.append(channel)
            default: continue
            }
        }
        return file
    }

    /// The quoted names of an object path (`/'group'/'channel'`, quotes doubled inside a name); nil
    /// when the path is not one.
    static func components(_ path: String) -> [String]? {
        guard path.hasPrefix("/") else { return nil }
        var parts: [String] = [], current = "", inQuote = false
        var chars = Array(path.dropFirst())[...]
        while let c = chars.popFirst() {
            if inQuote {
                if c == "'" {
                    if chars.first == "'" {
                        current.append("'")
                        chars.removeFirst()
                    } else {
                        inQuote = false
                        parts.append(current)
                        current = ""
                    }
                } else {
                    current.append(c)
                }
            } else if c == "'" {
                inQuote = true
            } else if c != "/" {
                return nil
            }
        }
        return inQuote ? nil : parts
    }
}
