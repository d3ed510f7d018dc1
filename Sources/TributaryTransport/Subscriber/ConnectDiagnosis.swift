import CZMQ
import Foundation
import Synchronization

/// Why a connection to a publisher cannot be opened, found out quickly instead of waiting for the
/// open's whole timeout: the host name does not resolve (asked up front, `getaddrinfo`), or the TCP
/// connection is refused (after libzmq reported a failed attempt, one probe connection names the
/// cause). Used by the Subject while a session is being opened; never on the data path.
enum ConnectDiagnosis {
    /// The value of a `ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL` event when the peers' security mechanisms
    /// differ (NULL on one side, CURVE on the other).
    static let mechanismMismatch = UInt32(ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)

    /// The host and port of a `tcp://HOST:PORT` endpoint (`tcp://[::1]:5555` for IPv6), or nil for
    /// other transports and malformed endpoints (left to libzmq).
    static func tcpHostPort(_ endpoint: String) -> (host: String, port: String)? {
        guard endpoint.hasPrefix("tcp://") else { return nil }
        let rest = endpoint.dropFirst(6)
        guard let colon = rest.lastIndex(of: ":") else { return nil }
        var host = rest[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        let port = rest[rest.index(after: colon)...]
        guard !host.isEmpty, !port.isEmpty, host != "*" else { return nil }
        return (String(host), String(port))
    }

    /// Why `host` cannot be resolved, or nil when it can. A resolver that does not answer within
    /// `timeout` seconds (the open's whole timeout) is a failure too: libzmq would be stuck on it as well.
    static func resolutionFailure(host: String, timeout: Double) -> String? {
        let outcome = Mutex<String??>(nil)
        let done = DispatchSemaphore(value: 0)
        // On its own thread: a resolver that does not answer must not hold the open past its timeout.
        Thread.detachNewThread {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, nil, &hints, &list)
            if let list { freeaddrinfo(list) }
            let failure: String? = status == 0 ? nil : String(cString: gai_strerror(status))
            outcome.withLock { $0 = .some(failure) }
            done.signal()
        }
        let bounded = min(max(timeout, 0), 86_400)
        guard done.wait(timeout: .now() + .milliseconds(Int(bounded * 1000))) == .success else {
            return "the resolver did not answer within \(bounded) s"
        }
        return outcome.withLock { $0 } ?? nil
    }

    /// The security mechanism the ZMTP peer at `host`:`port` announces in its greeting ("NULL",
    /// "CURVE", …), read from one probe connection that sends only the signature and major version of
    /// a greeting (ZMTP 3: a peer sends the rest of its own once it has those; a whole NULL greeting
    /// would let a CURVE peer find the mismatch and close before its mechanism is out) and closes; nil when
    /// the connection is closed or silent before the mechanism arrives (at most `timeoutMs` for the
    /// whole probe) — a publisher over its pending-connection limit closes it at once.
    static func peerMechanism(host: String, port: String, timeoutMs: Int32 = 500) -> String? {
        withProbeSocket(host: host, port: port) { fd, address in peerMechanism(fd, address, timeoutMs: timeoutMs) }
    }

    private static func peerMechanism(_ fd: Int32, _ address: addrinfo, timeoutMs: Int32) -> String? {
        let deadline = monotonicNanoseconds() + UInt64(max(0, timeoutMs)) * 1_000_000
        func wait(_ events: Int32) -> Bool {
            let now = monotonicNanoseconds()
            guard now < deadline else { return false }
            var p = pollfd(fd: fd, events: Int16(events), revents: 0)
            return poll(&p, 1, Int32((deadline - now) / 1_000_000) + 1) == 1 && p.revents & Int16(events) != 0
        }
        if connect(fd, address.ai_addr, address.ai_addrlen) != 0 {
            guard errno == EINPROGRESS, wait(Int32(POLLOUT)) else { return nil }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else { return nil }
        }
        // Signature (0xFF, 8 bytes, 0x7F) and major version 3.
        var greeting = [UInt8](repeating: 0, count: 11)
        greeting[0] = 0xFF
        greeting[9] = 0x7F
        greeting[10] = 3
        guard greeting.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == greeting.count else { return nil }
        var received = [UInt8](repeating: 0, count: 64)
        var count = 0
        while count < 32 {
            guard wait(Int32(POLLIN)) else { return nil }
            let n = received.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + count, 64 - count, 0) }
            guard n > 0 else { return nil }
            count += n
        }
        guard received[0] == 0xFF, received[9] == 0x7F, received[10] >= 3 else { return nil }
        let name = received[12..<32].prefix { $0 != 0 }
        return String(decoding: name, as: UTF8.self)
    }

    /// Why a TCP connection to `host`:`port` fails, from one probe connection (non-blocking, at most
    /// `timeoutMs`); nil when it succeeds (something listens now) or the cause is not known in time.
    static func connectionFailure(host: String, port: String, timeoutMs: Int32 = 500) -> String? {
        withProbeSocket(host: host, port: port) { fd, address in
            connectionFailure(fd, address, host: host, port: port, timeoutMs: timeoutMs)
        }
    }

    /// Runs `body` with a non-blocking TCP socket for the first address of `host`:`port` (closed
    /// after); nil when the address does not resolve or no socket can be made.
    private static func withProbeSocket<T>(host: String, port: String, _ body: (Int32, addrinfo) -> T?) -> T? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, port, &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        let address = first.pointee
        let fd = socket(address.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return body(fd, address)
    }

    private static func connectionFailure(_ fd: Int32, _ address: addrinfo, host: String, port: String, timeoutMs: Int32) -> String? {
        var error: Int32 = 0
        if connect(fd, address.ai_addr, address.ai_addrlen) == 0 { return nil }
        if errno != EINPROGRESS {
            error = errno
        } else {
            var pollfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&pollfd, 1, timeoutMs) == 1 else { return nil }
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return nil }
        }
        guard error != 0 else { return nil }
        let target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return error == ECONNREFUSED
            ? "connection refused by \(target) (nothing listens on that port)"
            : "cannot connect to \(target): \(String(cString: strerror(error)))"
    }
}
