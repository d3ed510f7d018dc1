import Foundation
import TributaryWire

/// One subscriber's session on the publisher's thread: its filters, source selection, start/stop
/// state, sequence numbers, drop accounting and credit (docs/PROTOCOL.md §4).
///
/// Lives only on the publisher's loop thread (not Sendable).
final class Session {
    let sessionID: UInt64
    let routingID: [UInt8]
    /// `routingID` as the publisher's tables key it.
    let routingKey: RoutingKey
    let description: String
    let address: String
    let userID: String?
    let connectedSince: ContinuousClock.Instant
    let connectedSinceUnixNs: Int64
    /// Silence (nanoseconds) after which the session has expired (the hello's timeout).
    let timeoutNs: UInt64
    let sourceFilterEnabled: Bool
    /// The hello asked for compact header parts (docs/PROTOCOL.md §3.2): every frame of the session is
    /// sent with one, which costs no allocation in libzmq on either side, and the welcome says that the
    /// subscriber may send its own frames with one too (its credit grants then cost none either).
    let compactHeaders: Bool

    var started = false
    var selectedSources: Set<UInt32> = []
    var selectionOrder: [UInt32] = []
    var filters = SubscriberFilters()
    /// Per source: the signal filter this subscriber asked for (kind 13), applied before `filters`.
    var signalFilters: [UInt32: SessionSignalFilter] = [:]
    /// What the session's signal filters cost, in operations a second (docs/PROTOCOL.md §6.2).
    var signalFilterCost: Double { signalFilters.values.reduce(0) { $0 + $1.cost } }
    /// Credit for lossless frames (docs/PROTOCOL.md §4.5).
    var credit = LosslessCredit()
    /// Frames of lossless sources (the source frame, or the filter outputs made of it) that this
    /// subscriber has credit for but whose queue was full (its credit beyond `subscriberQueueFrames`):
    /// sent, in order, before anything else lossless goes to it (`PublisherEngine.flushHeld`).
    var heldLossless: [Frame] = []
    var assembler: BlobAssembler

    /// Sequence numbers, counts of frames sent and dropped, and the gap not yet announced.
    private(set) var numbering = OutboundSequence()
    var lastHeardNs: UInt64
    private(set) var lastSentNs: UInt64

    /// The TCP connection the session was opened on (nil for inproc).
    var fileDescriptor: Int32?
    /// The bounds on what the subscriber sends: frames per window, bytes ahead of the publisher's reading.
    var floodGuard = FloodGuard()

    /// - Parameter timeoutNs: the hello's timeout, already checked and bounded by the publisher.
    init(
        sessionID: UInt64, routingID: [UInt8], hello: Hello, timeoutNs: UInt64, address: String, userID: String?,
        maxTransferSize: UInt64, compactHeaders: Bool = false, now: UInt64
    ) {
        self.sessionID = sessionID
        self.compactHeaders = compactHeaders
        self.routingID = routingID
        routingKey = RoutingKey(routingID)
        description = hello.clientDescription
        self.address = address
        self.userID = userID
        connectedSince = .now
        connectedSinceUnixNs = wallClockNanoseconds()
        self.timeoutNs = timeoutNs
        sourceFilterEnabled = hello.sourceFilterEnabled
        assembler = BlobAssembler(maxTransferSize: maxTransferSize, maxPendingTransfers: 4)
        lastHeardNs = now
        lastSentNs = now
    }

    /// Whether the session receives data of `sourceID` now (started, and the source selected when
    /// source filtering is on; frames of no source, id 0, pass).
    func wants(sourceID: UInt32) -> Bool {
        started && (!sourceFilterEnabled || sourceID == 0 || selectedSources.contains(sourceID))
    }

    /// The outcome of one send.
    enum SendOutcome {
        case sent
        /// The subscriber's queue was full: the frame was dropped and counted (its sequence number is
        /// in the pending gap).
        case dropped
        /// libzmq no longer knows the peer (disconnected): forget the session.
        case gone
    }

    /// Sends one frame under this session's next sequence number, first announcing any pending gap.
    /// A properties frame (extension kind 129) carries the next number without consuming it, as a
    /// keepalive does, so that a subscriber that skips it sees no hole (docs/PROTOCOL.md §5.19).
    /// - Parameter retryable: when the queue is full, report `.dropped` without consuming a sequence
    ///   number, so that the caller can send the same frame again later (the final close).
    func send(
        header: FrameHeader, payload: inout ZMQMessage?, on socket: ZMQSocket, now: UInt64,
        retryable: Bool = false
    ) -> SendOutcome {
        if numbering.gapCount > 0 {
            switch sendGapNotice(on: socket, now: now) {
            case .sent: break
            case .dropped: return retryable ? .dropped : drop()
            case .gone: return .gone
            }
        }
        var header = header
        header.sequence = numbering.next
        do throws(ZMQError) {
            try MessageFraming.send(header: header, payload: &payload, routingID: routingID, compact: compactHeaders, on: socket)
        } catch {
            guard error.code == .again else { return .gone }
            return retryable ? .dropped : drop()
        }
        numbering.sent(consumesNumber: header.kind != .properties)
        lastSentNs = now
        return .sent
    }

    /// Sends a frame encoded here (control frames: welcome, configuration, error, close).
    func send(
        _ package: Package, sourceID: UInt32 = 0, flags: FrameFlags = [], on socket: ZMQSocket, now: UInt64,
        retryable: Bool = false
    ) -> SendOutcome {
        let frame = Frame(encoding: package, timestampNs: wallClockNanoseconds(), sourceID: sourceID, flags: flags)
        do throws(ZMQError) {
            var payload = try MessageFraming.payloadMessage(frame)
            return send(header: frame.header, payload: &payload, on: socket, now: now, retryable: retryable)
        } catch {
            return retryable ? .dropped : drop()
        }
    }

    /// Tries to announce the pending gap (the housekeeping timer calls this so that a gap is announced
    /// even when no further frame comes).
    func flushGap(on socket: ZMQSocket, now: UInt64) -> SendOutcome {
        numbering.gapCount > 0 ? sendGapNotice(on: socket, now: now) : .sent
    }

    private func sendGapNotice(on socket: ZMQSocket, now: UInt64) -> SendOutcome {
        // Called for every frame while a subscriber is stalled, so nothing here allocates: the 16-byte
        // payload is encoded on the stack and copied into the message.
        let gap = Package.gap(Gap(firstMissingSequence: numbering.gapFirst, missingCount: numbering.gapCount))
        do throws(ZMQError) {
            try MessageFraming.sendSmall(gap, sequence: numbering.next, routingID: routingID, compact: compactHeaders, on: socket)
        } catch {
            // The notice itself was not queued: nothing consumed, the gap stays pending.
            return error.code == .again ? .dropped : .gone
        }
        numbering.gapAnnounced()
        lastSentNs = now
        return .sent
    }

    private func drop() -> SendOutcome {
        numbering.dropped()
        return .dropped
    }

    /// Sends a keepalive when nothing was sent for a quarter of the timeout. A keepalive carries the
    /// next sequence number without consuming it; a full queue simply skips it (data is flowing).
    /// - Returns: false when the peer is gone.
    func keepAliveIfIdle(on socket: ZMQSocket, now: UInt64) -> Bool {
        guard now &- lastSentNs >= timeoutNs / 4 else { return true }
        do throws(ZMQError) {
            try MessageFraming.sendExtension(
                kind: TransportKind.keepalive, sequence: numbering.next,
                timestampNs: wallClockNanoseconds(), routingID: routingID,
                compact: compactHeaders, on: socket)
            lastSentNs = now
        } catch {
            return error.code == .again
        }
        return true
    }

    /// Answers a clock probe at once (docs/PROTOCOL.md §4.9): its id and `t0` echoed, `t1` when it was
    /// read, `t2` now, as an extension frame that carries the next sequence number without consuming
    /// it. A full queue skips the answer (the subscriber's estimate keeps its other samples).
    /// - Returns: false when the peer is gone.
    func answer(_ probe: TimeProbe, receivedAtNs t1: Int64, on socket: ZMQSocket, now: UInt64) -> Bool {
        do throws(ZMQError) {
            try withUnsafeTemporaryAllocation(byteCount: TimeReply.payloadLength, alignment: 8) { (bytes) throws(ZMQError) in
                let t2 = wallClockNanoseconds()
                TimeReply(echoing: probe, t1: t1, t2: t2).encode(into: bytes.baseAddress!)
                try MessageFraming.sendExtension(
                    kind: TransportKind.timeReply, sequence: numbering.next, timestampNs: t2,
                    payload: UnsafeRawBufferPointer(bytes), routingID: routingID, compact: compactHeaders, on: socket)
            }
            lastSentNs = now
        } catch {
            return error.code == .again
        }
        return true
    }

    /// Whether nothing was heard from the subscriber for its timeout.
    func hasExpired(now: UInt64) -> Bool { now &- lastHeardNs > timeoutNs }

    var info: SubscriberInfo {
        var info = SubscriberInfo(
            sessionID: sessionID, address: address, description: description, userID: userID,
            connectedSince: connectedSince, connectedSinceUnixNs: connectedSinceUnixNs,
            framesSent: numbering.framesSent, framesDropped: numbering.framesDropped, isStarted: started,
            filters: filters, selectedSources: sourceFilterEnabled ? selectionOrder : nil)
        info.signalFilters = signalFilters.keys.sorted().map { signalFilters[$0]!.request }
        return info
    }
}

/// Wall-clock time in nanoseconds since 1970 (CLOCK_REALTIME), the timestamps of the protocol.
public func wallClockNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
