import Testing

@testable import TributaryTransport

/// The port of a `tcp://HOST:PORT` endpoint.
func port(of endpoint: String) -> UInt16? {
    endpoint.split(separator: ":").last.flatMap { UInt16($0) }
}

@Suite struct ZMQSocketTests {
    @Test(arguments: ["inproc://round-trip", "tcp://127.0.0.1:0"])
    func routerDealerMultipartRoundTrip(endpoint: String) throws {
        let context = try ZMQContext()
        let (router, dealer) = try routerAndDealer(context, endpoint, routingID: "subscriber-1")

        try dealer.send(multipart: [Array("hello".utf8), [], [1, 2, 3]])
        let request = try router.receiveMultipart()
        #expect(request.map(\.bytes) == [Array("subscriber-1".utf8), Array("hello".utf8), [], [1, 2, 3]])
        #expect(request.map(\.hasMore) == [true, true, true, false])

        try router.send(multipart: [Array("subscriber-1".utf8), Array("reply".utf8), [9]], flags: .dontWait)
        let reply = try dealer.receiveMultipart()
        #expect(reply.map(\.bytes) == [Array("reply".utf8), [9]])
    }

    @Test func lastEndpointReportsTheChosenPort() throws {
        let context = try ZMQContext()
        let router = try testSocket(context, .router)
        try router.bind("tcp://127.0.0.1:0")
        let endpoint = try router.lastEndpoint()
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        #expect((port(of: endpoint) ?? 0) > 0)
        try router.unbind(endpoint)
        #expect(throws: ZMQError.self) { try router.unbind(endpoint) }
    }

    @Test func routerMandatoryUnknownPeerIsHostUnreachable() throws {
        let context = try ZMQContext()
        let router = try testSocket(context, .router)
        try router.setOption(.routerMandatory, 1)
        try router.bind("inproc://mandatory")
        do {
            try router.send(Array("nobody".utf8), flags: [.dontWait, .sendMore])
            Issue.record("send to an unknown routing id succeeded")
        } catch {
            #expect(error.code == .hostUnreachable)
            #expect(error.operation.description == "zmq_send")
            #expect(error.description.contains("zmq_send"))
        }
    }

    @Test func fullPipeReturnsAgainInsteadOfBlocking() throws {
        let context = try ZMQContext()
        let router = try testSocket(context, .router)
        try router.setOption(.routerMandatory, 1)
        try router.setOption(.sendHighWaterMark, 1)
        try router.bind("inproc://full-pipe")
        let dealer = try testSocket(context, .dealer)
        try dealer.setOption(.receiveHighWaterMark, 1)
        try dealer.setOption(.routingID, "slow")
        try dealer.connect("inproc://full-pipe")
        try dealer.send(Array("hello".utf8))
        _ = try router.receiveMultipart()

        // The dealer never reads: within a few messages the pipe is full and the send must fail at once.
        var sent = 0
        var failure: ZMQError?
        while sent < 10_000 && failure == nil {
            do throws(ZMQError) {
                try router.send(Array("slow".utf8), flags: [.dontWait, .sendMore])
                try router.send([UInt8](repeating: 7, count: 64), flags: .dontWait)
                sent += 1
            } catch {
                failure = error
            }
        }
        #expect(failure?.code == .again)
        #expect(sent < 10_000)
    }

    @Test func optionsRoundTrip() throws {
        let context = try ZMQContext()
        let socket = try testSocket(context, .dealer)
        #expect(try socket.option(.linger) == 0)
        try socket.setOption(.sendHighWaterMark, 123)
        #expect(try socket.option(.sendHighWaterMark) == 123)
        try socket.setOption(.maxMessageSize, 1 << 20)
        #expect(try socket.option(.maxMessageSize) == 1 << 20)
        try socket.setHeartbeat(interval: .milliseconds(200), timeout: .seconds(1), ttl: .seconds(2))
        #expect(try socket.option(.heartbeatInterval) == 200)
        #expect(try socket.option(.heartbeatTimeout) == 1_000)
        try socket.setReconnect(initial: .milliseconds(100), maximum: .seconds(5))
        #expect(try socket.option(.reconnectIntervalMax) == 5_000)
        try socket.setOption(.routingID, "abc")
        #expect(try socket.option(.routingID) == Array("abc".utf8))
        #expect(try socket.fileDescriptor() >= 0)
        #expect(try socket.events() == [])  // no peer: neither readable nor writable
    }

    @Test func badEndpointErrorNamesTheEndpoint() throws {
        let context = try ZMQContext()
        let socket = try testSocket(context, .router)
        do {
            try socket.bind("nonsense://x")
            Issue.record("bind to an unknown transport succeeded")
        } catch {
            #expect(error.code == .protocolNotSupported)
            #expect(error.detail == "nonsense://x")
            #expect(error.description.contains("nonsense://x"))
        }
    }

    @Test func closedSocketThrowsNotSocket() throws {
        let context = try ZMQContext()
        let socket = try testSocket(context, .dealer)
        socket.close()
        socket.close()
        #expect(socket.isClosed)
        #expect(throws: ZMQError(.notSocket, operation: "zmq_send")) { try socket.send([1]) }
    }

    @Test func receiveTimeoutIsAgain() throws {
        let context = try ZMQContext()
        let socket = try testSocket(context, .dealer, timeoutMs: 20)
        try socket.connect("inproc://nobody-home")
        #expect(throws: ZMQError(.again, operation: "zmq_msg_recv")) { _ = try socket.receive() }
        #expect(throws: ZMQError(.again, operation: "zmq_msg_recv")) { _ = try socket.receive(flags: .dontWait) }
    }

    @Test func contextShutdownUnblocksWithTerminated() throws {
        let context = try ZMQContext()
        let socket = try testSocket(context, .dealer, timeoutMs: -1)
        try socket.connect("inproc://never")
        context.shutdown()
        #expect(throws: ZMQError(.terminated, operation: "zmq_msg_recv")) { _ = try socket.receive() }
    }

    @Test func publisherAndSubscriberProfilesApplyTheirSettings() throws {
        let context = try ZMQContext()
        var routerSettings = ZMQRouterSettings()
        routerSettings.sendHighWaterMark = 50
        routerSettings.maxInboundMessageSize = 4_096
        let router = try ZMQSocket.publisherRouter(context: context, settings: routerSettings)
        #expect(try router.option(.sendHighWaterMark) == 50)
        // No ZMTP heartbeats on the publisher (libzmq 4.3.4 aborts when one fires on a failed
        // connection); a handshake deadline and TCP keepalive instead.
        #expect(try router.option(.heartbeatInterval) == 0)
        #expect(try router.option(.handshakeInterval) == 5_000)
        #expect(try router.option(.tcpKeepalive) == 1)
        // The ROUTER never stops reading a peer (libzmq 4.3.4 aborts when a stopped, reset connection
        // resumes with a PING buffered); the publisher bounds what peers send itself.
        #expect(try router.option(.receiveHighWaterMark) == 0)
        #expect(try router.option(.maxMessageSize) == 4_096)
        try router.setOption(.receiveTimeout, 3_000)
        try router.bind("tcp://127.0.0.1:0")

        var dealerSettings = ZMQDealerSettings()
        dealerSettings.routingID = Array("sub-7".utf8)
        let dealer = try ZMQSocket.subscriberDealer(context: context, settings: dealerSettings)
        #expect(try dealer.option(.reconnectInterval) == 100)
        // No ZMTP PINGs from a subscriber either: a PING timer that fires on a connection stopped by
        // a full receive queue and then reset (a publisher dying while the subscriber pauses) aborts.
        #expect(try dealer.option(.heartbeatInterval) == 0)
        #expect(try dealer.option(.reconnectIntervalMax) == 5_000)
        #expect(try dealer.option(.maxMessageSize) == 256 << 20)
        try dealer.setOption(.receiveTimeout, 3_000)
        try dealer.connect(try router.lastEndpoint())
        try dealer.send([1])
        #expect(try router.receiveMultipart()[0].bytes == Array("sub-7".utf8))
        // ROUTER_MANDATORY is on: an unknown subscriber is an error, not a silent drop.
        #expect(throws: ZMQError(.hostUnreachable, operation: "zmq_send")) {
            try router.send(Array("sub-8".utf8), flags: [.dontWait, .sendMore])
        }
        dealerSettings.routingID = []
        #expect(throws: ZMQError.self) { _ = try ZMQSocket.subscriberDealer(context: context, settings: dealerSettings) }
    }
}
