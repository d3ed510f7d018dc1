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
///
/// The limits bound what a peer can make the publisher hold (docs/PROTOCOL.md §4.8): a connection
/// that has not opened a session may send at most `maxBytesWithoutSession` bytes, and there are at
/// most `maxPendingPeers` of them (`pendingPeerMemoryBound`, plus what arrives within the 2 ms
/// between checks); a session may send at most `maxInboundFramesPerSecond` frames a second and get
/// at most `maxUnreadBytesPerSession` ahead of the publisher's reading; each session may hold at
/// most `maxInboundTransferSize` of files being reassembled, all sessions together at most
/// `maxReassemblyBytes`.
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
    /// Largest frame (header + payload) a peer may send, as one libzmq message part; libzmq closes the
    /// connection of a peer that sends a larger part (so no more than this is ever held for a peer's
    /// unfinished message). Subscribers send files and images in chunks well below it.
    public var maxInboundFrameSize: Int
    /// Largest file or image a subscriber may send (sum of its chunks); also what one session may hold
    /// of unfinished transfers together.
    public var maxInboundTransferSize: UInt64
    /// What all sessions together may hold of unfinished file and image transfers; a chunk that would
    /// exceed it is refused with error 11 (the transfer is dropped, the session stays).
    public var maxReassemblyBytes: UInt64
    /// Connections that have not opened a session (no accepted hello yet, or refused): a new
    /// connection beyond this is closed at once.
    public var maxPendingPeers: Int
    /// Frames a session may send a second, counted over windows of 100 ms; a subscriber that sends
    /// more gets error 16 (too many frames) and its connection is closed.
    public var maxInboundFramesPerSecond: Int
    /// How far a session's subscriber may get ahead of the publisher's reading (bytes its connection
    /// received that the publisher has not read yet, checked every 20 ms); beyond it the subscriber
    /// gets error 16 and its connection is closed. At least two `maxInboundFrameSize`.
    public var maxUnreadBytesPerSession: Int
    /// Sessions open at once; a hello beyond this is refused with error 15.
    public var maxSessions: Int
    /// Time a connection has to send an acceptable hello; then it is closed.
    public var helloDeadline: Duration
    /// Largest session timeout a hello may ask for; larger ones are lowered to it (the welcome says
    /// which timeout applies). Non-finite timeouts are refused with error 2.
    public var maxSessionTimeout: Duration
    /// Filters (analog and array) one session may define at once; one more is refused with error 12.
    public var maxFiltersPerSession: Int
    /// Frames `publish` may have waiting for the publisher's thread before it refuses more.
    public var handOffCapacity: Int
    /// Send a digital frame only when some line changed since the last one sent for its source.
    public var digitalOnChangeOnly: Bool
    /// Optional CURVE encryption; a `ZMQZAPHandler` must then run on the publisher's context.
    public var curve: PublisherCurve?
    /// Designs the signal filters (kind 13: low-pass, decimate) that subscribers may ask for; nil: the
    /// publisher offers none and a signal-filter request ends the session with error 12. Transport
    /// links no DSP: the command-line tool and the C interface inject `TributarySources`' implementation.
    public var signalFilters: (any SignalFilterFactory)? = nil
    /// The signal filters' CPU budget of one session, in filter operations (multiply-adds) a second:
    /// Σ over its filtered sources of operations per sample × channels × rate (docs/PROTOCOL.md §6.2).
    public var maxSignalFilterCostPerSession: Double = 400e6
    /// The same budget for all sessions together.
    public var maxSignalFilterCost: Double = 4e9

    public init(
        endpoint: String, apiKey: String, description: String = "Tributary publisher",
        maxClockSkew: Duration? = .seconds(300), slowConsumerPolicy: SlowConsumerPolicy = .dropAndCount,
        subscriberQueueFrames: Int32 = 1_000, maxInboundFrameSize: Int = 1 << 20,
        maxInboundTransferSize: UInt64 = 64 << 20, maxReassemblyBytes: UInt64 = 256 << 20,
        maxPendingPeers: Int = 32, maxInboundFramesPerSecond: Int = 100_000,
        maxUnreadBytesPerSession: Int = 16 << 20, maxSessions: Int = 256,
        helloDeadline: Duration = .seconds(10),
        maxSessionTimeout: Duration = .seconds(3_600), maxFiltersPerSession: Int = 16,
        handOffCapacity: Int = 4_096, digitalOnChangeOnly: Bool = false, curve: PublisherCurve? = nil
    ) {
        self.endpoint = endpoint
        self.apiKey = apiKey
        self.description = description
        self.maxClockSkew = maxClockSkew
        self.slowConsumerPolicy = slowConsumerPolicy
        self.subscriberQueueFrames = subscriberQueueFrames
        self.maxInboundFrameSize = maxInboundFrameSize
        self.maxInboundTransferSize = maxInboundTransferSize
        self.maxReassemblyBytes = maxReassemblyBytes
        self.maxPendingPeers = maxPendingPeers
        self.maxInboundFramesPerSecond = maxInboundFramesPerSecond
        self.maxUnreadBytesPerSession = maxUnreadBytesPerSession
        self.maxSessions = maxSessions
        self.helloDeadline = helloDeadline
        self.maxSessionTimeout = maxSessionTimeout
        self.maxFiltersPerSession = maxFiltersPerSession
        self.handOffCapacity = handOffCapacity
        self.digitalOnChangeOnly = digitalOnChangeOnly
        self.curve = curve
    }

    /// What one connection may send before its session opens, handshake included: 64 KiB (a hello
    /// is a few hundred bytes; the rest covers the frames a refused peer may have had in flight).
    public var maxBytesWithoutSession: Int { 64 << 10 }

    /// The most that connections without a session can make the publisher hold together, in bytes
    /// (`maxPendingPeers × maxBytesWithoutSession`), plus what arrives within the 2 ms between checks.
    public var pendingPeerMemoryBound: Int { maxPendingPeers * maxBytesWithoutSession }
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
    /// The signal filters the subscriber asked for (kind 13), by source id.
    public var signalFilters: [SignalFilterRequest] = []
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
