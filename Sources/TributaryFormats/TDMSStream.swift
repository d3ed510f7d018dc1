import Foundation

/// Values of one TDMS channel (or DAQmx scaler) in one chunk: `count` values of TDMS type `type`
/// from byte `offset`, `stride` bytes apart (the value size, an interleaved row's, or a DAQmx raw
/// buffer's width), in the segment's byte order; of a DAQmx digital line scaler only bit `bit`.
public struct TDMSValueExtent: Sendable, Equatable {
    var offset: Int
    var count: Int
    var stride: Int
    var type: UInt32
    var bigEndian: Bool
    var bit: Int? = nil
}

/// Where a channel's values are in the file (index mode, `TDMSFile.index`): read them with `TDMSFile.Values`.
public struct TDMSValueIndex: Sendable, Equatable {
    /// The channel's number of values.
    public var count: Int
    var extents: [TDMSValueExtent]
    /// A DAQmx raw data channel: where each scaler's values are, by scale id (`extents` is then empty).
    var scalers: [UInt32: [TDMSValueExtent]] = [:]
}

extension TDMSReader {
    /// Index mode: records `n` values of `type` at the source's offset (`stride` bytes apart) as
    /// `appendValues` would append them — the channel's type changes as it would — and skips them.
    static func indexValues(_ o: Object, _ type: UInt32, _ n: Int, _ d: inout FileReader, stride: Int) throws(FormatError) {
        if o.type == nil { o.type = type }
        if o.type != type, o.type != TDMSType.double { o.type = TDMSType.double }
        let kept = [TDMSType.double, TDMSType.doubleUnit, TDMSType.single, TDMSType.singleUnit, TDMSType.i16, TDMSType.i32]
        if !(o.type == type && kept.contains(type)) {
            // `appendValues`'s general path: every value through `readValue`, as float64.
            if o.type != TDMSType.double { o.type = TDMSType.double }
            if [TDMSType.extended, TDMSType.complexSingle, TDMSType.complexDouble].contains(type) {
                _ = try d.slice(TDMSType.size(type)!, "values of \(o.path)")
                throw d.fail("values of \(o.path): not numbers")
            }
        }
        let size = TDMSType.size(type)!
        // The values must be in the file, as reading them would have checked.
        try d.need(n == 0 ? 0 : (n - 1) * stride + size, "values of \(o.path)")
        o.extents.append(TDMSValueExtent(offset: d.position, count: n, stride: stride, type: type, bigEndian: d.bigEndian))
        o.count += n
        d.position += n * size
    }

    /// Index mode: an interleaved chunk of `n` rows, one value of each object per row.
    func indexInterleaved(_ dataObjects: [(Object, RawIndex)], _ n: Int, _ d: inout FileReader) throws(FormatError) {
        let row = dataObjects.reduce(0) { $0 + TDMSType.size($1.1.type)! }
        let start = d.position
        var at = start
        for (o, i) in dataObjects {
            var column = d
            column.position = at
            try Self.indexValues(o, i.type, n, &column, stride: row)
            at += TDMSType.size(i.type)!
        }
        d.position = start + n * row
    }

    /// Index mode: one DAQmx scaler's column of a raw buffer (rows of `width` bytes from byte
    /// `table`) as `appendScaler` would append it — the values of a channel of the scaler's type,
    /// whose type changes as it would, or the scaler values of DAQmx raw data, whose kind by scale
    /// id the object keeps as an empty array (`TDMSData.appending` of each column's kind).
    static func indexScaler(
        _ o: Object, _ s: TDMSDAQmxIndex.Scaler, at table: Int, rows: Int, width: Int, bigEndian: Bool, raw: Bool
    ) {
        let type = tdmsType(ofDAQmx: s.type)!
        let extent = TDMSValueExtent(offset: table + s.byteOffset, count: rows, stride: width, type: type, bigEndian: bigEndian, bit: s.bit)
        if !raw {
            _ = o.takeScalerType(type)
            o.extents.append(extent)
            o.count += rows
            return
        }
        let kind = scalerKind(ofDAQmx: s.type)
        o.scalers[s.scaleID] = o.scalers[s.scaleID].map { $0.appending(kind) } ?? kind
        o.scalerExtents[s.scaleID, default: []].append(extent)
        o.scalerCounts[s.scaleID, default: 0] += rows
        if o.type == nil { o.type = DAQmxIndexHeader.rawDataType }
    }

    /// An empty array of the kind `appendScaler` gives a scaler's values of DAQmx type `t`: int16 up
    /// to 16-bit integers but u16, int32 for u16 and i32, float32 for f32, float64 for the rest.
    static func scalerKind(ofDAQmx t: UInt32) -> TDMSData {
        switch t {
        case DAQmxType.u8, DAQmxType.i8, DAQmxType.i16: .int16([])
        case DAQmxType.u16, DAQmxType.i32: .int32([])
        case DAQmxType.f32: .float32([])
        default: .float64([])
        }
    }

    /// Index mode: whether a channel's DAQmx raw data cannot be read a window at a time, so that the
    /// file is read whole (`TDMSFile.index` gives nil). Two cases, which DAQmx does not write: a
    /// channel with scaler values and values of its own (other raw data before or after DAQmx raw
    /// data), which `read` keeps side by side, of unrelated lengths; and a channel whose scalers
    /// have different lengths (scalers in raw buffers of different row counts), where how many
    /// values its scales give depends on which scalers they combine.
    var needsWholeRead: Bool {
        objects.values.contains { o in
            !o.scalers.isEmpty && (o.type != DAQmxIndexHeader.rawDataType || Set(o.scalerCounts.values).count > 1)
        }
    }
}

extension TDMSFile {
    /// Reads a TDMS file's segments without reading its numeric values into memory: metadata,
    /// properties and the places of every channel's values (`TDMSChannel.valueIndex`; `data` is then
    /// an empty array of the channel's type, `daqmxScalers` empty arrays of its scalers' types,
    /// strings are checked but not kept), DAQmx raw data included. The file is mapped and its pages
    /// given back as the walk passes them. nil in two cases of DAQmx raw data DAQmx does not write
    /// (`TDMSReader.needsWholeRead`), which only `read` takes.
    public static func index(path: String) throws(FormatError) -> TDMSFile? {
        let mapped = try MappedFile(path: path)
        var reader = TDMSReader(bytes: mapped.bytes, file: path)
        reader.mapped = mapped
        try reader.readSegments()
        if reader.needsWholeRead { return nil }
        return try reader.assemble()
    }

    /// The values of a group's indexed channels (`TDMSFile.index`), read in order a window at a time,
    /// each channel as `read` gives it (int16, int32, float32 kept, the rest float64; a DAQmx raw
    /// data channel's scaler values and its values scaled from them); the file's pages behind every
    /// channel's reading are given back.
    public final class Values {
        /// One array of values in the file: where it is, the kind it is read as, how far the reading is.
        struct Column {
            let extents: [TDMSValueExtent]
            let kind: TDMSData
            var extent = 0, value = 0
        }

        /// A channel (its `data` and `daqmxScalers` replaced by each window's), and its values or,
        /// for DAQmx raw data, its scalers' values by scale id.
        struct Channel {
            var channel: TDMSChannel
            var values: Column
            var scalers: [(id: UInt32, column: Column)]
        }

        let mapped: MappedFile
        private var channels: [Channel] = []

        /// Maps `path` to read `channels` (channels of `TDMSFile.index(path:)`).
        /// - Throws: `FormatError` when the file cannot be mapped or a channel was not indexed.
        public init(path: String, channels: [TDMSChannel]) throws(FormatError) {
            mapped = try MappedFile(path: path)
            for var c in channels {
                guard let index = c.valueIndex else {
                    throw FormatError(file: path, location: c.name, reason: "the channel's values were not indexed")
                }
                c.valueIndex = nil
                let scalers = index.scalers.keys.sorted().map { id in
                    (id: id, column: Column(extents: index.scalers[id] ?? [], kind: c.daqmxScalers[id] ?? .float64([])))
                }
                self.channels.append(Channel(channel: c, values: Column(extents: index.extents, kind: c.data), scalers: scalers))
            }
        }

        /// The next `count` values of every channel (fewer at the end): the channels with their `data`
        /// (and a DAQmx raw data channel's `daqmxScalers`) as `read` gives those values.
        /// - Throws: `FormatError` when the file no longer holds what the index found, or a DAQmx
        ///   channel's scales cannot be applied.
        public func next(_ count: Int) throws(FormatError) -> [TDMSChannel] {
            var out: [TDMSChannel] = []
            var lowest = Int.max
            for k in channels.indices {
                var c = channels[k].channel
                if channels[k].scalers.isEmpty {
                    c.data = try read(&channels[k].values, count, &lowest)
                } else {
                    for j in channels[k].scalers.indices {
                        c.daqmxScalers[channels[k].scalers[j].id] = try read(&channels[k].scalers[j].column, count, &lowest)
                    }
                    c.data = try TDMSReader.daqmxData(
                        properties: c.properties, scalers: c.daqmxScalers, file: mapped.path, location: "channel '\(c.name)'")
                }
                out.append(c)
            }
            if lowest < Int.max { mapped.release(before: lowest) }
            return out
        }

        /// A column's next values as its kind; `lowest` lowered to the byte offset it has reached.
        private func read(_ c: inout Column, _ count: Int, _ lowest: inout Int) throws(FormatError) -> TDMSData {
            switch c.kind {
            case .float32:
                return .float32(try values(&c, count, &lowest) { x, r, at in Float(bitPattern: Self.bits(UInt32.self, r, at, x.bit)) })
            case .int16: return .int16(try values(&c, count, &lowest) { x, r, at in Self.int16(x, r, at) })
            case .int32: return .int32(try values(&c, count, &lowest) { x, r, at in Self.int32(x, r, at) })
            default: return .float64(try values(&c, count, &lowest) { x, r, at in Self.double(x, r, at) })
            }
        }

        private func values<T>(
            _ c: inout Column, _ count: Int, _ lowest: inout Int, _ value: (TDMSValueExtent, FileReader, Int) -> T
        ) throws(FormatError) -> [T] {
            let bytes = mapped.bytes
            var out: [T] = []
            out.reserveCapacity(max(0, min(count, 1 << 16)))
            var left = count, position = c.extent < c.extents.count ? c.extents[c.extent].offset : bytes.count
            while left > 0, c.extent < c.extents.count {
                let x = c.extents[c.extent], take = min(left, x.count - c.value)
                // Within the file the index walked (no overflow); the file now mapped may be shorter.
                guard x.offset + (x.count - 1) * x.stride + TDMSType.size(x.type)! <= bytes.count else {
                    throw FormatError(
                        file: mapped.path, location: "byte offset \(x.offset)", reason: "the file changed since it was indexed")
                }
                let r = FileReader(bytes, bigEndian: x.bigEndian)
                for j in c.value..<(c.value + take) { out.append(value(x, r, x.offset + j * x.stride)) }
                c.value += take
                left -= take
                position = x.offset + c.value * x.stride
                if c.value == x.count { (c.extent, c.value) = (c.extent + 1, 0) }
            }
            lowest = min(lowest, position)
            return out
        }

        /// The value at `at` (a digital line scaler's bit `bit` of it, 0 or 1, when there is one).
        @inline(__always) private static func bits<T: FixedWidthInteger>(_: T.Type, _ r: FileReader, _ at: Int, _ bit: Int?) -> T {
            let x = r.load(T.self, at: at)
            guard let bit else { return x }
            return (x >> bit) & 1
        }

        /// A value kept as int16: i16, or a DAQmx u8 / i8 scaler's.
        private static func int16(_ x: TDMSValueExtent, _ r: FileReader, _ at: Int) -> Int16 {
            switch x.type {
            case TDMSType.u8: Int16(bits(UInt8.self, r, at, x.bit))
            case TDMSType.i8: Int16(bits(Int8.self, r, at, x.bit))
            default: bits(Int16.self, r, at, x.bit)
            }
        }

        /// A value kept as int32: i32, or a DAQmx u16 scaler's.
        private static func int32(_ x: TDMSValueExtent, _ r: FileReader, _ at: Int) -> Int32 {
            x.type == TDMSType.u16 ? Int32(bits(UInt16.self, r, at, x.bit)) : bits(Int32.self, r, at, x.bit)
        }

        /// A value as float64, as `readValue(…).number` (or a DAQmx scaler's `TDMSData.doubles`) gives it.
        private static func double(_ x: TDMSValueExtent, _ r: FileReader, _ at: Int) -> Double {
            let bit = x.bit
            switch x.type {
            case TDMSType.i8: return Double(bits(Int8.self, r, at, bit))
            case TDMSType.i16: return Double(bits(Int16.self, r, at, bit))
            case TDMSType.i32: return Double(bits(Int32.self, r, at, bit))
            case TDMSType.i64: return Double(bits(Int64.self, r, at, bit))
            case TDMSType.u8: return Double(bits(UInt8.self, r, at, bit))
            case TDMSType.u16: return Double(bits(UInt16.self, r, at, bit))
            case TDMSType.u32: return Double(bits(UInt32.self, r, at, bit))
            case TDMSType.u64: return Double(bits(UInt64.self, r, at, bit))
            case TDMSType.single, TDMSType.singleUnit: return Double(Float(bitPattern: bits(UInt32.self, r, at, bit)))
            case TDMSType.bool: return r.load(UInt8.self, at: at) != 0 ? 1 : 0
            case TDMSType.timestamp:
                // Little-endian: fraction then seconds; big-endian files store the seconds first.
                let first = r.load(UInt64.self, at: at), second = r.load(UInt64.self, at: at + 8)
                let t =
                    r.bigEndian
                    ? TDMSTimestamp(seconds: Int64(bitPattern: first), fraction: second)
                    : TDMSTimestamp(seconds: Int64(bitPattern: second), fraction: first)
                return t.unixSeconds
            default: return Double(bitPattern: bits(UInt64.self, r, at, bit))
            }
        }
    }
}
