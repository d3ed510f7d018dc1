import Testing

@testable import TributaryTransport

@Suite struct ZMQMonitorTests {
    @Test func seesAcceptHandshakeAndDisconnectAndTearsDownWithoutHanging() throws {
        let context = try ZMQContext()
        let router = try testSocket(context, .router)
        let monitor = try router.startMonitor()
        #expect(throws: ZMQError.self) { _ = try router.startMonitor() }
        try router.bind("tcp://127.0.0.1:0")
        let dealer = try testSocket(context, .dealer)
        try dealer.connect(try router.lastEndpoint())

        let accepted = try waitForEvent(monitor, .accepted)
        #expect(accepted?.endpoint.hasPrefix("tcp://127.0.0.1:") == true)
        #expect(try waitForEvent(monitor, .handshakeSucceeded) != nil)
        dealer.close()
        #expect(try waitForEvent(monitor, .disconnected) != nil)

        // Closing the socket stops and closes the monitor first.
        router.close()
        #expect(monitor.socket.isClosed)
        monitor.close()  // idempotent
    }

    @Test func monitorOnALoopSocketIsTornDownAtShutdown() throws {
        let context = try ZMQContext()
        let events = ZMQLoopBox<[ZMQMonitorEvents]>([])
        final class State {
            let router: ZMQSocket; let monitor: ZMQMonitor
            init(_ router: ZMQSocket, _ monitor: ZMQMonitor) { self.router = router; self.monitor = monitor }
        }
        let loop = try ZMQLoop<State>(name: "test-monitor", context: context) { scope in
            let router = try ZMQSocket(context: scope.context, type: .router)
            let monitor = try router.startMonitor()
            try router.bind("tcp://127.0.0.1:0")
            scope.register(router) { socket, _ in _ = try? socket.receiveMultipart(flags: .dontWait) }
            scope.register(monitor.socket) { _, _ in
                while let event = try? monitor.receiveEvent(flags: .dontWait) {
                    events.value.withLock { $0.append(event.event) }
                }
            }
            return State(router, monitor)
        }
        let endpoint = try loop.performAndWait { state, _ in try state.router.lastEndpoint() }
        let dealer = try testSocket(context, .dealer)
        try dealer.connect(endpoint)
        try dealer.send([1])
        #expect(eventually { events.value.withLock { $0.contains(.handshakeSucceeded) } })
        loop.shutdown()  // must not hang: monitor stopped before the router closes
        #expect(!loop.isRunning)
    }
}
