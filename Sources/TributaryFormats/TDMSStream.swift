import Foundation

/// Values of one TDMS channel in one chunk: `count` values of TDMS type `type` from byte `offset`,
/// `stride` bytes apart (the value size, or an interleaved row's), in the segment's byte order.
public struct TDMSValueExtent: Sendable, Equatable {
    var offset: Int
    var count: Int
    var stride: Int
    var type: UInt32
    var bigEndian: Bool
}

/// Where a channel's values are in the file (index mode, `TDMSFile.index`): read them with `TDMSFile.Values`.
public struct TDMSValueIndex: Sendable, Equatable {
    /// The channel's number of values.
    public var count: Int
    var extents: [TDMSValueExtent]
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
}

extension TDMSFile {
    /// Reads a TDMS file's segments without reading its numeric values into memory: metadata,
    /// properties and the places of every channel's values (`TDMSChannel.valueIndex`; `data` is then
    /// an empty array of the channel's type, strings are checked but not kept). The file is mapped
    /// and its pages given back as the walk passes them. nil when the file holds DAQmx raw data,
    /// which only `read` takes.
    public static func index(path: String) throws(FormatError) -> TDMSFile? {
        let mapped = try MappedFile(path: path)
        var reader = TDMSReader(bytes: mapped.bytes, file: path)
        reader.mapped = mapped
        try reader.readSegments()
        if reader.needsWholeRead { return nil }
        return try reader.assemble()
    }

    /// The values of a group's indexed channels (`TDMSFile.index`), read in order a window at a time,
    /// each channel as `read` gives it (int16, int32, float32 kept, the rest float64); the file's pages
    /// behind every channel's reading are given back.
    public final class Values {
        let mapped: MappedFile
        let channels: [(index: TDMSValueIndex, kind: TDMSData)]
        private var cursors: [(extent: Int, value: Int)]

        /// Maps `path` to read `channels` (channels of `TDMSFile.index(path:)`).
        /// - Throws: `FormatError` when the file cannot be mapped or a channel was not indexed.
        public init(path: String, channels: [TDMSChannel]) throws(FormatError) {
            mapped = try MappedFile(path: path)
            var list: [(TDMSValueIndex, TDMSData)] = []
            for c in channels {
                guard let index = c.valueIndex else {
                    throw FormatError(file: path, location: c.name, reason: "the channel's values were not indexed")
                }
                list.append((index, c.data))
            }
            self.channels = list
            cursors = Array(repeating: (0, 0), count: list.count)
        }

        /// The next `count` values of every channel (fewer at the end), one array per channel.
        public func next(_ count: Int) -> [TDMSData] {
            var out: [TDMSData] = []
            var lowest = Int.max
            for k in channels.indices {
                let (values, position) = read(k, count)
                out.append(values)
                lowest = min(lowest, position)
            }
            if lowest < Int.max { mapped.release(before: lowest) }
            return out
        }

        /// Channel `k`'s next values and the byte offset it has reached.
        private func read(_ k: Int, _ count: Int) -> (TDMSData, Int) {
            let extents = channels[k].index.extents
            var (e, v) = cursors[k]
            var doubles: [Double] = [], floats: [Float] = [], shorts: [Int16] = [], ints: [Int32] = []
            let bytes = mapped.bytes
            var left = count, position = e < extents.count ? extents[e].offset : bytes.count
            while left > 0, e < extents.count {
                let x = extents[e], take = min(left, x.count - v)
                let r = FileReader(bytes, bigEndian: x.bigEndian)
                for j in v..<(v + take) {
                    let at = x.offset + j * x.stride
                    switch channels[k].kind {
                    case .float32: floats.append(r.f32(at: at))
                    case .int16: shorts.append(r.i16(at: at))
                    case .int32: ints.append(r.i32(at: at))
                    default: doubles.append(Self.double(x.type, r, at))
                    }
                }
                v += take
                left -= take
                position = x.offset + v * x.stride
                if v == x.count { (e, v) = (e + 1, 0) }
            }
            cursors[k] = (e, v)
            switch channels[k].kind {
            case .float32: return (.float32(floats), position)
            case .int16: return (.int16(shorts), position)
            case .int32: return (.int32(ints), position)
            default: return (.float64(doubles), position)
            }
        }

        /// A value of TDMS type `type` as float64, as `readValue(…).number` gives it.
        private static func double(_ type: UInt32, _ r: FileReader, _ at: Int) -> Double {
            switch type {
            case TDMSType.i8: return Double(Int8(bitPattern: r.load(UInt8.self, at: at)))
            case TDMSType.i16: return Double(r.load(Int16.self, at: at))
            case TDMSType.i32: return Double(r.load(Int32.self, at: at))
            case TDMSType.i64: return Double(r.load(Int64.self, at: at))
            case TDMSType.u8: return Double(r.load(UInt8.self, at: at))
            case TDMSType.u16: return Double(r.load(UInt16.self, at: at))
            case TDMSType.u32: return Double(r.load(UInt32.self, at: at))
            case TDMSType.u64: return Double(r.load(UInt64.self, at: at))
            case TDMSType.single, TDMSType.singleUnit: return Double(Float(bitPattern: r.load(UInt32.self, at: at)))
            case TDMSType.bool: return r.load(UInt8.self, at: at) != 0 ? 1 : 0
            case TDMSType.timestamp:
                // Little-endian: fraction then seconds; big-endian files store the seconds first.
                let first = r.load(UInt64.self, at: at), second = r.load(UInt64.self, at: at + 8)
                let t =
                    r.bigEndian
                    ? TDMSTimestamp(seconds: Int64(bitPattern: first), fraction: second)
                    : TDMSTimestamp(seconds: Int64(bitPattern: second), fraction: first)
                return t.unixSeconds
            default: return Double(bitPattern: r.load(UInt64.self, at: at))
            }
        }
    }
}
