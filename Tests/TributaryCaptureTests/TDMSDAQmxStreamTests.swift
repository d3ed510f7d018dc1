import Foundation
import Testing
import TributaryFormats
import TributaryWire

@testable import TributaryInterchange

/// Bytes of TDMS segments with DAQmx raw data, written from NI's description "TDMS File Format
/// Internal Structure" as Tests/Interop/test_tdms_daqmx.py writes them, in either byte order.
private struct DAQmxBytes {
    static let meta: UInt32 = 1 << 1, newList: UInt32 = 1 << 2, raw: UInt32 = 1 << 3, bigEndian: UInt32 = 1 << 6, daqmx: UInt32 = 1 << 7
    static let formatChanging: UInt32 = 0x1269, digitalLine: UInt32 = 0x126A, rawType: UInt32 = 0xFFFF_FFFF
    /// DAQmx type codes (not the TDMS ones).
    static let u8: UInt32 = 0, i8: UInt32 = 1, u16: UInt32 = 2, i16: UInt32 = 3, i32: UInt32 = 5, f32: UInt32 = 8

    /// A DAQmx scaler: type, raw buffer, byte offset (a digital line's: bit offset), scale id.
    struct Scaler {
        var type: UInt32, buffer: UInt32, offset: UInt32, id: UInt32
    }

    /// An object of a segment's metadata: its path, raw data index (nil: none) and properties.
    struct Object {
        var path: String
        var index: [UInt8]?
        var properties: [(String, TDMSValue)] = []
    }

    let big: Bool
    var bytes: [UInt8] = []

    func put<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: big ? v.bigEndian : v.littleEndian) { Array($0) } }
    func put(_ s: String) -> [UInt8] { put(UInt32(s.utf8.count)) + Array(s.utf8) }

    /// The raw data index of a DAQmx channel (`type`: raw data, or the TDMS type of its one scaler).
    func daqmx(_ count: UInt64, _ scalers: [Scaler], widths: [UInt32], header: UInt32 = formatChanging, type: UInt32 = rawType)
        -> [UInt8]
    {
        var out = put(header) + put(type) + put(UInt32(1)) + put(count) + put(UInt32(scalers.count))
        for s in scalers {
            out += put(s.type) + put(s.buffer) + put(s.offset)
            out += header == Self.formatChanging ? put(UInt32(0)) : [0]
            out += put(s.id)
        }
        return out + put(UInt32(widths.count)) + widths.flatMap { put($0) }
    }

    /// The raw data index of plain values (20 bytes: TDMS type, dimension 1, count).
    func plain(_ type: UInt32, _ count: UInt64) -> [UInt8] { put(UInt32(20)) + put(type) + put(UInt32(1)) + put(count) }

    /// A raw buffer of `rows` rows of `width` bytes: each column a byte offset and its value's bytes in a row.
    func table(width: Int, rows: Int, _ columns: [(offset: Int, value: (Int) -> [UInt8])]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: width * rows)
        for r in 0..<rows {
            for c in columns {
                for (k, b) in c.value(r).enumerated() { out[r * width + c.offset + k] = b }
            }
        }
        return out
    }

    /// Appends a segment: `objects` (nil: no metadata, the previous list again) and the raw data.
    mutating func segment(_ objects: [Object]?, _ raw: [UInt8], toc: UInt32 = meta | newList | raw | daqmx) {
        var m: [UInt8] = []
        if let objects {
            m += put(UInt32(objects.count))
            for o in objects {
                m += put(o.path) + (o.index ?? put(UInt32.max)) + put(UInt32(o.properties.count))
                for (name, value) in o.properties {
                    m += put(name)
                    switch value {
                    case .string(let s): m += put(UInt32(0x20)) + put(s)
                    case .double(let d): m += put(UInt32(10)) + put(d.bitPattern)
                    case .uint32(let u): m += put(UInt32(7)) + put(u)
                    default: Issue.record("property \(name) not written")
                    }
                }
            }
        }
        let flags = (objects == nil ? toc & ~(Self.meta | Self.newList) : toc) | (big ? Self.bigEndian : 0)
        bytes += Array("TDSm".utf8) + withUnsafeBytes(of: flags.littleEndian) { Array($0) }
        bytes += put(UInt32(4713)) + put(UInt64(m.count + raw.count)) + put(UInt64(m.count))
        bytes += m + raw
    }
}

/// DAQmx raw data TDMS files are indexed (`TDMSFile.index`) and read a window at a time
/// (`TDMSFile.Values`): every window of every channel, in uneven sizes, gives together what
/// `TDMSFile.read` gives — its values, its scaler values — and the import records the same frames.
@Suite struct TDMSDAQmxStreamTests {
    let path = NSTemporaryDirectory() + "tributary-daqmx-stream-\(UUID().uuidString).tdms"

    /// One layout of the card's raw buffers: rows per chunk and widths; buffer 0 holds `a` (i32 at
    /// 0), `own` (`own`'s DAQmx type at 4; the channel's TDMS type `ownType`), `sum`'s i8 and
    /// `plain`'s u8; buffer 1 `b` (`b`'s DAQmx type at 0), the bytes of `line` and `bits` and `sum`'s
    /// u16. Offsets are bytes in a row.
    struct CardLayout {
        var rows: UInt64, widths: [UInt32], b: UInt32, own: UInt32, ownType: UInt32
        var sumI8: UInt32, plain: UInt32, line: UInt32, bits: UInt32, sumU16: UInt32
    }

    /// The card's channels in a layout (`scales`: properties by channel name).
    fileprivate func cardObjects(_ e: DAQmxBytes, _ l: CardLayout, scales: [String: [(String, TDMSValue)]]) -> [DAQmxBytes.Object] {
        typealias S = DAQmxBytes.Scaler
        let channels: [(String, [S], UInt32, UInt32)] = [
            ("a", [S(type: DAQmxBytes.i32, buffer: 0, offset: 0, id: 0)], DAQmxBytes.formatChanging, DAQmxBytes.rawType),
            ("b", [S(type: l.b, buffer: 1, offset: 0, id: 0)], DAQmxBytes.formatChanging, DAQmxBytes.rawType),
            ("line", [S(type: DAQmxBytes.u8, buffer: 1, offset: l.line * 8 + 5, id: 0)], DAQmxBytes.digitalLine, 5),
            ("own", [S(type: l.own, buffer: 0, offset: 4, id: 0)], DAQmxBytes.formatChanging, l.ownType),
            (
                "sum",
                [S(type: DAQmxBytes.u16, buffer: 1, offset: l.sumU16, id: 0), S(type: DAQmxBytes.i8, buffer: 0, offset: l.sumI8, id: 1)],
                DAQmxBytes.formatChanging, DAQmxBytes.rawType
            ),
            ("plain", [S(type: DAQmxBytes.u8, buffer: 0, offset: l.plain, id: 0)], DAQmxBytes.formatChanging, DAQmxBytes.rawType),
            ("bits", [S(type: DAQmxBytes.u8, buffer: 1, offset: l.bits * 8 + 2, id: 0)], DAQmxBytes.digitalLine, DAQmxBytes.rawType),
        ]
        return channels.map { name, scalers, header, type in
            DAQmxBytes.Object(
                path: "/'card'/'\(name)'", index: e.daqmx(l.rows, scalers, widths: l.widths, header: header, type: type),
                properties: scales[name] ?? [])
        }
    }

    /// One chunk of the card's raw data in a layout: every column's values from `salt`.
    fileprivate func cardChunk(_ e: DAQmxBytes, _ l: CardLayout, salt: Int) -> [UInt8] {
        func v(_ r: Int, _ k: Int) -> Int { (r &* 2_654_435_761 &+ (salt + k) &* 40_503) & 0xFFFF_FFFF }
        func value(_ type: UInt32, _ r: Int, _ k: Int) -> [UInt8] {
            type == DAQmxBytes.f32 ? e.put((Float(v(r, k) % 2000) * 0.125 - 50).bitPattern) : e.put(Int16(truncatingIfNeeded: v(r, k)))
        }
        func byte(_ r: Int, _ k: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v(r, k))] }
        let rows = Int(l.rows)
        let zero: [(offset: Int, value: (Int) -> [UInt8])] = [
            (0, { e.put(Int32(truncatingIfNeeded: v($0, 0))) }), (4, { value(l.own, $0, 1) }), (Int(l.sumI8), { byte($0, 2) }),
            (Int(l.plain), { byte($0, 3) }),
        ]
        let one: [(offset: Int, value: (Int) -> [UInt8])] = [
            (0, { value(l.b, $0, 4) }), (Int(l.line), { byte($0, 5) }), (Int(l.bits), { byte($0, 6) }),
            (Int(l.sumU16), { e.put(UInt16(truncatingIfNeeded: v($0, 7))) }),
        ]
        return e.table(width: Int(l.widths[0]), rows: rows, zero) + e.table(width: Int(l.widths[1]), rows: rows, one)
    }

    /// A card's channels over five segments: `a` (i32 scaler, polynomial), `b` (i16 then f32 scaler,
    /// linear), `line` (a u8 channel: bit 5 of a byte, a digital line scaler), `own` (an i16
    /// channel of its i16 scaler, then f32, then float64 plain values, then i16 again), `sum` (u16 +
    /// i8 scalers added), `plain` (a u8 scaler, no scales), `bits` (raw data of a digital line, bit
    /// 2); two raw buffers, two chunks in the first segment, a segment repeating the object list, a
    /// segment of plain raw data, index reuse (raw data index 0).
    func cardFile(big: Bool) -> [UInt8] {
        let e = DAQmxBytes(big: big)
        var f = e
        let poly: [(String, TDMSValue)] = [
            ("NI_Scaling_Status", .string("unscaled")), ("NI_Number_Of_Scales", .uint32(2)),
            ("NI_Scale[1]_Scale_Type", .string("Polynomial")),
            ("NI_Scale[1]_Polynomial_Coefficients_Size", .uint32(3)), ("NI_Scale[1]_Polynomial_Coefficients[0]", .double(-0.5)),
            ("NI_Scale[1]_Polynomial_Coefficients[1]", .double(1.1920929e-7)), ("NI_Scale[1]_Polynomial_Coefficients[2]", .double(1e-15)),
            ("NI_Scale[1]_Polynomial_Input_Source", .uint32(0)), ("wf_increment", .double(1 / 512.0)),
        ]
        let linear: [(String, TDMSValue)] = [
            ("NI_Scaling_Status", .string("unscaled")), ("NI_Number_Of_Scales", .uint32(2)), ("NI_Scale[1]_Scale_Type", .string("Linear")),
            ("NI_Scale[1]_Linear_Slope", .double(1e-3)), ("NI_Scale[1]_Linear_Y_Intercept", .double(-1)),
            ("NI_Scale[1]_Linear_Input_Source", .uint32(0)),
        ]
        let add: [(String, TDMSValue)] = [
            ("NI_Number_Of_Scales", .uint32(3)), ("NI_Scale[2]_Scale_Type", .string("Add")),
            ("NI_Scale[2]_Add_Left_Operand_Input_Source", .uint32(0)), ("NI_Scale[2]_Add_Right_Operand_Input_Source", .uint32(1)),
        ]
        // Segments 1 (two chunks) and 2 (the list again): rows of 8 and 6 bytes, b and own i16.
        let one = CardLayout(
            rows: 50, widths: [8, 6], b: DAQmxBytes.i16, own: DAQmxBytes.i16, ownType: 2, sumI8: 6, plain: 7, line: 2, bits: 3, sumU16: 4)
        let group = DAQmxBytes.Object(path: "/'card'", index: nil, properties: [("device_name", .string("dev"))])
        f.segment(
            [group] + cardObjects(e, one, scales: ["a": poly, "b": linear, "sum": add]),
            cardChunk(e, one, salt: 10) + cardChunk(e, one, salt: 20))
        f.segment(nil, cardChunk(e, one, salt: 30))
        // Segment 3: new widths and types: rows of 10 and 8 bytes, b and own f32.
        let three = CardLayout(
            rows: 30, widths: [10, 8], b: DAQmxBytes.f32, own: DAQmxBytes.f32, ownType: 9, sumI8: 8, plain: 9, line: 4, bits: 5, sumU16: 6)
        let third = cardObjects(e, three, scales: [:])
        f.segment(third, cardChunk(e, three, salt: 40))
        // Segment 4: plain float64 values of `own` alone (no DAQmx raw data).
        f.segment(
            [.init(path: "/'card'/'own'", index: e.plain(10, 20))], (0..<20).flatMap { e.put((Double($0) * 0.75 - 3).bitPattern) },
            toc: DAQmxBytes.meta | DAQmxBytes.newList | DAQmxBytes.raw)
        // Segment 5: the others reuse their segment-3 indexes (raw data index 0); `own` is i16 DAQmx again.
        var fifth = third.filter { $0.path != "/'card'/'own'" }.map { DAQmxBytes.Object(path: $0.path, index: e.put(UInt32(0))) }
        var own = three
        own.own = DAQmxBytes.i16
        own.ownType = 2
        fifth += cardObjects(e, own, scales: [:]).filter { $0.path == "/'card'/'own'" }
        f.segment(fifth, cardChunk(e, three, salt: 50))
        return f.bytes
    }

    func write(_ bytes: [UInt8]) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

    /// The channels read a window at a time, window sizes taken from `sizes` in turn, joined.
    func windows(_ channels: [TDMSChannel], sizes: [Int]) throws -> [TDMSChannel] {
        let values = try TDMSFile.Values(path: path, channels: channels)
        var got = channels.map { c in
            var c = c
            (c.data, c.daqmxScalers, c.valueIndex) = (.float64([]), [:], nil)
            return c
        }
        var parts = channels.map { _ in [TDMSData]() }, scalers = channels.map { _ in [UInt32: [TDMSData]]() }
        for k in 0... {
            let window = try values.next(sizes[k % sizes.count])
            if window.allSatisfy({ $0.data.count == 0 }) { break }
            for (j, c) in window.enumerated() {
                #expect(c.valueIndex == nil && c.name == channels[j].name && c.properties == channels[j].properties)
                parts[j].append(c.data)
                for (id, v) in c.daqmxScalers { scalers[j][id, default: []].append(v) }
            }
        }
        for j in got.indices {
            got[j].data = joined(parts[j], like: channels[j].data)
            got[j].daqmxScalers = scalers[j].mapValues { joined($0, like: $0.first ?? .float64([])) }
        }
        return got
    }

    /// Windows of one kind joined into one array of that kind.
    func joined(_ parts: [TDMSData], like kind: TDMSData) -> TDMSData {
        var i16: [Int16] = [], i32: [Int32] = [], f32: [Float] = [], f64: [Double] = []
        for part in parts {
            switch part {
            case .int16(let v): i16 += v
            case .int32(let v): i32 += v
            case .float32(let v): f32 += v
            default: f64 += part.doubles ?? []
            }
        }
        switch kind {
        case .int16: return .int16(i16)
        case .int32: return .int32(i32)
        case .float32: return .float32(f32)
        default: return .float64(f64)
        }
    }

    /// The indexed file's channels, read in windows of each of `sizes`, equal `TDMSFile.read`'s.
    func expectWindowsEqualTheWholeRead(sizes: [[Int]]) throws {
        let whole = try TDMSFile.read(path: path)
        let index = try #require(try TDMSFile.index(path: path))
        #expect(index.groups.map(\.name) == whole.groups.map(\.name))
        for (g, group) in index.groups.enumerated() {
            let channels = group.channels
            #expect(channels.allSatisfy { $0.valueIndex != nil && $0.data.count == 0 })
            #expect(channels.map(\.valueCount) == whole.groups[g].channels.map(\.data.count))
            for s in sizes {
                let got = try windows(channels, sizes: s)
                for (c, want) in zip(got, whole.groups[g].channels) {
                    #expect(c.data == want.data, "\(c.name) in windows of \(s)")
                    #expect(c.daqmxScalers == want.daqmxScalers, "\(c.name)'s scalers in windows of \(s)")
                }
            }
        }
    }

    @Test func daqmxCardWindowsEqualTheWholeReadInEitherByteOrder() throws {
        defer { unlink(path) }
        for big in [false, true] {
            try write(cardFile(big: big))
            let whole = try TDMSFile.read(path: path).groups[0].channels
            // The kinds `read` gives: a polynomial (float64), line u8 (float64), own i16 → f32 → float64,
            // plain u8 scaler values (int16, unscaled), bits (int16 of 0 / 1); b's scaler i16 then f32 (float64).
            #expect(whole.map(\.name) == ["a", "b", "line", "own", "sum", "plain", "bits"])
            #expect(whole.map(\.data.count) == [210, 210, 210, 230, 210, 210, 210])
            guard case .int16(let bits) = whole[6].data, case .int16 = whole[5].data, case .float64 = whole[3].data,
                case .float64? = whole[1].daqmxScalers[0], case .int32? = whole[0].daqmxScalers[0]
            else {
                Issue.record("unexpected kinds: \(whole.map(\.data))")
                return
            }
            #expect(Set(bits) == [0, 1] && Set(whole[2].data.doubles ?? []) == [0, 1])
            try expectWindowsEqualTheWholeRead(sizes: [[1], [7, 64, 3], [49, 51], [210, 1], [4096]])
        }
    }

    /// The import of the indexed file records the frames an import of the file read whole records.
    @Test func daqmxImportEqualsTheImportOfTheWholeRead() throws {
        defer { unlink(path) }
        var f = DAQmxBytes(big: false)
        let scaler = DAQmxBytes.Scaler(type: DAQmxBytes.i16, buffer: 0, offset: 0, id: 0)
        let scale: [(String, TDMSValue)] = [
            ("NI_Number_Of_Scales", .uint32(2)), ("NI_Scale[1]_Scale_Type", .string("Linear")), ("NI_Scale[1]_Linear_Slope", .double(0.25)),
            ("NI_Scale[1]_Linear_Y_Intercept", .double(1)), ("NI_Scale[1]_Linear_Input_Source", .uint32(0)),
            ("wf_increment", .double(0.001)),
        ]
        let objects: [DAQmxBytes.Object] = [
            .init(path: "/'g'/'x'", index: f.daqmx(5000, [scaler], widths: [4]), properties: scale),
            .init(
                path: "/'g'/'y'", index: f.daqmx(5000, [DAQmxBytes.Scaler(type: DAQmxBytes.i16, buffer: 0, offset: 2, id: 0)], widths: [4]),
                properties: scale),
        ]
        let raw = f.table(width: 4, rows: 5000, [(0, { f.put(Int16($0 % 3000 - 1500)) }), (2, { f.put(Int16(-$0 % 700)) })])
        f.segment(objects, raw)
        f.segment(nil, raw)
        try write(f.bytes)
        let indexed = try FormatImport.read(path: path)
        let whole = try FormatImport.sources(tdms: try TDMSFile.read(path: path), file: path)
        #expect(indexed.count == 1 && whole.count == 1 && indexed[0].sampleCount == 10_000)
        // Read a window at a time, not from memory.
        #expect(!(try indexed[0].samples.open() is MemorySampleReader))
        var frames: [[[UInt8]]] = [[], []]
        for (k, source) in [indexed[0], whole[0]].enumerated() {
            try FormatImport.forEachFrame(source, samplesPerFrame: 3000) { frames[k].append($0.encodedBytes) }
        }
        #expect(frames[0].count == 5 && frames[0] == frames[1])
        var formats: [SampleFormat] = []
        try FormatImport.forEachFrame(indexed[0]) { frame in
            if frame.header.kind == .analog { formats.append(try frame.analog().format) }
        }
        #expect(formats == [.int16, .int16, .int16])
    }

    /// Two cases DAQmx does not write are read whole (`TDMSFile.index` gives nil): a channel with its
    /// own values and scaler values, and a channel whose scalers have different lengths.
    @Test func daqmxCasesThatCannotBeIndexedAreReadWhole() throws {
        defer { unlink(path) }
        var f = DAQmxBytes(big: false)
        f.segment(
            [.init(path: "/'g'/'x'", index: f.plain(2, 4))], (0..<4).flatMap { f.put(Int16($0)) }, toc: DAQmxBytes.meta | DAQmxBytes.raw)
        f.segment(
            [.init(path: "/'g'/'x'", index: f.daqmx(4, [.init(type: DAQmxBytes.i16, buffer: 0, offset: 0, id: 0)], widths: [2]))],
            [UInt8](repeating: 1, count: 8))
        try write(f.bytes)
        #expect(try TDMSFile.index(path: path) == nil)
        #expect(try TDMSFile.read(path: path).groups[0].channels[0].data == .int16([0, 1, 2, 3]))

        var g = DAQmxBytes(big: false)
        let widths: [UInt32] = [2, 2]
        let only: [(String, TDMSValue)] = [
            ("NI_Number_Of_Scales", .uint32(3)), ("NI_Scale[2]_Scale_Type", .string("Linear")), ("NI_Scale[2]_Linear_Slope", .double(2)),
            ("NI_Scale[2]_Linear_Y_Intercept", .double(0)), ("NI_Scale[2]_Linear_Input_Source", .uint32(0)),
        ]
        // y's scaler 1 is in buffer 1, which z makes 6 rows long: y's scalers have 3 and 6 values.
        g.segment(
            [
                .init(
                    path: "/'g'/'y'",
                    index: g.daqmx(
                        3,
                        [
                            .init(type: DAQmxBytes.i16, buffer: 0, offset: 0, id: 0),
                            .init(type: DAQmxBytes.i16, buffer: 1, offset: 0, id: 1),
                        ], widths: widths),
                    properties: only),
                .init(path: "/'g'/'z'", index: g.daqmx(6, [.init(type: DAQmxBytes.i16, buffer: 1, offset: 0, id: 0)], widths: widths)),
            ], (0..<9).flatMap { g.put(Int16($0)) })
        try write(g.bytes)
        #expect(try TDMSFile.index(path: path) == nil)
        let y = try TDMSFile.read(path: path).groups[0].channels[0]
        #expect(y.data == .float64([0, 2, 4]) && y.daqmxScalers[1] == .int16([3, 4, 5, 6, 7, 8]))
    }

    /// Crafted DAQmx raw data indexes give the error `read` gives, never a trap; a truncated
    /// segment is indexed as far as whole chunks go, as `read` reads it.
    @Test func craftedDAQmxIndexesFailAsTheWholeReadFails() throws {
        defer { unlink(path) }
        let scaler = DAQmxBytes.Scaler(type: DAQmxBytes.i16, buffer: 0, offset: 0, id: 0)
        var huge = DAQmxBytes(big: false)
        // 2^36 rows in each of 200 buffers of 2^20 bytes: a chunk of more than Int.max bytes.
        let many = (0..<200).map { DAQmxBytes.Scaler(type: DAQmxBytes.i16, buffer: UInt32($0), offset: 0, id: 0) }
        huge.segment([.init(path: "/'g'/'c'", index: huge.daqmx(1 << 36, many, widths: [UInt32](repeating: 1 << 20, count: 200)))], [0, 0])
        var beyond = DAQmxBytes(big: true)
        beyond.segment(
            [.init(path: "/'g'/'c'", index: beyond.daqmx(4, [.init(type: DAQmxBytes.i32, buffer: 0, offset: 1, id: 0)], widths: [4]))], [])
        for (bytes, message) in [(huge.bytes, "more than"), (beyond.bytes, "pass the row's 4 bytes")] {
            try write(bytes)
            let reads: [() throws -> Void] = [{ _ = try TDMSFile.index(path: self.path) }, { _ = try TDMSFile.read(path: self.path) }]
            for read in reads {
                let error = #expect(throws: FormatError.self) { try read() }
                #expect(error.map { "\($0)".contains(message) } == true, "\(String(describing: error))")
            }
        }
        var cut = DAQmxBytes(big: false)
        cut.segment([.init(path: "/'g'/'c'", index: cut.daqmx(3, [scaler], widths: [2]))], (0..<12).flatMap { cut.put(Int16($0)) })
        try write(Array(cut.bytes.dropLast(3)))  // 3 whole chunks of 3 rows, and 1.5 rows of a 4th
        try expectWindowsEqualTheWholeRead(sizes: [[2], [5, 1]])
        #expect(try TDMSFile.read(path: path).groups[0].channels[0].daqmxScalers[0] == .int16(Array(0..<9)))
    }
}
