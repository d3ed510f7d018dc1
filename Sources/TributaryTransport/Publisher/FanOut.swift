import TributaryWire

/// The publisher's fan-out: takes one frame that a source handed off and hands it to every session
/// that should get it — its target, the session's started state and source selection, the
/// publisher's `digitalOnChangeOnly`, the session's signal filter and channel filters — through the
/// session's live queue (a full queue drops the frame and counts it in the session's next gap notice)
/// or, for lossless frames, its credit and held frames (a full queue holds the frame and everything
/// after it, in order). The frame's payload becomes one zero-copy libzmq message shared by reference
/// among the subscribers (`ZMQSocket.send(sharing:)`): N subscribers cost N small header parts, never
/// N copies or encodes of the payload. Filter outputs, which are new frames, get messages of their own.
///
/// It sends, but decides nothing about a session's life: what it could not deliver comes back in a
/// `Delivery` (sessions gone, sessions too slow under the `.disconnect` policy, frames held and
/// released) for the engine to settle (forget, end, `LosslessBacklog`). Lives on the publisher's
/// loop thread, as the sessions do.
final class FanOut {
    /// What fanning out left for the engine to do.
    struct Delivery {
        /// Sessions whose peer libzmq no longer knows: to forget.
        var gone: [Session] = []
        /// Sessions whose full queue dropped a live frame while the policy is `.disconnect`: to end.
        var tooSlow: [Session] = []
        /// Lossless frames that sessions now hold for their full queues (`Session.heldLossless`).
        var held = 0
        /// Held lossless frames that went out.
        var released = 0
    }

    let router: ZMQSocket
    /// `PublisherConfiguration.digitalOnChangeOnly`.
    let digitalOnChangeOnly: Bool
    /// `PublisherConfiguration.slowConsumerPolicy` is `.disconnect`.
    let disconnectsSlowSessions: Bool
    /// The last digital states sent per source (`digitalOnChangeOnly`).
    private(set) var digitalFilter = DigitalChangeFilter()
    /// The payload of the frame being fanned out, shared by reference among subscribers; nil
    /// between frames.
    private var shared: ZMQMessage?
    /// Frames taken for fan-out (live and lossless, suppressed digital frames included).
    private(set) var framesPublished: UInt64 = 0
    /// Digital frames not sent because no line changed (`digitalOnChangeOnly`).
    private(set) var digitalSuppressed: UInt64 = 0
    /// Analog or array frames of the application that a filter could not read (nothing was sent for them).
    private(set) var applicationFrameErrors: UInt64 = 0
    /// What the frame being fanned out has left to settle so far.
    private var delivery = Delivery()

    init(router: ZMQSocket, digitalOnChangeOnly: Bool, slowConsumerPolicy: SlowConsumerPolicy) {
        self.router = router
        self.digitalOnChangeOnly = digitalOnChangeOnly
        disconnectsSlowSessions = slowConsumerPolicy == .disconnect
    }

    /// Whether a live frame handed off as `item` goes to `session`: its target, and for data the
    /// session's started state and source selection.
    static func addresses(_ item: HandOffItem, to session: Session, isData: Bool) -> Bool {
        if case .session(let id) = item.target, id != session.sessionID { return false }
        return !isData || session.wants(sourceID: item.frame.header.sourceID)
    }

    /// Whether a lossless frame handed off as `item` goes to `session` (every kind is filtered by the
    /// session's started state and source selection: a lossless frame waits for the credit of those).
    static func addressesLossless(_ item: HandOffItem, to session: Session) -> Bool {
        if case .session(let id) = item.target, id != session.sessionID { return false }
        return session.wants(sourceID: item.frame.header.sourceID)
    }

    /// Sends a live frame to every session it addresses, in order; a full queue drops it for that
    /// session (counted, announced by the session's next gap notice).
    func live(_ item: HandOffItem, to sessions: [Session], now: UInt64) -> Delivery {
        let frame = item.frame
        framesPublished += 1
        if digitalOnChangeOnly && frame.header.kind == .digital && !digitalFilter.changes(frame) {
            digitalSuppressed += 1
            return Delivery()
        }
        let isData = frame.header.kind.isData
        for session in sessions where Self.addresses(item, to: session, isData: isData) {
            switch send(frame, to: session, now: now) {
            case .sent: break
            case .dropped: if disconnectsSlowSessions { delivery.tooSlow.append(session) }
            case .gone: delivery.gone.append(session)
            }
        }
        return finish()
    }

    /// Sends a lossless frame to the sessions that should get it (`addressesLossless`), each of which
    /// has credit and holds no frame (the caller checked): takes one credit from each, and holds what a
    /// full queue does not take.
    func lossless(_ frame: Frame, to sessions: [Session], now: UInt64) -> Delivery {
        framesPublished += 1
        for session in sessions {
            _ = session.credit.take()  // there is credit: checked by the caller
            if send(frame, to: session, now: now, holding: true) == .gone { delivery.gone.append(session) }
        }
        return finish()
    }

    /// Sends, in order, what each session holds for its full queue, as far as its queue takes them.
    func flushHeld(_ sessions: [Session], now: UInt64) -> Delivery {
        for session in sessions where !session.heldLossless.isEmpty {
            var sent = 0
            for frame in session.heldLossless {
                var outcome = Session.SendOutcome.dropped
                do throws(ZMQError) {
                    var payload = try MessageFraming.payloadMessage(frame)
                    outcome = session.send(header: frame.header, payload: &payload, on: router, now: now, retryable: true)
                } catch {
                    // No message could be made (out of memory): held still, tried again with the rest.
                }
                if outcome == .gone { delivery.gone.append(session) }
                guard outcome == .sent else { break }
                sent += 1
            }
            session.heldLossless.removeFirst(sent)
            delivery.released += sent
        }
        return finish()
    }

    /// Lets go of the shared payload (libzmq keeps its own references until the bytes are written)
    /// and hands over what is left to settle.
    private func finish() -> Delivery {
        shared = nil
        defer { delivery = Delivery() }
        return delivery
    }

    /// Sends `frame` to one session through its filters; returns the worst outcome of the frames sent.
    /// `holding` (lossless frames): an output the session's full queue does not take is held, with
    /// every output after it, never dropped (`flushHeld` sends them when the queue has room), so the
    /// outcome is `.sent` or `.gone`.
    func send(_ frame: Frame, to session: Session, now: UInt64, holding: Bool = false) -> Session.SendOutcome {
        if !session.signalFilters.isEmpty, let filter = session.signalFilters[frame.header.sourceID] {
            if frame.header.kind == .analog { return sendFiltered(frame, through: filter, to: session, now: now, holding: holding) }
            if frame.header.kind == .configuration { return sendConfiguration(frame, through: filter, to: session, now: now) }
        }
        if session.filters.isEmpty || !(frame.header.kind == .analog || frame.header.kind == .array) {
            return sendOutput(frame, of: frame, to: session, now: now, holding: holding)
        }
        var worst = Session.SendOutcome.sent
        do {
            try session.filters.outputs(for: frame) { out in
                worst = Self.worse(worst, sendOutput(out, of: frame, to: session, now: now, holding: holding))
            }
        } catch {
            // The application published a malformed analog or array frame: nothing to send for it.
            applicationFrameErrors += 1
        }
        return worst
    }

    /// The worse of two outcomes: gone before dropped before sent.
    static func worse(_ a: Session.SendOutcome, _ b: Session.SendOutcome) -> Session.SendOutcome {
        if a == .gone || b == .gone { return .gone }
        return a == .dropped || b == .dropped ? .dropped : .sent
    }

    /// Sends one output of `frame` (the frame itself, or a filter output made of it) to `session`:
    /// its payload shared when it is the frame's own, else a message of its own. With `holding`, a
    /// full queue (or an earlier output already held) holds it instead of dropping it.
    private func sendOutput(
        _ out: Frame, of frame: Frame, to session: Session, now: UInt64, holding: Bool, shareable: Bool = true
    ) -> Session.SendOutcome {
        if holding && !session.heldLossless.isEmpty {
            hold(out, for: session)
            return .sent
        }
        let outcome: Session.SendOutcome
        if shareable && out.buffer === frame.buffer && out.payloadOffset == frame.payloadOffset {
            outcome = sendShared(out.header, of: frame, to: session, now: now, retryable: holding)
        } else {
            do throws(ZMQError) {
                var own = try MessageFraming.payloadMessage(out)
                outcome = session.send(header: out.header, payload: &own, on: router, now: now, retryable: holding)
            } catch {
                outcome = .dropped
            }
        }
        guard holding && outcome == .dropped else { return outcome }
        hold(out, for: session)
        return .sent
    }

    private func sendShared(_ header: FrameHeader, of frame: Frame, to session: Session, now: UInt64, retryable: Bool)
        -> Session.SendOutcome
    {
        if shared == nil && frame.header.payloadLength > 0 {
            do throws(ZMQError) { shared = try MessageFraming.payloadMessage(frame) } catch { return .dropped }
        }
        return session.send(header: header, payload: &shared, on: router, now: now, retryable: retryable)
    }

    private func hold(_ frame: Frame, for session: Session) {
        session.heldLossless.append(frame)
        delivery.held += 1
    }

    // MARK: Signal filters

    /// Sends a configuration frame of a source through the session's signal filter of that source: the
    /// filter takes the new rates (a filter that no longer fits is removed, with an error 12 frame
    /// naming it, and the session goes on unfiltered), the session the announced rates.
    private func sendConfiguration(_ frame: Frame, through filter: SessionSignalFilter, to session: Session, now: UInt64)
        -> Session.SendOutcome
    {
        guard case .configuration(let configuration)? = try? frame.payload() else {
            return sendOutput(frame, of: frame, to: session, now: now, holding: false)
        }
        let id = frame.header.sourceID
        do throws(SignalFilterRefusal) {
            try filter.transform.reconfigure(configuration)
        } catch {
            session.signalFilters[id] = nil
            let report = ErrorReport(.protocolViolation, "signal filter for source \(id) removed: \(error.message)")
            _ = session.send(.error(report), on: router, now: now)
            return sendOutput(frame, of: frame, to: session, now: now, holding: false)
        }
        filter.cost = filter.transform.cost(configuration)
        var header = frame.header
        header.sequence = 0
        let out = Frame(encoding: .configuration(filter.transform.announced(configuration)), header: header)
        return sendOutput(out, of: out, to: session, now: now, holding: false, shareable: false)
    }

    /// Sends an analog frame through the session's signal filter of its source, then its channel filters.
    private func sendFiltered(
        _ frame: Frame, through filter: SessionSignalFilter, to session: Session, now: UInt64, holding: Bool
    ) -> Session.SendOutcome {
        let view: AnalogView
        do throws(WireError) { view = try frame.analog() } catch {
            applicationFrameErrors += 1
            return .sent
        }
        var worst = Session.SendOutcome.sent
        filter.transform.process(frame, view) { out in
            guard !session.filters.isEmpty else {
                worst = Self.worse(worst, sendOutput(out, of: out, to: session, now: now, holding: holding, shareable: false))
                return
            }
            do {
                try session.filters.outputs(for: out) { selected in
                    worst = Self.worse(worst, sendOutput(selected, of: out, to: session, now: now, holding: holding, shareable: false))
                }
            } catch {
                applicationFrameErrors += 1
            }
        }
        return worst
    }
}
