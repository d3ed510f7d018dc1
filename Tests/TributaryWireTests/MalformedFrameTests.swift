import Testing

@testable import TributaryWire

/// The malformed-input corpus: every error is typed and names the field and byte offset.
@Suite struct MalformedFrameTests {
    static func error(_ bytes: [UInt8]) -> WireError? {
        do {
            _ = try Frame(copying: bytes).payload()
            return nil
        } catch {
            return error
        }
    }

    static func patched(_ frame: Frame, _ offset: Int, _ bytes: [UInt8]) -> [UInt8] {
        var copy = frame.encodedBytes
        copy.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
        return copy
    }

    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }

    @Test(arguments: FrameKind.allCases)
    func truncatedAtEveryOffset(kind: FrameKind) {
        var factory = PackageFactory(seed: 99 + UInt64(kind.rawValue))
        for _ in 0..<5 {
            let bytes = factory.frame(kind).encodedBytes
            for cut in 0..<bytes.count {
                let error = Self.error(Array(bytes[..<cut]))
                #expect(error?.code == .truncated, "cut at \(cut) of \(kind): \(String(describing: error))")
                #expect(error?.offset == cut)
            }
        }
    }

    /// A payload shortened (header adjusted to match) must fail inside the payload, never crash.
    @Test(arguments: FrameKind.allCases)
    func shortenedPayloads(kind: FrameKind) {
        var factory = PackageFactory(seed: 7 + UInt64(kind.rawValue))
        for _ in 0..<10 {
            let frame = factory.frame(kind)
            var length = frame.header.payloadLength - 8
            while length >= 0 {
                var bytes = Array(frame.encodedBytes[..<(40 + length)])
                bytes.replaceSubrange(12..<16, with: Self.le32(UInt32(length)))
                if let error = Self.error(bytes) {
                    #expect([.truncated, .lengthMismatch, .countTooLarge].contains(error.code), "\(kind): \(error)")
                    #expect(error.offset >= 40 && error.offset <= 40 + length, "\(kind): \(error)")
                }
                length -= 8
            }
        }
    }

    @Test func headerErrors() {
        let frame = Frame(encoding: .message(Message("hi")))
        let cases: [([UInt8], WireError.Code, String, Int)] = [
            (Self.patched(frame, 0, [0x54, 0x52, 0x49, 0x43]), .badMagic, "header.magic", 0),
            (Self.patched(frame, 4, [2]), .unsupportedVersion, "header.version", 4),
            (Self.patched(frame, 5, [99]), .unknownKind, "header.kind", 5),
            (Self.patched(frame, 5, [0]), .unknownKind, "header.kind", 5),
            (Self.patched(frame, 5, [130]), .unknownKind, "header.kind", 5),
            (Self.patched(frame, 6, [0x01, 0]), .unsupportedFlags, "header.flags", 6),
            (Self.patched(frame, 8, [32, 0]), .badHeaderLength, "header.header_length", 8),
            (Self.patched(frame, 8, [44, 0]), .badHeaderLength, "header.header_length", 8),
            (Self.patched(frame, 12, Self.le32(12)), .misalignedLength, "header.payload_length", 12),
            (Self.patched(frame, 12, Self.le32(0xFFFF_FFF8)), .frameTooLarge, "header.payload_length", 12),
        ]
        for (bytes, code, field, offset) in cases {
            let error = Self.error(bytes)
            #expect(error?.code == code && error?.field == field && error?.offset == offset, "\(String(describing: error))")
        }
        // Unknown informational flags are ignored.
        #expect(Self.error(Self.patched(frame, 6, [0, 0x80])) == nil)
    }

    @Test func longerHeadersAreSkipped() throws {
        // A future version-1 header of 48 bytes: the decoder skips the 8 bytes it does not know.
        let frame = Frame(encoding: .message(Message("hi", code: 3)))
        var bytes = frame.encodedBytes
        bytes.replaceSubrange(8..<10, with: [48, 0])
        bytes.insert(contentsOf: [UInt8](repeating: 0xEE, count: 8), at: 40)
        let decoded = try Frame(copying: bytes).payload().materialize()
        #expect(decoded == .message(Message("hi", code: 3)))
    }

    @Test func countOverflowsAndDisagreements() {
        let analog = Frame(encoding: .analog(AnalogData(channels: [[1, 2], [3, 4]])))
        // 65535 channels × 2^32-1 samples: must not allocate or overflow, just disagree with the length.
        var e = Self.error(Self.patched(analog, 40, Self.le32(65_535) + Self.le32(.max)))
        #expect(e?.code == .lengthMismatch && e?.field == "analog.sample_count" && e?.offset == 44)
        e = Self.error(Self.patched(analog, 40, Self.le32(70_000)))
        #expect(e?.code == .countTooLarge && e?.field == "analog.channel_count" && e?.offset == 40)
        e = Self.error(Self.patched(analog, 56, [9]))
        #expect(e?.code == .invalidValue && e?.field == "analog.sample_format" && e?.offset == 56)

        let array = Frame(encoding: .array(Array2D(rowCount: 1, columnCount: 2, elements: .int32([1, 2]))))
        e = Self.error(Self.patched(array, 44, Self.le32(.max) + Self.le32(.max)))
        #expect(e?.code == .countTooLarge && e?.field == "array.row_count" && e?.offset == 44)
        e = Self.error(Self.patched(array, 44, Self.le32(1) + Self.le32(3)))
        #expect(e?.code == .lengthMismatch && e?.field == "array.row_count" && e?.offset == 44)

        let strings = Frame(encoding: .array(Array2D(rowCount: 1, columnCount: 2, elements: .string(["ab", "c"]))))
        e = Self.error(Self.patched(strings, 44, Self.le32(.max) + Self.le32(.max)))
        #expect(e?.code == .countTooLarge && e?.field == "array.row_count")
        // Offsets table: [0, 2, 3]; make the second offset run backwards.
        e = Self.error(Self.patched(strings, 64 + 4, Self.le32(5) + Self.le32(1)))
        #expect(e?.code == .lengthMismatch || e?.code == .invalidValue)

        let config = Frame(encoding: .configuration(Configuration(deviceName: "d", deviceType: "t")))
        e = Self.error(Self.patched(config, 40, Self.le32(0xFFFF_FFF0)))
        #expect(e?.code == .countTooLarge && e?.field == "configuration.device_name.length" && e?.offset == 40)
    }

    @Test func invalidUTF8AndValues() {
        let message = Frame(encoding: .message(Message("abc")))
        var e = Self.error(Self.patched(message, 48, [0xFF]))
        #expect(e?.code == .invalidUTF8 && e?.field == "message.text" && e?.offset == 48)

        let strings = Frame(encoding: .array(Array2D(rowCount: 1, columnCount: 2, elements: .string(["ab", "c"]))))
        // Text starts at payload 24 + align8(12) = 40 → frame byte 80; break element 1 ("c" at 82).
        e = Self.error(Self.patched(strings, 82, [0xC3]))
        #expect(e?.code == .invalidUTF8 && e?.field == "array.strings[1]" && e?.offset == 82)

        let bools = Frame(encoding: .array(Array2D(rowCount: 1, columnCount: 2, elements: .bool([true, false]))))
        e = Self.error(Self.patched(bools, 65, [2]))
        #expect(e?.code == .invalidValue && e?.field == "array.elements[1]" && e?.offset == 65)

        let config = Frame(
            encoding: .configuration(
                Configuration(
                    deviceName: "", deviceType: "", channels: [ChannelConfiguration(index: 0, description: "", samplingRate: 1)])))
        e = Self.error(Self.patched(config, 40 + 12 + 4, [7]))
        #expect(e?.code == .invalidValue && e?.field == "channel.direction")

        let trailing = Frame(encoding: .credit(5))
        var bytes = trailing.encodedBytes + [UInt8](repeating: 0, count: 8)
        bytes.replaceSubrange(12..<16, with: Self.le32(16))
        e = Self.error(bytes)
        #expect(e?.code == .lengthMismatch && e?.field == "credit.payload_length")
    }

    @Test func misalignedBufferIsRefused() throws {
        let frame = Frame(encoding: .start)
        let buffer = FrameBuffer(copying: [0, 0, 0, 0] + frame.encodedBytes)
        #expect(throws: WireError.self) { try Frame(decoding: buffer, at: 4) }
    }
}
