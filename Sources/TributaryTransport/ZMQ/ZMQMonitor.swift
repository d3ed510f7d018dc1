import CZMQ
import Synchronization

/// Connection events reported by a socket monitor.
public struct ZMQMonitorEvents: OptionSet, Sendable, Hashable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// An outgoing connection was established (`ZMQ_EVENT_CONNECTED`).
    public static let connected = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_CONNECTED))
    /// A connection attempt failed and will be retried (`ZMQ_EVENT_CONNECT_RETRIED`).
    public static let connectRetried = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_CONNECT_RETRIED))
    /// The socket is listening on an endpoint (`ZMQ_EVENT_LISTENING`).
    public static let listening = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_LISTENING))
    /// An incoming connection was accepted (`ZMQ_EVENT_ACCEPTED`).
    public static let accepted = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_ACCEPTED))
    /// A connection closed: peer gone, heartbeat timeout, oversized message (`ZMQ_EVENT_DISCONNECTED`).
    public static let disconnected = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_DISCONNECTED))
    /// A listening endpoint was closed (`ZMQ_EVENT_CLOSED`).
    public static let closed = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_CLOSED))
    /// The ZMTP handshake completed, security included (`ZMQ_EVENT_HANDSHAKE_SUCCEEDED`).
    public static let handshakeSucceeded = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_SUCCEEDED))
    /// The handshake failed before authentication (`ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL`).
    public static let handshakeFailedNoDetail = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL))
    /// The peer broke the ZMTP protocol (`ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL`).
    public static let handshakeFailedProtocol = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL))
    /// Authentication was refused, e.g. by the ZAP handler (`ZMQ_EVENT_HANDSHAKE_FAILED_AUTH`).
    public static let handshakeFailedAuth = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH))
    /// The monitor was stopped (`ZMQ_EVENT_MONITOR_STOPPED`); always the last event.
    public static let monitorStopped = ZMQMonitorEvents(rawValue: UInt16(ZMQ_EVENT_MONITOR_STOPPED))

    /// Every handshake failure.
    public static let handshakeFailed: ZMQMonitorEvents = [.handshakeFailedNoDetail, .handshakeFailedProtocol, .handshakeFailedAuth]
    /// What the publisher and subscribers watch: connections coming and going, and failed handshakes.
    public static let connectionLifecycle: ZMQMonitorEvents = [.connected, .accepted, .disconnected, .handshakeSucceeded, .handshakeFailed]
}

/// One event read from a monitor.
public struct ZMQMonitorEvent: Sendable, Equatable {
    /// Which event (exactly one flag).
    public var event: ZMQMonitorEvents
    /// The event's value: a file descriptor for connected/accepted/disconnected, an errno for failures.
    public var value: UInt32
    /// The endpoint concerned (`tcp://127.0.0.1:5555`).
    public var endpoint: String
}

/// Watches one socket's connection events through `zmq_socket_monitor` and an inproc PAIR socket.
///
/// Teardown order (libzmq 4.3 can hang otherwise): stop the monitor (`zmq_socket_monitor(s, NULL, 0)`),
/// close the PAIR that reads events, and only then close the watched socket. `ZMQSocket.close()` does
/// this for you; `close()` here stops the monitor early. Both sockets belong to the thread that owns
/// the watched socket: in a `ZMQLoop`, register `monitor.socket` with the scope to be called on events.
public final class ZMQMonitor {
    /// Unique inproc endpoints per process.
    private static let counter = Atomic<Int>(0)

    /// The PAIR socket that receives the events; poll it for `.readable`.
    public let socket: ZMQSocket
    /// The watched socket's handle, valid while it is open (it closes this monitor first).
    private var watched: UnsafeMutableRawPointer?
    /// The inproc endpoint events are published on.
    public let endpoint: String
    /// What `receiveEvent` receives an event's two parts into, every time.
    private var headerPart = ZMQMessage()
    private var addressPart = ZMQMessage()

    init(watching target: ZMQSocket, events: ZMQMonitorEvents) throws(ZMQError) {
        let handle = try target.openHandle("zmq_socket_monitor")
        let number = Self.counter.wrappingAdd(1, ordering: .relaxed).newValue
        endpoint = "inproc://tributary-monitor-\(number)"
        // The monitor PAIR socket is on the target's context: inproc endpoints are per context.
        socket = try ZMQSocket(context: target.context, type: .pair)
        _ = try retryingOnInterrupt("zmq_socket_monitor", detail: endpoint) {
            zmq_socket_monitor(handle, endpoint, Int32(events.union(.monitorStopped).rawValue))
        }
        watched = handle
        do throws(ZMQError) {
            try socket.connect(endpoint)
        } catch {
            zmq_socket_monitor(handle, nil, 0)
            socket.close()
            throw error
        }
    }

    deinit { close() }

    /// Reads one event.
    /// - Parameter flags: `.dontWait` to return `.again` instead of blocking.
    /// - Returns: The event, or nil if the two monitor parts were malformed (never in libzmq 4.3).
    /// - Throws: `ZMQError` (`.again`, `.notSocket` after `close()`).
    public func receiveEvent(flags: ZMQReceiveFlags = []) throws(ZMQError) -> ZMQMonitorEvent? {
        // Into reused messages: the publisher's housekeeping asks every 20 ms, and an empty answer
        // must not cost an allocation (it was the lossless stream's last one per frame not libzmq's).
        try socket.receive(into: &headerPart, flags: flags)
        guard headerPart.hasMore else { return nil }
        try socket.receive(into: &addressPart)
        let endpoint = addressPart.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        // Drain any unexpected extra parts so the next read starts at an event.
        while addressPart.hasMore { try socket.receive(into: &addressPart) }
        guard headerPart.count == 6 else { return nil }
        return headerPart.withUnsafeBytes { bytes in
            ZMQMonitorEvent(
                event: ZMQMonitorEvents(rawValue: bytes.loadUnaligned(as: UInt16.self)),
                value: bytes.loadUnaligned(fromByteOffset: 2, as: UInt32.self),
                endpoint: endpoint)
        }
    }

    /// Stops the monitor and closes its PAIR socket. Idempotent; the watched socket stays open.
    public func close() {
        if let watched {
            // Stop first: libzmq then sends MONITOR_STOPPED and drops its end of the inproc pipe.
            zmq_socket_monitor(watched, nil, 0)
            self.watched = nil
        }
        socket.close()
    }
}

extension ZMQSocket {
    /// Starts monitoring this socket's `events`; the monitor is closed before this socket closes.
    /// - Returns: The monitor; poll its `socket` for `.readable` and read with `receiveEvent`.
    /// - Throws: `ZMQError` when the socket is closed or a monitor is already running on it (`.invalidArgument`).
    public func startMonitor(events: ZMQMonitorEvents = .connectionLifecycle) throws(ZMQError) -> ZMQMonitor {
        if let monitor, !monitor.socket.isClosed {
            throw ZMQError(.invalidArgument, operation: "zmq_socket_monitor", detail: "already monitored")
        }
        let monitor = try ZMQMonitor(watching: self, events: events)
        self.monitor = monitor
        return monitor
    }
}
