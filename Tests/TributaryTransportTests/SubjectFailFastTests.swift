import CSocketControl  // with Glibc: see TestSupport.swift on which module owns <sys/socket.h>
import Foundation
import Glibc
import Testing
import TributaryWire

@testable import TributaryTransport

/// Opening a session that cannot succeed fails at once with error 7 and the cause, instead of
/// waiting the whole timeout to say "nothing answered" (issue 8, item 16).
@Suite struct SubjectFailFastTests {
    /// The open's timeout. What the tests check is that `open` fails with the cause, which only the
    /// fail-fast path reports, and before this timeout (whose error says "nothing answered"); they do
    /// not bound the time otherwise (a CURVE mismatch is diagnosed after four failed handshakes under
    /// libzmq's reconnect back-off: about 0.4 s here, more on a loaded machine). The CURVE cases open
    /// three times: the diagnosis used to be lost in about half of the opens (a disconnection after a
    /// failed handshake was taken for a publisher's close, and the reopen forgot the failures), which
    /// three opens in a row catch with a probability of about 7/8.
    static let openTimeout = 20.0

    /// The error and the seconds `open` took with a timeout of `openTimeout`.
    /// Three subjects made by `makeSubject` in turn are refused at once by the publisher on `port`: error
    /// 7 (destination unreachable) whose message contains `text`, well within the open timeout.
    private func expectRefusedThreeTimes(port: Int, saying text: String, _ makeSubject: () throws -> Subject) throws {
        for attempt in 1...3 {
            let (error, seconds) = failedOpen(try makeSubject(), address: "127.0.0.1", port: port)
            #expect(error?.code == .destinationUnreachable, "open \(attempt)")
            #expect(error?.message.contains(text) == true, "open \(attempt): \(String(describing: error))")
            #expect(seconds < Self.openTimeout)
        }
    }

    private func failedOpen(_ subject: Subject, address: String, port: Int) -> (ErrorReport?, Double) {
        let clock = ContinuousClock()
        var caught: ErrorReport?
        let elapsed = clock.measure {
            do throws(ErrorReport) {
                try subject.open(address: address, port: port, apiKey: "k", description: "fail fast", timeout: Self.openTimeout)
            } catch {
                caught = error
            }
        }
        subject.close()
        return (caught, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// A TCP port on 127.0.0.1 that nothing listens on (bound, then released).
    private func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func aRefusedConnectionIsNamedAtOnce() throws {
        let port = try closedPort()
        let (error, seconds) = failedOpen(try Subject(), address: "127.0.0.1", port: port)
        #expect(error?.code == .destinationUnreachable)
        #expect(error?.message.contains("connection refused by 127.0.0.1:\(port)") == true, "\(String(describing: error))")
        #expect(seconds < Self.openTimeout)
    }

    @Test func anUnresolvableHostIsNamedAtOnce() throws {
        let (error, seconds) = failedOpen(try Subject(), address: "nohost.invalid", port: 5599)
        #expect(error?.code == .destinationUnreachable)
        #expect(error?.message.contains("cannot resolve host 'nohost.invalid'") == true, "\(String(describing: error))")
        #expect(seconds < Self.openTimeout)
    }

    @Test func aCurvePublisherRefusesASubjectWithoutCurveAtOnce() throws {
        let context = try ZMQContext()
        let serverKeys = try ZMQCurveKeyPair.generate()
        let zap = try ZMQZAPHandler(context: context, policy: .acceptAnyClient())
        defer { zap.stop() }
        let publisher = try makeCurvePublisher(keys: serverKeys, context: context)
        defer { publisher.stop() }
        try expectRefusedThreeTimes(port: publisher.port!, saying: "requires CURVE") { try Subject() }
    }

    /// The probe that tells a mechanism mismatch from a publisher closing connections over its
    /// pending limit: it reads the mechanism from the publisher's greeting.
    @Test func theProbeReadsThePublishersMechanism() throws {
        let plain = try makePublisher(apiKey: "k")
        defer { plain.stop() }
        #expect(ConnectDiagnosis.peerMechanism(host: "127.0.0.1", port: "\(plain.port!)") == "NULL")
        let context = try ZMQContext()
        let zap = try ZMQZAPHandler(context: context, policy: .acceptAnyClient())
        defer { zap.stop() }
        let curve = try makeCurvePublisher(keys: try ZMQCurveKeyPair.generate(), context: context)
        defer { curve.stop() }
        #expect(ConnectDiagnosis.peerMechanism(host: "127.0.0.1", port: "\(curve.port!)") == "CURVE")
        // Nothing listens: no mechanism (and no wait beyond the probe's bound).
        let closed = try freePort()
        #expect(ConnectDiagnosis.peerMechanism(host: "127.0.0.1", port: "\(closed)") == nil)
    }

    @Test func aPublisherWithoutCurveRefusesACurveSubjectAtOnce() throws {
        let publisher = try makePublisher(apiKey: "k")
        defer { publisher.stop() }
        let serverKeys = try ZMQCurveKeyPair.generate()
        try expectRefusedThreeTimes(port: publisher.port!, saying: "CURVE") {
            try Subject(options: SubjectOptions(curve: SubjectCurve(serverKey: serverKeys.publicKey, keys: try ZMQCurveKeyPair.generate())))
        }
    }

    /// libzmq's heartbeat TTL takes at most 6553.5 s: a longer timeout failed inside zmq_setsockopt,
    /// reported as "cannot connect" (error 7) instead of a wrong timeout (error 2).
    @Test func timeoutsBeyondLibzmqsLimitAreError2() throws {
        let publisher = try makePublisher(apiKey: "k")
        defer { publisher.stop() }
        for timeout in [7_000, 1e300, .infinity, .nan] {
            let subject = try Subject()
            do throws(ErrorReport) {
                try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "k", description: "t", timeout: timeout)
                Issue.record("timeout \(timeout) accepted")
            } catch {
                #expect(error.code == .wrongTimeout)
                #expect(error.message.contains("(1, 6553]"))
            }
        }
    }

    @Test func endpointsAreSplitIntoHostAndPort() {
        #expect(ConnectDiagnosis.tcpHostPort("tcp://127.0.0.1:5599")! == ("127.0.0.1", "5599"))
        #expect(ConnectDiagnosis.tcpHostPort("tcp://[::1]:80")! == ("::1", "80"))
        #expect(ConnectDiagnosis.tcpHostPort("ipc:///tmp/x") == nil)
        #expect(ConnectDiagnosis.tcpHostPort("tcp://*:5") == nil)
    }
}
