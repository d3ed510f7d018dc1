import CSocketControl
import Foundation
import TributaryWire

/// The publisher's socket side, living on its loop thread: the ROUTER, the sessions, the fan-out of
/// handed-off frames, what subscribers send, and the housekeeping timer (gap notices, keepalives,
/// expiry, lossless credit).
///
/// It composes parts, each tested on its own: `HelloAdmission` (which hellos open a session),
/// `ReplyBudget` and `ClosedPeerTable` (what peers without a session are told, and how often),
/// `PeerConnections` (the connections without a session), `DueTimeSchedule` (frames held until
/// due), `LosslessBacklog` (lossless frames waiting for credit or room), `FanOut` (one frame to every
/// session that should get it, through its filters and queue), and per session (`Session`) its
/// `FloodGuard`, `LosslessCredit` and `OutboundSequence`.
final class PublisherEngine {
    let core: PublisherCore
    let router: ZMQSocket
    let endpoint: String
    /// Connection events of the ROUTER (accepted, disconnected): the only way to learn that a peer
    /// is gone without ZMTP heartbeats, and to bound the peers that have no session.
    let monitor: ZMQMonitor
    let connections: PeerConnections
    /// Which hellos open a session (key, timeout, clock, room) and for how long.
    let admission: HelloAdmission
    /// Replies to peers without a session: at most one a second per peer (`closedPeers`) and within
    /// this budget for all of them together.
    var replies = ReplyBudget()
    /// Bytes held by unfinished file and image transfers of every session.
    var reassemblyBytes: UInt64 = 0
    var filterLimits: FilterLimits
    var sessions: [Session] = []
    var byRoutingID: [RoutingKey: Session] = [:]
    var closedPeers = ClosedPeerTable()
    /// Routing ids of sessions whose connection is gone (its `DISCONNECTED` event was read), with
    /// when: frames of theirs still queued in the ROUTER are dropped unread. Answering them would mark
    /// refused the descriptor they name, which a new connection may already have been given.
    var goneRoutingIDs: [RoutingKey: UInt64] = [:]
    /// What `receiveAll` receives a message's routing-id and header parts into, every time.
    var routingPart = ZMQMessage()
    var headerPart = ZMQMessage()
    /// Payload parts of subscribers' messages, in buffers that are reused once let go.
    /// Its slots' copy memory is reserved up front: subscribers' messages are small, and each slot's
    /// first credit would otherwise allocate it during the first 64 grants of a stream.
    let receivePool = ZMQReceivePool(capacity: 64, reservedCopyBytes: 256)
    /// Whether subscribers connect with CURVE (each part is then boxed on the wire).
    let curve: Bool
    var nextSessionID: UInt64
    var drained: [HandOffItem] = []
    /// Frames handed off for a later time (`HandOffItem.due`); the loop's precise wake-up releases them.
    var schedule: DueTimeSchedule
    /// Lossless frames waiting for every eligible subscriber to have credit, and the count of those
    /// the sessions hold for a full queue.
    var lossless: LosslessBacklog
    /// How soon the loop tries again to send held frames (a full libzmq queue signals no room).
    static let heldRetryNs: UInt64 = 1_000_000
    var eligible: [Session] = []
    /// Hands each frame to the sessions that should get it; keeps the counts of frames published.
    let fanOut: FanOut
    /// Per source: its configuration last published while running (signal filters are designed for it).
    var sourceConfigurations: [UInt32: Configuration] = [:]
    var sessionsOpened: UInt64 = 0
    var sessionsRefused: UInt64 = 0
    let maxFrameSize: Int
    var housekeepingRounds = 0
    let scope: ZMQLoopScope
    /// The 2 ms check of the connections without a session, running only while there are some.
    var sessionlessTimer: ZMQTimerID?
    /// The flood and backlog guards' bounds (each session's `FloodGuard` checks against them, the
    /// backlog once per housekeeping round).
    let floodLimits: FloodGuard.Limits
    /// Bytes of messages read from subscribers per round of the loop (see `receiveAll`).
    static let receiveBytesPerRound: Int64 = 4 << 20

    init(core: PublisherCore, scope: ZMQLoopScope) throws(ZMQError) {
        self.core = core
        let configuration = core.configuration
        var settings = ZMQRouterSettings()
        settings.sendHighWaterMark = configuration.subscriberQueueFrames
        // libzmq closes, without a word, the connection of a peer that sends a larger part: this is
        // what bounds the memory a peer's unfinished message can hold (docs/PROTOCOL.md §4.8).
        settings.maxInboundMessageSize = Int64(configuration.maxInboundFrameSize)
        maxFrameSize = configuration.maxInboundFrameSize
        curve = configuration.curve != nil
        let router = try ZMQSocket.publisherRouter(context: scope.context, settings: settings)
        if let curve = configuration.curve { try router.enableCurveServer(keys: curve.keys, zapDomain: curve.zapDomain) }
        // The monitor starts before bind so that no connection is accepted unseen.
        monitor = try router.startMonitor(events: [.accepted, .disconnected])
        try router.bind(configuration.endpoint)
        endpoint = try router.lastEndpoint()
        self.router = router
        self.scope = scope
        fanOut = FanOut(
            router: router, digitalOnChangeOnly: configuration.digitalOnChangeOnly,
            slowConsumerPolicy: configuration.slowConsumerPolicy)
        connections = PeerConnections(
            maxPending: max(1, configuration.maxPendingPeers),
            helloDeadlineNs: HelloAdmission.nanoseconds(configuration.helloDeadline),
            maxBytesWithoutSession: Int64(configuration.maxBytesWithoutSession))
        admission = HelloAdmission(configuration)
        floodLimits = FloodGuard.Limits(configuration)
        var channelCounts: [UInt32: Int] = [:]
        for source in core.sources { channelCounts[source.info.id] = source.configuration.channels.count }
        filterLimits = FilterLimits(maxFilters: max(1, configuration.maxFiltersPerSession), channelCounts: channelCounts)
        // Session ids are not guessable across restarts (a subscriber log mentioning one is unambiguous).
        nextSessionID = UInt64.random(in: 1...(UInt64(1) << 40))
        drained.reserveCapacity(core.handOff.capacity)
        schedule = DueTimeSchedule(capacity: core.handOff.capacity, sources: core.sources.count)
        lossless = LosslessBacklog(capacity: core.handOff.capacity)
        scope.setPreciseWakeHandler { [unowned self] in self.releaseScheduled() }
        if core.handOff.dueTimer >= 0 {
            scope.register(readable: core.handOff.dueTimer) { [unowned self] in self.drainHandOff(onDueTimer: true) }
        }
        scope.register(router) { [unowned self] _, _ in self.receiveAll() }
        scope.register(monitor.socket) { [unowned self] _, _ in self.readConnectionEvents() }
        scope.addTimer(every: .milliseconds(20)) { [unowned self] in self.housekeeping() }
    }

    /// Sessions whose normal close could not be queued yet (their queue was full), with its reason.
    var closing: [Session] = []
    var closingReason = ""
    /// Connections of closed sessions that are still open: their subscriber may still be reading.
    var closingConnections: Set<Int32> = []

    // MARK: Fan-out

    /// Takes everything handed off and sends it: the loop command scheduled by `HandOffQueue.push`, or
    /// (`onDueTimer`) the queue's timerfd, armed for the earliest frame handed over ahead of its time.
    func drainHandOff(onDueTimer: Bool = false) {
        if onDueTimer {
            core.handOff.drainOnDueTimer(into: &drained)
        } else {
            core.handOff.drain(into: &drained)
        }
        let now = monotonicNanoseconds()
        for item in drained {
            if schedule.mustWait(item, now: now) {
                if let early = schedule.hold(item) { route(early, now: now) }
            } else {
                route(item, now: now)
            }
        }
        drained.removeAll(keepingCapacity: true)
        if !schedule.isEmpty { armScheduledWake() }
        if lossless.isWaiting { pumpLossless(now: now) }
    }

    func route(_ item: HandOffItem, now: UInt64) {
        if item.frame.header.kind == .configuration, case .configuration(let c)? = try? item.frame.payload() {
            sourceConfigurations[item.frame.header.sourceID] = c
        }
        if item.lossless {
            lossless.append(item)
        } else {
            sendLive(item, now: now)
        }
    }

    /// The precise wake-up: sends the held frames that are due, each source's in order.
    func releaseScheduled() {
        let now = monotonicNanoseconds()
        schedule.release(now: now) { route($0, now: now) }
        if !schedule.isEmpty { armScheduledWake() }
        if lossless.isWaiting { pumpLossless(now: now) }
    }

    /// Wakes the loop when the first held frame of some source is due, or held lossless frames
    /// should be tried again.
    func armScheduledWake() {
        var earliest = schedule.earliestDue() ?? .max
        if lossless.heldFrames > 0 { earliest = min(earliest, monotonicNanoseconds() &+ Self.heldRetryNs) }
        if earliest != .max { scope.wake(atMonotonicNanoseconds: earliest) }
    }

    /// Sends a live frame to the sessions that should get it, then settles what it left.
    func sendLive(_ item: HandOffItem, now: UInt64) {
        settle(fanOut.live(item, to: sessions, now: now), now: now)
    }

    /// Settles what a fan-out left: the frames held and released for the lossless backlog, sessions
    /// gone forgotten, sessions too slow (policy `.disconnect`) ended.
    func settle(_ delivery: FanOut.Delivery, now: UInt64) {
        lossless.held(delivery.held)
        lossless.released(delivery.released)
        for session in delivery.gone { forget(session) }
        for session in delivery.tooSlow {
            end(
                session, ErrorReport(.slowConsumer, "the subscriber could not keep up; the publisher's policy is to disconnect it"),
                now: now)
        }
    }

    // MARK: Lossless delivery (credit)

    func pumpLossless(now: UInt64) {
        if lossless.heldFrames > 0 { settle(fanOut.flushHeld(sessions, now: now), now: now) }
        while let item = lossless.first {
            // The sessions that should get the frame, in a scratch array that keeps its capacity.
            eligible.removeAll(keepingCapacity: true)
            for session in sessions where FanOut.addressesLossless(item, to: session) { eligible.append(session) }
            // Wait for the slowest subscriber: every one that should get the frame must have credit,
            // and room (no frame held back for its full queue).
            if eligible.contains(where: { $0.credit.isEmpty || !$0.heldLossless.isEmpty }) { break }
            lossless.removeFirst()
            settle(fanOut.lossless(item.frame, to: eligible, now: now), now: now)
        }
        lossless.compact()
        if lossless.heldFrames > 0 { armScheduledWake() }
        core.handOff.setLosslessBacklog(lossless.total)
    }

    // MARK: Receiving

    /// Reads what subscribers sent, at most 256 messages and `receiveBytesPerRound` per round so that
    /// fan-out and the housekeeping timer keep their turn: 256 file chunks of 1 MiB (reassembled and
    /// checked) took seconds, during which the backlog guard never ran and a subscriber sending
    /// files faster than they are reassembled piled hundreds of MB up in libzmq's queue.
    ///
    /// The routing-id and header parts are received into the same two messages every time and a
    /// payload part into a slot of `receivePool`, so a message that is handled and let go (a credit,
    /// a start) costs no allocation; a payload the application keeps (a subscriber's message) keeps
    /// its slot, and the next part gets a buffer of its own.
    func receiveAll() {
        let now = monotonicNanoseconds()
        var roundBytes: Int64 = 0
        for _ in 0..<256 {
            if roundBytes >= Self.receiveBytesPerRound { return }
            var payload: FrameBuffer?
            var extraParts = 0
            var wireBytes: Int64 = 0
            do throws(ZMQError) {
                try router.receive(into: &routingPart, flags: .dontWait)
                // A ROUTER puts the routing id before each message a peer sends; the message follows
                // at once (libzmq delivers a multipart message whole), so these receives do not wait.
                guard routingPart.hasMore else { continue }
                try router.receive(into: &headerPart)
                wireBytes = FloodGuard.wireBytes(ofPart: headerPart.count, curve: curve)
                if headerPart.hasMore {
                    let part = try receivePool.receive(on: router)
                    payload = part.buffer
                    wireBytes += FloodGuard.wireBytes(ofPart: part.buffer.count, curve: curve)
                    var more = part.hasMore
                    while more {
                        let extra = try router.receiveBuffer()
                        wireBytes += FloodGuard.wireBytes(ofPart: extra.buffer.count, curve: curve)
                        more = extra.hasMore
                        extraParts += 1
                    }
                }
            } catch {
                return
            }
            roundBytes += wireBytes
            handleReceived(payload: payload, extraParts: extraParts, wireBytes: wireBytes, now: now)
            // A 40-byte header part (a peer without compact headers) is a view into libzmq's read
            // buffer: let it go now, so that libzmq can reuse that buffer instead of allocating another.
            headerPart = ZMQMessage()
        }
    }

    /// Handles the message in `routingPart` and `headerPart`, with its payload part and the count of
    /// parts after that (a malformed message); `wireBytes` is what its parts took on the connection.
    func handleReceived(payload: FrameBuffer?, extraParts: Int, wireBytes: Int64, now: UInt64) {
        let routingID = routingPart.withUnsafeBytes { RoutingKey($0) }
        if byRoutingID[routingID] == nil, goneRoutingIDs[routingID] != nil {
            // A peer that chose its own routing id may connect again under it: its hello is read.
            let isHello = headerPart.count > 5 && headerPart.withUnsafeBytes { $0[5] } == FrameKind.hello.rawValue
            guard isHello else { return }
            goneRoutingIDs[routingID] = nil
        }
        let fd = headerPart.sourceFileDescriptor
        // A peer without a session: read the pending connection events first. Its connection's
        // ACCEPTED event was queued before anything it sent, and the DISCONNECTED event of an earlier
        // connection that had the same descriptor number before that; both may still be waiting in
        // the same poll round. Without them the table would bind a new session to a stale entry, or
        // take a new connection for a refused one.
        if byRoutingID[routingID] == nil { readConnectionEvents() }
        let session = byRoutingID[routingID]
        if session == nil, case .refused? = connections.state(of: fd) {
            // Refused, closing shortly: nothing it sends is read, and answers stay rate-limited. A peer
            // that keeps sending is not waiting for its answer: it is closed at once.
            if !connections.messageAfterRefusal(on: fd, now: now) { answerUnknownPeer(routingID, fd: fd, now: now) }
            return
        }
        if session == nil, closedPeers[routingID] != nil, connections.state(of: fd) == nil {
            // What a connection closed by the publisher (a flood, a refusal) still had queued: drained
            // without being decoded, so that a flood costs the publisher as little as it can.
            answerUnknownPeer(routingID, fd: fd, now: now)
            return
        }
        let inbound: InboundFrame
        do throws(WireError) {
            // A session that asked for compact header parts may send them (its welcome said so); a hello never.
            let maxFrameSize = maxFrameSize, acceptCompact = session?.compactHeaders ?? false
            inbound = try headerPart.withUnsafeBytes { (bytes) throws(WireError) -> InboundFrame in
                try MessageFraming.decode(
                    header: bytes, payload: payload, extraParts: extraParts, maxFrameSize: maxFrameSize,
                    acceptCompact: acceptCompact)
            }
        } catch {
            let report =
                error.code == .frameTooLarge
                ? ErrorReport(.tooLarge, "\(error)") : ErrorReport(.malformedFrame, "\(error)")
            if let session { end(session, report, now: now) } else { refuse(routingID, fd: fd, report, now: now) }
            return
        }
        if let session, let curveUser = session.userID, !headerPart.metadata("User-Id", equals: curveUser) {
            // A CURVE session belongs to the key that opened it; anything else on its routing id is ignored.
            return
        }
        guard let session else {
            if case .frame(let frame) = inbound, frame.header.kind == .hello {
                accept(frame, routingID: routingID, fd: fd, now: now)
            } else {
                answerUnknownPeer(routingID, fd: fd, now: now)
            }
            return
        }
        session.lastHeardNs = now
        if session.floodGuard.frameRead(wireBytes: wireBytes, now: now, limits: floodLimits) {
            // Frames come faster than the publisher reads them: libzmq would hold the excess.
            end(
                session,
                ErrorReport(
                    .tooManyFrames,
                    "the subscriber sent more than \(floodLimits.framesPerWindow) frames within "
                        + "\(FloodGuard.Limits.windowNs / 1_000_000) ms (the publisher accepts \(core.configuration.maxInboundFramesPerSecond) a second)"
                ),
                now: now)
            connections.silence(fd, now: now)
            return
        }
        if case .timeProbe(let probe) = inbound, !session.answer(probe, receivedAtNs: wallClockNanoseconds(), on: router, now: now) {
            return forget(session)
        }
        guard case .frame(let frame) = inbound else { return }  // keepalive, probe or ignorable extension
        handle(frame, from: session, now: now)
    }

    /// Reads the ROUTER's connection events: counts connections, closes the excess, and forgets the
    /// session of a connection that is gone (a peer that vanished before `start` or during a stall).
    func readConnectionEvents() {
        let now = monotonicNanoseconds()
        var accepted = false
        defer { if accepted { watchSessionless() } }
        while true {
            let event: ZMQMonitorEvent?
            do throws(ZMQError) { event = try monitor.receiveEvent(flags: .dontWait) } catch { return }
            guard let event else { continue }
            let fd = Int32(bitPattern: event.value)
            if event.event == .accepted {
                accepted = true
                connections.accepted(fd: fd, now: now)
            } else if event.event == .disconnected {
                closingConnections.remove(fd)
                if let id = connections.disconnected(fd: fd), let session = sessions.first(where: { $0.sessionID == id }) {
                    goneRoutingIDs[session.routingKey] = now
                    forget(session)
                }
            }
        }
    }

    func handle(_ frame: Frame, from session: Session, now: UInt64) {
        let header = frame.header
        switch header.kind {
        case .start:
            session.started = true
            publishStartedCount()
        case .stop:
            session.started = false
            publishStartedCount()
        case .selectSources:
            guard case .selectSources(let ids)? = decodedPayload(frame, session, now) else { return }
            if session.sourceFilterEnabled {
                session.selectionOrder = ids
                session.selectedSources = Set(ids)
            }
        case .analogFilter, .arrayFilter, .removeFilter:
            do throws(FilterRequestError) {
                try session.filters.apply(frame, limits: filterLimits)
            } catch {
                end(session, ErrorReport(.protocolViolation, error.message), now: now)
            }
        case .signalFilter:
            handleSignalFilter(frame, from: session, now: now)
        case .credit:
            guard case .credit(let count)? = decodedPayload(frame, session, now) else { return }
            session.credit.grant(count)
            if lossless.isWaiting { pumpLossless(now: now) }
        case .close:
            forget(session)
            connections.endedSession(on: session.fileDescriptor, refused: false, now: now)
        case .message, .xml, .array, .analog, .digital, .error:
            guard let payload = decodedPayload(frame, session, now), let content = ReceivedContent(handedOver: payload) else { return }
            deliver(content, header, from: session, frame: frame)
        case .file, .image:
            guard let payload = decodedPayload(frame, session, now) else { return }
            let chunk: BlobChunk
            switch payload {
            case .file(let c), .image(let c): chunk = c
            default: return
            }
            let heldBefore = session.assembler.pendingBytes
            // The publisher-wide budget: a chunk that would take all sessions past it is refused.
            if reassemblyBytes + UInt64(chunk.content.count) > core.configuration.maxReassemblyBytes {
                session.assembler.removeAll()
                reassemblyBytes -= heldBefore
                _ = session.send(
                    .error(
                        ErrorReport(
                            .tooLarge,
                            "transfer \(chunk.transferID): the publisher holds \(reassemblyBytes) bytes of unfinished transfers, its limit is \(core.configuration.maxReassemblyBytes); this session's transfers were dropped"
                        )), on: router, now: now)
                return
            }
            let added: Result<AssembledBlob?, BlobError>
            do throws(BlobError) { added = .success(try session.assembler.add(chunk)) } catch { added = .failure(error) }
            reassemblyBytes = reassemblyBytes - heldBefore + session.assembler.pendingBytes
            switch added {
            case .success(let blob?):
                let file = ReceivedFile(blob)
                deliver(header.kind == .file ? .file(file) : .image(file), header, from: session)
            case .success(nil):
                break
            case .failure(let error):
                switch error.reason {
                case .checksumMismatch:
                    _ = session.send(.error(ErrorReport(.checksumMismatch, error.description)), on: router, now: now)
                case .tooLarge:
                    end(session, ErrorReport(.tooLarge, error.description), now: now)
                case .inconsistentChunk:
                    end(session, ErrorReport(.malformedFrame, error.description), now: now)
                }
            }
        case .properties:
            break  // an extension a publisher skips, as one that predates it does (docs/PROTOCOL.md §5.19)
        case .hello, .welcome, .configuration, .gap:
            end(session, ErrorReport(.protocolViolation, "a subscriber does not send \(header.kind) frames in a session"), now: now)
        }
    }

    func decodedPayload(_ frame: Frame, _ session: Session, _ now: UInt64) -> Payload? {
        do throws(WireError) {
            return try frame.payload()
        } catch {
            end(session, ErrorReport(.malformedFrame, "\(error)"), now: now)
            return nil
        }
    }

    /// - Parameter frame: the frame as received, kept in the package (as a Subject does) for
    ///   applications that store or print it whole; nil for files and images (reassembled).
    func deliver(_ content: ReceivedContent, _ header: FrameHeader, from session: Session, frame: Frame? = nil) {
        core.deliver(
            SubscriberPackage(
                sessionID: session.sessionID, subscriberDescription: session.description,
                package: ReceivedPackage(header: header, content: content, frame: frame)))
    }

    // MARK: Housekeeping

    /// Checks the connections without a session every 2 ms while there are any: libzmq may hold what
    /// such a peer sends without ever handing it to the publisher (a duplicate routing id), so the
    /// only bound is how soon its received bytes are seen. An idle publisher keeps its 20 ms rounds.
    func watchSessionless() {
        if connections.pendingCount > 0 {
            guard sessionlessTimer == nil else { return }
            sessionlessTimer = scope.addTimer(every: .milliseconds(2)) { [unowned self] in
                self.readConnectionEvents()
                self.connections.closeOverdue(now: monotonicNanoseconds())
                self.watchSessionless()
            }
        } else if let timer = sessionlessTimer {
            scope.cancelTimer(timer)
            sessionlessTimer = nil
        }
    }

    func housekeeping() {
        // Every pending connection event first: the table must be current before it closes anything.
        readConnectionEvents()
        let now = monotonicNanoseconds()
        connections.closeOverdue(now: now)
        watchSessionless()
        receivePool.trim()
        var gone: [Session] = []
        var expired: [Session] = []
        var flooding: [Session] = []
        for session in sessions {
            if session.hasExpired(now: now) { expired.append(session); continue }
            if let fd = session.fileDescriptor, case let received = tributary_tcp_bytes_received(fd), received >= 0,
                session.floodGuard.backlogExceeded(received: received, limits: floodLimits)
            {
                flooding.append(session)
                continue
            }
            if session.flushGap(on: router, now: now) == .gone || !session.keepAliveIfIdle(on: router, now: now) {
                gone.append(session)
            }
        }
        for session in gone { forget(session) }
        for session in flooding {
            end(
                session,
                ErrorReport(
                    .tooManyFrames, "the subscriber is more than \(floodLimits.maxUnreadBytes) bytes ahead of what the publisher has read"),
                now: now)
            connections.silence(session.fileDescriptor, now: now)
        }
        for session in expired {
            end(session, ErrorReport(.expiredTimeout, "nothing was heard from the subscriber within its timeout"), now: now)
        }
        housekeepingRounds &+= 1
        if housekeepingRounds % 500 == 0 {
            closedPeers.expire(now: now)
            if !goneRoutingIDs.isEmpty { goneRoutingIDs = goneRoutingIDs.filter { now &- $0.value < 10_000_000_000 } }
        }
        if lossless.isWaiting { pumpLossless(now: now) }
    }

    var subscriberInfos: [SubscriberInfo] { sessions.map(\.info) }
    /// Connections without a session, as the monitor counts them.
    var pendingPeerCount: Int { connections.pendingCount }

    var sessionCount: Int { sessions.count }
    var framesPublished: UInt64 { fanOut.framesPublished }
    var digitalSuppressed: UInt64 { fanOut.digitalSuppressed }
    var applicationFrameErrors: UInt64 { fanOut.applicationFrameErrors }
}
