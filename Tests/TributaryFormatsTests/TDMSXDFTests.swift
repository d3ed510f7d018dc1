import Foundation
import Testing
import TributaryBytes

@testable import TributaryFormats

private func temporaryPath(_ name: String) -> String {
    NSTemporaryDirectory() + "tributary-\(UUID().uuidString)-\(name)"
}

@Test func tdmsTimestampsConvertExactly() {
    for ns: Int64 in [0, 1, -1, 999_999_999, 1_764_489_600_123_456_789, -2_082_844_800_000_000_000, 123] {
        let t = TDMSTimestamp(unixNanoseconds: ns)
        #expect(t.unixNanoseconds == ns)
    }
    #expect(TDMSTimestamp(unixNanoseconds: 0).seconds == 2_082_844_800)
    #expect(TDMSTimestamp(unixNanoseconds: 500_000_000).fraction == 1 << 63)
}

@Test func tdmsRoundTripsGroupsChannelsPropertiesAndTypes() throws {
    let file = TDMSFile(
        properties: [TDMSProperty("name", .string("run's 'quoted'"))],
        groups: [
            TDMSGroup(
                name: "a'b",
                properties: [TDMSProperty("id", .uint32(7)), TDMSProperty("t", .timestamp(TDMSTimestamp(unixNanoseconds: 42)))],
                channels: [
                    TDMSChannel(
                        name: "x", properties: [TDMSProperty("wf_increment", .double(0.001)), TDMSProperty("n", .int32(-3))],
                        data: .float64([1.5, -.infinity, 0, 1e300])),
                    TDMSChannel(name: "y", data: .int16([-32768, 0, 32767, 5])),
                    TDMSChannel(name: "z", data: .float32([1, 2])),
                    TDMSChannel(name: "s", data: .strings(["", "grüße", "x"])),
                    TDMSChannel(name: "empty", properties: [TDMSProperty("flag", .bool(true))], data: .float64([])),
                ]),
            TDMSGroup(name: "second", channels: [TDMSChannel(name: "x", data: .int32([1, -2, 3]))]),
        ])
    let path = temporaryPath("rt.tdms")
    defer { unlink(path) }
    try file.write(to: path)
    let back = try TDMSFile.read(path: path)
    #expect(back == file)
}

/// Rows of a shared channel-major matrix are written without copies and read back as plain arrays.
@Test func tdmsWritesRowsOfASharedMatrix() throws {
    let matrix: [Double] = (0..<12).map { Double($0) * 0.5 - 1 }
    let counts: [Int16] = [1, -2, 3, -4, 5, -6]
    let file = TDMSFile(groups: [
        TDMSGroup(
            name: "g",
            channels: [
                TDMSChannel(name: "a", data: .float64Row(matrix, 0..<6)),
                TDMSChannel(name: "b", data: .float64Row(matrix, 6..<12)),
                TDMSChannel(name: "c", data: .int16Row(counts, 3..<6)),
            ])
    ])
    #expect(file.groups[0].channels.map(\.data.count) == [6, 6, 3])
    #expect(file.groups[0].channels[2].data.doubles == [-4, 5, -6])
    let path = temporaryPath("rows.tdms")
    defer { unlink(path) }
    try file.write(to: path)
    let back = try TDMSFile.read(path: path)
    #expect(back.groups[0].channels.map(\.data) == [.float64(Array(matrix[0..<6])), .float64(Array(matrix[6..<12])), .int16([-4, 5, -6])])
}

/// Two segments as loggers write them: the second has no new object list and reuses the raw data
/// index (0x00000000) of one channel, appends a new one, and holds two chunks of raw data.
@Test func tdmsReadsIncrementalSegmentsAndRepeatedChunks() throws {
    func string(_ s: String, _ b: inout ByteWriter<[UInt8]>) { b.u32(UInt32(s.utf8.count)); b.write(Array(s.utf8)) }
    func segment(toc: UInt32, meta: ByteWriter<[UInt8]>, raw: [UInt8]) -> [UInt8] {
        var b = ByteWriter()
        b.write(Array("TDSm".utf8)); b.u32(toc); b.u32(4713)
        b.u64(UInt64(meta.bytes.count + raw.count)); b.u64(UInt64(meta.bytes.count))
        return b.bytes + meta.bytes + raw
    }
    var m1 = ByteWriter()
    m1.u32(2)
    string("/'g'", &m1); m1.u32(0xFFFF_FFFF); m1.u32(0)
    string("/'g'/'a'", &m1); m1.u32(20); m1.u32(TDMSType.double); m1.u32(1); m1.u64(2); m1.u32(0)
    var r1 = ByteWriter()
    r1.f64(1); r1.f64(2)
    var m2 = ByteWriter()
    m2.u32(2)
    string("/'g'/'a'", &m2); m2.u32(0); m2.u32(0)
    string("/'g'/'b'", &m2); m2.u32(20); m2.u32(TDMSType.i16); m2.u32(1); m2.u64(1); m2.u32(0)
    var r2 = ByteWriter()
    for k in 0..<2 { r2.f64(Double(10 + 2 * k)); r2.f64(Double(11 + 2 * k)); r2.u16(UInt16(k + 100)) }
    // A third segment without metadata: same objects, one chunk; then a truncated fourth segment.
    var r3 = ByteWriter()
    r3.f64(20); r3.f64(21); r3.u16(7)
    var bytes = segment(toc: TDMSToC.metaData | TDMSToC.newObjList | TDMSToC.rawData, meta: m1, raw: r1.bytes)
    bytes += segment(toc: TDMSToC.metaData | TDMSToC.rawData, meta: m2, raw: r2.bytes)
    bytes += segment(toc: TDMSToC.rawData, meta: ByteWriter(), raw: r3.bytes)
    let file = try bytes.withUnsafeBytes { try TDMSFile.read(bytes: $0) }
    #expect(file.groups.count == 1)
    #expect(file.groups[0].channels.map(\.name) == ["a", "b"])
    #expect(file.groups[0].channels[0].data == .float64([1, 2, 10, 11, 12, 13, 20, 21]))
    #expect(file.groups[0].channels[1].data == .int16([100, 101, 7]))
}

@Test func tdmsRejectsOtherFilesWithTheOffset() throws {
    let bytes = Array("TDSh".utf8) + [UInt8](repeating: 0, count: 40)
    #expect(throws: FormatError.self) { try bytes.withUnsafeBytes { try TDMSFile.read(bytes: $0) } }
}

@Test func xdfRoundTripsStreamsTimestampsAndOffsets() throws {
    let path = temporaryPath("rt.xdf")
    defer { unlink(path) }
    let writer = try XDFWriter(path: path)
    let header = XDFStreamHeader(
        streamID: 3, name: "amp <1>", type: "EEG", channelCount: 2, nominalRate: 250, format: .double64,
        sourceID: "s", channels: [XDFChannelInfo(label: "Fz", unit: "uV"), XDFChannelInfo(label: "Cz & co", unit: "uV")])
    try writer.streamHeader(header)
    try writer.streamHeader(XDFStreamHeader(streamID: 4, name: "counts", type: "", channelCount: 1, nominalRate: 0, format: .int16))
    let values: [Double] = (0..<600).map { Double($0) * 0.5 }  // 2 channels × 300, channel-major
    try values.withUnsafeBufferPointer {
        try writer.samples(streamID: 3, values: $0, channels: 2, stride: 300, start: 0, count: 100, firstTimestamp: 10)
        try writer.samples(streamID: 3, values: $0, channels: 2, stride: 300, start: 100, count: 200, firstTimestamp: 11)
    }
    let counts: [Int16] = [-5, 6, 7]
    try counts.withUnsafeBufferPointer {
        try writer.samples(streamID: 4, values: $0, channels: 1, stride: 3, start: 0, count: 3, firstTimestamp: nil, timestamps: [1, 2, 4])
    }
    try writer.clockOffset(streamID: 3, collectionTime: 10, offset: 0.5)
    try writer.boundary()
    try writer.streamFooter(streamID: 3, firstTimestamp: 10, lastTimestamp: 11.796, sampleCount: 300)
    try writer.close()
    let file = try XDFFile.read(path: path)
    #expect(file.streams.count == 2)
    let s = file.streams[0]
    #expect(s.header == header)
    #expect(s.data == .float64(values))
    #expect(s.sampleCount == 300)
    #expect(s.timestamps[0] == 10 && s.timestamps[100] == 11)
    #expect(abs(s.timestamps[99] - (10 + 99.0 / 250)) < 1e-12)
    #expect(s.stampedSamples == [0, 100])
    #expect(s.clockOffsets.count == 1 && s.clockOffsets[0].value == 0.5)
    #expect(s.footerXML?.contains("<sample_count>300</sample_count>") == true)
    #expect(file.streams[1].data == .int16(counts))
    #expect(file.streams[1].timestamps == [1, 2, 4])
}

@Test func xdfReadsUpToATruncatedChunk() throws {
    let path = temporaryPath("cut.xdf")
    defer { unlink(path) }
    let writer = try XDFWriter(path: path)
    try writer.streamHeader(XDFStreamHeader(streamID: 1, name: "a", type: "", channelCount: 1, nominalRate: 10, format: .float32))
    let v: [Float] = [1, 2, 3, 4]
    try v.withUnsafeBufferPointer {
        try writer.samples(streamID: 1, values: $0, channels: 1, stride: 4, start: 0, count: 2, firstTimestamp: 0)
        try writer.samples(streamID: 1, values: $0, channels: 1, stride: 4, start: 2, count: 2, firstTimestamp: 0.2)
    }
    try writer.close()
    var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    bytes.removeLast(3)
    let file = try bytes.withUnsafeBytes { try XDFFile.read(bytes: $0) }
    #expect(file.streams[0].data == .float32([1, 2]))
    #expect(throws: FormatError.self) { try Array("XDX:".utf8).withUnsafeBytes { try XDFFile.read(bytes: $0) } }
}
