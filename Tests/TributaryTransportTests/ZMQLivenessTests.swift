import Foundation
import Testing

@testable import TributaryTransport

/// Limits and liveness: oversized messages and frozen peers are cut off by libzmq itself.
@Suite struct ZMQLivenessTests {
    @Test func maxMessageSizeDisconnectsAnOversizedSender() throws {
        let context = try ZMQContext()
        let router = try testSocket(context, .router, timeoutMs: 300)
        try router.setOption(.maxMessageSize, 1_024)
        let monitor = try router.startMonitor()
        try router.bind("tcp://127.0.0.1:0")
        let dealer = try testSocket(context, .dealer)
        try dealer.connect(try router.lastEndpoint())

        try dealer.send([UInt8](repeating: 1, count: 1_024))
        #expect(try router.receiveMultipart()[1].count == 1_024)
        try dealer.send([UInt8](repeating: 2, count: 1_025))
        #expect(try waitForEvent(monitor, .disconnected) != nil)
        #expect(throws: ZMQError(.again, operation: "zmq_msg_recv")) { _ = try router.receiveMultipart() }
    }

    @Test func heartbeatDetectsAFrozenPeer() throws {
        let context = try ZMQContext()
        let router = try testSocket(context, .router)
        try router.setHeartbeat(interval: .milliseconds(50), timeout: .milliseconds(200))
        let monitor = try router.startMonitor()
        try router.bind("tcp://127.0.0.1:0")
        let peer = try FrozenZMTPPeer(port: port(of: try router.lastEndpoint())!)
        #expect(try waitForEvent(monitor, .handshakeSucceeded) != nil)
        // The peer never answers PINGs: the router must drop it on its own.
        #expect(try waitForEvent(monitor, .disconnected) != nil)
        withExtendedLifetime(peer) {}
    }

    @Test func heartbeatKeepsALivePeerConnected() throws {
        let context = try ZMQContext()
        let router = try testSocket(context, .router)
        try router.setOption(.routerMandatory, 1)
        try router.setHeartbeat(interval: .milliseconds(20), timeout: .milliseconds(100))
        try router.bind("tcp://127.0.0.1:0")
        let dealer = try testSocket(context, .dealer)
        try dealer.setOption(.routingID, "alive")
        try dealer.connect(try router.lastEndpoint())
        try dealer.send([1])
        _ = try router.receiveMultipart()
        // Several timeout periods later a live (libzmq-driven) peer still answers PINGs and is reachable.
        usleep(400_000)
        try router.send(multipart: [Array("alive".utf8), [2]], flags: .dontWait)
        #expect(try dealer.receive().bytes == [2])
    }
}
