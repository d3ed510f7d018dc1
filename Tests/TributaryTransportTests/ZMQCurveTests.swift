import Foundation
import Testing

@testable import TributaryTransport

@Suite struct ZMQCurveTests {
    @Test func keyPairsAreZ85AndThePublicKeyDerivesFromTheSecret() throws {
        #expect(ZMQCurveKeyPair.isAvailable)
        let pair = try ZMQCurveKeyPair.generate()
        #expect(pair.publicKey.z85.count == 40)
        #expect(pair.secretKey.z85.count == 40)
        #expect(try ZMQCurveKeyPair(secretKey: pair.secretKey) == pair)
        #expect(ZMQCurveKey(binary: pair.publicKey.binary) == pair.publicKey)
        #expect(try ZMQCurveKeyPair.generate() != pair)
    }

    @Test func keyTextIsValidated() {
        #expect(throws: ZMQCurveKeyError.wrongLength(source: "text", length: 3)) { _ = try ZMQCurveKey(z85: "abc") }
        #expect(throws: ZMQCurveKeyError.invalidZ85(source: "text")) {
            _ = try ZMQCurveKey(z85: String(repeating: "~", count: 39) + "\"")
        }
        #expect(ZMQCurveKey(binary: [1, 2]) == nil)
    }

    @Test func keyAndAllowListFilesLoad() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-curve-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try ZMQCurveKeyPair.generate(), b = try ZMQCurveKeyPair.generate()

        let secretPath = directory.appendingPathComponent("server.key").path
        try "# secret\n\(a.secretKey.z85)\n".write(toFile: secretPath, atomically: true, encoding: .utf8)
        #expect(try ZMQCurveKeyPair.load(secretKeyFile: secretPath) == a)

        let listPath = directory.appendingPathComponent("clients.txt").path
        try "\(a.publicKey.z85) alice\n\n# bob has no name\n\(b.publicKey.z85)\n".write(toFile: listPath, atomically: true, encoding: .utf8)
        let list = try ZMQCurveKey.loadAllowList(from: listPath)
        #expect(list == [a.publicKey: "alice", b.publicKey: b.publicKey.z85])

        try "\(a.publicKey.z85)\n\(a.publicKey.z85)\n".write(toFile: listPath, atomically: true, encoding: .utf8)
        #expect(throws: ZMQCurveKeyError.badAllowListLine(path: listPath, line: 2, reason: "key listed twice")) {
            _ = try ZMQCurveKey.loadAllowList(from: listPath)
        }
        try "\n\n".write(toFile: secretPath, atomically: true, encoding: .utf8)
        #expect(throws: ZMQCurveKeyError.keyCount(path: secretPath, count: 0)) { _ = try ZMQCurveKey.load(from: secretPath) }
        #expect(throws: ZMQCurveKeyError.self) { _ = try ZMQCurveKey.load(from: directory.appendingPathComponent("missing").path) }
    }

    @Test func curveServerRefusesToBindWithoutAZAPHandler() throws {
        let context = try ZMQContext()
        let server = try testSocket(context, .router)
        try server.enableCurveServer(keys: try .generate(), zapDomain: "tributary")
        #expect(throws: ZMQError(.curveWithoutZAPHandler, operation: "zmq_bind", detail: "tcp://127.0.0.1:0")) {
            try server.bind("tcp://127.0.0.1:0")
        }
        let zap = try ZMQZAPHandler(context: context, policy: .allow([ZMQCurveKey]()))
        #expect(zap.isRunning)
        #expect(throws: ZMQError.self) { _ = try ZMQZAPHandler(context: context, policy: .acceptAnyClient()) }
        try server.bind("tcp://127.0.0.1:0")
        server.close()
        zap.stop()
        #expect(!zap.isRunning)
        let again = try testSocket(context, .router)
        try again.enableCurveServer(keys: try .generate(), zapDomain: "tributary")
        #expect(throws: ZMQError.self) { try again.bind("tcp://127.0.0.1:0") }
    }

    @Test func zapAcceptsAnAllowedKeyReportsItsUserIdAndRejectsAnother() throws {
        let context = try ZMQContext()
        let serverKeys = try ZMQCurveKeyPair.generate()
        let alice = try ZMQCurveKeyPair.generate(), mallory = try ZMQCurveKeyPair.generate()
        let decisions = ZMQLoopBox<[ZMQZAPDecision]>([])
        let zap = try ZMQZAPHandler(context: context, policy: .allow([alice.publicKey: "alice"], domain: "tributary")) { decision in
            decisions.value.withLock { $0.append(decision) }
        }
        defer { zap.stop() }
        let server = try testSocket(context, .router, timeoutMs: 500)
        try server.enableCurveServer(keys: serverKeys, zapDomain: "tributary")
        let monitor = try server.startMonitor()
        try server.bind("tcp://127.0.0.1:0")
        let endpoint = try server.lastEndpoint()
        defer { server.close() }

        let good = try testSocket(context, .dealer)
        try good.enableCurveClient(serverKey: serverKeys.publicKey, keys: alice)
        try good.connect(endpoint)
        try good.send(Array("hi".utf8))
        let parts = try server.receiveMultipart()
        #expect(parts[1].bytes == Array("hi".utf8))
        #expect(parts[1].metadata("User-Id") == "alice")

        let bad = try testSocket(context, .dealer)
        try bad.enableCurveClient(serverKey: serverKeys.publicKey, keys: mallory)
        try bad.connect(endpoint)
        try bad.send(Array("let me in".utf8))
        #expect(try waitForEvent(monitor, .handshakeFailedAuth) != nil)
        #expect(throws: ZMQError(.again, operation: "zmq_msg_recv")) { _ = try server.receiveMultipart() }

        let seen = decisions.value.withLock { $0 }
        #expect(seen.first { $0.clientKey == alice.publicKey }?.userID == "alice")
        let refused = seen.first { $0.clientKey == mallory.publicKey }
        #expect(refused != nil && refused?.accepted == false)
        #expect(refused?.refusal?.contains("not allowed") == true)
        #expect(seen.allSatisfy { $0.mechanism == "CURVE" && $0.domain == "tributary" })
    }

    @Test func acceptAnyClientStillReportsTheKeyAsUserId() throws {
        let context = try ZMQContext()
        let serverKeys = try ZMQCurveKeyPair.generate(), client = try ZMQCurveKeyPair.generate()
        let zap = try ZMQZAPHandler(context: context, policy: .acceptAnyClient())
        defer { zap.stop() }
        let server = try testSocket(context, .router)
        defer { server.close() }
        try server.enableCurveServer(keys: serverKeys, zapDomain: "any")
        try server.bind("tcp://127.0.0.1:0")
        let dealer = try testSocket(context, .dealer)
        try dealer.enableCurveClient(serverKey: serverKeys.publicKey, keys: client)
        try dealer.connect(try server.lastEndpoint())
        try dealer.send([42])
        let parts = try server.receiveMultipart()
        #expect(parts[1].bytes == [42])
        #expect(parts[1].metadata("User-Id") == client.publicKey.z85)
    }
}
