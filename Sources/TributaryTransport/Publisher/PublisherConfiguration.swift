import TributaryWire

/// What the publisher does with a subscriber whose queue is full (docs/PROTOCOL.md §4.2).
public enum SlowConsumerPolicy: Sendable, Equatable {
    /// Drop the frames it cannot take, count them, and send it a gap notice when it can take frames
    /// again (the default: at-most-once delivery, nothing lost silently).
    case dropAndCount
    /// Send it error 13 (slow consumer) and a close, and forget the session.
    case disconnect
}

/// CURVE encryption of the publisher's socket.
public struct PublisherCurve: Sendable {
    /// The publisher's key pair (subscribers need its public key).
    public var keys: ZMQCurveKeyPair
    /// The ZAP domain the publisher's socket announces to the ZAP handler.
    public var zapDomain: String

    public init(keys: ZMQCurveKeyPair, zapDomain: String = "tributary") {
        self.keys = keys
        self.zapDomain = zapDomain
    }
}

/// Everything a `Publisher` is configured with; all fields have working defaults except the endpoint.
public struct PublisherConfiguration: Sendable {
    /// Where to listen: `tcp://0.0.0.0:5560`, `tcp://127.0.0.1:0` (any free port; read `Publisher.endpoint`).
    public var endpoint: String
    /// The API key subscribers must present (compared in constant time); change it with `Publisher.setAPIKey`.
    public var apiKey: String
    /// The publisher's description, sent in the welcome.
    public var description: String
    /// Largest difference between a hello's timestamp and the publisher's clock; nil accepts any clock.
    public var maxClockSkew: Duration?
    /// What happens to a subscriber that cannot keep up.
    public var slowConsumerPolicy: SlowConsumerPolicy
    /// Frames queued per subscriber (libzmq's send high-water mark counts messages) before it counts as full.
    public var subscriberQueueFrames: Int32
    /// Largest frame a subscriber may send (header + payload); a larger one is answered with error 11
    /// and the session closed; libzmq disconnects a peer that sends a message part larger still.
    public var maxInboundFrameSize: Int
    /// Largest file or image a subscriber may send (sum of its chunks).
    public var maxInboundTransferSize: UInt64
    /// Frames `publish` may have waiting for the publisher's thread before it refuses more.
    public var handOffCapacity: Int
    /// Send a digital frame only when some line changed since the last one sent for its source.
    public var digitalOnChangeOnly: Bool
    /// ZMTP heartbeats on every connection: a PING each `heartbeatInterval`; a connection silent for
    /// `heartbeatTimeout` after a PING is closed. Keep the timeout above the longest stall a slow
    /// subscriber should survive (a stalled subscriber whose connection is closed loses its session).
    public var heartbeatInterval: Duration
    public var heartbeatTimeout: Duration
    /// Optional CURVE encryption; a `ZMQZAPHandler` must then run on the publisher's context.
    public var curve: PublisherCurve?

    public init(endpoint: String, apiKey: String, description: String = "Tributary publisher",
                maxClockSkew: Duration? = .seconds(300), slowConsumerPolicy: SlowConsumerPolicy = .dropAndCount,
                subscriberQueueFrames: Int32 = 1_000, maxInboundFrameSize: Int = 16 << 20,
                maxInboundTransferSize: UInt64 = 256 << 20, handOffCapacity: Int = 4_096,
                digitalOnChangeOnly: Bool = false, heartbeatInterval: Duration = .seconds(1),
                heartbeatTimeout: Duration = .seconds(10), curve: PublisherCurve? = nil) {
        self.endpoint = endpoint
        self.apiKey = apiKey
        self.description = description
        self.maxClockSkew = maxClockSkew
        self.slowConsumerPolicy = slowConsumerPolicy
        self.subscriberQueueFrames = subscriberQueueFrames
        self.maxInboundFrameSize = maxInboundFrameSize
        self.maxInboundTransferSize = maxInboundTransferSize
        self.handOffCapacity = handOffCapacity
        self.digitalOnChangeOnly = digitalOnChangeOnly
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatTimeout = heartbeatTimeout
        self.curve = curve
    }
}

/// One subscriber as the publisher sees it (`Publisher.subscribers()`).
public struct SubscriberInfo: Sendable, Hashable {
    /// The session id sent in the welcome; names the subscriber in `Publisher.send(_:to:)`.
    public var sessionID: UInt64
    /// The subscriber's IP address as libzmq reports it.
    public var address: String
    /// The description from its hello.
    public var description: String
    /// The CURVE User-Id the ZAP handler gave it, when CURVE is on.
    public var userID: String?
    /// When its hello was accepted.
    public var connectedSince: ContinuousClock.Instant
    /// Wall-clock time its hello was accepted, nanoseconds since 1970.
    public var connectedSinceUnixNs: Int64
    /// Frames sent to it (data and control).
    public var framesSent: UInt64
    /// Frames dropped because its queue was full (each announced to it in a gap notice).
    public var framesDropped: UInt64
    /// Whether it is between start and stop.
    public var isStarted: Bool
    /// Its filters as the publisher applies them.
    public var filters: SubscriberFilters
    /// Its source selection, when it enabled source filtering.
    public var selectedSources: [UInt32]?
}

/// A package a subscriber sent to the publisher's application.
public struct SubscriberPackage: Sendable {
    /// Who sent it.
    public var sessionID: UInt64
    /// The subscriber's description (from its hello).
    public var subscriberDescription: String
    /// The package and its header.
    public var package: ReceivedPackage
}
