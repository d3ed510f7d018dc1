// Both Glibc and CSocketControl: <sys/socket.h> is not a modular header, so its declarations
// (SOCK_STREAM, …) belong to whichever of the two clang modules a clean build loads first — which
// changed with the files of this target: a clean build then could not find SOCK_STREAM.
import CSocketControl
import Foundation
import Glibc
import Synchronization

@testable import TributaryTransport

/// Waits (polling every 2 ms) until `condition` holds or `timeout` passes; returns whether it held.
/// A bound so that a broken transport fails the test instead of hanging it — not a timing assertion.
func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}

/// Counts `deinit`s of the objects that report to it.
final class DeinitCounter: Sendable {
    let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .sequentiallyConsistent) }
}

/// Owns a heap buffer filled with a pattern and counts its own deinit: the owner of zero-copy sends.
///
/// `@unchecked Sendable`: the buffer is written once in `init` and only read afterwards (by libzmq's
/// I/O thread while sending); it is freed in `deinit`, after libzmq released its last reference.
final class CountedBytes: @unchecked Sendable {
    let buffer: UnsafeMutableRawBufferPointer
    let counter: DeinitCounter

    init(count: Int, seed: UInt8, counter: DeinitCounter) {
        buffer = .allocate(byteCount: count, alignment: 16)
        for index in 0..<count { buffer[index] = pattern(index, seed) }
        self.counter = counter
    }

    deinit {
        buffer.deallocate()
        counter.count.add(1, ordering: .sequentiallyConsistent)
    }
}

/// The test byte pattern: position- and seed-dependent so that a stale or shifted view is detected.
func pattern(_ index: Int, _ seed: UInt8) -> UInt8 { UInt8(truncatingIfNeeded: index &* 31 &+ Int(seed)) }

/// Whether `bytes` hold the pattern for `seed`.
func holdsPattern(_ bytes: UnsafeRawBufferPointer, seed: UInt8) -> Bool {
    for index in bytes.indices where bytes[index] != pattern(index, seed) { return false }
    return true
}

/// A socket with short send/receive timeouts, so that a test never blocks forever.
func testSocket(_ context: ZMQContext, _ type: ZMQSocketType, timeoutMs: Int32 = 3_000) throws -> ZMQSocket {
    let socket = try ZMQSocket(context: context, type: type)
    try socket.setOption(.receiveTimeout, timeoutMs)
    try socket.setOption(.sendTimeout, timeoutMs)
    return socket
}

/// Reads monitor events until one of `wanted` arrives (or the monitor's receive times out).
func waitForEvent(_ monitor: ZMQMonitor, _ wanted: ZMQMonitorEvents) throws -> ZMQMonitorEvent? {
    try monitor.socket.setOption(.receiveTimeout, 3_000)
    while true {
        let event: ZMQMonitorEvent?
        do throws(ZMQError) {
            event = try monitor.receiveEvent()
        } catch {
            if error.code == .again { return nil }
            throw error
        }
        if let event, !event.event.isDisjoint(with: wanted) { return event }
    }
}

/// A TCP peer that completes a ZMTP 3.1 NULL handshake as a DEALER and then goes silent — it never
/// answers heartbeat PINGs, like a frozen (SIGSTOPped) subscriber.
final class FrozenZMTPPeer {
    private let fd: Int32

    /// Connects to `127.0.0.1:port` and sends greeting + READY.
    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EBADF) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { close(fd); throw POSIXError(.ECONNREFUSED) }
        // Greeting: signature, version 3.1, mechanism "NULL", as-server 0, filler.
        var greeting = [UInt8](repeating: 0, count: 64)
        greeting[0] = 0xFF
        greeting[9] = 0x7F
        greeting[10] = 3
        greeting[11] = 1
        for (index, byte) in "NULL".utf8.enumerated() { greeting[12 + index] = byte }
        // READY command with Socket-Type=DEALER.
        var body: [UInt8] = [5] + Array("READY".utf8)
        body += [11] + Array("Socket-Type".utf8) + [0, 0, 0, 6] + Array("DEALER".utf8)
        let ready: [UInt8] = [0x04, UInt8(body.count)] + body
        let all = greeting + ready
        guard all.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == all.count else {
            close(fd)
            throw POSIXError(.EIO)
        }
    }

    deinit { close(fd) }
}

/// The kernel name of the calling thread (Linux: /proc/thread-self/comm).
func currentThreadName() -> String {
    let text = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return text.trimmingCharacters(in: .newlines)
}

/// A ROUTER that refuses unknown routing ids (mandatory routing), bound to `endpoint`.
func mandatoryRouter(_ context: ZMQContext, _ endpoint: String) throws -> ZMQSocket {
    let router = try testSocket(context, .router)
    try router.setOption(.routerMandatory, 1)
    try router.bind(endpoint)
    return router
}

/// A mandatory ROUTER bound to `endpoint` and a DEALER with routing id `routingID` connected to it.
func routerAndDealer(_ context: ZMQContext, _ endpoint: String, routingID: String) throws -> (router: ZMQSocket, dealer: ZMQSocket) {
    let router = try mandatoryRouter(context, endpoint)
    let dealer = try testSocket(context, .dealer)
    try dealer.setOption(.routingID, routingID)
    try dealer.connect(try router.lastEndpoint())
    return (router, dealer)
}
