import CCivetWeb
import Dispatch
import Foundation
import Synchronization

/// Why the HTTP server could not start.
public struct HTTPServerError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The thin Swift wrapper around CivetWeb: fixed routes only (`/` the page, `/ws` the WebSocket,
/// everything else 404 — no file system behind it, so no path traversal), an optional access token,
/// bounded connections and message sizes, and one writer thread per WebSocket client with a one-slot
/// mailbox for updates, so that a slow browser only loses updates (counted) and never blocks the caller.
/// A client has at most `maxUpdatesInFlight` updates sent and not yet acknowledged (`acknowledge`), so
/// updates do not queue up in socket buffers either: what a slow browser cannot take is dropped here.
///
/// `@unchecked Sendable`: `context` is written in `init` and cleared in `stop()` (after CivetWeb's threads
/// are gone); the client table is behind a mutex.
public final class HTTPServer: @unchecked Sendable {
    /// The limits and the access rule.
    public struct Settings: Sendable {
        /// IPv4 address to bind (CivetWeb is built without IPv6 on Debian).
        public var host: String
        /// TCP port; 0 picks a free one (`port` says which).
        public var port: Int
        /// The access token every request must carry as `?token=…`, or nil when none is required.
        public var token: String?
        /// WebSocket clients at once; more are refused at the handshake.
        public var maxClients: Int = 8
        /// Largest message a client may send; a longer one closes its connection.
        public var maxMessageBytes: Int = 4_096
        /// Updates sent to a client and not yet acknowledged, at most.
        public var maxUpdatesInFlight: Int = 2
        public init(host: String, port: Int, token: String?) {
            self.host = host
            self.port = port
            self.token = token
        }
    }

    /// Counters of one WebSocket client.
    public struct ClientStatistics: Sendable, Equatable {
        public var id: Int
        public var updatesSent: UInt64
        public var updatesDropped: UInt64
    }

    public let settings: Settings
    /// The port bound.
    public private(set) var port: Int = 0
    private let page: [UInt8]
    private let onConnect: @Sendable (Int) -> Void
    private let onMessage: @Sendable (Int, String) -> Void
    private var context: OpaquePointer?
    private let clients = Mutex<[UInt: WebSocketClient]>([:])
    private let pendingHandshakes = Atomic<Int>(0)
    private let nextID = Atomic<Int>(1)
    /// Requests refused (bad token, unknown route, too many clients, bad origin, oversized messages).
    public let refusals = Atomic<UInt64>(0)

    /// Starts serving.
    /// - Parameters:
    ///   - page: the bytes of `/` (a complete HTML document).
    ///   - onConnect: called with a new WebSocket client's id once it can receive (send it the state).
    ///   - onMessage: called with a client's id and a text message (at most `maxMessageBytes`).
    /// - Throws: `HTTPServerError` when the address cannot be bound.
    public init(settings: Settings, page: [UInt8], onConnect: @escaping @Sendable (Int) -> Void,
                onMessage: @escaping @Sendable (Int, String) -> Void) throws {
        guard settings.port >= 0 && settings.port <= 65_535 else { throw HTTPServerError("port \(settings.port) is not in 0...65535") }
        guard !settings.host.isEmpty, settings.host.allSatisfy({ $0.isNumber || $0 == "." }) else {
            throw HTTPServerError("'\(settings.host)' is not an IPv4 address (e.g. 127.0.0.1, or 0.0.0.0 for every interface)")
        }
        self.settings = settings
        self.page = page
        self.onConnect = onConnect
        self.onMessage = onMessage
        let options = [
            "listening_ports", "\(settings.host):\(settings.port)",
            "num_threads", "\(settings.maxClients + 4)",
            "request_timeout_ms", "10000",
            "websocket_timeout_ms", "30000",
            "enable_websocket_ping_pong", "yes",
            "enable_keep_alive", "no",
            "max_request_size", "8192",
        ]
        let cStrings = options.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        var pointers: [UnsafePointer<CChar>?] = cStrings.map { UnsafePointer($0) } + [nil]
        var callbacks = mg_callbacks()
        callbacks.log_message = { _, _ in 1 }  // errors are reported through our own results
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard let context = pointers.withUnsafeMutableBufferPointer({ mg_start(&callbacks, me, $0.baseAddress) }) else {
            throw HTTPServerError("cannot listen on \(settings.host):\(settings.port) (address in use or not on this machine)")
        }
        self.context = context
        var ports = [mg_server_port](repeating: mg_server_port(), count: 2)
        if mg_get_server_ports(context, 2, &ports) >= 1 { port = Int(ports[0].port) }

        mg_set_request_handler(context, "/", { connection, data in
            Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().handleRequest(connection!)
        }, me)
        mg_set_websocket_handler(context, "/ws", { connection, data in
            Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().admit(connection!)
        }, { connection, data in
            Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().ready(connection!)
        }, { connection, bits, bytes, length, data in
            Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().received(connection!, bits, bytes, length)
        }, { connection, data in
            Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().closed(connection!)
        }, me)
    }

    deinit { stop() }

    /// Stops serving; returns once every connection is closed.
    public func stop() {
        guard let context else { return }
        self.context = nil
        mg_stop(context)
        for client in clients.withLock({ c -> [WebSocketClient] in defer { c.removeAll() }; return Array(c.values) }) {
            client.close()
        }
    }

    /// Offers an update to every client. A client still sending the previous one has it replaced
    /// (counted as dropped). `droppedOffset`: where to store, as a little-endian f64, the client's
    /// dropped count in its copy.
    public func broadcast(_ update: [UInt8], droppedOffset: Int?) {
        for client in clients.withLock({ Array($0.values) }) { client.offer(update, droppedOffset: droppedOffset) }
    }

    /// Queues a text message for one client (0: every client); text messages are never dropped,
    /// but a client with 64 unsent ones is disconnected.
    public func sendText(_ text: String, to id: Int = 0) {
        for client in clients.withLock({ Array($0.values) }) where id == 0 || client.id == id { client.queueText(text) }
    }

    /// A client has processed one update: the next may be sent.
    public func acknowledge(_ id: Int) {
        for client in clients.withLock({ Array($0.values) }) where client.id == id { client.acknowledge() }
    }

    /// The WebSocket clients and their counters.
    public func clientStatistics() -> [ClientStatistics] {
        clients.withLock { $0.values.map { $0.statistics } }.sorted { $0.id < $1.id }
    }

    // MARK: CivetWeb callbacks (on CivetWeb's worker threads)

    private func tokenAccepted(_ connection: OpaquePointer) -> Bool {
        guard let token = settings.token else { return true }
        guard let info = mg_get_request_info(connection), let query = info.pointee.query_string else { return false }
        for pair in String(cString: query).split(separator: "&") where pair.hasPrefix("token=") {
            return constantTimeEqual(Array(pair.dropFirst(6).utf8), Array(token.utf8))
        }
        return false
    }

    private func handleRequest(_ connection: OpaquePointer) -> Int32 {
        guard let info = mg_get_request_info(connection) else { return 0 }
        let method = String(cString: info.pointee.request_method)
        let path = info.pointee.local_uri.map { String(cString: $0) } ?? ""
        guard method == "GET" || method == "HEAD" else {
            refusals.add(1, ordering: .relaxed)
            return respond(connection, status: "405 Method Not Allowed", type: "text/plain", body: Array("only GET\n".utf8), head: false)
        }
        guard path == "/" else {
            refusals.add(1, ordering: .relaxed)
            return respond(connection, status: "404 Not Found", type: "text/plain", body: Array("not found\n".utf8), head: method == "HEAD")
        }
        guard tokenAccepted(connection) else {
            refusals.add(1, ordering: .relaxed)
            return respond(connection, status: "403 Forbidden", type: "text/plain",
                           body: Array("access token missing or wrong: open the URL tributary printed (…/?token=…)\n".utf8), head: method == "HEAD")
        }
        return respond(connection, status: "200 OK", type: "text/html; charset=utf-8", body: page, head: method == "HEAD")
    }

    private func respond(_ connection: OpaquePointer, status: String, type: String, body: [UInt8], head: Bool) -> Int32 {
        let header = "HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\n"
            + "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"
            + "Referrer-Policy: no-referrer\r\n"
            + "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            + "connect-src 'self'; img-src data:; frame-ancestors 'none'\r\nConnection: close\r\n\r\n"
        var bytes = Array(header.utf8)
        if !head { bytes += body }
        _ = bytes.withUnsafeBytes { mg_write(connection, $0.baseAddress, $0.count) }
        return Int32(status.prefix(3)) ?? 200
    }

    /// The handshake: token, same origin (a page of another site cannot connect to a local viewer),
    /// and the client limit. Non-zero refuses.
    private func admit(_ connection: OpaquePointer) -> Int32 {
        guard tokenAccepted(connection) else { refusals.add(1, ordering: .relaxed); return 1 }
        if let origin = mg_get_header(connection, "Origin").map({ String(cString: $0) }) {
            let host = mg_get_header(connection, "Host").map { String(cString: $0) } ?? ""
            guard origin == "http://\(host)" else { refusals.add(1, ordering: .relaxed); return 1 }
        }
        let admitted = pendingHandshakes.add(1, ordering: .relaxed).newValue + clients.withLock { $0.count } <= settings.maxClients
        if !admitted {
            pendingHandshakes.subtract(1, ordering: .relaxed)
            refusals.add(1, ordering: .relaxed)
            return 1
        }
        return 0
    }

    private func ready(_ connection: OpaquePointer) {
        pendingHandshakes.subtract(1, ordering: .relaxed)
        let client = WebSocketClient(connection: connection, id: nextID.add(1, ordering: .relaxed).oldValue,
                                     maxInFlight: settings.maxUpdatesInFlight)
        clients.withLock { $0[UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))] = client }
        client.start()
        onConnect(client.id)
    }

    private func received(_ connection: OpaquePointer, _ bits: Int32, _ bytes: UnsafeMutablePointer<CChar>?, _ length: Int) -> Int32 {
        let opcode = bits & 0xF
        if opcode == Int32(MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE) { return 0 }
        guard opcode == Int32(MG_WEBSOCKET_OPCODE_TEXT) else { return 1 }  // pings are answered by CivetWeb
        guard length <= settings.maxMessageBytes, let bytes else { refusals.add(1, ordering: .relaxed); return 0 }
        guard let client = clients.withLock({ $0[UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))] }) else { return 0 }
        let text = String(decoding: UnsafeRawBufferPointer(start: bytes, count: length), as: UTF8.self)
        onMessage(client.id, text)
        return 1
    }

    private func closed(_ connection: OpaquePointer) {
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        clients.withLock { $0.removeValue(forKey: key) }?.close()
    }
}

/// Compares secrets in time independent of where they differ.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for i in 0..<a.count { difference |= a[i] ^ b[i] }
    return difference == 0
}

/// One WebSocket connection's writer: a one-slot mailbox for updates, a bounded queue for text.
///
/// `@unchecked Sendable`: every mutable field is guarded by `condition`; `connection` is only written to
/// by the writer thread until `close()` has waited for it to finish.
final class WebSocketClient: @unchecked Sendable {
    let id: Int
    private let connection: OpaquePointer
    private let condition = NSCondition()
    private var update: [UInt8]?
    private var droppedOffset: Int?
    private var texts: [String] = []
    private var isClosed = false
    private var sent: UInt64 = 0
    private var dropped: UInt64 = 0
    private var inFlight = 0
    private let maxInFlight: Int
    private let finished = DispatchSemaphore(value: 0)

    init(connection: OpaquePointer, id: Int, maxInFlight: Int) {
        self.connection = connection
        self.id = id
        self.maxInFlight = maxInFlight
    }

    func acknowledge() {
        condition.lock()
        inFlight = max(0, inFlight - 1)
        condition.signal()
        condition.unlock()
    }

    var statistics: HTTPServer.ClientStatistics {
        condition.lock()
        defer { condition.unlock() }
        return HTTPServer.ClientStatistics(id: id, updatesSent: sent, updatesDropped: dropped)
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "tributary-ws-\(id)"
        thread.start()
    }

    func offer(_ bytes: [UInt8], droppedOffset: Int?) {
        condition.lock()
        if update != nil { dropped += 1 }
        update = bytes
        self.droppedOffset = droppedOffset
        condition.signal()
        condition.unlock()
    }

    func queueText(_ text: String) {
        condition.lock()
        if texts.count >= 64 { isClosed = true } else { texts.append(text) }
        condition.signal()
        condition.unlock()
    }

    /// Stops the writer and waits for it (CivetWeb frees the connection after its close handler returns).
    func close() {
        condition.lock()
        isClosed = true
        condition.signal()
        condition.unlock()
        _ = finished.wait(timeout: .now() + .seconds(35))
    }

    private func run() {
        defer { finished.signal() }
        while true {
            condition.lock()
            while !isClosed && texts.isEmpty && (update == nil || inFlight >= maxInFlight) { condition.wait() }
            if isClosed { condition.unlock(); return }
            let text: String? = texts.isEmpty ? nil : texts.removeFirst()
            var bytes: [UInt8]? = nil
            if text == nil {
                bytes = update
                update = nil
                inFlight += 1
                if let offset = droppedOffset, bytes != nil, offset + 8 <= bytes!.count {
                    let value = Double(dropped).bitPattern.littleEndian
                    bytes!.withUnsafeMutableBytes { $0.storeBytes(of: value, toByteOffset: offset, as: UInt64.self) }
                }
            }
            condition.unlock()
            let result: Int32
            if let text {
                result = Array(text.utf8).withUnsafeBytes {
                    mg_websocket_write(connection, Int32(MG_WEBSOCKET_OPCODE_TEXT), $0.baseAddress, $0.count)
                }
            } else {
                result = bytes!.withUnsafeBytes {
                    mg_websocket_write(connection, Int32(MG_WEBSOCKET_OPCODE_BINARY), $0.baseAddress, $0.count)
                }
                condition.lock()
                sent += 1
                condition.unlock()
            }
            if result <= 0 {
                condition.lock()
                isClosed = true
                condition.unlock()
                return
            }
        }
    }
}
