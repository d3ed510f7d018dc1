import Foundation
import Glibc
import Testing

@testable import TributaryView

@Suite struct HostRulesTests {
    let loopback = HostRules(boundAddress: "127.0.0.1")

    @Test(arguments: ["127.0.0.1", "127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]", "[::1]:65535"])
    func namesOfThisMachineAreAnswered(host: String) {
        #expect(loopback.allows(host: host))
    }

    @Test(arguments: [
        "attacker.test", "attacker.test:8080", "127.0.0.1.attacker.test", "localhost.attacker.test:80",
        "127.0.0.2:8080", "localhost:", "localhost:123456", "localhost:80:80", "[::1", "", " localhost",
        "localhost.", "local host", "exa_mple.test",
    ])
    func otherNamesAreRefused(host: String) {
        #expect(!loopback.allows(host: host))
    }

    @Test func configuredNamesAndEveryAddressOfAnAllInterfacesBinding() {
        let rules = HostRules(boundAddress: "0.0.0.0", extraNames: ["Viewer.Lab.Example"])
        #expect(rules.allows(host: "viewer.lab.example:8080"))
        #expect(rules.allows(host: "192.168.1.20:8080"))
        #expect(!rules.allows(host: "0.0.0.0.attacker.test"))
        #expect(!rules.allows(host: "lab.example"))
        let bound = HostRules(boundAddress: "192.168.1.20")
        #expect(bound.allows(host: "192.168.1.20:8080"))
        #expect(!bound.allows(host: "192.168.1.21:8080"))
    }

    @Test func anOriginMustBeThePagesOwn() {
        #expect(loopback.allows(origin: "http://localhost:8080", host: "localhost:8080"))
        #expect(loopback.allows(origin: "HTTP://LocalHost:8080", host: "localhost:8080"))
        #expect(!loopback.allows(origin: "http://localhost:3000", host: "localhost:8080"))
        #expect(!loopback.allows(origin: "https://localhost:8080", host: "localhost:8080"))
        #expect(!loopback.allows(origin: "null", host: "localhost:8080"))
    }

    @Test func namesGivenOnTheCommandLine() {
        #expect(HostRules.normalizedName("Viewer.Example") == "viewer.example")
        #expect(HostRules.normalizedName("10.0.0.7") == "10.0.0.7")
        #expect(HostRules.normalizedName("[fe80::1]") == "[fe80::1]")
        for bad in ["", "a/b", "-a.example", "a-.example", "a..example", "[]", "[zz::1]", String(repeating: "a", count: 64) + ".example"] {
            #expect(HostRules.normalizedName(bad) == nil, "\(bad)")
        }
    }

    @Test func settingsAreChecked() {
        var settings = HTTPServer.Settings(host: "127.0.0.1", port: 0, token: nil, hostNames: ["bad/name"])
        #expect(throws: HTTPServerError.self) { try HTTPServer(settings: settings, page: [], onConnect: { _ in }, onMessage: { _, _ in }) }
        settings.hostNames = []
        settings.maxConnections = settings.maxClients
        #expect(throws: HTTPServerError.self) { try HTTPServer(settings: settings, page: [], onConnect: { _ in }, onMessage: { _, _ in }) }
        settings.maxConnections = 64
        settings.requestTimeout = .seconds(-1)
        #expect(throws: HTTPServerError.self) { try HTTPServer(settings: settings, page: [], onConnect: { _ in }, onMessage: { _, _ in }) }
    }

    @Test func webSocketKeys() {
        #expect(HTTPServer.isWebSocketKey("dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(!HTTPServer.isWebSocketKey(String(repeating: "A", count: 7_000)))
        #expect(!HTTPServer.isWebSocketKey("dGhlIHNhbXBsZSBub25jZQ"))
        #expect(!HTTPServer.isWebSocketKey("dGhlIHNhbXBsZSBub25jZQ=!"))
    }
}

/// `WebSocketReader` on one end of a socket pair, fed by the test through the other.
@Suite struct WebSocketReaderTests {
    /// A client frame: masked, `announced` overriding the length in its header.
    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, announced: UInt64? = nil) -> [UInt8] {
        let length = announced ?? UInt64(payload.count)
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if length < 126 {
            bytes.append(maskBit | UInt8(length))
        } else if length < 65_536 {
            bytes += [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((length >> UInt64(shift)) & 0xFF)) }
        }
        guard masked else { return bytes + payload }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        return bytes + mask + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
    }

    struct Outcome {
        var end: WebSocketReader.End
        var texts: [String]
        var sent: [(WebSocketReader.Opcode, [UInt8])]
        /// Bytes of the input the reader had not consumed when it ended.
        var unread: Int
    }

    /// Runs a reader over `input`, written in pieces of `piece` bytes, then the write side closed
    /// unless `keepOpen`.
    static func read(_ input: [UInt8], piece: Int = .max, keepOpen: Bool = false, maxMessageBytes: Int = 4_096) -> Outcome {
        var fds: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let sender = fds[1]
        let written = DispatchSemaphore(value: 0)
        // The writer must be done with its descriptor before it is closed: tests run in parallel,
        // and a number closed and taken by another test's socket pair must not get this test's bytes.
        defer {
            close(fds[0])  // a writer still sending fails at once (EPIPE)
            written.wait()
            close(fds[1])
        }
        let writer = Thread {
            defer { written.signal() }
            var offset = 0
            while offset < input.count {
                let n = min(piece, input.count - offset)
                let written = input[offset..<(offset + n)].withUnsafeBytes { send(sender, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
                if written <= 0 { return }
                offset += written
                if piece < input.count { usleep(200) }
            }
            if !keepOpen { shutdown(sender, Int32(SHUT_WR)) }
        }
        writer.start()
        var reader = WebSocketReader(fd: fds[0], maxMessageBytes: maxMessageBytes, idleMilliseconds: 2_000)
        var texts: [String] = []
        var sent: [(WebSocketReader.Opcode, [UInt8])] = []
        let end = reader.run(
            stop: { nil },
            send: {
                sent.append(($0, $1)); return true
            },
            onText: { texts.append(String(decoding: $0, as: UTF8.self)) })
        var unread = 0
        var scratch = [UInt8](repeating: 0, count: 65_536)
        while case let n = recv(fds[0], &scratch, scratch.count, Int32(MSG_DONTWAIT)), n > 0 { unread += n }
        return Outcome(end: end, texts: texts, sent: sent, unread: unread)
    }

    @Test(arguments: [1, 3, Int.max])
    func messagesWholeAndFragmentedInAnyPieces(piece: Int) {
        let input =
            Self.frame(1, Array(#"{"type":"ack"}"#.utf8)) + Self.frame(9, [7, 7])
            + Self.frame(1, Array("frag".utf8), fin: false) + Self.frame(0, Array("men".utf8), fin: false)
            + Self.frame(10, []) + Self.frame(0, Array("ted".utf8)) + Self.frame(2, [1, 2, 3])
            + Self.frame(8, [0x03, 0xE8])
        let outcome = Self.read(input, piece: piece)
        #expect(outcome.texts == [#"{"type":"ack"}"#, "fragmented"])
        #expect(outcome.sent.count == 1 && outcome.sent[0].0 == .pong && outcome.sent[0].1 == [7, 7])
        #expect(outcome.end == .init(code: 1000, reason: "closed by the client"))
    }

    /// The rule of issue 38 item 8: a frame is refused by the length its header announces, without
    /// waiting for its payload and reading at most 16 KiB of what follows.
    @Test(arguments: [UInt64(4_097), 65_536, 1_900_000_000, UInt64(Int64.max)])
    func aFrameIsRefusedByItsHeader(announced: UInt64) {
        let outcome = Self.read(Self.frame(2, [], announced: announced) + [UInt8](repeating: 0xAA, count: 100_000), keepOpen: true)
        #expect(outcome.end.code == 1009)
        #expect(outcome.end.reason.contains("announces \(announced)"))
        #expect(outcome.unread >= 100_000 - 16_384)
    }

    @Test func aMessageOverTheLimitInSmallFragmentsIsRefused() {
        let input =
            Self.frame(1, [UInt8](repeating: 0x61, count: 3_000), fin: false)
            + Self.frame(0, [UInt8](repeating: 0x62, count: 3_000), fin: false)
        let outcome = Self.read(input, keepOpen: true)
        #expect(outcome.end.code == 1009)
        #expect(outcome.unread >= 3_000 - 1_024)
        #expect(outcome.texts.isEmpty)
    }

    @Test func protocolErrors() {
        #expect(Self.read(Self.frame(1, Array("x".utf8), masked: false)).end.code == 1002)
        #expect(Self.read(Self.frame(9, [UInt8](repeating: 0, count: 126))).end.code == 1002)
        #expect(Self.read(Self.frame(9, [], fin: false)).end.code == 1002)
        #expect(Self.read(Self.frame(0, Array("x".utf8))).end.code == 1002)
        #expect(Self.read(Self.frame(3, [])).end.code == 1002)
        #expect(Self.read([0xC1, 0x80, 0, 0, 0, 0]).end.code == 1002)  // RSV1 without an extension
        #expect(Self.read(Self.frame(1, Array("a".utf8), fin: false) + Self.frame(1, Array("b".utf8))).end.code == 1002)
        #expect(Self.read([]).end.code == nil)  // the client went away: nothing to send
    }

    @Test func aClientThatStopsHalfwayThroughAFrameIsClosed() {
        let outcome = Self.read(Array(Self.frame(1, Array("hello".utf8)).prefix(4)), keepOpen: true)
        #expect(outcome.end.code == 1002)
        #expect(outcome.end.reason.contains("half-way"))
    }
}
