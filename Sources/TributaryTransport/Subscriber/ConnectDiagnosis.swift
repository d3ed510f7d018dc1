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

    /// Why a TCP connection to `host`:`port` fails, from one probe connection (non-blocking, at most
    /// `timeoutMs`); nil when it succeeds (something listens now) or the cause is not known in time.
    static func connectionFailure(host: String, port: String, timeoutMs: Int32 = 500) -> String? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, port, &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        let address = first.pointee
        let fd = socket(address.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
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
        return error == ECONNREFUSED ? "connection refused by \(target) (nothing listens on that port)"
            : "cannot connect to \(target): \(String(cString: strerror(error)))"
    }
}
