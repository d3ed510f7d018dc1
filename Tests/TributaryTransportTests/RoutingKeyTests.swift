import Testing
@testable import TributaryTransport

/// The publisher's routing-id keys: equal exactly when the bytes are, inline or not.
@Suite struct RoutingKeyTests {
    @Test(arguments: [0, 1, 5, 8, 15, 16, 17, 64, 255])
    func keyKeepsTheBytesAndComparesByThem(length: Int) {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let key = RoutingKey(bytes)
        #expect(key.bytes == bytes)
        #expect(bytes.withUnsafeBytes { RoutingKey($0) } == key)
        #expect(RoutingKey(bytes).hashValue == key.hashValue)
        if length > 0 {
            var other = bytes
            other[length - 1] ^= 1
            #expect(RoutingKey(other) != key)
        }
        #expect(RoutingKey(bytes + [0]) != key)  // a trailing zero byte is a different id
    }

    @Test func idsThatDifferOnlyInTrailingZerosOrLengthAreDifferentKeys() {
        let keys: [[UInt8]] = [[], [0], [0, 0], [0, 0, 0, 0, 0], [0, 1], [1], Array(repeating: 0, count: 16), Array(repeating: 0, count: 17)]
        let set = Set(keys.map { RoutingKey($0) })
        #expect(set.count == keys.count)
        var table: [RoutingKey: Int] = [:]
        for (index, key) in keys.enumerated() { table[RoutingKey(key)] = index }
        for (index, key) in keys.enumerated() { #expect(table[RoutingKey(key)] == index) }
    }
}
