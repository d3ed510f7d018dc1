import CSocketControl
import Foundation
import TributaryWire

/// The publisher's sessions: admission of a hello (key, timeout, clock, capacity), refusals and the
/// reply budget for peers without a session, and how sessions end.
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
        if !core.acceptsAPIKey(hello.apiKey) {
            refuse(routingID, fd: fd, ErrorReport(.wrongAPIKey, "the API key is incorrect"), now: now)
            return
        }
        guard hello.timeoutSeconds.isFinite, hello.timeoutSeconds > 1 else {
            refuse(
                routingID, fd: fd,
                ErrorReport(.wrongTimeout, "the timeout \(hello.timeoutSeconds) s is not a finite number of seconds above 1"), now: now)
            return
        }
        if let skew = configuration.maxClockSkew {
            let difference = (Double(wallClockNanoseconds()) - Double(frame.header.timestampNs)) / 1e9
            let bound = Double(skew.components.seconds) + Double(skew.components.attoseconds) / 1e18
            if abs(difference) > bound {
                refuse(
                    routingID, fd: fd,
                    ErrorReport(.wrongTimestamp, "the client's clock is \(difference) s from the publisher's; the bound is \(bound) s"),
                    now: now)
                return
            }
        }
        if sessions.count >= configuration.maxSessions {
            refuse(
                routingID, fd: fd, ErrorReport(.publisherFull, "the publisher has \(sessions.count) sessions, its limit; try again later"),
                now: now)
            return
        }
        let userID = curve ? headerPart.metadata("User-Id") : nil
        // Lowered to the maximum before it becomes an integer: a hello may ask for 1e308 s (finite, > 1 here).
        let maxTimeoutNs = Self.nanoseconds(configuration.maxSessionTimeout)
        let askedNs = hello.timeoutSeconds * 1e9
        let timeoutNs = askedNs < Double(maxTimeoutNs) ? UInt64(askedNs) : maxTimeoutNs
        let session = Session(
            sessionID: nextSessionID, routingID: routingID.bytes, hello: hello, timeoutNs: timeoutNs,
            address: headerPart.metadata("Peer-Address") ?? "", userID: userID,
            maxTransferSize: configuration.maxInboundTransferSize,
            compactHeaders: frame.header.flags.contains(.compactHeaders), now: now)
        session.fileDescriptor = fd
        nextSessionID += 1
        sessionsOpened += 1
        closedPeers[routingID] = nil
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
        let answered = takeReplyToken(now: now) && sendErrorAndClose(report, to: routingID, firstSequence: 0)
        remember(routingID, report, now: now, answered: answered)
    }

    /// A frame from a peer without a session: answer with the reason its session ended (or error 12),
    /// at most once a second per peer and within the publisher-wide reply budget, so that nothing a
    /// peer sends before it has a session is amplified (docs/PROTOCOL.md §4.3).
    func answerUnknownPeer(_ routingID: RoutingKey, fd: Int32?, now: UInt64) {
        guard var closed = closedPeers[routingID] else {
            return refuse(routingID, fd: fd, ErrorReport(.protocolViolation, "no session: the first frame must be a hello"), now: now)
        }
        connections.refused(fd, now: now)
        guard now &- closed.lastAnsweredNs >= 1_000_000_000 else { return }
        guard takeReplyToken(now: now) else { return }
        closed.lastAnsweredNs = now
        closedPeers[routingID] = closed
        sendErrorAndClose(ErrorReport(closed.code, closed.reason), to: routingID, firstSequence: 0)
    }

    /// One reply from the publisher-wide budget for peers without a session (a token bucket).
    func takeReplyToken(now: UInt64) -> Bool {
        let elapsed = Double(now &- replyTokensUpdatedNs) / 1e9
        replyTokensUpdatedNs = now
        replyTokens = min(Self.replyBurst, replyTokens + elapsed * Self.replyRate)
        guard replyTokens >= 1 else {
            repliesSuppressed += 1
            return false
        }
        replyTokens -= 1
        return true
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

    /// Remembers why a peer has no session, to tell it again if it keeps talking (`answered`: whether the
    /// error just went out; if it did not, the next frame from the peer may be answered at once). The
    /// table is bounded: when full, the oldest half goes (its peers are answered again, still within
    /// the publisher-wide reply budget).
    func remember(_ routingID: RoutingKey, _ report: ErrorReport, now: UInt64, answered: Bool) {
        if closedPeers.count >= 4_096 {
            let sorted = closedPeers.sorted { $0.value.expiresNs < $1.value.expiresNs }
            for (key, _) in sorted.prefix(2_048) { closedPeers[key] = nil }
        }
        closedPeers[routingID] = ClosedPeer(
            code: report.code, reason: report.message, lastAnsweredNs: answered ? now : 0,
            expiresNs: now + 60_000_000_000)
    }

    /// Ends a session with an error: error and close frames (best effort), then forgets it; its
    /// connection is closed shortly after.
    func end(_ session: Session, _ report: ErrorReport, now: UInt64) {
        let answered = session.send(.error(report), on: router, now: now) == .sent
        _ = session.send(.close(Close(code: report.code, reason: report.message)), on: router, now: now)
        forget(session)
        connections.endedSession(on: session.fileDescriptor, refused: true, now: now)
        remember(session.routingKey, report, now: now, answered: answered)
    }

    func forget(_ session: Session) {
        guard byRoutingID[session.routingKey] === session else { return }
        byRoutingID[session.routingKey] = nil
        sessions.removeAll { $0 === session }
        heldFrames -= session.heldLossless.count
        session.heldLossless.removeAll()
        reassemblyBytes -= session.assembler.pendingBytes
        session.assembler.removeAll()
        publishStartedCount()
        if losslessWaiting { pumpLossless(now: monotonicNanoseconds()) }
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
