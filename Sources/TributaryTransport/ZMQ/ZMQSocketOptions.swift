import CZMQ

/// A socket option whose value is a C `int`.
public struct ZMQIntOption: Sendable {
    let rawValue: Int32
    /// The libzmq name, for error messages.
    public let name: StaticString

    /// ROUTER: fail sends to an unknown routing id with `.hostUnreachable` and sends to a full pipe with
    /// `.again` (with `.dontWait`) instead of dropping them silently. Write-only. Always 1 on the publisher.
    public static let routerMandatory = ZMQIntOption(rawValue: ZMQ_ROUTER_MANDATORY, name: "ZMQ_ROUTER_MANDATORY")
    /// Messages (not bytes) queued per peer for sending before the pipe counts as full.
    public static let sendHighWaterMark = ZMQIntOption(rawValue: ZMQ_SNDHWM, name: "ZMQ_SNDHWM")
    /// Bytes of the kernel's receive buffer (SO_RCVBUF) for the connections made after it is set; the
    /// kernel caps it at `net.core.rmem_max` and, once set, stops autotuning it. -1 (libzmq's default):
    /// the kernel's own, autotuned.
    public static let receiveBuffer = ZMQIntOption(rawValue: ZMQ_RCVBUF, name: "ZMQ_RCVBUF")
    /// Messages queued per peer for receiving before libzmq stops reading from that peer.
    public static let receiveHighWaterMark = ZMQIntOption(rawValue: ZMQ_RCVHWM, name: "ZMQ_RCVHWM")
    /// Milliseconds between ZMTP heartbeat PINGs; 0 disables heartbeats.
    public static let heartbeatInterval = ZMQIntOption(rawValue: ZMQ_HEARTBEAT_IVL, name: "ZMQ_HEARTBEAT_IVL")
    /// Milliseconds without any traffic after a PING before the connection is closed.
    public static let heartbeatTimeout = ZMQIntOption(rawValue: ZMQ_HEARTBEAT_TIMEOUT, name: "ZMQ_HEARTBEAT_TIMEOUT")
    /// Milliseconds the remote peer should wait for traffic before closing (sent in PINGs; 100 ms units).
    public static let heartbeatTTL = ZMQIntOption(rawValue: ZMQ_HEARTBEAT_TTL, name: "ZMQ_HEARTBEAT_TTL")
    /// Milliseconds before the first reconnection attempt.
    public static let reconnectInterval = ZMQIntOption(rawValue: ZMQ_RECONNECT_IVL, name: "ZMQ_RECONNECT_IVL")
    /// Upper bound in milliseconds of the exponential reconnect back-off (0, libzmq's default, means none).
    public static let reconnectIntervalMax = ZMQIntOption(rawValue: ZMQ_RECONNECT_IVL_MAX, name: "ZMQ_RECONNECT_IVL_MAX")
    /// Milliseconds that closing waits to flush unsent messages (-1 forever). Tributary sets 0 at creation.
    public static let linger = ZMQIntOption(rawValue: ZMQ_LINGER, name: "ZMQ_LINGER")
    /// 1: queue messages only on completed connections (a DEALER then blocks/fails rather than queueing
    /// for a publisher that is not there yet).
    public static let immediate = ZMQIntOption(rawValue: ZMQ_IMMEDIATE, name: "ZMQ_IMMEDIATE")
    /// Milliseconds a blocking send waits before failing with `.again` (-1 forever).
    public static let sendTimeout = ZMQIntOption(rawValue: ZMQ_SNDTIMEO, name: "ZMQ_SNDTIMEO")
    /// Milliseconds a blocking receive waits before failing with `.again` (-1 forever).
    public static let receiveTimeout = ZMQIntOption(rawValue: ZMQ_RCVTIMEO, name: "ZMQ_RCVTIMEO")
    /// 1: this socket is a CURVE server (set it through `ZMQSocket.enableCurveServer`).
    public static let curveServer = ZMQIntOption(rawValue: ZMQ_CURVE_SERVER, name: "ZMQ_CURVE_SERVER")
    /// Read-only: `ZMQ_POLLIN`/`ZMQ_POLLOUT` readiness (see `ZMQSocket.events()`).
    public static let events = ZMQIntOption(rawValue: ZMQ_EVENTS, name: "ZMQ_EVENTS")
    /// Read-only: the edge-triggered file descriptor that signals "look at `ZMQ_EVENTS`".
    public static let fileDescriptor = ZMQIntOption(rawValue: ZMQ_FD, name: "ZMQ_FD")
    /// Read-only: 1 when the part just received is followed by more parts.
    public static let receiveMore = ZMQIntOption(rawValue: ZMQ_RCVMORE, name: "ZMQ_RCVMORE")
    /// Milliseconds a new connection has to complete the ZMTP handshake (security included) before
    /// libzmq closes it; 0 waits forever (libzmq's default is 30 000).
    public static let handshakeInterval = ZMQIntOption(rawValue: ZMQ_HANDSHAKE_IVL, name: "ZMQ_HANDSHAKE_IVL")
    /// 1: TCP keepalive probes on every connection (-1: the system default), so that a peer whose host
    /// vanished is noticed by the kernel without ZMTP heartbeats.
    public static let tcpKeepalive = ZMQIntOption(rawValue: ZMQ_TCP_KEEPALIVE, name: "ZMQ_TCP_KEEPALIVE")
    /// Seconds of silence before the first TCP keepalive probe (-1: the system default).
    public static let tcpKeepaliveIdle = ZMQIntOption(rawValue: ZMQ_TCP_KEEPALIVE_IDLE, name: "ZMQ_TCP_KEEPALIVE_IDLE")
    /// Seconds between TCP keepalive probes (-1: the system default).
    public static let tcpKeepaliveInterval = ZMQIntOption(rawValue: ZMQ_TCP_KEEPALIVE_INTVL, name: "ZMQ_TCP_KEEPALIVE_INTVL")
    /// Unanswered TCP keepalive probes before the connection is closed (-1: the system default).
    public static let tcpKeepaliveCount = ZMQIntOption(rawValue: ZMQ_TCP_KEEPALIVE_CNT, name: "ZMQ_TCP_KEEPALIVE_CNT")
}

/// A socket option whose value is an `int64_t`.
public struct ZMQInt64Option: Sendable {
    let rawValue: Int32
    /// The libzmq name, for error messages.
    public let name: StaticString

    /// Largest inbound message in bytes (-1 unlimited); a peer that sends more is disconnected.
    public static let maxMessageSize = ZMQInt64Option(rawValue: ZMQ_MAXMSGSIZE, name: "ZMQ_MAXMSGSIZE")
}

/// A socket option whose value is a byte string.
public struct ZMQBytesOption: Sendable {
    let rawValue: Int32
    /// The libzmq name, for error messages.
    public let name: StaticString

    /// The identity a DEALER presents to a ROUTER (1-255 bytes, not starting with a zero byte).
    public static let routingID = ZMQBytesOption(rawValue: ZMQ_ROUTING_ID, name: "ZMQ_ROUTING_ID")
    /// This socket's CURVE public key (Z85, 40 characters).
    public static let curvePublicKey = ZMQBytesOption(rawValue: ZMQ_CURVE_PUBLICKEY, name: "ZMQ_CURVE_PUBLICKEY")
    /// This socket's CURVE secret key (Z85, 40 characters).
    public static let curveSecretKey = ZMQBytesOption(rawValue: ZMQ_CURVE_SECRETKEY, name: "ZMQ_CURVE_SECRETKEY")
    /// A CURVE client's view of the server's public key (Z85, 40 characters).
    public static let curveServerKey = ZMQBytesOption(rawValue: ZMQ_CURVE_SERVERKEY, name: "ZMQ_CURVE_SERVERKEY")
    /// The ZAP domain sent to the ZAP handler with each authentication request.
    public static let zapDomain = ZMQBytesOption(rawValue: ZMQ_ZAP_DOMAIN, name: "ZMQ_ZAP_DOMAIN")
    /// Read-only: the endpoint last bound, with the port that libzmq chose for port 0.
    public static let lastEndpoint = ZMQBytesOption(rawValue: ZMQ_LAST_ENDPOINT, name: "ZMQ_LAST_ENDPOINT")
}

extension ZMQSocket {
    /// Sets an `int` option.
    /// - Throws: `ZMQError` naming the option (`.invalidArgument` for a value libzmq rejects).
    public func setOption(_ option: ZMQIntOption, _ value: Int32) throws(ZMQError) {
        try setScalar(option.rawValue, option.name, value)
        if option.rawValue == ZMQ_CURVE_SERVER { isCurveServer = value != 0 }
    }

    /// Reads an `int` option.
    /// - Throws: `ZMQError` naming the option (`.invalidArgument` for write-only options).
    public func option(_ option: ZMQIntOption) throws(ZMQError) -> Int32 {
        try scalar(option.rawValue, option.name)
    }

    /// Sets an `int64_t` option.
    /// - Throws: `ZMQError` naming the option.
    public func setOption(_ option: ZMQInt64Option, _ value: Int64) throws(ZMQError) {
        try setScalar(option.rawValue, option.name, value)
    }

    /// Reads an `int64_t` option.
    /// - Throws: `ZMQError` naming the option.
    public func option(_ option: ZMQInt64Option) throws(ZMQError) -> Int64 {
        try scalar(option.rawValue, option.name)
    }

    /// Sets an option whose value is a C integer of `T`'s size (`int`, `int64_t`).
    private func setScalar<T: FixedWidthInteger>(_ rawValue: Int32, _ name: StaticString, _ value: T) throws(ZMQError) {
        let handle = try openHandle("zmq_setsockopt")
        var value = value
        _ = try retryingOnInterrupt("zmq_setsockopt", detail: name.description) {
            zmq_setsockopt(handle, rawValue, &value, MemoryLayout<T>.size)
        }
    }

    /// Reads an option whose value is a C integer of `T`'s size (`int`, `int64_t`).
    private func scalar<T: FixedWidthInteger>(_ rawValue: Int32, _ name: StaticString) throws(ZMQError) -> T {
        let handle = try openHandle("zmq_getsockopt")
        var value: T = 0
        var size = MemoryLayout<T>.size
        _ = try retryingOnInterrupt("zmq_getsockopt", detail: name.description) {
            zmq_getsockopt(handle, rawValue, &value, &size)
        }
        return value
    }

    /// Sets a byte-string option.
    /// - Throws: `ZMQError` naming the option (`.invalidArgument` for a bad length, e.g. a key that is
    ///   not 32 bytes or 40 Z85 characters).
    public func setOption(_ option: ZMQBytesOption, _ bytes: [UInt8]) throws(ZMQError) {
        let handle = try openHandle("zmq_setsockopt")
        _ = try retryingOnInterrupt("zmq_setsockopt", detail: option.name.description) {
            bytes.withUnsafeBytes { zmq_setsockopt(handle, option.rawValue, $0.baseAddress, $0.count) }
        }
    }

    /// Sets a text option (UTF-8, without a terminating zero).
    /// - Throws: `ZMQError` naming the option.
    public func setOption(_ option: ZMQBytesOption, _ text: String) throws(ZMQError) {
        try setOption(option, Array(text.utf8))
    }

    /// Reads a byte-string option (at most 256 bytes, enough for every option of `ZMQBytesOption`).
    /// - Throws: `ZMQError` naming the option.
    public func option(_ option: ZMQBytesOption) throws(ZMQError) -> [UInt8] {
        let handle = try openHandle("zmq_getsockopt")
        var buffer = [UInt8](repeating: 0, count: 256)
        var size = buffer.count
        _ = try retryingOnInterrupt("zmq_getsockopt", detail: option.name.description) {
            buffer.withUnsafeMutableBytes { zmq_getsockopt(handle, option.rawValue, $0.baseAddress, &size) }
        }
        return Array(buffer[..<size])
    }

    /// Reads a text option, dropping the terminating zero libzmq includes for strings.
    /// - Throws: `ZMQError` naming the option.
    public func textOption(_ option: ZMQBytesOption) throws(ZMQError) -> String {
        var bytes = try self.option(option)
        if bytes.last == 0 { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Typed conveniences

    /// The endpoint last bound, with the real port when the socket was bound to port 0.
    /// - Throws: `ZMQError` when the socket is closed.
    public func lastEndpoint() throws(ZMQError) -> String { try textOption(.lastEndpoint) }

    /// Current readiness (`ZMQ_EVENTS`); reading it also re-arms the edge-triggered `ZMQ_FD`.
    /// - Throws: `ZMQError` when the socket is closed or the context terminated.
    public func events() throws(ZMQError) -> ZMQPollEvents {
        ZMQPollEvents(rawValue: Int16(truncatingIfNeeded: try option(.events)))
    }

    /// The edge-triggered descriptor libzmq signals when `events()` may have changed (`ZMQ_FD`).
    /// - Throws: `ZMQError` when the socket is closed.
    public func fileDescriptor() throws(ZMQError) -> Int32 { try option(.fileDescriptor) }

    /// Sets the ZMTP heartbeat: a PING every `interval`, the connection closed when nothing arrived
    /// `timeout` after a PING, and `ttl` announced to the peer (rounded down to 100 ms by libzmq).
    /// - Throws: `ZMQError` naming the option that was rejected.
    public func setHeartbeat(interval: Duration, timeout: Duration, ttl: Duration? = nil) throws(ZMQError) {
        try setOption(.heartbeatInterval, milliseconds(interval))
        try setOption(.heartbeatTimeout, milliseconds(timeout))
        if let ttl { try setOption(.heartbeatTTL, milliseconds(ttl)) }
    }

    /// Sets the reconnect back-off: first attempt after `initial`, doubling up to `maximum`, so that a
    /// publisher restart is not met with a reconnect storm.
    /// - Throws: `ZMQError` naming the option that was rejected.
    public func setReconnect(initial: Duration, maximum: Duration) throws(ZMQError) {
        try setOption(.reconnectInterval, milliseconds(initial))
        try setOption(.reconnectIntervalMax, milliseconds(maximum))
    }
}

/// A duration as whole milliseconds for a libzmq option, clamped to the `int` range.
func milliseconds(_ duration: Duration) -> Int32 {
    let (seconds, attoseconds) = duration.components
    let ms = seconds.multipliedReportingOverflow(by: 1000)
    guard !ms.overflow else { return seconds < 0 ? Int32.min : Int32.max }
    let total = ms.partialValue + attoseconds / 1_000_000_000_000_000
    return Int32(clamping: total)
}
