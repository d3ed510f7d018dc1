import TributaryBytes
import TributaryWire

/// A clock probe (extension kind 130, subscriber → publisher; docs/PROTOCOL.md §4.9): the
/// subscriber's send time `t0` on its wall clock and an id the reply echoes.
public struct TimeProbe: Sendable, Equatable {
    /// Bytes of the payload.
    public static let payloadLength = 16
    /// Chosen by the subscriber; echoed by the reply.
    public var probeID: UInt64
    /// The subscriber's wall clock (ns since 1970) when it sent the probe.
    public var t0: Int64

    public init(probeID: UInt64, t0: Int64) {
        self.probeID = probeID
        self.t0 = t0
    }

    /// Writes the 16-byte payload at `base`.
    public func encode(into base: UnsafeMutableRawPointer) {
        var w = ByteWriter(UnsafeMutableRawBufferPointer(start: base, count: Self.payloadLength))
        w.write(probeID)
        w.write(t0)
    }

    /// The probe a payload holds, or nil when it is not exactly 16 bytes (such a probe is ignored).
    public static func decode(_ payload: UnsafeRawBufferPointer) -> TimeProbe? {
        guard payload.count == payloadLength else { return nil }
        let r = ByteReader<ByteError>(payload)
        return TimeProbe(probeID: r.u64(at: 0), t0: r.i64(at: 8))
    }
}

/// The publisher's answer to a clock probe (extension kind 131, publisher → subscriber): the probe's
/// id and `t0` echoed, and the publisher's wall clock when it read the probe (`t1`) and when it sent
/// the reply (`t2`).
public struct TimeReply: Sendable, Equatable {
    /// Bytes of the payload: the probe's 16, then `t1` and `t2`.
    public static let payloadLength = TimeProbe.payloadLength + 16
    /// The probe answered, echoed as it came.
    public var probe: TimeProbe
    public var t1: Int64
    public var t2: Int64

    public init(echoing probe: TimeProbe, t1: Int64, t2: Int64) {
        self.probe = probe
        self.t1 = t1
        self.t2 = t2
    }

    /// Writes the 32-byte payload at `base`: the probe's payload, then `t1` and `t2`.
    public func encode(into base: UnsafeMutableRawPointer) {
        probe.encode(into: base)
        var w = ByteWriter(UnsafeMutableRawBufferPointer(start: base + TimeProbe.payloadLength, count: 16))
        w.write(t1)
        w.write(t2)
    }

    /// The reply a payload holds, or nil when it is not exactly 32 bytes (such a reply is ignored).
    public static func decode(_ payload: UnsafeRawBufferPointer) -> TimeReply? {
        guard payload.count == payloadLength,
            let probe = TimeProbe.decode(UnsafeRawBufferPointer(rebasing: payload[..<TimeProbe.payloadLength]))
        else { return nil }
        let r = ByteReader<ByteError>(payload)
        return TimeReply(echoing: probe, t1: r.i64(at: 16), t2: r.i64(at: 24))
    }
}

extension MessageFraming {
    /// The payload bytes of an extension frame whose header part is `first` (40 bytes or more, the
    /// header length at bytes 8-9) and whose payload part, if any, is `payload`; the one-part form
    /// carries them after the header.
    static func extensionPayload<T>(
        header first: UnsafeRawBufferPointer, payload: FrameBuffer?, _ body: (UnsafeRawBufferPointer) -> T
    ) -> T {
        if let payload { return payload.withUnsafeBytes(body) }
        let headerLength = Int(ByteReader<ByteError>(first).u16(at: 8))
        guard headerLength <= first.count else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return body(UnsafeRawBufferPointer(rebasing: first[headerLength...]))
    }

    /// What an extension frame of `kind` decodes to: a keepalive, a clock probe or reply (a payload of
    /// the wrong size makes it an ignorable frame), or another ignorable frame.
    static func decodeExtension(kind: UInt8, header first: UnsafeRawBufferPointer, payload: FrameBuffer?) -> InboundFrame {
        switch kind {
        case TransportKind.keepalive:
            return .keepalive
        case TransportKind.timeProbe:
            return extensionPayload(header: first, payload: payload) { TimeProbe.decode($0) }.map { .timeProbe($0) }
                ?? .ignorable(kind: kind)
        case TransportKind.timeReply:
            return extensionPayload(header: first, payload: payload) { TimeReply.decode($0) }.map { .timeReply($0) }
                ?? .ignorable(kind: kind)
        default:
            return .ignorable(kind: kind)
        }
    }

    /// Sends an extension frame (kind 128-255) with a small payload (at most 32 bytes, copied into the
    /// message), carrying `sequence` without consuming it: the header part (compact when `compact`),
    /// then the payload part.
    /// - Throws: `ZMQError` of the first part (`.again` for a full queue: nothing was queued).
    static func sendExtension(
        kind: UInt8, sequence: UInt64, timestampNs: Int64, payload: UnsafeRawBufferPointer, routingID: [UInt8]?,
        compact: Bool, on socket: ZMQSocket
    ) throws(ZMQError) {
        precondition(payload.count <= 32 && payload.count % 8 == 0, "extension payloads here are at most 32 bytes, a multiple of 8")
        if let routingID { try socket.send(routingID, flags: [.dontWait, .sendMore]) }
        var header = FrameHeader(kind: .start, sequence: sequence, timestampNs: timestampNs)
        header.payloadLength = payload.count
        try withUnsafeTemporaryAllocation(byteCount: WireLimits.headerLength, alignment: 8) { (bytes) throws(ZMQError) in
            header.encode(into: bytes.baseAddress!)
            bytes[5] = kind
            if compact {
                // The compact form of these 40 bytes: bytes 4-7 and 12-39 (docs/PROTOCOL.md §3.2).
                (bytes.baseAddress! + 8).copyMemory(from: bytes.baseAddress! + 12, byteCount: 28)
                try socket.send(UnsafeRawBufferPointer(rebasing: bytes[4..<(4 + CompactHeader.length)]), flags: [.dontWait, .sendMore])
            } else {
                try socket.send(UnsafeRawBufferPointer(bytes), flags: [.dontWait, .sendMore])
            }
        }
        try socket.send(payload, flags: .dontWait)
    }
}
