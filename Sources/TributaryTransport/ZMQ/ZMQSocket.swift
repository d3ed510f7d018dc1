import CZMQ

/// The libzmq socket patterns Tributary uses.
public enum ZMQSocketType: Sendable, CustomStringConvertible {
    /// The publisher's socket: addresses each subscriber by routing id.
    case router
    /// A subscriber's socket: one connection to a publisher, asynchronous both ways.
    case dealer
    /// One-to-one, used for inproc control channels and socket monitors.
    case pair
    /// Replies to requests in lock-step; the ZAP handler's socket.
    case rep
    /// Sends requests in lock-step (tests and tools).
    case req

    var rawValue: Int32 {
        switch self {
        case .router: ZMQ_ROUTER
        case .dealer: ZMQ_DEALER
        case .pair: ZMQ_PAIR
        case .rep: ZMQ_REP
        case .req: ZMQ_REQ
        }
    }

    public var description: String {
        switch self {
        case .router: "ROUTER"
        case .dealer: "DEALER"
        case .pair: "PAIR"
        case .rep: "REP"
        case .req: "REQ"
        }
    }
}

/// Flags of a send: do not block, more parts follow.
public struct ZMQSendFlags: OptionSet, Sendable {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// Fail with `.again` instead of blocking when the message cannot be queued (`ZMQ_DONTWAIT`).
    public static let dontWait = ZMQSendFlags(rawValue: ZMQ_DONTWAIT)
    /// This part is followed by more parts of the same message (`ZMQ_SNDMORE`).
    public static let sendMore = ZMQSendFlags(rawValue: ZMQ_SNDMORE)
}

/// Flags of a receive.
public struct ZMQReceiveFlags: OptionSet, Sendable {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// Fail with `.again` instead of blocking when no message is waiting (`ZMQ_DONTWAIT`).
    public static let dontWait = ZMQReceiveFlags(rawValue: ZMQ_DONTWAIT)
}

/// Readiness of a socket, as reported by `zmq_poll` and `ZMQ_EVENTS`.
public struct ZMQPollEvents: OptionSet, Sendable, Hashable {
    public var rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }
    /// At least one message can be received without blocking (`ZMQ_POLLIN`).
    public static let readable = ZMQPollEvents(rawValue: Int16(ZMQ_POLLIN))
    /// At least one message can be sent without blocking (`ZMQ_POLLOUT`).
    public static let writable = ZMQPollEvents(rawValue: Int16(ZMQ_POLLOUT))
    /// An error condition on a raw file descriptor (`ZMQ_POLLERR`).
    public static let error = ZMQPollEvents(rawValue: Int16(ZMQ_POLLERR))
}

/// One libzmq socket.
///
/// **One thread only.** libzmq sockets are not thread-safe: a socket must be created, used and closed
/// by one thread at a time, and in Tributary that is the `ZMQLoop` thread that owns it (create it inside
/// a `ZMQLoop.perform` closure). The type is deliberately not `Sendable`, so the compiler refuses to
/// let a socket escape to another thread or into a Task that could hop threads.
///
/// A socket keeps its `ZMQContext` alive, is created with `ZMQ_LINGER` 0 (closing never waits for
/// unsent messages, so context termination cannot hang), and is closed in `deinit` if `close()` was
/// not called. A monitor attached with `startMonitor` is torn down before the socket closes.
public final class ZMQSocket {
    /// The context this socket belongs to.
    public let context: ZMQContext
    /// The socket's pattern.
    public let type: ZMQSocketType
    /// The libzmq socket; nil once closed.
    private(set) var handle: UnsafeMutableRawPointer?
    /// The monitor watching this socket, if any; closed before the socket (see `close()`).
    var monitor: ZMQMonitor?
    /// Set when `ZMQ_CURVE_SERVER` is switched on: binding then requires a running ZAP handler.
    var isCurveServer = false

    /// Creates a socket of `type` on `context`, with `ZMQ_LINGER` 0.
    /// - Throws: `ZMQError` (`.terminated` when the context is shut down, `.tooManyOpenFiles`).
    public init(context: ZMQContext, type: ZMQSocketType) throws(ZMQError) {
        guard let handle = zmq_socket(context.handle, type.rawValue) else {
            throw ZMQError.last("zmq_socket", detail: type.description)
        }
        self.context = context
        self.type = type
        self.handle = handle
        var linger: Int32 = 0
        zmq_setsockopt(handle, ZMQ_LINGER, &linger, MemoryLayout<Int32>.size)
    }

    deinit { close() }

    /// Whether `close()` has been called.
    public var isClosed: Bool { handle == nil }

    /// Closes the socket: first the monitor attached to it (libzmq can hang when a monitored socket
    /// closes under its monitor), then the socket itself. Idempotent.
    public func close() {
        monitor?.close()
        monitor = nil
        guard let handle else { return }
        zmq_close(handle)
        self.handle = nil
    }

    /// The open handle, or `.notSocket` after `close()`.
    @inline(__always)
    func openHandle(_ operation: StaticString) throws(ZMQError) -> UnsafeMutableRawPointer {
        guard let handle else { throw ZMQError(.notSocket, operation: operation) }
        return handle
    }

    // MARK: Endpoints

    /// Binds the socket to an endpoint (`tcp://127.0.0.1:0` picks a free port: read `lastEndpoint`).
    ///
    /// A socket with `ZMQ_CURVE_SERVER` on refuses to bind unless a `ZMQZAPHandler` is running on the
    /// same context: without one, libzmq accepts *any* client key.
    /// - Parameter endpoint: `tcp://HOST:PORT`, `inproc://NAME` or `ipc://PATH`.
    /// - Throws: `ZMQError` naming the endpoint (`.addressInUse`, `.protocolNotSupported`, ...), or
    ///   `.curveWithoutZAPHandler` for an unprotected CURVE server.
    public func bind(_ endpoint: String) throws(ZMQError) {
        let handle = try openHandle("zmq_bind")
        if isCurveServer && !context.zapHandlerRunning.load(ordering: .sequentiallyConsistent) {
            throw ZMQError(.curveWithoutZAPHandler, operation: "zmq_bind", detail: endpoint)
        }
        _ = try retryingOnInterrupt("zmq_bind", detail: endpoint) { zmq_bind(handle, endpoint) }
    }

    /// Connects the socket to an endpoint; libzmq connects (and reconnects) in the background.
    /// - Throws: `ZMQError` naming the endpoint when it is malformed or its transport unknown.
    public func connect(_ endpoint: String) throws(ZMQError) {
        let handle = try openHandle("zmq_connect")
        _ = try retryingOnInterrupt("zmq_connect", detail: endpoint) { zmq_connect(handle, endpoint) }
    }

    /// Stops listening on an endpoint given to `bind` (use `lastEndpoint` for a wildcard port).
    /// - Throws: `ZMQError` naming the endpoint, `.addressNotAvailable` when it was not bound.
    public func unbind(_ endpoint: String) throws(ZMQError) {
        let handle = try openHandle("zmq_unbind")
        _ = try retryingOnInterrupt("zmq_unbind", detail: endpoint) { zmq_unbind(handle, endpoint) }
    }

    /// Drops the connection to an endpoint given to `connect`.
    /// - Throws: `ZMQError` naming the endpoint, `.addressNotAvailable` when it was not connected.
    public func disconnect(_ endpoint: String) throws(ZMQError) {
        let handle = try openHandle("zmq_disconnect")
        _ = try retryingOnInterrupt("zmq_disconnect", detail: endpoint) { zmq_disconnect(handle, endpoint) }
    }
}

extension ZMQError.Code {
    /// Tributary's own refusal (not a libzmq errno): a CURVE server socket was asked to bind while no ZAP
    /// handler runs on its context, which would let any client key in.
    public static let curveWithoutZAPHandler = ZMQError.Code(rawValue: hausnumero + 1_000)
}
