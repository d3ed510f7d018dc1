import Foundation
import Synchronization
import Testing

@testable import TributaryTransport

/// Loop-side state of the tests: lives and dies on the loop thread.
final class EchoState {
    let router: ZMQSocket
    var commandsRun = 0
    var ticks = 0
    let deinitThreadName: ZMQLoopBox<String?>

    init(router: ZMQSocket, deinitThreadName: ZMQLoopBox<String?>) {
        self.router = router
        self.deinitThreadName = deinitThreadName
    }

    deinit {
        // Record where the state died and whether the scope had closed its socket before.
        let report = "\(currentThreadName()) closed=\(router.isClosed)"
        deinitThreadName.value.withLock { $0 = report }
    }
}

@Suite struct ZMQLoopTests {
    func makeEchoLoop(_ context: ZMQContext, endpoint: String, deinitThread: ZMQLoopBox<String?>) throws -> ZMQLoop<EchoState> {
        try ZMQLoop(name: "test-echo", context: context) { scope in
            let router = try ZMQSocket(context: scope.context, type: .router)
            try router.setOption(.routerMandatory, 1)
            try router.bind(endpoint)
            // Echo every message back to its sender, on the loop thread.
            scope.register(router) { socket, events in
                guard events.contains(.readable) else { return }
                while let parts = try? socket.receiveMultipart(flags: .dontWait) {
                    try? socket.send(multipart: parts.map(\.bytes), flags: .dontWait)
                }
            }
            return EchoState(router: router, deinitThreadName: deinitThread)
        }
    }

    /// A loop named `name` whose state is a PAIR socket bound at `endpoint`, each readiness of it handed
    /// to `readable` on the loop thread, and a PAIR socket connected to it from the test (the caller
    /// shuts the loop down and closes the peer).
    func makePairLoop(
        _ context: ZMQContext, name: String, endpoint: String, readable: @escaping @Sendable (ZMQSocket) -> Void
    ) throws -> (loop: ZMQLoop<ZMQSocket>, peer: ZMQSocket) {
        let loop = try ZMQLoop<ZMQSocket>(name: name, context: context) { scope in
            let socket = try ZMQSocket(context: scope.context, type: .pair)
            try socket.bind(endpoint)
            scope.register(socket) { socket, _ in readable(socket) }
            return socket
        }
        do {
            let peer = try testSocket(context, .pair)
            do { try peer.connect(endpoint) } catch {
                peer.close()
                throw error
            }
            return (loop, peer)
        } catch {
            loop.shutdown()
            throw error
        }
    }

    @Test func handlesSocketsCommandsAndTimersThenShutsDownCleanly() throws {
        let context = try ZMQContext()
        let deinitThread = ZMQLoopBox<String?>(nil)
        let loop = try makeEchoLoop(context, endpoint: "inproc://echo", deinitThread: deinitThread)
        #expect(loop.isRunning)

        let dealer = try testSocket(context, .dealer)
        try dealer.connect("inproc://echo")
        try dealer.send(multipart: [Array("ping".utf8), [1, 2]])
        #expect(try dealer.receiveMultipart().map(\.bytes) == [Array("ping".utf8), [1, 2]])

        for _ in 0..<10 { try loop.perform { state, _ in state.commandsRun += 1 } }
        let (count, threadName) = try loop.performAndWait { state, _ in (state.commandsRun, currentThreadName()) }
        #expect(count == 10)
        #expect(threadName == "test-echo")

        try loop.performAndWait { state, scope in scope.addTimer(every: .milliseconds(2)) { state.ticks += 1 } }
        #expect(eventually { (try? loop.performAndWait { state, _ in state.ticks }) ?? 0 >= 3 })

        #expect(throws: ZMQError.self) {
            try loop.performAndWait { (_, _) throws -> Int in throw ZMQError(.invalidArgument, operation: "test") }
        }

        loop.shutdown()
        #expect(!loop.isRunning)
        // The scope closed the registered socket, then the state was released on the loop thread,
        // all before shutdown() returned.
        #expect(deinitThread.value.withLock { $0 } == "test-echo closed=true")
        #expect(throws: ZMQLoopError.self) { try loop.perform { _, _ in } }
        #expect(throws: ZMQLoopError.self) { try loop.performAndWait { _, _ in 1 } }
        loop.shutdown()  // idempotent
    }

    @Test func performAndWaitFromTheLoopThreadIsRefused() throws {
        let context = try ZMQContext()
        let deinitThread = ZMQLoopBox<String?>(nil)
        let loop = try makeEchoLoop(context, endpoint: "inproc://self-wait", deinitThread: deinitThread)
        let outcome = ZMQLoopBox<String?>(nil)
        try loop.perform { _, _ in
            do { _ = try loop.performAndWait { _, _ in 1 }; outcome.value.withLock { $0 = "ran" } } catch {
                outcome.value.withLock { $0 = "\(error)" }
            }
        }
        #expect(eventually { outcome.value.withLock { $0 } != nil })
        #expect(outcome.value.withLock { $0 }?.contains("from its own thread") == true)
        loop.shutdown()
    }

    @Test func failingStateCreationThrowsFromInit() throws {
        let context = try ZMQContext()
        #expect(throws: ZMQError.self) {
            _ = try ZMQLoop<Int>(name: "test-fail", context: context) { scope in
                let socket = try ZMQSocket(context: scope.context, type: .router)
                scope.register(socket) { _, _ in }
                try socket.bind("nonsense://")
                return 0
            }
        }
    }

    @Test func preciseWakeRunsOnceAtItsLatestDeadlineBesideTheSockets() throws {
        let context = try ZMQContext()
        // Wake times, and the deadline they were for; a socket registered too, so the timerfd sits
        // after it in the poll set and the socket's handler must still be the one called for it.
        let woke = ZMQLoopBox<[(at: UInt64, deadline: UInt64)]>([])
        let pairMessages = ZMQLoopBox<Int>(0)
        let (loop, peer) = try makePairLoop(context, name: "test-precise", endpoint: "inproc://precise") { socket in
            while (try? socket.receiveMultipart(flags: .dontWait)) != nil { pairMessages.value.withLock { $0 += 1 } }
        }
        defer { loop.shutdown() }
        defer { peer.close() }
        let deadlines = ZMQLoopBox<(first: UInt64, second: UInt64)>((0, 0))
        try loop.performAndWait { _, scope in
            let now = monotonicNanoseconds()
            let first = now + 20_000_000, second = now + 60_000_000
            deadlines.value.withLock { $0 = (first, second) }
            scope.setPreciseWakeHandler {
                let at = monotonicNanoseconds()
                woke.value.withLock { $0.append((at, deadlines.value.withLock { $0.second })) }
            }
            scope.wake(atMonotonicNanoseconds: first)
            scope.wake(atMonotonicNanoseconds: second)  // replaces the first
        }
        try peer.send(multipart: [[1, 2, 3]], flags: [])
        #expect(eventually { woke.value.withLock { $0.count } == 1 && pairMessages.value.withLock { $0 } == 1 })
        Thread.sleep(forTimeInterval: 0.05)
        let wakes = woke.value.withLock { $0 }
        #expect(wakes.count == 1)
        #expect(wakes.allSatisfy { $0.at >= $0.deadline })
    }

    /// The loop reads a socket's `ZMQ_EVENTS` before it sleeps, not after every wake-up: messages its
    /// handler left unread (libzmq signals the socket's descriptor once for them) and replies to what
    /// the loop itself sent are handled all the same.
    @Test func pendingMessagesAreHandledWithoutANewSignal() throws {
        let context = try ZMQContext()
        let handled = ZMQLoopBox<Int>(0)
        // One message a call: the rest stay queued without a new signal on the socket's ZMQ_FD.
        let (loop, peer) = try makePairLoop(context, name: "test-pending", endpoint: "inproc://pending") { socket in
            if (try? socket.receiveMultipart(flags: .dontWait)) != nil { handled.value.withLock { $0 += 1 } }
        }
        defer { loop.shutdown() }
        defer { peer.close() }
        for k in 0..<200 { try peer.send(multipart: [[UInt8(k & 0xff)]]) }
        #expect(eventually { handled.value.withLock { $0 } == 200 })
        // The loop sends from a command; the peer's answer wakes it through the socket again.
        for k in 0..<20 {
            try loop.performAndWait { socket, _ in try socket.send(multipart: [[UInt8(k)]], flags: .dontWait) }
            #expect(try peer.receiveMultipart().map(\.bytes) == [[UInt8(k)]])
            try peer.send(multipart: [[UInt8(k)]])
            #expect(eventually { handled.value.withLock { $0 } == 201 + k })
        }
    }

    /// A wake-up by a command reads no socket's `ZMQ_EVENTS` before the command runs, and one read per
    /// socket before the loop sleeps again (zmq_poll read each socket's twice a round).
    @Test func aCommandWakeUpReadsEachSocketsEventsOnce() throws {
        let context = try ZMQContext()
        let loop = try ZMQLoop<Int>(name: "test-reads", context: context) { scope in
            for k in 0..<2 {
                let socket = try ZMQSocket(context: scope.context, type: .pair)
                try socket.bind("inproc://reads-\(k)")
                scope.register(socket) { _, _ in }
            }
            return 0
        }
        defer { loop.shutdown() }
        var readsBefore: [Int] = []
        for _ in 0..<50 {
            readsBefore.append(try loop.performAndWait { _, scope in scope.socketEventReads })
            Thread.sleep(forTimeInterval: 0.001)
        }
        // Between two commands the loop slept once (or a few times, on its own timers: none here).
        let perWake = zip(readsBefore.dropFirst(), readsBefore).map { $0 - $1 }
        #expect(perWake.allSatisfy { $0 == 2 }, "ZMQ_EVENTS reads between commands: \(perWake)")
    }

    @Test func stopFromAHandlerEndsTheLoop() throws {
        let context = try ZMQContext()
        let loop = try ZMQLoop<Int>(name: "test-stop", context: context) { _ in 0 }
        try loop.perform { _, scope in scope.stop() }
        #expect(eventually { !loop.isRunning })
        loop.shutdown()
        #expect(!loop.isRunning)
    }

    @Test func contextShutdownStopsTheLoopWithTerminated() throws {
        let context = try ZMQContext()
        let failure = ZMQLoopBox<ZMQError?>(nil)
        final class Probe {
            let failure: ZMQLoopBox<ZMQError?>
            weak var scope: ZMQLoopScope?
            init(_ failure: ZMQLoopBox<ZMQError?>) { self.failure = failure }
            deinit { let error = scope?.failure; failure.value.withLock { $0 = error } }
        }
        let loop = try ZMQLoop<Probe>(name: "test-term", context: context) { scope in
            let socket = try ZMQSocket(context: scope.context, type: .pair)
            try socket.bind("inproc://term")
            scope.register(socket) { _, _ in }
            let probe = Probe(failure)
            probe.scope = scope
            return probe
        }
        context.shutdown()
        loop.shutdown()
        #expect(failure.value.withLock { $0 }?.code == .terminated)
    }
}
