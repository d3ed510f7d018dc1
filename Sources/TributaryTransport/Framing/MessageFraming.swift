import TributaryWire

/// Transport-level frame kinds in the ignorable extension range (docs/PROTOCOL.md §4.4): a
/// receiver that does not know them skips them, so they cost other implementations nothing.
enum TransportKind {
    /// Keepalive: a header-only frame sent by either side of a session when it has sent nothing for a
    /// quarter of the session timeout, so that silence means a dead peer (error 4) and nothing else.
    static let keepalive: UInt8 = ExtensionKind.keepalive.rawValue
    /// Clock probe, subscriber → publisher (docs/PROTOCOL.md §4.9).
    static let timeProbe: UInt8 = ExtensionKind.timeProbe.rawValue
    /// Clock probe reply, publisher → subscriber.
    static let timeReply: UInt8 = ExtensionKind.timeReply.rawValue
}

/// What one received libzmq message (after the ROUTER's routing-id part) decodes to.
enum InboundFrame {
    /// A frame of a known kind; its payload is a zero-copy view when the bytes arrived 8-byte aligned.
    case frame(Frame)
    /// A keepalive (kind 128).
    case keepalive
    /// A clock probe (kind 130) with a well-formed payload.
    case timeProbe(TimeProbe)
    /// A clock probe reply (kind 131) with a well-formed payload.
    case timeReply(TimeReply)
    /// Another ignorable extension frame (kinds 129-255, or a probe of the wrong size): skipped.
    case ignorable(kind: UInt8)
}

/// Maps frames to libzmq messages and back (docs/PROTOCOL.md §3.1).
///
/// **Sending**: a frame is one message of two parts — the 40-byte header, then the payload — or of
/// the header alone when the payload is empty. Splitting lets the publisher write a per-subscriber
/// header (its own sequence number, the filter id) in front of a payload shared by reference among
/// every subscriber (`zmq_msg_copy`), so a fan-out to N subscribers copies no payload bytes.
///
/// **Receiving**: the two-part form and the one-part form of PROTOCOL.md §3 (header and payload
/// concatenated in a single part, as simple peers send it) are both accepted. The header is
/// validated with `FrameHeader.peek` in place (unaligned loads); the payload is wrapped without a
/// copy when libzmq's buffer is 8-byte aligned (parts of 8 KiB and more are) and copied into an
/// aligned `FrameBuffer` otherwise (small parts live at odd offsets of libzmq's receive batch).
enum MessageFraming {
    /// The payload buffer of every frame with an empty payload.
    static let emptyPayload = FrameBuffer(copying: UnsafeRawBufferPointer(start: nil, count: 0))

    /// Decodes the frame parts of one message.
    /// - Parameters:
    ///   - parts: the message's parts, routing id excluded.
    ///   - maxFrameSize: the receiver's limit on header + payload.
    /// - Throws: `WireError` naming the failing field (`message.parts` for a wrong part count).
    static func decode(_ parts: ArraySlice<ZMQReceivedMessage>, maxFrameSize: Int) throws(WireError) -> InboundFrame {
        guard let first = parts.first else {
            throw WireError(.truncated, field: "message.parts", offset: 0, detail: "a message without frame parts")
        }
        let payload = parts.count >= 2 ? parts[parts.startIndex + 1] : nil
        let payloadBuffer = payload.map { FrameBuffer(owner: $0, baseAddress: $0.baseAddress, count: $0.count) }
        return try first.withUnsafeBytes { (bytes) throws(WireError) -> InboundFrame in
            try decode(header: bytes, payload: payloadBuffer, extraParts: Swift.max(0, parts.count - 2), maxFrameSize: maxFrameSize)
        }
    }

    /// Decodes a frame whose first part was received into a reusable message (`header`, valid only
    /// during the call) and whose payload part, if any, is `payload`; `extraParts` counts parts after
    /// the payload (a malformed message). The subscriber's hot path: the 40-byte header part costs no
    /// allocation, the payload is wrapped in place. A one-part frame (header and payload together, as
    /// simple peers send it) is copied, since its bytes live in the reusable message.
    /// - Throws: `WireError` as `decode(_:maxFrameSize:)`.
    ///
    /// With `acceptCompact` (the receiver asked for compact headers, docs/PROTOCOL.md §3.2) a first part
    /// of exactly 32 bytes is a compact header: it is expanded to the 40-byte header it stands for and
    /// then checked like any other, and the frame must be in the split form.
    static func decode(
        header first: UnsafeRawBufferPointer, payload: FrameBuffer?, extraParts: Int,
        maxFrameSize: Int, acceptCompact: Bool = false
    ) throws(WireError) -> InboundFrame {
        if acceptCompact && first.count == CompactHeader.length {
            return try withUnsafeTemporaryAllocation(byteCount: WireLimits.headerLength, alignment: 8) {
                (full) throws(WireError) -> InboundFrame in
                CompactHeader.expand(first, into: full.baseAddress!)
                return try decodeSplit(
                    header: UnsafeRawBufferPointer(full), payload: payload, extraParts: extraParts,
                    maxFrameSize: maxFrameSize, compact: true)
            }
        }
        return try decodeSplit(header: first, payload: payload, extraParts: extraParts, maxFrameSize: maxFrameSize, compact: false)
    }

    /// `decode(header:…)` once the header part is a 40-byte (or longer) header; `compact` says that it was
    /// expanded from a compact one, which only the split form carries (a header-only frame is one part).
    private static func decodeSplit(
        header first: UnsafeRawBufferPointer, payload: FrameBuffer?, extraParts: Int,
        maxFrameSize: Int, compact: Bool
    ) throws(WireError) -> InboundFrame {
        let peeked = try FrameHeader.peek(first, maxFrameSize: maxFrameSize, origin: 0)
        let partCount = 1 + (payload == nil ? 0 : 1) + extraParts
        let header: FrameHeader
        switch peeked {
        case .ignorable(let kind, let frameLength):
            guard partCount <= 2, first.count + (payload?.count ?? 0) == frameLength else {
                throw WireError(
                    .lengthMismatch, field: "header.payload_length", offset: 12,
                    detail: "extension kind \(kind) announces \(frameLength) bytes")
            }
            return decodeExtension(kind: kind, header: first, payload: payload)
        case .frame(let h):
            header = h
        }
        switch (payload, extraParts) {
        case (nil, 0):
            if compact {
                // A compact header never starts a whole frame: its part holds the header alone.
                guard header.payloadLength == 0 else {
                    throw WireError(
                        .lengthMismatch, field: "header.payload_length", offset: 12,
                        detail: "a compact header part announces \(header.payloadLength) payload bytes and no payload part follows")
                }
                return .frame(try Frame(header: header, payload: emptyPayload))
            }
            guard first.count == header.frameLength else {
                throw WireError(
                    .lengthMismatch, field: "header.payload_length", offset: 12,
                    detail: "the frame has \(header.frameLength) bytes, the message part \(first.count)")
            }
            if header.payloadLength == 0 { return .frame(try Frame(header: header, payload: emptyPayload)) }
            return .frame(try Frame(decoding: FrameBuffer(copying: first), at: 0, maxFrameSize: maxFrameSize))
        case (let payloadPart?, 0):
            guard first.count == header.headerLength else {
                throw WireError(
                    .badHeaderLength, field: "header.header_length", offset: 8,
                    detail: "the header part has \(first.count) bytes, the header announces \(header.headerLength)")
            }
            guard payloadPart.count == header.payloadLength else {
                throw WireError(
                    .lengthMismatch, field: "header.payload_length", offset: 12,
                    detail: "the header announces \(header.payloadLength) payload bytes, the payload part has \(payloadPart.count)")
            }
            return .frame(try Frame(header: header, payload: wrap(payloadPart), position: 0))
        default:
            throw WireError(
                .lengthMismatch, field: "message.parts", offset: 0,
                detail: "\(partCount) parts; a frame is one part or a header part and a payload part")
        }
    }

    /// A frame buffer over a received part: the part itself when aligned, else an aligned copy.
    static func wrap(_ part: FrameBuffer) -> FrameBuffer {
        if part.isAligned(to: 8) { return part }
        return part.withUnsafeBytes { FrameBuffer(copying: $0) }
    }

    /// A zero-copy libzmq message over a frame's payload, keeping the frame's buffer alive until libzmq
    /// is done with it; nil for an empty payload.
    /// - Throws: `ZMQError` `.outOfMemory`.
    static func payloadMessage(_ frame: Frame) throws(ZMQError) -> ZMQMessage? {
        guard frame.header.payloadLength > 0 else { return nil }
        // The pointer outlives the closure on purpose: `frame.buffer`, passed as the message's owner,
        // keeps the bytes valid and unchanged until libzmq releases the message.
        let base = frame.withUnsafePayloadBytes { $0.baseAddress! }
        return try ZMQMessage(noCopy: base, count: frame.header.payloadLength, owner: frame.buffer)
    }

    /// Sends one frame: optional routing id part, the header part, then the payload part shared from
    /// `payload` (a reference-counted copy; `payload` stays usable for the next receiver).
    ///
    /// Only the first part can fail with `.again` (full pipe) or `.hostUnreachable` (peer gone, ROUTER
    /// with `ZMQ_ROUTER_MANDATORY`): libzmq then queued nothing, and the frame can be counted as dropped.
    /// - Throws: `ZMQError` of the first part; later parts cannot fail short of context termination.
    /// With `compact` the header part is the 32-byte compact header (docs/PROTOCOL.md §3.2), for a
    /// receiver that asked for it.
    static func send(
        header: FrameHeader, payload: inout ZMQMessage?, routingID: [UInt8]?,
        compact: Bool = false, on socket: ZMQSocket
    ) throws(ZMQError) {
        if let routingID { try socket.send(routingID, flags: [.dontWait, .sendMore]) }
        try sendHeader(header, more: payload != nil, compact: compact, on: socket)
        if payload != nil { try socket.send(sharing: &payload!, flags: .dontWait) }
    }

    /// Sends a small frame whose payload is copied into the message (libzmq stores parts of up to 33
    /// bytes inside the message itself): no allocation on the path, and nothing is built when the
    /// first part already fails with `.again`.
    static func send(
        header: FrameHeader, copying payload: UnsafeRawBufferPointer, routingID: [UInt8]?,
        compact: Bool = false, on socket: ZMQSocket
    ) throws(ZMQError) {
        if let routingID { try socket.send(routingID, flags: [.dontWait, .sendMore]) }
        try sendHeader(header, more: !payload.isEmpty, compact: compact, on: socket)
        if !payload.isEmpty { try socket.send(payload, flags: .dontWait) }
    }

    /// Sends a small control frame (a gap notice, a credit: a payload of at most 16 bytes) encoded on the
    /// stack and copied into the message, timestamped now: nothing is allocated on the way.
    /// - Throws: `ZMQError` of the first part, as `send(header:payload:routingID:compact:on:)`.
    static func sendSmall(
        _ package: Package, sequence: UInt64, routingID: [UInt8]?, compact: Bool = false,
        on socket: ZMQSocket
    ) throws(ZMQError) {
        precondition(package.payloadLength <= 16, "sendSmall takes payloads of at most 16 bytes")
        let header = FrameHeader(
            kind: package.kind, sequence: sequence, timestampNs: wallClockNanoseconds(),
            payloadLength: package.payloadLength)
        try withUnsafeTemporaryAllocation(byteCount: 16, alignment: 8) { (bytes) throws(ZMQError) in
            let length = package.encodePayload(into: bytes)
            try send(
                header: header, copying: UnsafeRawBufferPointer(rebasing: bytes[..<length]), routingID: routingID,
                compact: compact, on: socket)
        }
    }

    /// Sends a header-only extension frame (kind 128-255) with the given sequence number.
    static func sendExtension(
        kind: UInt8, sequence: UInt64, timestampNs: Int64, routingID: [UInt8]?,
        compact: Bool = false, on socket: ZMQSocket
    ) throws(ZMQError) {
        if let routingID { try socket.send(routingID, flags: [.dontWait, .sendMore]) }
        var header = FrameHeader(kind: .start, sequence: sequence, timestampNs: timestampNs)
        header.payloadLength = 0
        try withUnsafeTemporaryAllocation(byteCount: WireLimits.headerLength, alignment: 8) { (bytes) throws(ZMQError) in
            header.encode(into: bytes.baseAddress!)
            bytes[5] = kind
            if compact {
                // The compact form of these 40 bytes: bytes 4-7 and 12-39 (docs/PROTOCOL.md §3.2).
                (bytes.baseAddress! + 8).copyMemory(from: bytes.baseAddress! + 12, byteCount: 28)
                try socket.send(UnsafeRawBufferPointer(rebasing: bytes[4..<(4 + CompactHeader.length)]), flags: .dontWait)
            } else {
                try socket.send(UnsafeRawBufferPointer(bytes), flags: .dontWait)
            }
        }
    }

    /// Sends the header part: 40 bytes, or the 32-byte compact form, which libzmq keeps inside the
    /// message (no allocation here, and none in the receiver's libzmq: docs/PROTOCOL.md §3.2).
    private static func sendHeader(_ header: FrameHeader, more: Bool, compact: Bool, on socket: ZMQSocket) throws(ZMQError) {
        try withUnsafeTemporaryAllocation(byteCount: WireLimits.headerLength, alignment: 8) { (bytes) throws(ZMQError) in
            let flags: ZMQSendFlags = more ? [.dontWait, .sendMore] : .dontWait
            if compact {
                CompactHeader.encode(header, into: bytes.baseAddress!)
                try socket.send(UnsafeRawBufferPointer(rebasing: bytes[..<CompactHeader.length]), flags: flags)
            } else {
                header.encode(into: bytes.baseAddress!)
                try socket.send(UnsafeRawBufferPointer(bytes), flags: flags)
            }
        }
    }
}
