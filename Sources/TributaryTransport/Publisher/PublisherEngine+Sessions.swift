import CSocketControl
import Foundation
import TributaryWire

/// The publisher's sessions: a hello admitted (`HelloAdmission`: key, timeout, clock, capacity) or
/// refused, the answers to peers without a session (`ClosedPeerTable`, within the `ReplyBudget`),
/// and how sessions end.
extension PublisherEngine {
    /// Opens a session for a hello (the message still in `headerPart`, whose connection metadata
    /// names the peer), or refuses it.
    func accept(_ frame: Frame, routingID: RoutingKey, fd: Int32?, now: UInt64) {
        // A hello read from a TCP connection the table does not know (its events were read just
        // before): the publisher closed it (over the pending limit, flooding) or it is gone. A session
        // opened on it would outlive it: its disconnection would find no session to end.
        if let fd, connections.state(of: fd) == nil { return }
        let hello: Hello
        do throws(WireError) {
            guard case .hello(let h) = try frame.payload() else { return }
            hello = h
        } catch {
            refuse(routingID, fd: fd, ErrorReport(.malformedFrame, "\(error)"), now: now)
            return
        }
        let configuration = core.configuration
        let timeoutNs: UInt64
        switch admission.admit(
            hello, keyAccepted: core.acceptsAPIKey(hello.apiKey), sentAtNs: frame.header.timestampNs,
            wallClockNs: wallClockNanoseconds(), openSessions: sessions.count)
        {
        case .success(let admitted): timeoutNs = admitted
        case .failure(let refusal): return refuse(routingID, fd: fd, refusal, now: now)
        }
        let userID = curve ? headerPart.metadata("User-Id") : nil
        let session = Session(
            sessionID: nextSessionID, routingID: routingID.bytes, hello: hello, timeoutNs: timeoutNs,
            address: headerPart.metadata("Peer-Address") ?? "", userID: userID,
            maxTransferSize: configuration.maxInboundTransferSize,
            compactHeaders: frame.header.flags.contains(.compactHeaders), now: now)
        session.fileDescriptor = fd
        nextSessionID += 1
        sessionsOpened += 1
        closedPeers.forget(routingID)
        sessions.append(session)
        byRoutingID[routingID] = session
        connections.openedSession(session.sessionID, on: fd)
        let sources = core.sources
        let welcome = Welcome(
            sessionID: session.sessionID, publisherDescription: configuration.description,
            sources: sources.map(\.info))
        // Flag bit 9 on the welcome: this publisher reads compact header parts from the session (§3.2).
        guard session.send(.welcome(welcome), flags: session.compactHeaders ? .compactHeaders : [], on: router, now: now) != .gone else {
            return forget(session)
        }
        for source in sources { sendConfiguration(of: source, to: session, now: now) }
    }

    /// Adds a source while the publisher runs (`Publisher.addSource`): sessions that open from now on
    /// find it in their welcome; open sessions receive its configuration now (a configuration may come
    /// at any time, docs/PROTOCOL.md §4.1), and their channel filters may name it.
    /// - Returns: false when its id is 0 or already taken (nothing changes).
    func addSource(_ source: any Source) -> Bool {
        let id = source.info.id
        guard id != 0, !core.sources.contains(where: { $0.info.id == id }) else { return false }
        core.appendSource(source)
        filterLimits.channelCounts[id] = source.configuration.channels.count
        let now = monotonicNanoseconds()
        for session in sessions { sendConfiguration(of: source, to: session, now: now) }
        return true
    }

    /// Sends a source's configuration, then its properties when it has any (docs/PROTOCOL.md §5.19).
    func sendConfiguration(of source: any Source, to session: Session, now: UInt64) {
        _ = session.send(.configuration(source.configuration), sourceID: source.info.id, on: router, now: now)
        let properties = source.properties
        if !properties.isEmpty {
            _ = session.send(.properties(properties.normalized), sourceID: source.info.id, on: router, now: now)
        }
    }

    /// Refuses a peer without a session (its hello was refused, or it sent something else first):
    /// an error and a close, within the reply limits, and its connection is closed shortly after.
    func refuse(_ routingID: RoutingKey, fd: Int32?, _ report: ErrorReport, now: UInt64) {
        sessionsRefused += 1
        connections.refused(fd, now: now)
        if closedPeers[routingID] != nil { return answerUnknownPeer(routingID, fd: fd, now: now) }
        let answered = replies.take(now: now) && sendErrorAndClose(report, to: routingID, firstSequence: 0)
        closedPeers.remember(routingID, report, now: now, answered: answered)
    }

    /// A frame from a peer without a session: answer with the reason its session ended (or error 12),
    /// at most once a second per peer and within the publisher-wide reply budget, so that nothing a
    /// peer sends before it has a session is amplified (docs/PROTOCOL.md §4.3).
    func answerUnknownPeer(_ routingID: RoutingKey, fd: Int32?, now: UInt64) {
        guard closedPeers[routingID] != nil else {
            return refuse(routingID, fd: fd, ErrorReport(.protocolViolation, "no session: the first frame must be a hello"), now: now)
        }
        connections.refused(fd, now: now)
        guard closedPeers.mayAnswer(routingID, now: now), replies.take(now: now),
            let report = closedPeers.answered(routingID, now: now)
        else { return }
        sendErrorAndClose(report, to: routingID, firstSequence: 0)
    }

    @discardableResult
    func sendErrorAndClose(_ report: ErrorReport, to routingKey: RoutingKey, firstSequence: UInt64) -> Bool {
        let timestamp = wallClockNanoseconds()
        let routingID = routingKey.bytes
        for (offset, package) in [Package.error(report), .close(Close(code: report.code, reason: report.message))].enumerated() {
            let frame = Frame(encoding: package, sequence: firstSequence + UInt64(offset), timestampNs: timestamp)
            do throws(ZMQError) {
                var payload = try MessageFraming.payloadMessage(frame)
                try MessageFraming.send(header: frame.header, payload: &payload, routingID: routingID, on: router)
            } catch {
                return false
            }
        }
        return true
    }

    /// Ends a session with an error: error and close frames (best effort), then forgets it; its
    /// connection is closed shortly after.
    func end(_ session: Session, _ report: ErrorReport, now: UInt64) {
        let answered = session.send(.error(report), on: router, now: now) == .sent
        _ = session.send(.close(Close(code: report.code, reason: report.message)), on: router, now: now)
        forget(session)
        connections.endedSession(on: session.fileDescriptor, refused: true, now: now)
        closedPeers.remember(session.routingKey, report, now: now, answered: answered)
    }

    func forget(_ session: Session) {
        guard byRoutingID[session.routingKey] === session else { return }
        byRoutingID[session.routingKey] = nil
        sessions.removeAll { $0 === session }
        lossless.released(session.heldLossless.count)
        session.heldLossless.removeAll()
        reassemblyBytes -= session.assembler.pendingBytes
        session.assembler.removeAll()
        publishStartedCount()
        if lossless.isWaiting { pumpLossless(now: monotonicNanoseconds()) }
    }

    func publishStartedCount() {
        var started = 0
        for session in sessions where session.started { started += 1 }
        core.startedSessions.store(started, ordering: .releasing)
    }

    /// Closes every session normally (publisher shutdown). A close that does not fit in a full queue
    /// is retried by `retryClosing` — it must follow the last frame, never replace it.
    func closeAll(reason: String) {
        let now = monotonicNanoseconds()
        closingReason = reason
        closingConnections = Set(sessions.compactMap(\.fileDescriptor))
        closing = sessions.filter { sendClose($0, now: now) == .dropped }
        sessions.removeAll()
        byRoutingID.removeAll()
        publishStartedCount()
    }

    /// Tries again to queue the closes `closeAll` could not; true when every close is queued and every
    /// closed session's subscriber has closed its connection (so it read everything: a subscriber
    /// whose receive queue is full stops reading, and libzmq discards what it had not read yet when
    /// the connection ends, the close included).
    func retryClosing() -> Bool {
        let now = monotonicNanoseconds()
        closing.removeAll { sendClose($0, now: now) != .dropped }
        readConnectionEvents()
        return closing.isEmpty && closingConnections.isEmpty
    }

    func sendClose(_ session: Session, now: UInt64) -> Session.SendOutcome {
        session.send(.close(Close(code: ErrorCode(rawValue: 0), reason: closingReason)), on: router, now: now, retryable: true)
    }
}
