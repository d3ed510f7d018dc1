import Foundation
import Testing
import TributaryBytes

@testable import TributaryFormats

// Issue 38: numbers read from a file are checked before they are converted or added; a bad one is
// a FormatError naming the file and the byte offset, never a trap.

/// An XDF file from chunks (tag, content), with 4 length bytes each.
private func xdf(_ chunks: [(XDFTag, [UInt8])]) -> [UInt8] {
    var b = ByteWriter()
    b.write(Array("XDF:".utf8))
    for (tag, content) in chunks {
        b.u8(4)
        b.u32(UInt32(content.count + 2))
        b.u16(tag.rawValue)
        b.write(content)
    }
    return b.bytes
}

private func streamHeader(_ id: UInt32, channels: String, format: String = "double64", rate: String = "100") -> (XDFTag, [UInt8]) {
    var c = ByteWriter()
    c.u32(id)
    c.write(
        Array(
            "<info><name>s</name><channel_count>\(channels)</channel_count><nominal_srate>\(rate)</nominal_srate><channel_format>\(format)</channel_format></info>"
                .utf8))
    return (.streamHeader, c.bytes)
}

/// A samples chunk of double64 values, each sample stamped with its timestamp.
private func samples(_ id: UInt32, _ rows: [(Double, [Double])]) -> (XDFTag, [UInt8]) {
    var c = ByteWriter()
    c.u32(id)
    c.u8(1)
    c.u8(UInt8(rows.count))
    for (t, values) in rows {
        c.u8(8)
        c.f64(t)
        for v in values { c.f64(v) }
    }
    return (.samples, c.bytes)
}

private func read(_ bytes: [UInt8]) throws(FormatError) -> XDFFile {
    try typedFormatError { try bytes.withUnsafeBytes { try XDFFile.read(bytes: $0, file: "t.xdf") } }
}

@Test(arguments: [Double.nan, .infinity, -.infinity])
func xdfRefusesANonFiniteTimestampAtItsOffset(_ bad: Double) {
    let bytes = xdf([streamHeader(1, channels: "1"), samples(1, [(10, [1]), (bad, [2])])])
    // magic 4 + header chunk 7 + its content; samples chunk: 7, id 4, count 2, sample 0: 1 + 8 + 8, then 1.
    let headerChunk = 7 + streamHeader(1, channels: "1").1.count
    let offset = 4 + headerChunk + 7 + 4 + 2 + 17 + 1
    #expect(
        throws: FormatError(
            file: "t.xdf", location: "byte offset \(offset)",
            reason: "timestamp of sample 1 of stream 1 is \(bad), not a finite number of seconds")
    ) { try read(bytes) }
}

@Test(arguments: [(Double.nan, 0.5), (10.0, Double.infinity), (-Double.infinity, 0.0)] as [(Double, Double)])
func xdfRefusesANonFiniteClockOffset(_ time: Double, _ value: Double) {
    var c = ByteWriter()
    c.u32(1)
    c.f64(time)
    c.f64(value)
    let bytes = xdf([streamHeader(1, channels: "1"), samples(1, [(10, [1])]), (.clockOffset, c.bytes)])
    #expect {
        try read(bytes)
    } throws: { error in
        let e = error as! FormatError
        return e.location.hasPrefix("byte offset ") && e.reason.contains("clock offset of stream 1") && e.reason.contains("finite")
    }
}

/// A channel count that multiplies past Int.max (or allocates without bound) is refused in the header.
@Test(arguments: ["9223372036854775807", "2147483648", "-1", "18446744073709551616", "x"])
func xdfRefusesAChannelCountBeyondInt32(_ count: String) {
    let bytes = xdf([streamHeader(1, channels: count), samples(1, [(10, [1])])])
    #expect {
        try read(bytes)
    } throws: { error in
        (error as! FormatError).reason.contains("channel_count '\(count)' is not a count in 0...2147483647")
    }
}

@Test(arguments: ["nan", "inf", "-infinity"])
func xdfRefusesANonFiniteNominalRate(_ rate: String) {
    let bytes = xdf([streamHeader(1, channels: "1", rate: rate), samples(1, [(10, [1])])])
    #expect {
        try read(bytes)
    } throws: { error in
        (error as! FormatError).reason.contains("nominal_srate '\(rate)' is not a finite number")
    }
}

/// A string stream may declare Int32.max channels: its values are kept as read, so a header alone
/// allocates nothing, and samples that do not hold the declared strings end at the chunk.
@Test func xdfStringStreamsGrowWithTheirData() throws {
    var strings = ByteWriter()
    strings.u32(2)
    strings.u8(1); strings.u8(2)
    for (t, pair) in [(1.0, ["a", "b"]), (2.0, ["c", "dé"])] {
        strings.u8(8); strings.f64(t)
        for s in pair { strings.u8(1); strings.u8(UInt8(s.utf8.count)); strings.write(Array(s.utf8)) }
    }
    let file = try read(
        xdf([
            streamHeader(1, channels: "2147483647", format: "string"), streamHeader(2, channels: "2", format: "string"),
            (.samples, strings.bytes),
        ]))
    #expect(file.streams[0].sampleCount == 0 && file.streams[0].data == .strings([]))
    #expect(file.streams[1].data == .strings(["a", "c", "b", "dé"]))  // channel-major
    var one = ByteWriter()
    one.u32(1); one.u8(1); one.u8(1); one.u8(0); one.u8(1); one.u8(1); one.write([0x41])
    #expect(throws: FormatError.self) { try read(xdf([streamHeader(1, channels: "2147483647", format: "string"), (.samples, one.bytes)])) }
}

/// Seconds a TDMS file can hold that no Int64 of nanoseconds can: nil, and the float64 seconds still.
@Test func tdmsTimestampsBeyondInt64NanosecondsAreNil() {
    for seconds: Int64 in [.max, .min, 2_082_844_800 + 9_223_372_037, 2_082_844_800 - 9_223_372_038] {
        let t = TDMSTimestamp(seconds: seconds, fraction: 1 << 63)
        #expect(t.unixNanoseconds == nil)
        #expect(t.unixSeconds.isFinite)
        #expect(TDMSValue.timestamp(t).number == t.unixSeconds)
        #expect(TDMSValue.timestamp(t).text.hasSuffix(" s"))
    }
    let edge = TDMSTimestamp(unixNanoseconds: .max)
    #expect(edge.unixNanoseconds == .max)
    #expect(TDMSTimestamp(unixNanoseconds: .min).unixNanoseconds == .min)
}

/// Three string channels of 4.6e18 bytes each: every index passes its own bound, their chunk would
/// be larger than Int.max.
@Test func tdmsRefusesAChunkLargerThanIntMax() {
    var meta = ByteWriter()
    meta.u32(3)
    for name in ["a", "b", "c"] {
        let path = "/'g'/'\(name)'"
        meta.u32(UInt32(path.utf8.count)); meta.write(Array(path.utf8))
        meta.u32(28); meta.u32(TDMSType.string); meta.u32(1); meta.u64(1); meta.u64(UInt64(Int.max / 2 - 1))
        meta.u32(0)
    }
    var b = ByteWriter()
    b.write(Array("TDSm".utf8)); b.u32(TDMSToC.metaData | TDMSToC.newObjList | TDMSToC.rawData); b.u32(4713)
    b.u64(UInt64(meta.bytes.count + 8)); b.u64(UInt64(meta.bytes.count))
    b.write(meta.bytes)
    b.u64(0)
    #expect {
        try b.bytes.withUnsafeBytes { try TDMSFile.read(bytes: $0, file: "t.tdms") }
    } throws: { error in
        let e = error as! FormatError
        return e.location == "byte offset 0" && e.reason.contains("describe a chunk of more than")
    }
}
