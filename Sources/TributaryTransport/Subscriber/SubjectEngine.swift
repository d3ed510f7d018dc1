import Foundation
import Synchronization
import TributaryWire

/// A filter as the application defined it: the id `sendFilter` returned, stable across reconnections.
enum AppFilterRequest: Sendable {
    case analog(AnalogFilterRequest)
    case array(ArrayFilterRequest)
}

/// The loop's weak way back to itself (to resume reading when the callback queue drains).
final class SubjectLoopHandle: Sendable {
    let loop = Mutex<ZMQLoop<SubjectEngine>?>(nil)
}

/// A Subject's socket side, on its loop thread: the DEALER and its monitor, decoding and hand-off to
/// the callback queue. It composes the socket-free parts: the session state machine
/// (`SubjectLifecycle`: opening → open → lost → waiting to reconnect), what the frames of a session
/// do (`SubscriberSession`: sequence and loss accounting, credit, reassembly) and the clock probes
/// (`ClockEstimator`).
final class SubjectEngine {
    let options: SubjectOptions
    let delivery: SubjectDelivery
    let callbacks: CallbackQueueCore
    let handle: SubjectLoopHandle
    private let scope: ZMQLoopScope

    /// Opening, open, waiting to reconnect or closed, with the attempts' deadlines.
    private(set) var lifecycle: SubjectLifecycle
    private(set) var parameters: OpenParameters?
    private(set) var dealer: ZMQSocket?
    /// The header part of each received frame: received into this one message every time.
    private var headerPart = ZMQMessage()
    /// Payload parts, received into reused buffers and message handles (no allocation of ours per frame).
    private let receivePool: ZMQReceivePool
    /// What the callback queue calls when it has drained after a pause (`pause`): resumes reading.
    private let resumeWhenDrained: @Sendable () -> Void
    private var monitor: ZMQMonitor?
    private(set) var welcome: Welcome?
    /// The welcome had flag bit 9: the publisher reads compact header parts, so this session's frames
    /// go out with them (docs/PROTOCOL.md §3.2); a credit grant then costs libzmq no allocation on
    /// either side (a 40-byte part is allocated by the sender and pins the receiver's read buffer).
    private(set) var sendsCompact = false
    private var pendingError: ErrorReport?
    /// Handshakes of the current open that failed without saying why (`openingFailure`).
    /// (Counted by `openingFailure`, SubjectEngine+OpeningFailure.swift.)
    var handshakeFailuresWithoutDetail = 0
    static let handshakeFailuresBeforeDiagnosis = 4
    /// The previous monitor event was a failed handshake (its connection's disconnection follows).
    private var previousEventWasHandshakeFailure = false

    // What the application asked for (restored after a reconnection).
    private var appFilters: [(id: UInt32, request: AppFilterRequest)] = []
    private var nextAppFilterID: UInt32 = 1
    private var started = false
    private var selection: [UInt32]?
    /// The signal filters asked for, per source (sent again after a reconnection).
    private var signalFilters: [UInt32: SignalFilterRequest] = [:]

    // The current session.
    private var wireFilters = SubscriberFilters()
    private var appToWire: [UInt32: UInt32] = [:]
    private(set) var sendSequence: UInt64 = 0
    var clockEstimator = ClockEstimator()
    private var lastHeardNs: UInt64 = 0
    var lastSentNs: UInt64 = 0
    private var paused = false
    /// What the frames of the session do: sequence and loss accounting, source bounds, credit,
    /// reassembly, filter ids (socket-free, fuzzed on its own).
    private var session: SubscriberSession
    private var nextTransferID = UInt64.random(in: 1...(UInt64(1) << 48))

    // Counters.
    private(set) var framesReceived: UInt64 = 0
    var gapNotices: UInt64 { session.gapNotices }
    var framesMissing: UInt64 { session.framesMissing }
    var unaccountedLoss: UInt64 { session.unaccountedLoss }
    private(set) var reconnections: UInt64 = 0
    private(set) var pauses: UInt64 = 0
    /// Why the last session ended, for a call that finds the subject no longer open: the caller
    /// learns the cause (a malformed frame, a lost connection) rather than only "not open".
    private var lastEnding: ErrorReport?

    init(
        options: SubjectOptions, delivery: SubjectDelivery, callbacks: CallbackQueueCore, handle: SubjectLoopHandle,
        scope: ZMQLoopScope
    ) {
        self.options = options
        self.delivery = delivery
        self.callbacks = callbacks
        self.handle = handle
        self.scope = scope
        lifecycle = SubjectLifecycle(policy: options.reconnect)
        session = SubscriberSession(
            creditWindow: options.creditWindow, creditWindowBytes: options.creditWindowBytes,
            maxTransferSize: options.maxTransferSize, maxSources: options.maxSources,
            maxConfigurationBytes: options.maxConfigurationBytes)
        // Enough slots for a full callback queue (which is what can hold frames at once) and a few more.
        receivePool = ZMQReceivePool(capacity: min(callbacks.capacity, 4_096) + 16)
        // Built once: a pause (the callback queue full, routine when the application falls behind)
        // then costs no closure, command or array of its own.
        let resumeCommand = ZMQLoopCommand<SubjectEngine>(run: { engine, _ in engine.resume() }, cancel: nil)
        resumeWhenDrained = { [handle] in
            let loop = handle.loop.withLock { $0 }
            try? loop?.enqueue(resumeCommand)
        }
        scope.addTimer(every: .milliseconds(20)) { [unowned self] in self.housekeeping() }
    }

    var isOpen: Bool { lifecycle.isOpen }

    // MARK: Opening and closing

    func open(_ parameters: OpenParameters, waiter: OpenWaiter) {
        if dealer != nil { endSession(nil, notifyPublisher: true, reconnect: false) }
        appFilters = []
        nextAppFilterID = 1
        started = false
        selection = nil
        lastEnding = nil
        self.parameters = parameters
        let now = monotonicNanoseconds()
        lifecycle.open(waiter: waiter, now: now, timeoutNs: parameters.timeoutNs)
        connect(now: now)
    }

    /// Gives up a pending open (the caller's wait ran out first).
    func abandonOpen() {
        if let waiter = lifecycle.waiter {
            waiter.complete(.failure(ErrorReport(.destinationUnreachable, "nothing answered within the timeout")))
            teardown()
            lifecycle.close()
        }
    }

    /// How long, in milliseconds, the error and close frames that end a session may take to leave
    /// once its socket is closed (PROTOCOL.md §4.3 promises the publisher both).
    static let farewellLingerMs: Int32 = 500

    /// The application's close: a close frame to the publisher, no reconnection, streams ended.
    func close() {
        lifecycle.waiter?.complete(.failure(ErrorReport(.lostConnection, "closed while opening")))
        endSession(nil, notifyPublisher: true, reconnect: false)
    }

    private func connect(now: UInt64) {
        guard let parameters else { return }
        resetSession()
        do throws(ZMQError) {
            var settings = ZMQDealerSettings()
            settings.receiveHighWaterMark = options.receiveHighWaterMark
            settings.heartbeatInterval = options.heartbeatInterval
            settings.heartbeatTimeout = .nanoseconds(Int64(parameters.timeoutNs))
            settings.maxInboundMessageSize = Int64(options.maxFrameSize) + 64
            if let bytes = options.receiveBufferBytes { settings.receiveBufferBytes = Int32(clamping: bytes) }
            let socket = try ZMQSocket.subscriberDealer(context: scope.context, settings: settings)
            // The publisher closes a silent connection after our timeout too.
            try socket.setOption(.heartbeatTTL, milliseconds(.nanoseconds(Int64(parameters.timeoutNs))))
            if let curve = options.curve { try socket.enableCurveClient(serverKey: curve.serverKey, keys: curve.keys) }
            // Failed connection attempts and handshakes end a first open at once (`openingFailure`).
            let monitor = try socket.startMonitor(events: [.disconnected, .connectRetried, .handshakeFailed])
            try socket.connect(parameters.endpoint)
            dealer = socket
            self.monitor = monitor
            scope.register(monitor.socket) { [unowned self] _, _ in self.readMonitor() }
            scope.register(socket) { [unowned self] _, _ in self.receiveAll() }
        } catch {
            failOpening(ErrorReport(.destinationUnreachable, "cannot connect to \(parameters.endpoint): \(error)"))
            return
        }
        let hello = Hello(
            apiKey: parameters.apiKey, clientDescription: parameters.description,
            timeoutSeconds: parameters.timeoutSeconds, sourceFilterEnabled: parameters.sourceFilterEnabled)
        // Queued by libzmq until the connection is up; an empty pipe cannot refuse it.
        _ = try? send(.hello(hello), now: now, requireOpen: false, flags: options.compactHeaders ? .compactHeaders : [])
        lastHeardNs = now
    }

    private func resetSession() {
        handshakeFailuresWithoutDetail = 0
        previousEventWasHandshakeFailure = false
        lifecycle.connecting()
        wireFilters = SubscriberFilters()
        appToWire = [:]
        sendSequence = 0
        session.reset()
        clockEstimator.reset()
        pendingError = nil
        welcome = nil
        sendsCompact = false
        paused = false
    }

    private func teardown() {
        if let monitor { scope.unregister(monitor.socket, close: false) }
        // Closing the DEALER closes its monitor first (ZMQSocket.close).
        if let dealer { scope.unregister(dealer) }
        dealer = nil
        monitor = nil
    }

    /// Ends the session: optional error and close frames, socket closed, error delivered, then
    /// reconnection or the end. Ending it for an error (a malformed frame, a frame too large, a
    /// protocol violation, the publisher's silence), the subscriber tells the publisher as the
    /// publisher tells it (PROTOCOL.md §4.3): an error frame with the code and the message, then a
    /// close with the same code; the application's own close is a close with code 0 alone.
    private func endSession(_ error: ErrorReport?, notifyPublisher: Bool, reconnect: Bool) {
        if notifyPublisher, dealer != nil, isOpen {
            let now = monotonicNanoseconds()
            if let error, error.code.rawValue != 0 {
                _ = try? send(.error(error), now: now, requireOpen: false)
            }
            let code = error?.code ?? ErrorCode(rawValue: 0)
            _ = try? send(.close(Close(code: code, reason: error?.message ?? "")), now: now, requireOpen: false)
            // The frames are only queued in libzmq, and sockets close with ZMQ_LINGER 0, which drops
            // what is queued: a process that ends right after (as `subscribe` does on an error) would
            // lose them when its I/O thread is slow. They get `farewellLingerMs` to leave; the context's
            // termination waits that long at most for a publisher that does not read.
            try? dealer?.setOption(.linger, Self.farewellLingerMs)
        }
        teardown()
        if let error {
            lastEnding = error
            enqueue(.package(ReceivedPackage(header: FrameHeader(kind: .error), content: .error(error))))
        }
        follow(lifecycle.sessionEnded(error, reconnect: reconnect && parameters != nil, now: monotonicNanoseconds()), error)
    }

    private func failOpening(_ error: ErrorReport) {
        guard lifecycle.isOpening else { return }
        teardown()
        if let next = lifecycle.attemptFailed(error, now: monotonicNanoseconds()) { follow(next, error) }
    }

    /// Carries out what follows a session's end or a failed attempt (`error`: the cause, if any).
    private func follow(_ next: SubjectLifecycle.Next, _ error: ErrorReport?) {
        switch next {
        case .failOpen(let waiter):
            if let error { waiter.complete(.failure(error)) }
        case .reconnecting:
            break
        case .ended(let announceError):
            if announceError, let error { enqueue(.package(ReceivedPackage(header: FrameHeader(kind: .error), content: .error(error)))) }
            enqueue(.ended)
        }
    }

    // MARK: Receiving

    private func receiveAll() {
        guard let dealer else { return }
        while true {
            if !callbacks.hasRoom {
                pause()
                return
            }
            // The header part goes into the same message every time (no allocation); only a payload
            // part becomes an object (a FrameBuffer over libzmq's bytes) that the frame's views keep alive.
            var payload: FrameBuffer?
            var extraParts = 0
            do throws(ZMQError) {
                try dealer.receive(into: &headerPart, flags: .dontWait)
                if headerPart.hasMore {
                    let part = try receivePool.receive(on: dealer)
                    payload = part.buffer
                    var more = part.hasMore
                    while more {
                        more = try dealer.receiveBuffer().hasMore
                        extraParts += 1
                    }
                }
            } catch {
                return
            }
            handle(payload: payload, extraParts: extraParts)
            // The handler may have ended the session (and closed this socket).
            if self.dealer !== dealer { return }
        }
    }

    private func pause() {
        guard let dealer, !paused else { return }
        paused = true
        pauses += 1
        scope.setEvents([], for: dealer)
        callbacks.whenDrained(resumeWhenDrained)
    }

    func resume() {
        guard paused, let dealer else { return }
        paused = false
        scope.setEvents(.readable, for: dealer)
        receiveAll()
    }

    private func handle(payload: FrameBuffer?, extraParts: Int) {
        let now = monotonicNanoseconds()
        lastHeardNs = now
        let inbound: InboundFrame
        do throws(WireError) {
            let maxFrameSize = options.maxFrameSize, acceptCompact = options.compactHeaders
            inbound = try headerPart.withUnsafeBytes { (bytes) throws(WireError) in
                try MessageFraming.decode(
                    header: bytes, payload: payload, extraParts: extraParts, maxFrameSize: maxFrameSize,
                    acceptCompact: acceptCompact)
            }
        } catch {
            let code: ErrorCode = error.code == .frameTooLarge ? .tooLarge : .malformedFrame
            endSession(ErrorReport(code, "the publisher sent a malformed frame: \(error)"), notifyPublisher: true, reconnect: true)
            return
        }
        guard case .frame(let frame) = inbound else { return receivedExtension(inbound) }
        framesReceived += 1
        let header = frame.header
        // Sequence numbers never go back within a session: such a frame comes from a new connection
        // libzmq opened under the session after the old one broke (the publisher answers a peer it
        // does not know with an error and a close numbered from 0).
        if let ending = session.sequence(of: header, open: isOpen, endpoint: parameters?.endpoint ?? "the publisher") {
            return carryOut(ending)
        }
        if lifecycle.isOpening {
            handleWhileOpening(frame)
        } else if lifecycle.isOpen {
            handleInSession(frame, now: now)
        }
    }

    private func handleWhileOpening(_ frame: Frame) {
        switch frame.header.kind {
        case .welcome:
            guard case .welcome(let welcome)? = try? frame.payload() else {
                return failOpening(ErrorReport(.malformedFrame, "the publisher's welcome does not decode"))
            }
            self.welcome = welcome
            sendsCompact = options.compactHeaders && frame.header.flags.contains(.compactHeaders)
            guard let waiter = lifecycle.welcomed() else { return }
            if let waiter {
                waiter.complete(.success(welcome))
            } else {
                reconnections += 1
                restore()
                enqueue(.reconnected(welcome))
            }
            grantCredit(session.opened())
        case .error:
            if case .error(let report)? = try? frame.payload() { pendingError = report }
        case .close:
            let close: Close? = if case .close(let c)? = try? frame.payload() { c } else { nil }
            failOpening(pendingError ?? ErrorReport(close?.code ?? .protocolViolation, close?.reason ?? "the publisher closed the session"))
        default:
            break
        }
    }

    private func handleInSession(_ frame: Frame, now: UInt64) {
        let outcome = session.receive(frame)
        // A grant goes out before the package is handed over, as the frame that made it due arrived.
        if let grant = session.takeGrant() { grantCredit(grant) }
        carryOut(outcome)
    }

    private func carryOut(_ outcome: SubscriberSession.Outcome) {
        switch outcome {
        case .deliver(let package): enqueue(.package(package))
        case .none: break
        case .end(let error, let notifyPublisher, let reconnect): endSession(error, notifyPublisher: notifyPublisher, reconnect: reconnect)
        }
    }

    private func readMonitor() {
        guard let monitor else { return }
        while true {
            let received: ZMQMonitorEvent??
            do throws(ZMQError) { received = try monitor.receiveEvent(flags: .dontWait) } catch { return }
            guard let event = received ?? nil else { continue }
            let afterHandshakeFailure = previousEventWasHandshakeFailure
            // Any of the three failure events: `contains(.handshakeFailed)` would ask for all three bits
            // at once, which no event has, and took every disconnection after a failed handshake for a
            // publisher's close after the handshake (a reopen that forgot the failures counted so far).
            previousEventWasHandshakeFailure = !event.event.isDisjoint(with: .handshakeFailed)
            if event.event.contains(.disconnected), lifecycle.isOpening, !afterHandshakeFailure {
                // The connection closed after its handshake and before the welcome: the publisher
                // closed it (over its pending-connection limit, in a burst of subscribers) and the
                // hello went with it. libzmq would reconnect the same DEALER without the hello; a new
                // DEALER sends it again, 100 ms on, within the same deadline. (A connection that
                // fails during its handshake never took the hello: libzmq's own retry sends it.)
                receiveAll()
                guard lifecycle.isOpening else { return }
                teardown()
                lifecycle.reopen(at: monotonicNanoseconds() &+ 100_000_000)
                return
            }
            if event.event.contains(.disconnected), isOpen {
                // Frames the publisher sent before the connection closed may still wait in the socket
                // (the monitor can be read first): a close among them is a normal end, not a lost
                // connection. While paused they stay unread (the callback queue has no room).
                if !paused { receiveAll() }
                guard isOpen else { return }
                endSession(
                    ErrorReport(.lostConnection, "the connection to \(event.endpoint) broke down"),
                    notifyPublisher: false, reconnect: true)
                return
            }
            if event.event.contains(.handshakeFailedAuth) {
                failOpening(ErrorReport(.wrongAPIKey, "the publisher refused this subscriber's CURVE key"))
                return
            }
            if let failure = openingFailure(event) {
                failOpening(failure)
                return
            }
        }
    }

    private func enqueue(_ event: SubjectEvent) { callbacks.enqueue(delivery, event) }

    private func grantCredit(_ count: UInt32) {
        guard count > 0, isOpen, let dealer else { return }
        // Encoded on the stack and copied into the message, like the publisher's gap notices: a grant,
        // one per half window of a lossless stream, costs no object of ours.
        do throws(ZMQError) {
            try MessageFraming.sendSmall(.credit(count), sequence: sendSequence, routingID: nil, compact: sendsCompact, on: dealer)
        } catch {
            return  // not sent (a full queue to the publisher): the next frame or the housekeeping grants again
        }
        session.credit.granted(count)
        sendSequence += 1
        lastSentNs = monotonicNanoseconds()
    }

    // MARK: Housekeeping

    private func housekeeping() {
        let now = monotonicNanoseconds()
        receivePool.trim()
        switch lifecycle.tick(now: now, attemptTimeoutNs: parameters?.timeoutNs) {
        case .nothing:
            break
        case .openingTimedOut:
            failOpening(ErrorReport(.destinationUnreachable, "nothing answered within the timeout (\(parameters?.endpoint ?? ""))"))
        case .reopen, .attempt:
            connect(now: now)
        case .open:
            guard let parameters else { return }
            if paused { lastHeardNs = now }  // we are not reading: silence is ours, not the publisher's
            if let grant = session.credit.due { grantCredit(grant) }  // one that could not be sent
            probeClock(now: now)
            if now &- lastHeardNs > parameters.timeoutNs {
                endSession(
                    ErrorReport(.expiredTimeout, "nothing was heard from the publisher within \(parameters.timeoutSeconds) s"),
                    notifyPublisher: true, reconnect: true)
            } else if now &- lastSentNs >= parameters.timeoutNs / 4, let dealer {
                do throws(ZMQError) {
                    try MessageFraming.sendExtension(
                        kind: TransportKind.keepalive, sequence: sendSequence,
                        timestampNs: wallClockNanoseconds(), routingID: nil, compact: sendsCompact,
                        on: dealer)
                    lastSentNs = now
                } catch {}
            }
        }
    }

    // MARK: Sending

    /// The error of a call that needs an open session: why the last one ended, if it did.
    private var notOpen: ErrorReport {
        guard let lastEnding else { return ErrorReport(.transmissionError, "the subject is not open") }
        return ErrorReport(lastEnding.code, "the session has ended: \(lastEnding.message)")
    }

    /// Sends a package now.
    /// - Throws: `ErrorReport` 6 (transmission error) when not open or the send queue is full.
    @discardableResult
    func send(
        _ package: Package, filterID: UInt32 = 0, now: UInt64 = monotonicNanoseconds(),
        requireOpen: Bool = true, flags: FrameFlags = []
    ) throws(ErrorReport) -> UInt64 {
        guard let dealer, !requireOpen || isOpen else {
            throw notOpen
        }
        let frame = Frame(
            encoding: package, sequence: sendSequence, timestampNs: wallClockNanoseconds(), filterID: filterID,
            flags: flags)
        do throws(ZMQError) {
            var payload = try MessageFraming.payloadMessage(frame)
            try MessageFraming.send(header: frame.header, payload: &payload, routingID: nil, compact: sendsCompact, on: dealer)
        } catch {
            throw ErrorReport(.transmissionError, error.code == .again ? "the send queue to the publisher is full" : "\(error)")
        }
        sendSequence += 1
        lastSentNs = now
        return frame.header.sequence
    }

    func sendFile(_ content: [UInt8], name: String, attributes: [String], imageFormat: ImageFormat?, chunkSize: Int) throws(ErrorReport) {
        guard isOpen else { throw notOpen }
        nextTransferID += 1
        for chunk in BlobChunk.chunks(
            of: content, transferID: nextTransferID, name: name, attributes: attributes,
            imageFormat: imageFormat, chunkSize: chunkSize)
        {
            try send(imageFormat == nil ? .file(chunk) : .image(chunk))
        }
    }

    func setStarted(_ value: Bool) throws(ErrorReport) {
        guard isOpen else { throw notOpen }
        try send(value ? .start : .stop)
        started = value
    }

    func selectSources(_ ids: [UInt32]) throws(ErrorReport) {
        guard isOpen else { throw notOpen }
        try send(.selectSources(ids))
        selection = ids
    }

    func sendSignalFilter(_ request: SignalFilterRequest) throws(ErrorReport) {
        guard isOpen else { throw notOpen }
        do { try request.validate() } catch { throw ErrorReport(.protocolViolation, "signal filter: \(error)") }
        try send(.signalFilter(request))
        signalFilters[request.sourceID] = request.removes ? nil : request
    }

    /// Defines a filter; returns the application's id for it (stable across reconnections).
    func addFilter(_ request: AppFilterRequest) throws(ErrorReport) -> UInt32 {
        guard isOpen else { throw notOpen }
        let replaced: UInt32 =
            switch request {
            case .analog(let r): r.replaces
            case .array(let r): r.replaces
            }
        if replaced != 0 && !appFilters.contains(where: { $0.id == replaced }) {
            throw ErrorReport(.protocolViolation, "there is no filter \(replaced) to replace")
        }
        let appID = nextAppFilterID
        try sendFilter(request, appID: appID, replacingWire: replaced == 0 ? 0 : appToWire[replaced] ?? 0)
        nextAppFilterID += 1
        if replaced != 0 { appFilters.removeAll { $0.id == replaced } }
        appFilters.append((appID, request))
        return appID
    }

    /// Replaces filter `appID` by `request` in one step; the application's id stays.
    func changeFilter(_ appID: UInt32, to request: AppFilterRequest) throws(ErrorReport) {
        guard isOpen else { throw notOpen }
        guard let index = appFilters.firstIndex(where: { $0.id == appID }), let wire = appToWire[appID] else {
            throw ErrorReport(.protocolViolation, "there is no filter \(appID) to change")
        }
        // Kept as a plain definition: a reconnection restores it without `replaces`.
        let plain: AppFilterRequest =
            switch request {
            case .analog(var r):
                {
                    r.replaces = 0; return .analog(r)
                }()
            case .array(var r):
                {
                    r.replaces = 0; return .array(r)
                }()
            }
        try sendFilter(plain, appID: appID, replacingWire: wire)
        appFilters[index] = (appID, plain)
    }

    func removeFilter(_ appID: UInt32) throws(ErrorReport) {
        guard isOpen else { throw notOpen }
        guard appFilters.contains(where: { $0.id == appID }), let wire = appToWire[appID] else {
            throw ErrorReport(.protocolViolation, "there is no filter \(appID) to remove")
        }
        try send(.removeFilter, filterID: wire)
        try? wireFilters.remove(id: wire)
        appFilters.removeAll { $0.id == appID }
        appToWire[appID] = nil
        session.wireToApp[wire] = nil
    }

    private func sendFilter(_ request: AppFilterRequest, appID: UInt32, replacingWire: UInt32) throws(ErrorReport) {
        let wire = wireFilters.nextFilterID
        let package: Package
        switch request {
        case .analog(var r):
            r.replaces = replacingWire
            try? wireFilters.add(r, id: wire)
            package = .analogFilter(r)
        case .array(var r):
            r.replaces = replacingWire
            try? wireFilters.add(r, id: wire)
            package = .arrayFilter(r)
        }
        try send(package, filterID: wire)
        if replacingWire != 0, let old = session.wireToApp.removeValue(forKey: replacingWire) { appToWire[old] = nil }
        session.wireToApp[wire] = appID
        appToWire[appID] = wire
    }

    /// After a reconnection: the filters (in their order, under new session ids mapped back to the
    /// application's), the source selection, and start.
    private func restore() {
        for filter in appFilters {
            let request: AppFilterRequest =
                switch filter.request {
                case .analog(var r):
                    {
                        r.replaces = 0; return .analog(r)
                    }()
                case .array(var r):
                    {
                        r.replaces = 0; return .array(r)
                    }()
                }
            try? sendFilter(request, appID: filter.id, replacingWire: 0)
        }
        for id in signalFilters.keys.sorted() { _ = try? send(.signalFilter(signalFilters[id]!)) }
        if parameters?.sourceFilterEnabled == true, let selection { _ = try? send(.selectSources(selection)) }
        if started { _ = try? send(.start) }
    }

    var statistics: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) {
        (framesReceived, gapNotices, framesMissing, unaccountedLoss, reconnections, pauses)
    }
}
