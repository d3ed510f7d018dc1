import Dispatch
import Foundation
import Synchronization
import TributaryTransport
import TributaryWire

/// The live view of one subscription: the `LiveModel` registered on a Subject, the HTTP/WebSocket
/// server, the update loop (≤ 10 Hz, at most `byteBudget` bytes a second per client) and the page's
/// requests (channel selection → the Subject's server-side filters and source selection; time window).
///
/// `@unchecked Sendable`: `server` is set once in `init`.
public final class LiveView: @unchecked Sendable {
    /// Bytes of updates a second per browser (WebSocket framing and the JSON messages come on top:
    /// the total stays under 200 KB/s).
    public static let byteBudget = 180_000.0
    /// Shortest interval between updates (10 Hz).
    public static let minimumInterval = 0.1
    /// Interval between readings (each costs an FFT of 16384 samples per channel).
    public static let readingsInterval = 0.5

    public let subject: Subject
    public let model: LiveModel
    private var server: HTTPServer!
    public let filterControl: FilterControl
    private let running = Atomic<Bool>(true)
    private let loopDone = DispatchSemaphore(value: 0)
    /// Updates built so far.
    public let updatesBuilt = Atomic<UInt64>(0)
    /// Bytes of updates offered to browsers (per client) so far.
    public let bytesOffered = Atomic<UInt64>(0)

    /// Starts serving the page for an open Subject (opened with `sourceFilterEnabled: true`, not started).
    /// - Throws: `HTTPServerError` when the address cannot be bound.
    public init(subject: Subject, model: LiveModel, settings: HTTPServer.Settings) throws {
        self.subject = subject
        self.model = model
        filterControl = FilterControl(subject: subject, model: model)
        server = try HTTPServer(
            settings: settings, page: Array(ViewPage.html.utf8),
            onConnect: { [weak self] id in
                guard let self else { return }
                self.server.sendText(
                    self.model.describe(filters: self.filterControl.filters, recorder: self.server.settings.recorder != nil), to: id)
            },
            onMessage: { [weak self] id, text in
                self?.handle(text, from: id)
            })
        let thread = Thread { [self] in updateLoop() }
        thread.name = "tributary-view"
        thread.start()
    }

    /// The port the page is served on.
    public var port: Int { server.port }

    /// Counters of the connected browsers.
    public var clients: [HTTPServer.ClientStatistics] { server.clientStatistics() }

    /// Requests refused by the HTTP server.
    public var refusals: UInt64 { server.refusals.load(ordering: .relaxed) }

    /// Stops the update loop and the server (the Subject is the caller's).
    public func stop() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        _ = loopDone.wait(timeout: .now() + .seconds(5))
        server.stop()
    }

    /// Shows these channels (see `FilterControl.select`).
    /// - Throws: `ErrorReport` from the Subject (6 when the session is down).
    public func select(_ keys: [ChannelKey]) throws(ErrorReport) {
        try filterControl.select(keys)
    }

    // MARK: The page's requests

    private func handle(_ text: String, from client: Int) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let type = object["type"] as? String
        else {
            return reply(client, "the message is not a JSON object with a \"type\"")
        }
        switch type {
        case "ping":
            return
        case "ack":
            server.acknowledge(client)
        case "select":
            guard let pairs = object["channels"] as? [[Any]] else {
                return reply(client, "select: \"channels\" must be [[source, channel], ...]")
            }
            var keys: [ChannelKey] = []
            let configurations = model.knownConfigurations
            for pair in pairs {
                guard pair.count == 2, let s = (pair[0] as? NSNumber)?.uint32Value, let c = (pair[1] as? NSNumber)?.uint32Value,
                    configurations[s]?.channels.contains(where: { $0.index == c }) == true
                else {
                    return reply(client, "select: \(pair) is not a [source, channel] of a known source")
                }
                let key = ChannelKey(source: s, channel: c)
                if !keys.contains(key) { keys.append(key) }
            }
            guard keys.count <= LiveModel.maxChannels else {
                return reply(client, "select: at most \(LiveModel.maxChannels) channels, got \(keys.count)")
            }
            do { try select(keys) } catch {
                return reply(client, "the filter could not be changed: error \(error.code): \(error.message)")
            }
        case "window":
            guard let seconds = (object["seconds"] as? NSNumber)?.doubleValue, LiveModel.windows.contains(seconds) else {
                return reply(client, "window: \"seconds\" must be one of \(LiveModel.windows)")
            }
            model.setWindow(seconds)
        default:
            reply(client, "unknown message type '\(type)'")
        }
    }

    private func reply(_ client: Int, _ message: String) {
        server.sendText("{\"type\":\"error\",\"message\":\(jsonString(message))}", to: client)
    }

    // MARK: Updates

    private func updateLoop() {
        defer { loopDone.signal() }
        var sequence: UInt32 = 0
        var interval = Self.minimumInterval
        var revision = -1
        var readings: [ChannelKey: ChannelReadings] = [:]
        var lastReadings = 0.0
        var lastTraffic = model.traffic
        var lastTime = Date().timeIntervalSince1970
        var lastError: String?
        while running.load(ordering: .relaxed) {
            Thread.sleep(forTimeInterval: interval)
            let now = Date().timeIntervalSince1970
            let traffic = model.traffic
            let elapsed = max(1e-3, now - lastTime)
            var health = LinkHealth()
            health.framesPerSecond = Double(traffic.frames - lastTraffic.frames) / elapsed
            health.megabytesPerSecond = Double(traffic.bytes - lastTraffic.bytes) / elapsed / 1e6
            lastTraffic = traffic
            lastTime = now
            let statistics = subject.statistics()
            health.framesReceived = statistics.framesReceived
            health.gapNotices = statistics.gapNotices
            health.framesLost = statistics.framesMissing
            health.unaccountedLoss = statistics.unaccountedLoss
            health.reconnections = statistics.reconnections
            health.callbackLatencyP50Ms = Double(statistics.callbackQueue.latencyP50Ns) / 1e6
            health.callbackLatencyP99Ms = Double(statistics.callbackQueue.latencyP99Ns) / 1e6
            health.clock = subject.clockEstimate
            (health.connected, health.publisherEnded, health.lastError) = model.session
            guard !server.clientStatistics().isEmpty else { continue }
            if model.revision != revision {
                revision = model.revision
                server.sendText(model.describe(filters: filterControl.filters, recorder: server.settings.recorder != nil))
            }
            if health.lastError != lastError {
                lastError = health.lastError
                server.sendText("{\"type\":\"status\",\"error\":\(health.lastError.map(jsonString) ?? "null")}")
            }
            let measure = now - lastReadings >= Self.readingsInterval
            if measure { lastReadings = now }
            let channels = model.snapshot(readings: measure, previous: readings)
            if measure { readings = Dictionary(uniqueKeysWithValues: channels.map { ($0.key, $0.readings) }) }
            let newest = model.newestTimestampNs
            sequence &+= 1
            let update = UpdateEncoding.encode(
                sequence: sequence, serverTime: now,
                dataTime: newest == 0 ? .nan : Double(newest) / 1e9,
                health: health, channels: channels)
            updatesBuilt.add(1, ordering: .relaxed)
            bytesOffered.add(UInt64(update.count), ordering: .relaxed)
            server.broadcast(update, droppedOffset: UpdateEncoding.droppedOffset)
            // Bounded bandwidth: more channels, fewer updates a second.
            interval = max(Self.minimumInterval, Double(update.count) / Self.byteBudget)
        }
    }
}

/// The server-side side of the channel choice: one analog filter per source with channels shown
/// (changed in place when the source has one, so its id stays), the source selection, then the model.
///
/// `@unchecked Sendable`: `table` is only used on `queue`; `published` is behind a mutex.
public final class FilterControl: @unchecked Sendable {
    private let subject: Subject
    private let model: LiveModel
    private let queue = DispatchQueue(label: "tributary-view-filters")
    private var table: [UInt32: (id: UInt32, query: String)] = [:]
    private let published = Mutex<[UInt32: (id: UInt32, query: String)]>([:])

    public init(subject: Subject, model: LiveModel) {
        self.subject = subject
        self.model = model
    }

    /// Each source's filter: its id and SCCT query.
    public var filters: [UInt32: (id: UInt32, query: String)] { published.withLock { $0 } }

    /// Shows these channels (at most `LiveModel.maxChannels`).
    /// - Throws: `ErrorReport` from the Subject (6 when the session is down).
    public func select(_ keys: [ChannelKey]) throws(ErrorReport) {
        let result: Result<Void, ErrorReport> = queue.sync {
            do throws(ErrorReport) {
                let shown = Array(keys.prefix(LiveModel.maxChannels))
                var bySource: [UInt32: [UInt32]] = [:]
                var order: [UInt32] = []
                for k in shown {
                    if bySource[k.source] == nil { order.append(k.source) }
                    bySource[k.source, default: []].append(k.channel)
                }
                for source in order {
                    let request = AnalogFilterRequest(channels: .list(bySource[source]!), sources: [source])
                    if let existing = table[source] {
                        if existing.query != request.query { try subject.changeFilter(existing.id, to: request) }
                        table[source] = (existing.id, request.query)
                    } else {
                        table[source] = (try subject.sendFilter(request), request.query)
                    }
                }
                for (source, filter) in table where bySource[source] == nil {
                    try subject.removeFilter(filter.id)
                    table[source] = nil
                }
                try subject.selectSources(order.sorted())
                let snapshot = table
                published.withLock { $0 = snapshot }
                model.select(shown)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }
}
