import Testing

@testable import TributaryWire

/// Frame filters against docs/PROTOCOL.md §6: the expected output is built independently, as the
/// owned package the spec describes, and compared byte for byte.
@Suite struct FilterTests {
    static let header = FrameHeader(kind: .analog, flags: [.replayed], sequence: 17, timestampNs: 1_000, sourceID: 2)

    static func analogFrame(_ format: SampleFormat, indexes: [UInt32] = [0, 1, 2, 3, 4], samples n: Int = 6) -> (Frame, AnalogData) {
        let c = indexes.count
        let values = (0..<(c * n)).map { Double($0) * 0.5 - 3 }
        let samples: AnalogSamples
        switch format {
        case .float64: samples = .float64(values)
        case .float32: samples = .float32(values.map(Float.init))
        case .int16:
            samples = .int16(
                counts: values.map { Int16($0 * 2) }, scale: (0..<c).map { 0.1 * Double($0 + 1) },
                offset: (0..<c).map { Double($0) })
        case .int32:
            samples = .int32(
                counts: values.map { Int32($0 * 2) << 20 }, scale: (0..<c).map { 0.1 * Double($0 + 1) },
                offset: (0..<c).map { Double($0) })
        }
        let data = AnalogData(channelIndexes: indexes, sampleCount: n, firstSample: 500, samples: samples)
        return (Frame(encoding: .analog(data), header: header), data)
    }

    /// The spec's output: the selected rows (with their own scale/offset), same everything else.
    static func expected(_ data: AnalogData, rows: [Int], filterID: UInt32) -> [UInt8] {
        let n = data.sampleCount
        func take<T>(_ v: [T]) -> [T] { rows.flatMap { v[($0 * n)..<(($0 + 1) * n)] } }
        let samples: AnalogSamples
        switch data.samples {
        case .float64(let v): samples = .float64(take(v))
        case .float32(let v): samples = .float32(take(v))
        case .int16(let v, let s, let o): samples = .int16(counts: take(v), scale: rows.map { s[$0] }, offset: rows.map { o[$0] })
        case .int32(let v, let s, let o): samples = .int32(counts: take(v), scale: rows.map { s[$0] }, offset: rows.map { o[$0] })
        }
        var h = header
        h.filterID = filterID
        let out = AnalogData(
            channelIndexes: rows.map { data.channelIndexes[$0] }, sampleCount: n,
            firstSample: data.firstSample, samples: samples)
        return Frame(encoding: .analog(out), header: h).encodedBytes
    }

    @Test(arguments: SampleFormat.allCases)
    func analogSelectionsMatchTheSpecByteForByte(format: SampleFormat) throws {
        let (frame, data) = Self.analogFrame(format, indexes: [4, 7, 1, 9, 3])
        let view = try frame.analog()
        let cases: [(ChannelSelection, [Int])] = [
            (.range(from: 3, to: 7), [0, 1, 4]),  // rows whose index is in 3...7, input order
            (.list([9, 4, 100, 1]), [3, 0, 2]),  // list order; 100 is absent
            (.list([3]), [4]),
            (.range(from: 1, to: 2), [2]),
        ]
        for (selection, rows) in cases {
            let out = AnalogFrameFilter.apply(AnalogFilterRequest(channels: selection), filterID: 5, to: view, of: frame)
            #expect(out?.encodedBytes == Self.expected(data, rows: rows, filterID: 5), "\(selection)")
        }
        // Selecting nothing sends nothing.
        #expect(AnalogFrameFilter.apply(AnalogFilterRequest(channels: .range(from: 20, to: 30)), filterID: 1, to: view, of: frame) == nil)
        // Keeping every row in order shares the payload.
        let all = AnalogFrameFilter.apply(AnalogFilterRequest(channels: .all), filterID: 2, to: view, of: frame)
        #expect(all?.buffer === frame.buffer)
        #expect(all?.encodedBytes == Self.expected(data, rows: [0, 1, 2, 3, 4], filterID: 2))
    }

    @Test func arraySelectionsMatchTheSpec() throws {
        let full = Array2D(
            rowCount: 4, columnCount: 5, rowOrigin: 10, columnOrigin: 20,
            elements: .string((0..<20).map { "e\($0)é" }))
        var h = Self.header
        h.kind = .array
        let frame = Frame(encoding: .array(full), header: h)
        guard case .array(let view) = try frame.payload() else { Issue.record("not an array"); return }
        // Rows 1...2, columns 3...(through the last, clipped to 4).
        let request = ArrayFilterRequest(elementType: .string, rows: IndexRange(from: 1, to: 2), columns: IndexRange(from: 3, to: 99))
        let out = ArrayFrameFilter.apply(request, filterID: 3, to: view, of: frame)
        var eh = h
        eh.filterID = 3
        let expected = Array2D(
            rowCount: 2, columnCount: 2, rowOrigin: 11, columnOrigin: 23,
            elements: .string(["e8é", "e9é", "e13é", "e14é"]))
        #expect(out?.encodedBytes == Frame(encoding: .array(expected), header: eh).encodedBytes)
        // Other element types and empty selections produce nothing.
        #expect(ArrayFrameFilter.apply(ArrayFilterRequest(elementType: .double), filterID: 1, to: view, of: frame) == nil)
        #expect(
            ArrayFrameFilter.apply(
                ArrayFilterRequest(elementType: .string, rows: IndexRange(from: 4, to: 9)),
                filterID: 1, to: view, of: frame) == nil)
    }

    static let numericCases: [ArrayElements] = {
        let n = Array(0..<12)
        let d: [Double] = n.map { Double($0) }
        let f: [Float] = n.map { Float($0) }
        let i32: [Int32] = n.map { Int32($0) }
        let i16: [Int16] = n.map { Int16($0) }
        let i64: [Int64] = n.map { Int64($0) }
        let b: [Bool] = n.map { $0 % 3 == 0 }
        return [.double(d), .float(f), .int32(i32), .int16(i16), .int64(i64), .bool(b)]
    }()

    @Test(arguments: numericCases)
    func numericArraysMatchTheSpec(elements: ArrayElements) throws {
        let frame = Frame(encoding: .array(Array2D(rowCount: 3, columnCount: 4, elements: elements)))
        guard case .array(let view) = try frame.payload() else { Issue.record("not an array"); return }
        let out = ArrayFrameFilter.apply(
            ArrayFilterRequest(
                elementType: elements.elementType, rows: IndexRange(from: 1),
                columns: IndexRange(from: 1, to: 2)), filterID: 9, to: view, of: frame)
        let keep = [5, 6, 9, 10]
        let picked: ArrayElements
        switch elements {
        case .double(let v): picked = .double(keep.map { v[$0] })
        case .float(let v): picked = .float(keep.map { v[$0] })
        case .int32(let v): picked = .int32(keep.map { v[$0] })
        case .int16(let v): picked = .int16(keep.map { v[$0] })
        case .int64(let v): picked = .int64(keep.map { v[$0] })
        case .bool(let v): picked = .bool(keep.map { v[$0] })
        case .string(let v): picked = .string(keep.map { v[$0] })
        }
        let expected = Frame(
            encoding: .array(Array2D(rowCount: 2, columnCount: 2, rowOrigin: 1, columnOrigin: 1, elements: picked)),
            filterID: 9)
        #expect(out?.encodedBytes == expected.encodedBytes)
    }

    @Test func filterIdsFollowTheRules() throws {
        var filters = SubscriberFilters()
        #expect(filters.nextFilterID == 1)
        try filters.add(AnalogFilterRequest(query: "0-1;"), id: 1)
        #expect(throws: FilterRequestError.self) { try filters.add(AnalogFilterRequest(), id: 1) }  // reused
        #expect(throws: FilterRequestError.self) { try filters.add(AnalogFilterRequest(), id: 3) }  // skipped 2
        try filters.add(ArrayFilterRequest(elementType: .double, query: "0-1;0-1"), id: 2)
        try filters.add(AnalogFilterRequest(channels: .list([3]), replaces: 1), id: 3)
        #expect(filters.analog.map(\.id) == [3] && filters.array.map(\.id) == [2])
        #expect(throws: FilterRequestError.self) { try filters.add(AnalogFilterRequest(replaces: 1), id: 4) }  // 1 is gone
        try filters.remove(id: 2)
        #expect(throws: FilterRequestError.self) { try filters.remove(id: 2) }
        #expect(filters.array.isEmpty && filters.nextFilterID == 4)
        // Requests arrive as frames.
        try filters.apply(Frame(encoding: .analogFilter(AnalogFilterRequest(channels: .all, sources: [7])), filterID: 4))
        try filters.apply(Frame(encoding: .removeFilter, filterID: 3))
        #expect(filters.analog.map(\.id) == [4])
    }

    @Test func outputsFollowTheSubscriberFilters() throws {
        let (frame, data) = Self.analogFrame(.float64)
        var filters = SubscriberFilters()
        var out: [Frame] = []
        try filters.outputs(for: frame) { out.append($0) }
        #expect(out.count == 1 && out[0].encodedBytes == frame.encodedBytes)  // no filters: unchanged

        try filters.add(AnalogFilterRequest(query: "1-2;2"), id: 1)
        try filters.add(AnalogFilterRequest(query: "4;9"), id: 2)  // another source: not applied
        try filters.add(AnalogFilterRequest(query: "3,0;"), id: 3)
        out = []
        try filters.outputs(for: frame) { out.append($0) }
        #expect(out.map(\.header.filterID) == [1, 3])
        #expect(out[0].encodedBytes == Self.expected(data, rows: [1, 2], filterID: 1))
        #expect(out[1].encodedBytes == Self.expected(data, rows: [3, 0], filterID: 3))

        // Non-analog frames and arrays of unfiltered types pass unchanged.
        let message = Frame(encoding: .message(Message("hi")))
        out = []
        try filters.outputs(for: message) { out.append($0) }
        #expect(out.count == 1 && out[0].header.filterID == 0)
    }
}
