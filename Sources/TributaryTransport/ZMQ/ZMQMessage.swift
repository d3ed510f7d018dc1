import CZMQ

/// One message part to send (or a reusable part to receive into), owning a libzmq `zmq_msg_t`.
///
/// Zero-copy: `init(noCopy:count:owner:)` hands libzmq a pointer to bytes that `owner` keeps alive;
/// libzmq calls back when the last copy of the message is done with them (after the I/O thread wrote
/// them to the socket, or when the message is dropped), and only then is `owner` released. Sending
/// the same message to many peers with `ZMQSocket.send(sharing:flags:)` shares the bytes by reference
/// count, so a fan-out to N subscribers copies nothing and allocates nothing more.
///
/// Noncopyable: a `zmq_msg_t` must be closed exactly once; the struct closes it in `deinit` unless it
/// was consumed by a send.
public struct ZMQMessage: ~Copyable {
    /// The libzmq message. A plain-data struct: libzmq itself moves it bitwise, and small ("VSM")
    /// messages keep their bytes inline, so `withUnsafeBytes` pointers are valid only inside the closure.
    var raw: zmq_msg_t

    /// An empty message (a delimiter part, or a target for `ZMQSocket.receive(into:flags:)`).
    public init() {
        raw = zmq_msg_t()
        zmq_msg_init(&raw)
    }

    /// A message holding a copy of `bytes` (libzmq allocates; fine for small control messages).
    /// - Throws: `ZMQError` `.outOfMemory`.
    public init(copying bytes: UnsafeRawBufferPointer) throws(ZMQError) {
        raw = zmq_msg_t()
        try allocate(bytes.count)
        copyIn(bytes)
    }

    /// A message holding a copy of `bytes`.
    /// - Throws: `ZMQError` `.outOfMemory`.
    public init(copying bytes: [UInt8]) throws(ZMQError) {
        raw = zmq_msg_t()
        try allocate(bytes.count)
        bytes.withUnsafeBytes { copyIn($0) }
    }

    private mutating func allocate(_ count: Int) throws(ZMQError) {
        if zmq_msg_init_size(&raw, count) != 0 {
            // Leave `raw` in a state that `deinit` may close: an empty message.
            let error = ZMQError.last("zmq_msg_init_size")
            zmq_msg_init(&raw)
            throw error
        }
    }

    private mutating func copyIn(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        zmq_msg_data(&raw).copyMemory(from: base, byteCount: bytes.count)
    }

    /// A zero-copy message over `count` bytes at `base`, which `owner` keeps valid and unchanged until
    /// libzmq releases it.
    ///
    /// `owner` is retained here and released exactly once, by libzmq's free callback, on whatever thread
    /// drops the last reference (usually a libzmq I/O thread) — hence `Sendable`, and its `deinit` must
    /// be fine on any thread. libzmq 4.3 allocates a 40-byte reference-count block per message here.
    /// - Parameters:
    ///   - base: First byte; must stay valid and unmodified while libzmq holds the message.
    ///   - count: Number of bytes.
    ///   - owner: Object that keeps the bytes alive (e.g. a frame buffer).
    /// - Throws: `ZMQError` `.outOfMemory`; `owner` has then been released already.
    public init(noCopy base: UnsafeRawPointer, count: Int, owner: AnyObject & Sendable) throws(ZMQError) {
        raw = zmq_msg_t()
        let opaque = Unmanaged<AnyObject>.passRetained(owner).toOpaque()
        // libzmq takes a mutable pointer but never writes through it when it only sends the bytes.
        if zmq_msg_init_data(&raw, UnsafeMutableRawPointer(mutating: base), count, releaseOwner, opaque) != 0 {
            // Init failed (only ENOMEM for the reference-count block): libzmq will never call
            // `releaseOwner`, so balance the passRetained above here, then leave an empty message.
            let error = ZMQError.last("zmq_msg_init_data")
            Unmanaged<AnyObject>.fromOpaque(opaque).release()
            zmq_msg_init(&raw)
            throw error
        }
    }

    deinit {
        // deinit cannot take `&raw`; closing a bitwise copy is the same thing for this plain-data struct.
        var raw = raw
        zmq_msg_close(&raw)
    }

    /// Number of bytes in the message.
    public var count: Int {
        var raw = raw
        return zmq_msg_size(&raw)
    }

    /// True when the part last received into this message is followed by more parts.
    public var hasMore: Bool {
        var raw = raw
        return zmq_msg_more(&raw) != 0
    }

    /// The file descriptor of the TCP connection the part last received into this message arrived
    /// on (`ZMQ_SRCFD`), or nil (inproc, or a part the socket made itself). Never close it.
    public var sourceFileDescriptor: Int32? {
        var raw = raw
        let fd = zmq_msg_get(&raw, ZMQ_SRCFD)
        return fd >= 0 ? fd : nil
    }

    /// A metadata property of the connection the received part came from (`"User-Id"`,
    /// `"Peer-Address"`, …), as `ZMQReceivedMessage.metadata`; nil if absent.
    public func metadata(_ property: String) -> String? {
        var raw = raw
        guard let value = zmq_msg_gets(&raw, property) else { return nil }
        return String(cString: value)
    }

    /// Whether the metadata property `property` is present and equal to `value`, compared in place
    /// (no string is made: the publisher checks a CURVE session's key on every message).
    public func metadata(_ property: String, equals value: String) -> Bool {
        var raw = raw
        guard var present = zmq_msg_gets(&raw, property) else { return false }
        for byte in value.utf8 {
            guard UInt8(bitPattern: present.pointee) == byte else { return false }
            present += 1
        }
        return present.pointee == 0
    }

    /// Calls `body` with the message's bytes. Do not escape the pointer: small messages keep their
    /// bytes inside the (movable) struct.
    public mutating func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let count = zmq_msg_size(&raw)
        return try body(UnsafeRawBufferPointer(start: zmq_msg_data(&raw), count: count))
    }

    /// Sends this message, consuming it whether or not the send succeeds.
    consuming func send(on handle: UnsafeMutableRawPointer, flags: Int32) throws(ZMQError) {
        var raw = self.raw
        discard self
        while zmq_msg_send(&raw, handle, flags) < 0 {
            let error = ZMQError.last("zmq_msg_send")
            if error.code == .interrupted { continue }
            // A failed send leaves the message with us: close it, which releases a zero-copy owner.
            zmq_msg_close(&raw)
            throw error
        }
        // Success: libzmq emptied `raw`; nothing to close.
    }
}

/// libzmq's free callback for zero-copy messages: balances `Unmanaged.passRetained(owner)`.
private func releaseOwner(_ data: UnsafeMutableRawPointer?, _ hint: UnsafeMutableRawPointer?) {
    guard let hint else { return }
    Unmanaged<AnyObject>.fromOpaque(hint).release()
}

extension ZMQSocket {
    /// Sends a copy of `bytes` as one part.
    /// - Throws: `ZMQError`: `.again` (full pipe with `.dontWait`, or `ZMQ_SNDTIMEO` expired),
    ///   `.hostUnreachable` (ROUTER with `ZMQ_ROUTER_MANDATORY`, unknown routing id), `.terminated`.
    public func send(_ bytes: UnsafeRawBufferPointer, flags: ZMQSendFlags = []) throws(ZMQError) {
        let handle = try openHandle("zmq_send")
        _ = try retryingOnInterrupt("zmq_send") { zmq_send(handle, bytes.baseAddress, bytes.count, flags.rawValue) }
    }

    /// Sends a copy of `bytes` as one part.
    /// - Throws: `ZMQError` as `send(_:flags:)` with a buffer.
    public func send(_ bytes: [UInt8], flags: ZMQSendFlags = []) throws(ZMQError) {
        let handle = try openHandle("zmq_send")
        _ = try retryingOnInterrupt("zmq_send") {
            bytes.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags.rawValue) }
        }
    }

    /// Sends a message, consuming it: on success libzmq owns it, on failure it is closed (releasing a
    /// zero-copy owner) before the error is thrown.
    /// - Throws: `ZMQError` as `send(_:flags:)` with a buffer.
    public func send(_ message: consuming ZMQMessage, flags: ZMQSendFlags = []) throws(ZMQError) {
        let handle = try openHandle("zmq_msg_send")
        try message.send(on: handle, flags: flags.rawValue)
    }

    /// Sends a reference-counted copy of `message` (no bytes copied), leaving `message` usable for the
    /// next peer: the publisher's fan-out of one frame to every subscriber.
    /// - Throws: `ZMQError` as `send(_:flags:)` with a buffer; `message` is unchanged.
    public func send(sharing message: inout ZMQMessage, flags: ZMQSendFlags = []) throws(ZMQError) {
        let handle = try openHandle("zmq_msg_send")
        var copy = ZMQMessage()
        // zmq_msg_copy marks the source as shared, which is why `message` is inout.
        if zmq_msg_copy(&copy.raw, &message.raw) != 0 { throw ZMQError.last("zmq_msg_copy") }
        try copy.send(on: handle, flags: flags.rawValue)
    }

    /// Sends a zero-copy part over `count` bytes at `base` kept alive by `owner` (see
    /// `ZMQMessage.init(noCopy:count:owner:)`); `owner` is released exactly once whatever happens.
    /// - Throws: `ZMQError` as `send(_:flags:)` with a buffer.
    public func send(
        noCopy base: UnsafeRawPointer, count: Int, owner: AnyObject & Sendable,
        flags: ZMQSendFlags = []
    ) throws(ZMQError) {
        let message = try ZMQMessage(noCopy: base, count: count, owner: owner)
        try send(message, flags: flags)
    }

    /// Sends several parts as one atomic multipart message (copies each part).
    /// - Parameter flags: `.dontWait` applies to every part; `.sendMore` is managed here.
    /// - Throws: `ZMQError` from the part that failed; with ROUTER_MANDATORY only the first part can fail
    ///   with `.again`/`.hostUnreachable`, so a failure never leaves half a message queued.
    public func send(multipart parts: [[UInt8]], flags: ZMQSendFlags = []) throws(ZMQError) {
        let base = flags.subtracting(.sendMore)
        for (index, part) in parts.enumerated() {
            try send(part, flags: index == parts.count - 1 ? base : base.union(.sendMore))
        }
    }
}
