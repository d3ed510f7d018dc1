import Foundation
import Testing
import TributaryWire

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
        let keys: [[UInt8]] = [
            [], [0], [0, 0], [0, 0, 0, 0, 0], [0, 1], [1], Array(repeating: 0, count: 16), Array(repeating: 0, count: 17),
        ]
        let set = Set(keys.map { RoutingKey($0) })
        #expect(set.count == keys.count)
        var table: [RoutingKey: Int] = [:]
        for (index, key) in keys.enumerated() { table[RoutingKey(key)] = index }
        for (index, key) in keys.enumerated() { #expect(table[RoutingKey(key)] == index) }
    }

    /// Peers that choose their own routing ids, long ones (kept apart from the inline keys) sharing
    /// their first 16 bytes and short ones differing only in a trailing zero: each its own session,
    /// and what each sends is credited to it.
    @Test func sessionsOfPeersWithTheirOwnRoutingIdsStayApart() throws {
        let inbox = Inbox()
        let publisher = try makePublisher(inbox: inbox)
        defer { publisher.stop() }
        let prefix = [UInt8](repeating: 0x41, count: 16)
        let ids: [[UInt8]] = [
            prefix + Array("-one".utf8), prefix + Array("-two".utf8), Array(repeating: 0x42, count: 255),
            [7, 0], [7, 0, 0],
        ]
        var clients: [RawClient] = []
        for (index, id) in ids.enumerated() {
            let client = try RawClient(port: publisher.port!, routingID: id)
            try client.socket.setOption(.receiveTimeout, Int32(5_000))
            try client.send(.hello(Hello(apiKey: "secret", clientDescription: "peer \(index)", timeoutSeconds: 5)))
            #expect(client.receive(until: .welcome) != nil, "peer \(index)")
            clients.append(client)
        }
        #expect(publisher.subscribers().count == ids.count)
        for (index, client) in clients.enumerated() {
            try client.send(.message(Message("from \(index)")), sequence: 1)
        }
        #expect(waitUntil { inbox.all.count == ids.count })
        for package in inbox.all {
            guard case .message(let m) = package.package.content else { Issue.record("not a message"); continue }
            #expect(m.text == "from " + package.subscriberDescription.dropFirst("peer ".count))
        }
    }
}
