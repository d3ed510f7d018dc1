// The session fuzz target (Fuzz/run.sh) compiles this file into one module with TributaryWire.
#if canImport(TributaryWire)
    import TributaryWire
#endif

/// What a subscriber does with the frames of one session, without sockets or threads: sequence and
/// loss accounting, the bounds on what the publisher makes it hold, lossless credit, file and image
/// reassembly, and filter ids mapped back to the application's. `SubjectEngine` feeds it every frame
/// in order and carries out what it answers; Fuzz/SessionFuzz.swift feeds it arbitrary sequences.
///
/// Every number in a frame is the publisher's: counters saturate and nothing here can trap on them.
struct SubscriberSession {
    /// What to do with a frame.
    enum Outcome {
        /// Hand the package to the observers.
        case deliver(ReceivedPackage)
        /// Nothing to deliver (a file chunk of an unfinished transfer).
        case none
        /// End the session with this error; `notifyPublisher`: send it a close; `reconnect`: the
        /// subscriber's reconnect policy may open a new one.
        case end(ErrorReport, notifyPublisher: Bool, reconnect: Bool)
    }

    private(set) var gapNotices: UInt64 = 0
    private(set) var framesMissing: UInt64 = 0
    private(set) var unaccountedLoss: UInt64 = 0
    /// The sequence number the next frame should carry.
    private(set) var expectedSequence: UInt64 = 0
    /// The publisher's filter ids (on the wire) → the application's.
    var wireToApp: [UInt32: UInt32] = [:]
    /// The lossless credit granted and what to grant next.
    var credit: CreditWindow
    private var ledger: SourceLedger
    private var assembler: BlobAssembler
    private let maxTransferSize: UInt64
    /// A grant to send now (the engine sends it and calls `credit.granted` when it went out).
    private(set) var grant: UInt32?

    /// - Parameters: as the `SubjectOptions` of the same names.
    init(creditWindow: UInt32, creditWindowBytes: Int, maxTransferSize: UInt64, maxSources: Int, maxConfigurationBytes: Int) {
        credit = CreditWindow(frames: creditWindow, bytes: creditWindowBytes)
        ledger = SourceLedger(maxSources: maxSources, maxConfigurationBytes: maxConfigurationBytes)
        self.maxTransferSize = maxTransferSize
        assembler = BlobAssembler(maxTransferSize: maxTransferSize, maxPendingTransfers: 4)
    }

    /// A new connection: numbering, filters, transfers and sources start over (the counters go on).
    mutating func reset() {
        expectedSequence = 0
        wireToApp = [:]
        _ = credit.opened()
        ledger.reset()
        assembler = BlobAssembler(maxTransferSize: maxTransferSize, maxPendingTransfers: 4)
        grant = nil
    }

    /// The welcome arrived: the sources of the previous session are forgotten and the first credit is due.
    mutating func opened() -> UInt32 {
        ledger.reset()
        return credit.opened()
    }

    /// Takes the grant `receive` left to send, if any.
    mutating func takeGrant() -> UInt32? {
        defer { grant = nil }
        return grant
    }

    /// Accounts for a frame's sequence number (any phase; `open`: the session is open). - Returns:
    /// an ending when the number went back in an open session (a new connection under the session,
    /// the publisher no longer knows it), else nil.
    mutating func sequence(of header: FrameHeader, open: Bool, endpoint: String) -> Outcome? {
        // A properties frame carries the next number without consuming it (docs/PROTOCOL.md §5.19).
        if header.kind == .properties { return nil }
        if open && header.kind != .gap && header.sequence < expectedSequence {
            return .end(
                ErrorReport(
                    .lostConnection,
                    "the connection to \(endpoint) broke down "
                        + "(a \(header.kind) frame numbered \(header.sequence) came after \(expectedSequence &- 1): "
                        + "the publisher no longer knows this session)"),
                notifyPublisher: false, reconnect: true)
        }
        if header.kind != .gap {
            // Saturating: a publisher numbers its frames, and may number them up to 2^64 - 1 and back.
            if header.sequence > expectedSequence { unaccountedLoss = unaccountedLoss.addingSaturated(header.sequence - expectedSequence) }
            expectedSequence = header.sequence &+ 1
        }
        return nil
    }

    /// A frame of the open session (its sequence already accounted).
    mutating func receive(_ frame: Frame) -> Outcome {
        var header = frame.header
        if let refusal = ledger.admit(
            sourceID: header.sourceID,
            configurationLength: header.kind == .configuration ? header.frameLength : nil)
        {
            return .end(ErrorReport(.tooLarge, refusal), notifyPublisher: true, reconnect: false)
        }
        let payload: Payload
        do throws(WireError) {
            payload = try frame.payload()
        } catch {
            return .end(
                ErrorReport(.malformedFrame, "the publisher sent a malformed \(header.kind) frame: \(error)"),
                notifyPublisher: true, reconnect: true)
        }
        if header.filterID != 0 { header.filterID = wireToApp[header.filterID] ?? header.filterID }
        // Data frames count against the replay credit as they arrive (a file's chunks each, before reassembly).
        if header.kind.isData { countCredit(header) }
        let content: ReceivedContent
        switch payload {
        case .gap(let gap):
            gapNotices = gapNotices.addingSaturated(1)
            framesMissing = framesMissing.addingSaturated(gap.missingCount)
            let announced = header.sequence &- expectedSequence
            if announced > gap.missingCount { unaccountedLoss = unaccountedLoss.addingSaturated(announced - gap.missingCount) }
            expectedSequence = header.sequence &+ 1
            content = .gap(gap)
            if let due = credit.missed(gap.missingCount) { grant = due }
        case .file(let chunk), .image(let chunk):
            do throws(BlobError) {
                guard let blob = try assembler.add(chunk) else { return .none }
                content = header.kind == .file ? .file(ReceivedFile(blob)) : .image(ReceivedFile(blob))
            } catch {
                let code: ErrorCode =
                    switch error.reason {
                    case .checksumMismatch: .checksumMismatch
                    case .tooLarge: .tooLarge
                    case .inconsistentChunk: .malformedFrame
                    }
                content = .error(ErrorReport(code, error.description))
            }
        case .close(let close):
            // An error frame with the reason came first when the code is not 0.
            let error =
                close.code.rawValue == 0
                ? ErrorReport(.lostConnection, ErrorReport.publisherClosedPrefix + (close.reason.isEmpty ? "" : ": \(close.reason)"))
                : ErrorReport(close.code, close.reason)
            return .end(error, notifyPublisher: false, reconnect: true)
        default:
            guard let handedOver = ReceivedContent(handedOver: payload) else {
                return .end(
                    ErrorReport(.protocolViolation, "the publisher sent a \(header.kind) frame in a session"),
                    notifyPublisher: true, reconnect: true)
            }
            content = handedOver
        }
        let whole: Frame? = header.kind == .file || header.kind == .image ? nil : frame
        return .deliver(ReceivedPackage(header: header, content: content, frame: whole))
    }

    private mutating func countCredit(_ header: FrameHeader) {
        if let due = credit.received(size: header.frameLength) { grant = due }
    }
}
