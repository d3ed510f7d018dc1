import CCivetWeb
import Dispatch
import Foundation
import Glibc
import Synchronization

/// Why the HTTP server could not start.
public struct HTTPServerError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The thin Swift wrapper around CivetWeb: fixed routes only (`/` the page, `/ws` the WebSocket,
/// everything else 404 — no file system behind it, so no path traversal), `Host` and `Origin`
/// checked against the names of this view (`HostRules`: DNS rebinding), an optional access token,
/// bounded connections (in all and per address), request heads (size and time) and messages, and
/// one writer thread per WebSocket client with a one-slot mailbox for updates, so that a slow
/// browser only loses updates (counted) and never blocks the caller. A client has at most
/// `maxUpdatesInFlight` updates sent and not yet acknowledged (`acknowledge`), so updates do not
/// queue up in socket buffers either: what a slow browser cannot take is dropped here.
///
/// CivetWeb answers the WebSocket handshake; the frames are then read by `WebSocketReader` from
/// the connection's socket, because CivetWeb 1.15 reads a whole frame — as long as its header says,
/// up to 2 GiB — into memory before any callback sees it.
///
/// `@unchecked Sendable`: `context` is written in `init` and cleared in `stop()` (after CivetWeb's threads
/// are gone); the client and connection tables are behind mutexes.
public final class HTTPServer: @unchecked Sendable {
    /// The limits and the access rules (docs/VIEW.md §2 lists them with their defaults).
    public struct Settings: Sendable {
        /// IPv4 address to bind (CivetWeb is built without IPv6 on Debian).
        public var host: String
        /// TCP port; 0 picks a free one (`port` says which).
        public var port: Int
        /// The access token every request must carry as `?token=…`, or nil when none is required.
        public var token: String?
        /// Names a browser may use for the view besides the bound address, `localhost`, `127.0.0.1`
        /// and `[::1]` (`--http-host`); a request whose `Host` names none of them is answered 421.
        public var hostNames: [String]
        /// WebSocket clients at once; more are refused at the handshake (503).
        public var maxClients: Int = 8
        /// Largest message a client may send; a frame announcing more closes its connection (1009)
        /// before its payload is read.
        public var maxMessageBytes: Int = 4_096
        /// Updates sent to a client and not yet acknowledged, at most.
        public var maxUpdatesInFlight: Int = 2
        /// Connections served at once, WebSockets included (CivetWeb's worker threads); more wait in
        /// CivetWeb's queue (20) and then the kernel's listen backlog (200) until a worker is free.
        public var maxConnections: Int = 64
        /// Connections from one IP address at once; the newest beyond it (WebSockets apart) are
        /// answered 503 and closed within about 20 ms, before CivetWeb waits for their request head.
        public var maxConnectionsPerAddress: Int = 16
        /// Time a client has to send its whole request head once a worker takes its connection
        /// (then it is closed); also the longest a write to a client may make no progress.
        public var requestTimeout: Duration = .seconds(5)
        /// Largest request head (request line and headers); a larger one is answered 413.
        public var maxRequestBytes: Int = 8_192
        /// Silence from a WebSocket client before it is pinged; after 3 unanswered pings it is closed.
        public var idleTimeout: Duration = .seconds(30)
        /// The recorder's endpoints (`view --record-dir`), or nil: then `/recorder…` answers 404.
        package var recorder: RecorderEndpoints?

        public init(host: String, port: Int, token: String?, hostNames: [String] = []) {
            self.host = host
            self.port = port
            self.token = token
            self.hostNames = hostNames
        }
    }

    /// Counters of one WebSocket client.
    public struct ClientStatistics: Sendable, Equatable {
        public var id: Int
        public var updatesSent: UInt64
        public var updatesDropped: UInt64
    }

    /// Who holds what: connections held by CivetWeb's workers, the WebSocket slots (by worker: a
    /// connection object per worker, reused; taken when a handshake is accepted, released when its
    /// connection closes, however the handshake or the session ended) and the sessions' sockets.
    /// Its lock is also what CivetWeb's `connection_close` waits for: under it no connection's
    /// descriptor can be closed, so the guard can cut them safely.
    private struct Connections {
        var open = 0
        var slotHolders: Set<UInt> = []
        var webSocketFDs: Set<Int32> = []
    }

    public let settings: Settings
    /// The port bound.
    public private(set) var port: Int = 0
    /// The names this view answers to.
    public let hostRules: HostRules
    private let page: [UInt8]
    private let onConnect: @Sendable (Int) -> Void
    private let onMessage: @Sendable (Int, String) -> Void
    private let requestMilliseconds: Int
    private let idleMilliseconds: Int
    private var context: OpaquePointer?
    private let clients = Mutex<[UInt: WebSocketClient]>([:])
    private let connections = Mutex(Connections())
    private let stopping = Atomic<Bool>(false)
    private let guardWake = DispatchSemaphore(value: 0)
    private let nextID = Atomic<Int>(1)
    /// Requests refused (wrong Host or Origin, bad token, unknown route, too many clients or
    /// connections from one address, bad handshakes, oversized or malformed messages).
    public let refusals = Atomic<UInt64>(0)

    /// Starts serving.
    /// - Parameters:
    ///   - page: the bytes of `/` (a complete HTML document).
    ///   - onConnect: called with a new WebSocket client's id once it can receive (send it the state).
    ///   - onMessage: called with a client's id and a text message (at most `maxMessageBytes`).
    /// - Throws: `HTTPServerError` when a setting is out of range or the address cannot be bound.
    public init(
        settings: Settings, page: [UInt8], onConnect: @escaping @Sendable (Int) -> Void,
        onMessage: @escaping @Sendable (Int, String) -> Void
    ) throws {
        guard settings.port >= 0 && settings.port <= 65_535 else { throw HTTPServerError("port \(settings.port) is not in 0...65535") }
        guard HostRules.isIPv4Address(settings.host) else {
            throw HTTPServerError("'\(settings.host)' is not an IPv4 address (e.g. 127.0.0.1, or 0.0.0.0 for every interface)")
        }
        for name in settings.hostNames where HostRules.normalizedName(name) == nil {
            throw HTTPServerError("'\(name)' is not a host name (letters, digits, hyphens and dots), an IPv4 address or [an IPv6 address]")
        }
        guard (1...1_000).contains(settings.maxClients) else {
            throw HTTPServerError("maxClients \(settings.maxClients) is not in 1...1000")
        }
        guard (settings.maxClients + 2...4_096).contains(settings.maxConnections) else {
            throw HTTPServerError(
                "maxConnections \(settings.maxConnections) is not in \(settings.maxClients + 2)...4096 (maxClients + 2 at least: WebSockets hold a connection each)"
            )
        }
        guard (1...settings.maxConnections).contains(settings.maxConnectionsPerAddress) else {
            throw HTTPServerError("maxConnectionsPerAddress \(settings.maxConnectionsPerAddress) is not in 1...\(settings.maxConnections)")
        }
        guard (16...(1 << 20)).contains(settings.maxMessageBytes), (1...1_000).contains(settings.maxUpdatesInFlight),
            (1_024...(1 << 20)).contains(settings.maxRequestBytes)
        else {
            throw HTTPServerError(
                "maxMessageBytes (16...1 MiB), maxUpdatesInFlight (1...1000) or maxRequestBytes (1 KiB...1 MiB) out of range")
        }
        guard let requestMilliseconds = Self.milliseconds(settings.requestTimeout, in: 100...600_000),
            let idleMilliseconds = Self.milliseconds(settings.idleTimeout, in: 1_000...3_600_000)
        else {
            throw HTTPServerError("requestTimeout (0.1...600 s) or idleTimeout (1...3600 s) out of range")
        }
        self.settings = settings
        self.page = page
        self.onConnect = onConnect
        self.onMessage = onMessage
        self.requestMilliseconds = requestMilliseconds
        self.idleMilliseconds = idleMilliseconds
        hostRules = HostRules(boundAddress: settings.host, extraNames: settings.hostNames)
        let options = [
            "listening_ports", "\(settings.host):\(settings.port)",
            "num_threads", "\(settings.maxConnections)",
            "connection_queue", "20",
            "listen_backlog", "200",
            "request_timeout_ms", "\(requestMilliseconds)",
            // Only for CivetWeb's own WebSocket reader, which `session` leaves to it if it cannot
            // find the connection's socket.
            "websocket_timeout_ms", "\(idleMilliseconds)",
            "enable_websocket_ping_pong", "yes",
            "enable_keep_alive", "no",
            "max_request_size", "\(settings.maxRequestBytes)",
        ]
        let cStrings = options.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        var pointers: [UnsafePointer<CChar>?] = cStrings.map { UnsafePointer($0) } + [nil]
        var callbacks = mg_callbacks()
        callbacks.log_message = { _, _ in 1 }  // errors are reported through our own results
        callbacks.begin_request = { connection in
            guard let connection, let server = HTTPServer.server(of: connection) else { return 0 }
            return server.screen(connection)
        }
        callbacks.init_connection = { connection, _ in
            if let connection, let server = HTTPServer.server(of: connection) { server.opened(connection) }
            return 0
        }
        callbacks.connection_close = { connection in
            if let connection, let server = HTTPServer.server(of: connection) { server.released(connection) }
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard let context = pointers.withUnsafeMutableBufferPointer({ mg_start(&callbacks, me, $0.baseAddress) }) else {
            throw HTTPServerError("cannot listen on \(settings.host):\(settings.port) (address in use or not on this machine)")
        }
        self.context = context
        var ports = [mg_server_port](repeating: mg_server_port(), count: 2)
        if mg_get_server_ports(context, 2, &ports) >= 1 { port = Int(ports[0].port) }

        let thread = Thread { [weak self] in
            while let server = self, server.guardConnections() {}
        }
        thread.name = "tributary-http-guard"
        thread.start()

        mg_set_request_handler(
            context, "/",
            { connection, data in
                Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().servePage(connection!)
            }, me)
        mg_set_request_handler(
            context, "/recorder",
            { connection, data in
                Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().servePage(connection!)
            }, me)
        mg_set_websocket_handler(
            context, "/ws",
            { connection, data in
                Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().holdsSlot(connection!) ? 0 : 1
            },
            { connection, data in
                Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().session(connection!)
            },
            { connection, bits, bytes, length, data in
                Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().received(connection!, bits, bytes, length)
            },
            { connection, data in
                Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().closed(connection!)
            }, me)
    }

    deinit { stop() }

    /// Stops serving; returns once every connection is closed.
    public func stop() {
        guard let context else { return }
        stopping.store(true, ordering: .relaxed)  // every session ends within 250 ms, the guard at its next turn
        guardWake.signal()
        // A guard turn under way ends before CivetWeb closes its queued sockets (without callbacks):
        // the guard checks `stopping` under this lock before it cuts anything.
        connections.withLock { _ in }
        self.context = nil
        mg_stop(context)
        for client in clients.withLock({ c -> [WebSocketClient] in
            defer { c.removeAll() }; return Array(c.values)
        }) {
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

    private static func server(of connection: OpaquePointer) -> HTTPServer? {
        guard let context = mg_get_context(connection), let data = mg_get_user_data(context) else { return nil }
        return Unmanaged<HTTPServer>.fromOpaque(data).takeUnretainedValue()
    }

    /// CivetWeb keeps one connection object per worker thread: its address names the connection
    /// while it is open.
    private static func key(_ connection: OpaquePointer) -> UInt {
        UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
    }

    private static func remoteAddress(_ info: UnsafePointer<mg_request_info>) -> String {
        withUnsafeBytes(of: info.pointee.remote_addr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    private static func socket(of connection: OpaquePointer) -> Int32? {
        guard let info = mg_get_request_info(connection) else { return nil }
        return ConnectionSocket.find(
            remoteAddress: remoteAddress(info), remotePort: info.pointee.remote_port,
            localPort: info.pointee.server_port)
    }

    /// A worker took a new connection, before its request is read (CivetWeb gives no way to refuse
    /// it here, nor its address): once more connections are open than one address may hold, the
    /// guard looks at once.
    private func opened(_ connection: OpaquePointer) {
        let open = connections.withLock { table -> Int in
            table.open += 1
            return table.open
        }
        if open > settings.maxConnectionsPerAddress { guardWake.signal() }
    }

    /// A connection closed (whatever happened to it): its WebSocket slot is released.
    private func released(_ connection: OpaquePointer) {
        let key = Self.key(connection)
        connections.withLock { table in
            table.open -= 1
            table.slotHolders.remove(key)
        }
    }

    /// One turn of the guard thread: while more connections are open than one address may hold,
    /// the connections of every address over `maxConnectionsPerAddress` (accepted ones waiting in
    /// CivetWeb's queue included) are counted, and the newest of those beyond it, WebSockets apart,
    /// are answered 503 and closed — before CivetWeb waits `requestTimeout` for their request head
    /// with a worker held. At most 50 turns a second. Returns false once the server stops.
    private func guardConnections() -> Bool {
        _ = guardWake.wait(timeout: .now() + .milliseconds(100))
        let limit = settings.maxConnectionsPerAddress
        guard !stopping.load(ordering: .relaxed) else { return false }
        guard connections.withLock({ $0.open }) > limit else { return true }
        let port = self.port
        connections.withLock { table in
            guard !stopping.load(ordering: .relaxed) else { return }
            var byAddress: [UInt32: [ConnectionSocket.Accepted]] = [:]
            for connection in ConnectionSocket.accepted(onPort: port, address: settings.host) {
                byAddress[connection.address, default: []].append(connection)
            }
            for (address, group) in byAddress where group.count > limit {
                let others = group.filter { !table.webSocketFDs.contains($0.fd) }.sorted { $0.fd > $1.fd }
                let text =
                    "\(limit) connections from \(ConnectionSocket.dotted(address)) are open, the most this view takes from one address\n"
                let refusal = Self.response(
                    status: "503 Service Unavailable", type: "text/plain; charset=utf-8", body: Array(text.utf8), head: false)
                for connection in others.prefix(group.count - limit) where ConnectionSocket.isStill(connection, onPort: port) {
                    refusals.add(1, ordering: .relaxed)
                    ConnectionSocket.sendNow(connection.fd, refusal)
                    ConnectionSocket.cut(connection.fd)
                }
            }
        }
        Thread.sleep(forTimeInterval: 0.02)
        return true
    }

    private func holdsSlot(_ connection: OpaquePointer) -> Bool {
        let key = Self.key(connection)
        return connections.withLock { $0.slotHolders.contains(key) }
    }

    private func header(_ connection: OpaquePointer, _ name: String) -> String? {
        mg_get_header(connection, name).map { String(cString: $0) }
    }

    private func tokenAccepted(_ connection: OpaquePointer) -> Bool {
        guard let token = settings.token else { return true }
        guard let info = mg_get_request_info(connection), let query = info.pointee.query_string else { return false }
        for pair in String(cString: query).split(separator: "&") where pair.hasPrefix("token=") {
            return constantTimeEqual(Array(pair.dropFirst(6).utf8), Array(token.utf8))
        }
        return false
    }

    /// Every request, before CivetWeb routes it: Host, Origin, method, route, token, and for `/ws`
    /// the handshake's headers and a WebSocket slot. Returns 0 to let CivetWeb go on, else the
    /// status of the refusal it has answered.
    private func screen(_ connection: OpaquePointer) -> Int32 {
        guard let info = mg_get_request_info(connection) else { return 0 }
        let method = String(cString: info.pointee.request_method)
        let path = info.pointee.local_uri.map { String(cString: $0) } ?? ""
        let head = method == "HEAD"
        func refuse(_ status: String, _ text: String) -> Int32 {
            refusals.add(1, ordering: .relaxed)
            return respond(connection, status: status, type: "text/plain; charset=utf-8", body: Array(text.utf8), head: head)
        }
        guard let host = header(connection, "Host") else { return refuse("400 Bad Request", "the request has no Host header\n") }
        guard hostRules.allows(host: host) else {
            let address = hostRules.anyIPv4Address ? "this machine's address" : settings.host
            return refuse(
                "421 Misdirected Request",
                "'\(Self.printable(host))' is not a name of this view. Open it as http://\(address):\(port)/ "
                    + "(or http://localhost:\(port)/ on this machine), or allow this name with --http-host NAME. "
                    + "(A page of another site under a name that points to this machine could otherwise read the "
                    + "view: DNS rebinding.)\n")
        }
        if let origin = header(connection, "Origin"), !hostRules.allows(origin: origin, host: host) {
            return refuse(
                "403 Forbidden",
                "Origin '\(Self.printable(origin))' is not this view's page (http://\(Self.printable(host))): "
                    + "pages of other sites or ports may not use the view\n")
        }
        let recorderPath = Self.isRecorderPath(path)
        guard method == "GET" || method == "HEAD" || (recorderPath && method == "POST") else {
            return refuse("405 Method Not Allowed", "only GET\n")
        }
        guard path == "/" || path == "/ws" || recorderPath else { return refuse("404 Not Found", "not found\n") }
        guard tokenAccepted(connection) else {
            return refuse("403 Forbidden", "access token missing or wrong: open the URL tributary printed (…/?token=…)\n")
        }
        if recorderPath { return 0 }
        guard path == "/ws" else { return 0 }
        let upgrade = header(connection, "Upgrade")?.lowercased() ?? "",
            connectionHeader = header(connection, "Connection")?.lowercased() ?? ""
        guard upgrade.contains("websocket") && connectionHeader.contains("upgrade") else {
            return refuse("400 Bad Request", "/ws is the page's WebSocket; open the page at /\n")
        }
        guard header(connection, "Sec-WebSocket-Version") == "13" else {
            return refuse("426 Upgrade Required", "only WebSocket version 13 (RFC 6455): Sec-WebSocket-Version: 13\n")
        }
        guard let key = header(connection, "Sec-WebSocket-Key"), Self.isWebSocketKey(key) else {
            return refuse("400 Bad Request", "Sec-WebSocket-Key must be 16 random bytes in base64, 24 characters (RFC 6455 §4.1)\n")
        }
        let slotKey = Self.key(connection), limit = settings.maxClients
        let reserved = connections.withLock { table -> Bool in
            guard table.slotHolders.count < limit else { return false }
            table.slotHolders.insert(slotKey)
            return true
        }
        guard reserved else {
            return refuse("503 Service Unavailable", "\(limit) browsers are connected, the most this view serves: close one and reload\n")
        }
        return 0
    }

    private func servePage(_ connection: OpaquePointer) -> Int32 {
        guard let info = mg_get_request_info(connection) else { return 0 }
        let head = String(cString: info.pointee.request_method) == "HEAD"
        let path = info.pointee.local_uri.map { String(cString: $0) } ?? ""
        if Self.isRecorderPath(path) { return serveRecorder(connection, method: String(cString: info.pointee.request_method), path: path) }
        guard path == "/" else {  // screened already; kept so that no other path can ever get the page
            return respond(connection, status: "404 Not Found", type: "text/plain", body: Array("not found\n".utf8), head: head)
        }
        return respond(connection, status: "200 OK", type: "text/html; charset=utf-8", body: page, head: head)
    }

    static func isRecorderPath(_ path: String) -> Bool { path == "/recorder" || path.hasPrefix("/recorder/") }

    /// A request to the recorder (docs/VIEW.md §6), screened already (Host, Origin, token): refused
    /// when the view has no recorder (404) or is open to other machines without a token (403); a
    /// POST's body must be JSON (415), its length given (411) and at most `maxBodyBytes` (413).
    private func serveRecorder(_ connection: OpaquePointer, method: String, path: String) -> Int32 {
        func answer(_ status: Int, _ body: String) -> Int32 {
            if status >= 400 { refusals.add(1, ordering: .relaxed) }
            return respond(
                connection, status: "\(status) \(Self.reason(status))", type: "application/json; charset=utf-8", body: Array(body.utf8),
                head: false)
        }
        guard let recorder = settings.recorder else {
            return answer(404, RecorderEndpoints.errorBody("this view has no recorder: start 'tributary view' with --record-dir DIR"))
        }
        guard settings.host.hasPrefix("127.") || settings.token != nil else {
            return answer(
                403,
                RecorderEndpoints.errorBody(
                    "the recorder is only on a view bound to a loopback address (127.x.x.x) or that requires its access token; "
                        + "this one is bound to \(settings.host) without a token"))
        }
        var body: [UInt8] = []
        if method == "POST" {
            let type = header(connection, "Content-Type")?.lowercased() ?? ""
            guard type.hasPrefix("application/json") else {
                return answer(415, RecorderEndpoints.errorBody("a recorder request's body is JSON: send Content-Type: application/json"))
            }
            guard header(connection, "Transfer-Encoding") == nil, let text = header(connection, "Content-Length"), let length = Int(text),
                length >= 0
            else {
                return answer(411, RecorderEndpoints.errorBody("a recorder request needs a Content-Length (and no Transfer-Encoding)"))
            }
            guard length <= RecorderEndpoints.maxBodyBytes else {
                return answer(413, RecorderEndpoints.errorBody("the body is \(length) bytes; at most \(RecorderEndpoints.maxBodyBytes)"))
            }
            body = [UInt8](repeating: 0, count: length)
            var read = 0
            while read < length {
                let n = body.withUnsafeMutableBytes { mg_read(connection, $0.baseAddress! + read, length - read) }
                guard n > 0 else { return answer(400, RecorderEndpoints.errorBody("the body ended after \(read) of \(length) bytes")) }
                read += Int(n)
            }
        }
        let (status, text) = recorder.handle(method: method, path: path, body: body)
        return answer(status, text)
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    private static func response(status: String, type: String, body: [UInt8], head: Bool) -> [UInt8] {
        let header =
            "HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\n"
            + "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"
            + "Referrer-Policy: no-referrer\r\n"
            + "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            + "connect-src 'self'; img-src data:; frame-ancestors 'none'\r\n"
            + (status.hasPrefix("426") ? "Sec-WebSocket-Version: 13\r\n" : "") + "Connection: close\r\n\r\n"
        return Array(header.utf8) + (head ? [] : body)
    }

    private func respond(_ connection: OpaquePointer, status: String, type: String, body: [UInt8], head: Bool) -> Int32 {
        let bytes = Self.response(status: status, type: type, body: body, head: head)
        _ = bytes.withUnsafeBytes { mg_write(connection, $0.baseAddress, $0.count) }
        return Int32(status.prefix(3)) ?? 200
    }

    /// What a client sent, shown back to it: printable ASCII, at most 100 characters.
    private static func printable(_ text: String) -> String {
        String(text.unicodeScalars.prefix(100).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
    }

    static func isWebSocketKey(_ key: String) -> Bool {
        key.utf8.count == 24 && Data(base64Encoded: key)?.count == 16
    }

    private static func milliseconds(_ duration: Duration, in range: ClosedRange<Int>) -> Int? {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, seconds <= Int64(range.upperBound / 1_000) else { return nil }
        let value = Int(seconds) * 1_000 + Int(attoseconds / 1_000_000_000_000_000)
        return range.contains(value) ? value : nil
    }

    /// The accepted handshake's session: the client is registered, then its frames are read here
    /// until it ends; the connection is then closed under CivetWeb, whose own reader ends at once.
    /// (A client must wait for the 101 before it sends frames, RFC 6455 §4.1: bytes sent with the
    /// handshake are in CivetWeb's buffer, not the socket, and are lost.)
    private func session(_ connection: OpaquePointer) {
        let key = Self.key(connection)
        let client = WebSocketClient(
            connection: connection, id: nextID.add(1, ordering: .relaxed).oldValue,
            maxInFlight: settings.maxUpdatesInFlight)
        clients.withLock { $0[key] = client }
        client.start()
        onConnect(client.id)
        // Without its socket (never seen: /proc/self/fd is readable and the connection open) the frames
        // are left to CivetWeb's reader and `received`, which applies the size rule after the fact.
        guard let fd = Self.socket(of: connection) else { return }
        connections.withLock { _ = $0.webSocketFDs.insert(fd) }
        var reader = WebSocketReader(fd: fd, maxMessageBytes: settings.maxMessageBytes, idleMilliseconds: idleMilliseconds)
        let end = reader.run(
            stop: { [self] in
                if stopping.load(ordering: .relaxed) { return WebSocketReader.End(code: 1001, reason: "the view is stopping") }
                return client.endReason.map { WebSocketReader.End(code: 1008, reason: $0) }
            },
            send: { opcode, payload in
                Self.write(connection, opcode.rawValue, payload) > 0
            },
            onText: { [onMessage] bytes in
                onMessage(client.id, String(decoding: bytes, as: UTF8.self))
            })
        clients.withLock { $0[key] = nil }
        client.close()
        if end.code == 1002 || end.code == 1009 { refusals.add(1, ordering: .relaxed) }
        if let code = end.code {
            let reason = Array(end.reason.utf8.prefix(120))
            _ = Self.write(connection, WebSocketReader.Opcode.close.rawValue, [UInt8(code >> 8), UInt8(code & 0xFF)] + reason)
        }
        connections.withLock { table in
            table.webSocketFDs.remove(fd)
            ConnectionSocket.cut(fd)
        }
    }

    private static func write(_ connection: OpaquePointer, _ opcode: UInt8, _ payload: [UInt8]) -> Int32 {
        payload.withUnsafeBytes { mg_websocket_write(connection, Int32(opcode), $0.baseAddress, $0.count) }
    }

    /// CivetWeb's data handler: only reached when `session` could not take the socket over.
    private func received(_ connection: OpaquePointer, _ bits: Int32, _ bytes: UnsafeMutablePointer<CChar>?, _ length: Int) -> Int32 {
        let opcode = bits & 0xF
        if opcode == Int32(MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE) { return 0 }
        guard opcode == Int32(MG_WEBSOCKET_OPCODE_TEXT) else { return 1 }  // pings are answered by CivetWeb
        guard length <= settings.maxMessageBytes, let bytes else { refusals.add(1, ordering: .relaxed); return 0 }
        guard let client = clients.withLock({ $0[Self.key(connection)] }) else { return 0 }
        let text = String(decoding: UnsafeRawBufferPointer(start: bytes, count: length), as: UTF8.self)
        onMessage(client.id, text)
        return 1
    }

    private func closed(_ connection: OpaquePointer) {
        clients.withLock { $0.removeValue(forKey: Self.key(connection)) }?.close()
    }
}

/// Compares secrets in time independent of where they differ.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for i in 0..<a.count { difference |= a[i] ^ b[i] }
    return difference == 0
}
