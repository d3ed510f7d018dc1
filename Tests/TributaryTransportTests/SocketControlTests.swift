import CSocketControl
import Foundation
import Testing

@testable import TributaryTransport

/// The two TCP controls the publisher applies to libzmq's connections (Sources/CSocketControl), on a
/// real loopback connection.
@Suite struct SocketControlTests {
    /// A connected pair of TCP sockets on 127.0.0.1: (the client's end, the accepted end).
    private func loopbackPair() throws -> (Int32, Int32) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(listener, raw, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, raw, &length) == 0
                    && connect(client, raw, length) == 0
            }
        }
        guard connected else {
            close(client)
            throw POSIXError(.ECONNREFUSED)
        }
        let server = accept(listener, nil, nil)
        guard server >= 0 else {
            close(client)
            throw POSIXError(.ECONNABORTED)
        }
        return (client, server)
    }

    @Test func theReceivedByteCounterCountsWhatArrived() throws {
        let (client, server) = try loopbackPair()
        defer { close(client); close(server) }
        #expect(tributary_tcp_bytes_received(server) == 0)
        let bytes = [UInt8](repeating: 7, count: 10_000)
        #expect(write(client, bytes, bytes.count) == bytes.count)
        #expect(waitUntil(.seconds(2)) { tributary_tcp_bytes_received(server) == 10_000 })
        // Not a TCP socket: -1.
        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        #expect(tributary_tcp_bytes_received(pipeEnds[0]) == -1)
    }

    @Test func aSilencedConnectionReceivesNothingMore() throws {
        let (client, server) = try loopbackPair()
        defer { close(client); close(server) }
        #expect(write(client, "before", 6) == 6)
        #expect(waitUntil(.seconds(2)) { tributary_tcp_bytes_received(server) == 6 })
        #expect(tributary_drop_input(server) == 0)
        #expect(write(client, "after", 5) == 5)
        usleep(200_000)
        #expect(tributary_tcp_bytes_received(server) == 6)
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(recv(server, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 6)
        #expect(recv(server, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == -1)
    }
}
