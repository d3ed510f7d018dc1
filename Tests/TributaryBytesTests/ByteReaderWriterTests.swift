import Testing

@testable import TributaryBytes

/// A module's own error, as Wire, Formats and Capture map `ByteError` into theirs.
private struct TestFailure: ByteFailure, Equatable {
    var error: ByteError
    var source: String
    init(_ error: ByteError, source: String) {
        self.error = error
        self.source = source
    }
}

@Suite struct ByteReaderTests {
    /// 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10
    let sixteen: [UInt8] = Array(1...16)

    @Test func readsLittleEndianInOrder() throws {
        try sixteen.withUnsafeBytes { raw throws in
            var r = ByteReader<ByteError>(raw)
            #expect(try r.u8("a") == 0x01)
            #expect(try r.u16("b") == 0x0302)
            #expect(try r.u32("c") == 0x0706_0504)
            #expect(try r.u64("d") == 0x0F0E_0D0C_0B0A_0908)
            #expect(r.position == 15 && r.remaining == 1)
            #expect(try r.i8("e") == 0x10)
            #expect(r.remaining == 0)
        }
    }

    @Test func readsBigEndianWhenAsked() throws {
        try sixteen.withUnsafeBytes { raw throws in
            var r = ByteReader<ByteError>(raw, bigEndian: true)
            #expect(try r.u16("a") == 0x0102)
            #expect(try r.u32("b") == 0x0304_0506)
            #expect(try r.u64("c") == 0x0708_090A_0B0C_0D0E)
            #expect(r.u32(at: 0) == 0x0102_0304)
            r.bigEndian = false
            #expect(try r.u16("d") == 0x100F)
            #expect(r.u32(at: 0) == 0x0403_0201)
        }
    }

    @Test func readsSignedAndFloatingPoint() throws {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: Int16(-2).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: Int32(-3).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: Int64(-4).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: Float(1.5).bitPattern.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: Double(-0.25).bitPattern.littleEndian) { bytes += $0 }
        try bytes.withUnsafeBytes { raw throws in
            var r = ByteReader<ByteError>(raw)
            #expect(try r.i16("a") == -2)
            #expect(try r.i32("b") == -3)
            #expect(try r.i64("c") == -4)
            #expect(try r.f32("d") == 1.5)
            #expect(try r.f64("e") == -0.25)
            #expect(r.i16(at: 0) == -2 && r.i32(at: 2) == -3 && r.i64(at: 6) == -4)
            #expect(r.f32(at: 14) == 1.5 && r.f64(at: 18) == -0.25)
        }
    }

    @Test func aTruncatedFieldNamesItselfWithTheAbsoluteOffset() throws {
        try sixteen.withUnsafeBytes { raw throws in
            var r = ByteReader<TestFailure>(raw, origin: 100, source: "file.bin")
            #expect(throws: Never.self) { try r.skip(14, "head") }
            #expect(throws: TestFailure(ByteError(.truncated(needed: 4), field: "count", offset: 114, remaining: 2), source: "file.bin")) {
                _ = try r.u32("count")
            }
            // A failed read does not move.
            #expect(r.position == 14)
            #expect(throws: TestFailure(ByteError(.truncated(needed: 3), field: "tail", offset: 114, remaining: 2), source: "file.bin")) {
                _ = try r.slice(3, "tail")
            }
            #expect(throws: TestFailure(ByteError(.truncated(needed: -1), field: "back", offset: 114, remaining: 2), source: "file.bin")) {
                try r.skip(-1, "back")
            }
        }
    }

    @Test func aPositionPastTheEndReportsNoBytesLeft() throws {
        try sixteen.withUnsafeBytes { raw throws in
            var r = ByteReader<ByteError>(raw, position: 20)
            #expect(r.remaining == -4)
            #expect(throws: ByteError(.truncated(needed: 1), field: "x", offset: 20, remaining: 0)) { _ = try r.u8("x") }
        }
    }

    @Test func alignsRelativeToTheStart() throws {
        try sixteen.withUnsafeBytes { raw throws in
            var r = ByteReader<ByteError>(raw)
            try r.align(to: 8, "pad")
            #expect(r.position == 0)
            _ = try r.u8("a")
            try r.align(to: 8, "pad")
            #expect(r.position == 8)
            _ = try r.u8("b")
            try r.align(to: 4, "pad")
            #expect(r.position == 12)
            _ = try r.u8("c")
            #expect(throws: ByteError(.truncated(needed: 19), field: "pad", offset: 13, remaining: 3)) { try r.align(to: 32, "pad") }
        }
    }

    @Test func countsAreCheckedAgainstTheLimitAndTheBytesLeft() throws {
        // count 3, then 12 bytes.
        var bytes: [UInt8] = [3, 0, 0, 0]
        bytes += [UInt8](repeating: 0, count: 12)
        try bytes.withUnsafeBytes { raw throws in
            var r = ByteReader<ByteError>(raw, origin: 8)
            #expect(try r.readCount("n", elementSize: 4) == 3)
            r.position = 0
            #expect(throws: ByteError(.countTooLarge(count: 3, limit: 2), field: "n", offset: 8, remaining: 12)) {
                _ = try r.readCount("n", elementSize: 4, limit: 2)
            }
            r.position = 0
            #expect(throws: ByteError(.countExceedsBytes(count: 3, elementSize: 5), field: "n", offset: 8, remaining: 12)) {
                _ = try r.readCount("n", elementSize: 5)
            }
            r.position = 0
            #expect(throws: ByteError(.countExceedsBytes(count: 3, elementSize: Int.max), field: "n", offset: 8, remaining: 12)) {
                _ = try r.readCount("n", elementSize: Int.max)
            }
        }
    }

    @Test func stringsAreLengthPrefixedAndValidUTF8() throws {
        var good: [UInt8] = [3, 0, 0, 0]
        good += Array("abc".utf8)
        try good.withUnsafeBytes { raw throws in
            var r = ByteReader<ByteError>(raw)
            #expect(try r.readString("s", limit: 3) == "abc")
            r.position = 0
            #expect(throws: ByteError(.countTooLarge(count: 3, limit: 2), field: "s.length", offset: 0, remaining: 3)) {
                _ = try r.readString("s", limit: 2)
            }
        }
        let bad: [UInt8] = [2, 0, 0, 0, 0xC3, 0x28]
        try bad.withUnsafeBytes { raw throws in
            var r = ByteReader<ByteError>(raw, origin: 40)
            #expect(throws: ByteError(.invalidUTF8(length: 2), field: "s", offset: 44, remaining: 0)) {
                _ = try r.readString("s", limit: 10)
            }
            r.position = 4
            #expect(try r.utf8(2, "lossy") == "\u{FFFD}(")
        }
    }

    @Test func slicesAndCopiesWithoutLeavingTheBytes() throws {
        try sixteen.withUnsafeBytes { raw throws in
            var r = ByteReader<ByteError>(raw)
            let s = try r.slice(4, "s")
            #expect(Array(s) == [1, 2, 3, 4])
            #expect(try r.readBytes(2, "b") == [5, 6])
            #expect(try r.readBytes(0, "none") == [])
            #expect(r.position == 6)
        }
    }

    @Test func fixedOffsetChecksRejectNegativeAndOverflowingOffsets() throws {
        #expect(fits(0, 4, in: 4) && fits(4, 0, in: 4) && fits(2, 2, in: 4))
        #expect(!fits(1, 4, in: 4))
        #expect(!fits(-1, 1, in: 4))
        #expect(!fits(Int.min, 1, in: 4))
        #expect(!fits(Int.max, 8, in: 16))
        #expect(!fits(0, 8, in: 4))
        #expect(!fits(0, -1, in: 4))
    }

    @Test func errorsReadAsText() throws {
        #expect(
            ByteError(.truncated(needed: 8), field: "analog.first_sample", offset: 48, remaining: 3).description
                == "analog.first_sample at byte 48: needs 8 bytes, 3 left")
        #expect(
            ByteError(.countTooLarge(count: 9, limit: 4), field: "n", offset: 0, remaining: 0).description
                == "n at byte 0: 9 exceeds the limit 4")
    }
}

@Suite struct ByteWriterTests {
    @Test func writesLittleEndianIntoFixedMemory() throws {
        var bytes = [UInt8](repeating: 0xEE, count: 24)
        bytes.withUnsafeMutableBytes { raw in
            var w = ByteWriter(raw)
            w.u8(0x01)
            w.u16(0x0302)
            w.u32(0x0706_0504)
            w.u64(0x0F0E_0D0C_0B0A_0908)
            #expect(w.position == 15)
            w.skip(1)  // keeps what the memory holds
            w.f64(1.0)
            #expect(w.position == 24)
            w.put(UInt16(0xBBAA), at: 15)
        }
        #expect(Array(bytes[0..<15]) == Array(1...15))
        #expect(bytes[15] == 0xAA && bytes[16] == 0xBB)
        #expect(Array(bytes[17..<24]) == [0, 0, 0, 0, 0, 0xF0, 0x3F])
    }

    @Test func growsAnArrayWithZeros() throws {
        var w = ByteWriter()
        w.u8(7)
        w.align(to: 8)
        #expect(w.bytes == [7, 0, 0, 0, 0, 0, 0, 0])
        w.i16(-2)
        w.i32(-3)
        w.i64(-4)
        w.f32(1.5)
        w.write(string: "hé")
        w.write([9, 9])
        #expect(w.position == w.bytes.count)
        var expected: [UInt8] = [7, 0, 0, 0, 0, 0, 0, 0, 0xFE, 0xFF, 0xFD, 0xFF, 0xFF, 0xFF]
        expected += [0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0xC0, 0x3F, 3, 0, 0, 0, 0x68, 0xC3, 0xA9, 9, 9]
        #expect(w.bytes == expected)
        // A fixed-offset write inside the bytes overwrites; one past the end grows them with zeros.
        w.put(UInt32(0x0403_0201), at: 0)
        w.put(UInt16(0x0605), at: expected.count + 2)
        #expect(Array(w.bytes[0..<4]) == [1, 2, 3, 4])
        #expect(Array(w.bytes[expected.count...]) == [0, 0, 5, 6])
        #expect(w.position == expected.count)
        w.removeAll()
        #expect(w.bytes.isEmpty && w.position == 0)
    }

    @Test func aRegionIsFilledInPlace() throws {
        var w = ByteWriter()
        w.u8(1)
        let sum = w.withRegion(count: 3) { region in
            region.storeBytes(of: 0x0302, toByteOffset: 1, as: UInt16.self)
            return region.count
        }
        w.u8(4)
        #expect(sum == 3)
        #expect(w.bytes == [1, 0, 0x02, 0x03, 4])
        var fixed = [UInt8](repeating: 9, count: 4)
        fixed.withUnsafeMutableBytes { raw in
            var f = ByteWriter(raw, position: 1)
            f.withRegion(count: 2) { $0[0] = 5 }
            #expect(f.position == 3)
        }
        #expect(fixed == [9, 5, 9, 9])
    }

    @Test func whatTheWriterWritesTheReaderReads() throws {
        var w = ByteWriter()
        let values: [UInt64] = [0, 1, 0xDEAD_BEEF, .max]
        for v in values { w.u64(v) }
        w.write(string: "tributary")
        w.f64(-.infinity)
        let bytes = w.bytes
        try bytes.withUnsafeBytes { raw throws in
            var r = ByteReader<ByteError>(raw)
            for v in values { #expect(try r.u64("v") == v) }
            #expect(try r.readString("s", limit: 64) == "tributary")
            #expect(try r.f64("f") == -.infinity)
            #expect(r.remaining == 0)
        }
    }
}
