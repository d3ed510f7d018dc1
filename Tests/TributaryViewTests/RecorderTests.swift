import Foundation
import Glibc
import Synchronization
import Testing
import TributaryText

@testable import TributaryView

/// A backend that records nothing: it counts what it is asked (the requests' checks are the subject).
final class CountingBackend: RecorderBackend {
    let starts = Atomic<Int>(0)
    func start(_ plan: RecorderPlan) throws(RecorderRefusal) -> JSON {
        starts.add(1, ordering: .relaxed)
        return .object([("file", .string(plan.name))])
    }
    func stop() throws(RecorderRefusal) -> JSON { throw RecorderRefusal(409, "nothing is recording") }
    func status() -> JSON { .object([("recording", .null), ("last", .null)]) }
}

@Suite struct RecorderNameTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "tributary-recorder-names-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    @Test func plainNamesAreWrittenInTheDirectory() throws {
        let (name, path) = try RecorderEndpoints.checkName("lab", in: directory)
        #expect(name == "lab.tcap")
        #expect(path == directory + "/lab.tcap")
        #expect(try RecorderEndpoints.checkName("run 2 é.tcap", in: directory).name == "run 2 é.tcap")
    }

    @Test(arguments: [
        "", "/etc/passwd", "/tmp/x.tcap", "../x.tcap", "a/../../x", "sub/x.tcap", "a\\b", "..", ".", ".hidden", "a..b",
        "nul\u{0}name", "tab\tname", "del\u{7F}", String(repeating: "n", count: 96),
    ])
    func badNamesAreRefusedWith400(name: String) {
        #expect(throws: RecorderRefusal.self) { try RecorderEndpoints.checkName(name, in: directory) }
        do { _ = try RecorderEndpoints.checkName(name, in: directory) } catch { #expect(error.status == 400, "\(name.debugDescription)") }
    }

    @Test func existingFilesAndPartialsAndLinksAreNeverReplaced() throws {
        for made in ["taken.tcap", "crashed.tcap.partial"] {
            FileManager.default.createFile(atPath: directory + "/" + made, contents: Data([1]))
        }
        symlink("/nonexistent/elsewhere.tcap", directory + "/link.tcap")
        for name in ["taken", "crashed.tcap", "link.tcap"] {
            do {
                _ = try RecorderEndpoints.checkName(name, in: directory)
                Issue.record("\(name) was accepted")
            } catch { #expect(error.status == 409) }
        }
    }
}

@Suite(.serialized) struct RecorderAccessTests {
    /// Sends `text` to 127.0.0.1:`port` and reads the answer to its end: its status and body.
    static func exchange(_ port: Int, _ text: String) -> (status: Int, body: String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return (0, "connect failed") }
        _ = Array(text.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            answer += buffer[0..<n]
        }
        let response = String(decoding: answer, as: UTF8.self)
        let status = Int(response.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
        let body = response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (status, body)
    }

    static func post(_ port: Int, _ path: String, _ body: String, type: String? = "application/json", length: Int? = nil) -> (
        status: Int, body: String
    ) {
        exchange(
            port,
            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + (type.map { "Content-Type: \($0)\r\n" } ?? "")
                + "Content-Length: \(length ?? body.utf8.count)\r\n\r\n" + body)
    }

    static func server(host: String, token: String?, recorder: RecorderEndpoints?) throws -> HTTPServer {
        var settings = HTTPServer.Settings(host: host, port: 0, token: token)
        settings.recorder = recorder
        return try HTTPServer(settings: settings, page: Array("page".utf8), onConnect: { _ in }, onMessage: { _, _ in })
    }

    let backend = CountingBackend()
    var endpoints: RecorderEndpoints { RecorderEndpoints(directory: NSTemporaryDirectory(), backend: backend) }

    @Test func withoutARecordDirectoryThereIsNoRecorder() throws {
        let server = try Self.server(host: "127.0.0.1", token: nil, recorder: nil)
        defer { server.stop() }
        let answer = Self.exchange(server.port, "GET /recorder HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(answer.status == 404)
        #expect(answer.body.contains("--record-dir"))
    }

    @Test func aViewOpenToOtherMachinesWithoutATokenRefusesTheRecorder() throws {
        let server = try Self.server(host: "0.0.0.0", token: nil, recorder: endpoints)
        defer { server.stop() }
        let answer = Self.post(server.port, "/recorder/start", #"{"name":"x","streams":[]}"#)
        #expect(answer.status == 403)
        #expect(answer.body.contains("loopback"))
        #expect(Self.exchange(server.port, "GET /recorder HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").status == 403)
        #expect(backend.starts.load(ordering: .relaxed) == 0)
    }

    @Test func withItsTokenTheSameViewAnswers() throws {
        let server = try Self.server(host: "0.0.0.0", token: "0123456789abcdef0123456789abcdef", recorder: endpoints)
        defer { server.stop() }
        #expect(Self.exchange(server.port, "GET /recorder HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").status == 403)
        let answer = Self.exchange(server.port, "GET /recorder?token=0123456789abcdef0123456789abcdef HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(answer.status == 200)
        #expect(answer.body == #"{"recording":null,"last":null}"#)
    }

    @Test func bodiesAreTypedSizedAndChecked() throws {
        let server = try Self.server(host: "127.0.0.1", token: nil, recorder: endpoints)
        defer { server.stop() }
        let port = server.port
        #expect(Self.post(port, "/recorder/start", "{}", type: "text/plain").status == 415)
        #expect(Self.post(port, "/recorder/start", "{}", length: RecorderEndpoints.maxBodyBytes + 1).status == 413)
        #expect(Self.post(port, "/recorder/start", "[1]").status == 400)
        #expect(Self.post(port, "/recorder/start", #"{"name":"../x","streams":[]}"#).status == 400)
        #expect(Self.post(port, "/recorder/start", #"{"name":"x","streams":[]}"#).status == 400)
        let unknown = Self.post(port, "/recorder/start", #"{"name":"x","streams":[{"address":"tcp://10.0.0.1:5","source":1}]}"#)
        #expect(unknown.status == 400)
        #expect(unknown.body.contains("last discovery"))
        let fractional = Self.post(port, "/recorder/start", #"{"name":"x","streams":[{"address":"tcp://10.0.0.1:5","source":1.5}]}"#)
        #expect(fractional.status == 400)
        #expect(Self.post(port, "/recorder/start", #"{"name":"x","streams":[{"address":"a","source":true}]}"#).status == 400)
        #expect(Self.post(port, "/recorder/resolve", #"{"timeout":1e300}"#).status == 400)
        #expect(Self.post(port, "/recorder/resolve", #"{"timeout":false}"#).status == 400)
        #expect(Self.post(port, "/recorder/stop", "").status == 409)
        #expect(Self.exchange(port, "GET /recorder/start HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").status == 405)
        #expect(Self.post(port, "/", "{}").status == 405)
        #expect(Self.post(port, "/recorder/other", "{}").status == 404)
        #expect(backend.starts.load(ordering: .relaxed) == 0)
    }
}
