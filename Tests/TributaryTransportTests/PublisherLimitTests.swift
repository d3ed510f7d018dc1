import Foundation
import Synchronization
import Testing
import TributaryWire

@testable import TributaryTransport

/// The publisher's bounds on what peers can make it hold (docs/PROTOCOL.md §4.8), through the library.
@Suite(.serialized) struct PublisherLimitTests {
    @Test func helloBeyondTheSessionLimitIsRefusedWithErrorFifteen() throws {
        let publisher = try makePublisher { $0.maxSessions = 2 }
        defer { publisher.stop() }
        let clients = try (0..<3).map { _ in try RawClient(port: publisher.port!) }
        for client in clients.prefix(2) {
            try client.hello()
            #expect(client.receive(until: .welcome) != nil)
        }
        try clients[2].hello()
        let report = errorReport(in: clients[2].receive(until: .close))
        #expect(report?.code == .publisherFull)
        #expect(report?.message.contains("limit") == true)
        #expect(publisher.subscribers().count == 2)
    }

    @Test func aSessionSendingMoreFramesThanAllowedGetsErrorSixteen() throws {
        // 1 000 a second: at most 100 within one 100 ms window.
        let publisher = try makePublisher { $0.maxInboundFramesPerSecond = 1_000 }
        defer { publisher.stop() }
        let client = try RawClient.welcomed(port: publisher.port!)
        for sequence in 1...300 { try client.send(.credit(1), sequence: UInt64(sequence)) }
        let report = errorReport(in: client.receive(until: .close))
        #expect(report?.code == .tooManyFrames)
        #expect(report?.message.contains("more than 100 frames within 100 ms") == true)
        #expect(waitUntil(.seconds(3)) { publisher.subscribers().isEmpty })
    }

    @Test func aSessionWithinTheFrameRateKeepsGoing() throws {
        let publisher = try makePublisher { $0.maxInboundFramesPerSecond = 1_000 }
        defer { publisher.stop() }
        let client = try RawClient.welcomed(port: publisher.port!)
        // 90 frames, a pause longer than the window, 90 more: never more than 100 in 100 ms.
        for sequence in 1...90 { try client.send(.credit(1), sequence: UInt64(sequence)) }
        usleep(150_000)
        for sequence in 91...180 { try client.send(.credit(1), sequence: UInt64(sequence)) }
        usleep(100_000)
        #expect(publisher.subscribers().count == 1)
    }

    @Test func aBurstOfSubjectsBeyondThePendingLimitAllOpen() throws {
        // One connection without a session at most: most of the 48 are closed at once, some after
        // their hello left. Each Subject must still open (a new connection, its hello sent again).
        let publisher = try makePublisher { $0.maxPendingPeers = 1 }
        defer { publisher.stop() }
        let port = publisher.port!
        let outcomes = Mutex<[String]>([])
        let done = DispatchGroup()
        for index in 0..<48 {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                do {
                    let subject = try Subject()
                    defer { subject.close() }
                    _ = try subject.open(address: "127.0.0.1", port: port, apiKey: "secret", description: "burst \(index)", timeout: 4)
                    outcomes.withLock { $0.append("open") }
                } catch {
                    outcomes.withLock { $0.append("\(error)") }
                }
            }
        }
        done.wait()
        let all = outcomes.withLock { $0 }
        #expect(all.count == 48)
        #expect(all.allSatisfy { $0 == "open" }, "\(all.filter { $0 != "open" })")
    }

    @Test func nonFiniteTimeoutsAreRefusedAndHugeOnesCapped() throws {
        let publisher = try makePublisher { $0.maxSessionTimeout = .seconds(2) }
        defer { publisher.stop() }
        for timeout in [Double.infinity, .nan] {
            let client = try RawClient(port: publisher.port!)
            try client.hello(timeout: timeout)
            #expect(errorReport(in: client.receive(until: .close))?.code == .wrongTimeout)
        }
        // 1e9 s asked, 2 s granted: a silent session expires after about 2 s with error 4.
        let silent = try RawClient(port: publisher.port!)
        try silent.socket.setOption(.receiveTimeout, 6_000)
        try silent.hello(timeout: 1e9)
        #expect(silent.receive(until: .welcome) != nil)
        #expect(errorReport(in: silent.receive(until: .close))?.code == .expiredTimeout)
    }

    @Test func aSessionEndsWithItsConnection() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        var client: RawClient? = try RawClient(port: publisher.port!)
        try client!.hello(timeout: 3_000)
        #expect(client!.receive(until: .welcome) != nil)
        #expect(publisher.subscribers().count == 1)
        client = nil  // the DEALER closes: no close frame, no keepalive, a 3 000 s timeout
        #expect(waitUntil(.seconds(3)) { publisher.subscribers().isEmpty })
    }

    @Test func connectionsBeyondThePendingLimitAreClosed() throws {
        let publisher = try makePublisher { $0.maxPendingPeers = 2 }
        defer { publisher.stop() }
        var raw: [Int32] = []
        defer { for fd in raw { close(fd) } }
        for _ in 0..<4 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(publisher.port!).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            #expect(rc == 0)
            raw.append(fd)
        }
        // Two stay open (they may still greet), the other two are closed by the publisher: a read
        // of a closed connection returns 0 (end of stream) once the greeting bytes are consumed.
        var closed = 0
        for fd in raw {
            var timeout = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 256)
            var ended = false
            for _ in 0..<4 {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n == 0 { ended = true; break }
                if n < 0 { break }
            }
            if ended { closed += 1 }
        }
        #expect(closed == 2)
        // A real subscriber still gets in once a slot is free.
        for fd in raw { close(fd) }
        raw.removeAll()
        let client = try RawClient.welcomed(port: publisher.port!)
    }
}
