import Testing

@testable import TributaryWire

@Suite struct PropertiesTests {
    /// The example of docs/PROTOCOL.md §5.19, byte for byte.
    @Test func encodesTheProtocolExample() throws {
        let properties = SourceProperties(
            source: [Property("serial", "SN42")], channels: [ChannelProperties(index: 1, properties: [Property("gain", "2")])])
        let frame = Frame(encoding: .properties(properties), sourceID: 1)
        #expect(frame.header.kind.rawValue == 129)
        #expect(frame.header.payloadLength == 48)
        let payload = Array(frame.encodedBytes[40...])
        var expected: [UInt8] = [1, 0, 0, 0, 6, 0, 0, 0] + Array("serial".utf8) + [4, 0, 0, 0] + Array("SN42".utf8)
        expected += [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0] + Array("gain".utf8) + [1, 0, 0, 0] + Array("2".utf8) + [0]
        #expect(payload == expected)
        guard case .properties(let decoded) = try Frame(copying: frame.encodedBytes).payload() else {
            Issue.record("not a properties frame")
            return
        }
        #expect(decoded == properties)
        #expect(decoded.channel(1) == [Property("gain", "2")] && decoded.channel(0).isEmpty)
    }

    @Test func boundsAreChecked() {
        #expect(SourceProperties(source: [Property("", "x")]).violation() != nil)
        #expect(SourceProperties(source: [Property(String(repeating: "k", count: 257), "x")]).violation() != nil)
        #expect(SourceProperties(source: [Property(String(repeating: "k", count: 256), "x")]).violation() == nil)
        #expect(SourceProperties(source: [Property("k", String(repeating: "v", count: 16_385))]).violation() != nil)
        #expect(SourceProperties(source: [Property("a", "1"), Property("a", "2")]).violation() != nil)
        #expect(SourceProperties(source: (0...1_024).map { Property("k\($0)", "") }).violation() != nil)
        let big = (0..<100).map { ChannelProperties(index: UInt32($0), properties: [Property("v", String(repeating: "x", count: 16_000))]) }
        #expect(SourceProperties(channels: big).violation()?.contains("1048576") == true)
        let twice = [ChannelProperties(index: 2, properties: [Property("a", "")]), ChannelProperties(index: 2, properties: [])]
        #expect(SourceProperties(channels: twice).violation() != nil)
    }

    @Test func settingReplacesKeysInPlace() {
        let base = SourceProperties(source: [Property("a", "1"), Property("b", "2")])
        let merged = base.setting(SourceProperties(source: [Property("a", "9"), Property("c", "3")]))
        #expect(merged.source == [Property("a", "9"), Property("b", "2"), Property("c", "3")])
    }

    /// A frame of `payload` (padded to 8) with kind 129.
    private func frame(_ payload: [UInt8]) -> [UInt8] {
        let padded = payload + [UInt8](repeating: 0, count: (8 - payload.count % 8) % 8)
        var bytes = Frame(encoding: .properties(SourceProperties()), sourceID: 1).encodedBytes
        bytes = Array(bytes[..<40]) + padded
        let length = UInt32(padded.count)
        for k in 0..<4 { bytes[12 + k] = UInt8(truncatingIfNeeded: length >> (8 * UInt32(k))) }
        return bytes
    }

    private func failure(_ payload: [UInt8]) -> WireError? {
        do {
            _ = try Frame(copying: frame(payload)).payload()
            return nil
        } catch {
            return error
        }
    }

    @Test func hostileFramesAreErrorsNotTraps() {
        // Counts far beyond the bytes that follow.
        #expect(failure([0xFF, 0xFF, 0xFF, 0xFF])?.code == .countTooLarge)
        #expect(failure([0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF])?.code == .countTooLarge)
        // A key length of 2^32 - 1.
        #expect(failure([1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0])?.code == .countTooLarge)
        // An empty key, and the same key twice.
        #expect(failure([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])?.code == .invalidValue)
        let entry: [UInt8] = [1, 0, 0, 0] + Array("a".utf8) + [0, 0, 0, 0]
        #expect(failure([2, 0, 0, 0] + entry + entry + [0, 0, 0, 0])?.code == .invalidValue)
        // Channel entries out of order.
        let channel: (UInt8) -> [UInt8] = { [$0, 0, 0, 0, 0, 0, 0, 0] }
        #expect(failure([0, 0, 0, 0, 2, 0, 0, 0] + channel(3) + channel(3))?.code == .invalidValue)
        // Invalid UTF-8 in a value.
        #expect(failure([1, 0, 0, 0, 1, 0, 0, 0, 0x61, 1, 0, 0, 0, 0xFF, 0, 0, 0, 0])?.code == .invalidUTF8)
        // A payload over 1 MiB.
        #expect(failure([0, 0, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: (1 << 20) + 8))?.code == .countTooLarge)
    }
}
