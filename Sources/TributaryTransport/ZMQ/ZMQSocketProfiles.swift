import CZMQ

/// The socket settings of the publisher's ROUTER, with the defaults DESIGN.md §3 argues for.
public struct ZMQRouterSettings: Sendable, Equatable {
    /// Messages queued per subscriber before sends fail with `.again` (counted, then dropped or disconnected).
    public var sendHighWaterMark: Int32 = 1_000
    /// Messages queued from each peer before libzmq stops reading its connection; 0 (the default):
    /// never stop. libzmq 4.3.4 aborts the whole process (`Assertion failed: !_io_error
    /// (stream_engine_base.cpp:331)`) when a connection whose reading was stopped by this mark is
    /// reset and then resumed with a ZMTP PING among the bytes it had buffered — which any peer,
    /// without a key, can arrange (a burst of small messages, a PING, a TCP reset; upstream
    /// zeromq/libzmq#4841). So the ROUTER reads everything, and the publisher bounds what a peer can
    /// send instead (`PeerConnections`, `PublisherConfiguration.maxInboundFramesPerSecond`).
    public var receiveHighWaterMark: Int32 = 0
    /// ZMTP heartbeat PING period; `.zero` (the default) sends none. libzmq 4.3.4 aborts the whole
    /// process (`Assertion failed: !_io_error (stream_engine_base.cpp:331)`) when a heartbeat timer
    /// fires on a connection whose input already failed — which any peer can arrange by filling its
    /// receive pipe and resetting the connection. The publisher therefore relies on the protocol's own
    /// keepalives and session timeouts (docs/PROTOCOL.md §4.4), TCP keepalive, and the connection
    /// events of a socket monitor; a subscriber's DEALER may still send PINGs (the ROUTER answers them).
    public var heartbeatInterval: Duration = .zero
    /// See `heartbeatInterval` (used only when it is not zero).
    public var heartbeatTimeout: Duration = .seconds(1)
    /// Largest message a subscriber may send (requests, filters, small packages); larger disconnects it.
    public var maxInboundMessageSize: Int64 = 1 << 20
    /// Time a new connection has to complete the ZMTP handshake before libzmq closes it.
    public var handshakeTimeout: Duration = .seconds(5)
    /// TCP keepalive: first probe after `tcpKeepaliveIdle` of silence, then every `tcpKeepaliveInterval`;
    /// a host that answers none of `tcpKeepaliveCount` probes is disconnected. nil: the system's settings.
    public var tcpKeepaliveIdle: Duration? = .seconds(30)
    public var tcpKeepaliveInterval: Duration = .seconds(5)
    public var tcpKeepaliveCount: Int32 = 3

    public init() {}
}

/// The socket settings of a subscriber's DEALER.
public struct ZMQDealerSettings: Sendable, Equatable {
    /// Messages queued from the publisher before libzmq stops reading the connection.
    public var receiveHighWaterMark: Int32 = 1_000
    /// Messages queued for the publisher.
    public var sendHighWaterMark: Int32 = 1_000
    /// PING period; a publisher silent for `heartbeatTimeout` after a PING is disconnected (then
    /// reconnected). `.zero` sends none (see `SubjectOptions.heartbeatInterval` for why that is the
    /// subscriber's default).
    public var heartbeatInterval: Duration = .zero
    /// See `heartbeatInterval`.
    public var heartbeatTimeout: Duration = .seconds(1)
    /// First reconnection delay.
    public var reconnectInterval: Duration = .milliseconds(100)
    /// Upper bound of the exponential reconnect back-off (libzmq's default 0 means no back-off: storms).
    public var reconnectIntervalMax: Duration = .seconds(5)
    /// Largest message accepted from the publisher (a frame or chunk); -1 unlimited.
    public var maxInboundMessageSize: Int64 = 256 << 20
    /// The connection's kernel receive buffer (`ZMQ_RCVBUF`) in bytes; -1: the kernel's, autotuned.
    public var receiveBufferBytes: Int32 = -1
    /// The routing id the publisher sees (nil: libzmq picks one). Reusing it after a reconnect lets the
    /// publisher recognise the subscriber.
    public var routingID: [UInt8]?

    public init() {}
}

extension ZMQSocket {
    /// Creates the publisher's ROUTER: `ZMQ_ROUTER_MANDATORY` on (sends to a full or unknown peer fail
    /// instead of being dropped silently; send with `.dontWait`), high-water marks, the inbound size
    /// limit, the handshake deadline, TCP keepalive and (only if asked for) heartbeats from `settings`.
    /// - Throws: `ZMQError` naming the option libzmq rejected.
    public static func publisherRouter(context: ZMQContext, settings: ZMQRouterSettings = .init()) throws(ZMQError) -> ZMQSocket {
        let socket = try ZMQSocket(context: context, type: .router)
        try socket.setOption(.routerMandatory, 1)
        try socket.setOption(.sendHighWaterMark, settings.sendHighWaterMark)
        try socket.setOption(.receiveHighWaterMark, settings.receiveHighWaterMark)
        if settings.heartbeatInterval > .zero {
            try socket.setHeartbeat(interval: settings.heartbeatInterval, timeout: settings.heartbeatTimeout)
        }
        try socket.setOption(.maxMessageSize, settings.maxInboundMessageSize)
        try socket.setOption(.handshakeInterval, max(1, milliseconds(settings.handshakeTimeout)))
        if let idle = settings.tcpKeepaliveIdle {
            try socket.setOption(.tcpKeepalive, 1)
            try socket.setOption(.tcpKeepaliveIdle, max(1, milliseconds(idle) / 1000))
            try socket.setOption(.tcpKeepaliveInterval, max(1, milliseconds(settings.tcpKeepaliveInterval) / 1000))
            try socket.setOption(.tcpKeepaliveCount, max(1, settings.tcpKeepaliveCount))
        }
        return socket
    }

    /// Creates a subscriber's DEALER: high-water marks, heartbeats, a bounded reconnect back-off, the
    /// inbound size limit and the routing id from `settings`.
    /// - Throws: `ZMQError` naming the option libzmq rejected (e.g. a routing id starting with 0).
    public static func subscriberDealer(context: ZMQContext, settings: ZMQDealerSettings = .init()) throws(ZMQError) -> ZMQSocket {
        let socket = try ZMQSocket(context: context, type: .dealer)
        try socket.setOption(.receiveHighWaterMark, settings.receiveHighWaterMark)
        try socket.setOption(.sendHighWaterMark, settings.sendHighWaterMark)
        if settings.receiveBufferBytes > 0 { try socket.setOption(.receiveBuffer, settings.receiveBufferBytes) }
        if settings.heartbeatInterval > .zero {
            try socket.setHeartbeat(interval: settings.heartbeatInterval, timeout: settings.heartbeatTimeout)
        }
        try socket.setReconnect(initial: settings.reconnectInterval, maximum: settings.reconnectIntervalMax)
        try socket.setOption(.maxMessageSize, settings.maxInboundMessageSize)
        if let routingID = settings.routingID { try socket.setOption(.routingID, routingID) }
        return socket
    }
}
