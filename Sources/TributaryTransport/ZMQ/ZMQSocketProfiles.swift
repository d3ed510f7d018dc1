import CZMQ

/// The socket settings of the publisher's ROUTER, with the defaults DESIGN.md §3 argues for.
public struct ZMQRouterSettings: Sendable, Equatable {
    /// Messages queued per subscriber before sends fail with `.again` (counted, then dropped or disconnected).
    public var sendHighWaterMark: Int32 = 1_000
    /// Messages queued from each subscriber.
    public var receiveHighWaterMark: Int32 = 1_000
    /// PING period; a subscriber silent for `heartbeatTimeout` after a PING is disconnected.
    public var heartbeatInterval: Duration = .milliseconds(200)
    /// See `heartbeatInterval` (a SIGSTOPped peer was detected in 1.2 s with 200 ms / 1 s).
    public var heartbeatTimeout: Duration = .seconds(1)
    /// Largest message a subscriber may send (requests, filters, small packages); larger disconnects it.
    public var maxInboundMessageSize: Int64 = 1 << 20

    public init() {}
}

/// The socket settings of a subscriber's DEALER.
public struct ZMQDealerSettings: Sendable, Equatable {
    /// Messages queued from the publisher before libzmq stops reading the connection.
    public var receiveHighWaterMark: Int32 = 1_000
    /// Messages queued for the publisher.
    public var sendHighWaterMark: Int32 = 1_000
    /// PING period; a publisher silent for `heartbeatTimeout` after a PING is disconnected (then reconnected).
    public var heartbeatInterval: Duration = .milliseconds(200)
    /// See `heartbeatInterval`.
    public var heartbeatTimeout: Duration = .seconds(1)
    /// First reconnection delay.
    public var reconnectInterval: Duration = .milliseconds(100)
    /// Upper bound of the exponential reconnect back-off (libzmq's default 0 means no back-off: storms).
    public var reconnectIntervalMax: Duration = .seconds(5)
    /// Largest message accepted from the publisher (a frame or chunk); -1 unlimited.
    public var maxInboundMessageSize: Int64 = 256 << 20
    /// The routing id the publisher sees (nil: libzmq picks one). Reusing it after a reconnect lets the
    /// publisher recognise the subscriber.
    public var routingID: [UInt8]?

    public init() {}
}

extension ZMQSocket {
    /// Creates the publisher's ROUTER: `ZMQ_ROUTER_MANDATORY` on (sends to a full or unknown peer fail
    /// instead of being dropped silently; send with `.dontWait`), high-water marks, heartbeats and the
    /// inbound size limit from `settings`.
    /// - Throws: `ZMQError` naming the option libzmq rejected.
    public static func publisherRouter(context: ZMQContext, settings: ZMQRouterSettings = .init()) throws(ZMQError) -> ZMQSocket {
        let socket = try ZMQSocket(context: context, type: .router)
        try socket.setOption(.routerMandatory, 1)
        try socket.setOption(.sendHighWaterMark, settings.sendHighWaterMark)
        try socket.setOption(.receiveHighWaterMark, settings.receiveHighWaterMark)
        try socket.setHeartbeat(interval: settings.heartbeatInterval, timeout: settings.heartbeatTimeout)
        try socket.setOption(.maxMessageSize, settings.maxInboundMessageSize)
        return socket
    }

    /// Creates a subscriber's DEALER: high-water marks, heartbeats, a bounded reconnect back-off, the
    /// inbound size limit and the routing id from `settings`.
    /// - Throws: `ZMQError` naming the option libzmq rejected (e.g. a routing id starting with 0).
    public static func subscriberDealer(context: ZMQContext, settings: ZMQDealerSettings = .init()) throws(ZMQError) -> ZMQSocket {
        let socket = try ZMQSocket(context: context, type: .dealer)
        try socket.setOption(.receiveHighWaterMark, settings.receiveHighWaterMark)
        try socket.setOption(.sendHighWaterMark, settings.sendHighWaterMark)
        try socket.setHeartbeat(interval: settings.heartbeatInterval, timeout: settings.heartbeatTimeout)
        try socket.setReconnect(initial: settings.reconnectInterval, maximum: settings.reconnectIntervalMax)
        try socket.setOption(.maxMessageSize, settings.maxInboundMessageSize)
        if let routingID = settings.routingID { try socket.setOption(.routingID, routingID) }
        return socket
    }
}
