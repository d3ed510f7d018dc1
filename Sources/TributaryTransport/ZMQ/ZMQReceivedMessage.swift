import CZMQ

/// One received message part, owned by reference: its bytes stay valid exactly as long as this object
/// lives, so a decoder can hand out views into them (zero copy) while holding a reference.
///
/// **Alignment: not guaranteed.** Measured on libzmq 4.3.4 over tcp (addresses mod 16, one message per read):
/// parts of up to 32 bytes live inside the `zmq_msg_t` (≡ 8); parts that fit in the 8 KiB receive batch
/// are views into libzmq's shared receive buffer right after the ZMTP frame header — ≡ 10 for short
/// frames (≤ 255 B, 2-byte header), ≡ 1 for long ones (9-byte header), so a 1–8 KB payload is *never*
/// 8-aligned, and when several messages arrive in one read they sit at arbitrary offsets; parts of
/// 8184 B and more are `malloc`ed behind libzmq's 40-byte content header (≡ 8: 8-aligned, never 16).
/// Over inproc the receiver gets the sender's own buffer (zero-copy sends keep the sender's alignment).
/// So check `isAligned(to:)` before reading typed values in place, and copy (or load unaligned) otherwise.
///
/// `@unchecked Sendable`: the message is immutable once received (no API writes to it), its bytes are
/// owned only by this object, and `zmq_msg_close` of a message that nobody else uses is safe from any
/// thread (libzmq reference counts are atomic). So a subscriber's I/O thread can hand received parts to
/// the callback queue.
public final class ZMQReceivedMessage: @unchecked Sendable {
    /// Heap slot for the `zmq_msg_t`: small messages keep their bytes inside it, so it must not move
    /// while views into it live. Allocated once per object, closed and freed in `deinit`.
    private let storage: UnsafeMutablePointer<zmq_msg_t>
    /// First byte of the part (stable for the object's life).
    public let baseAddress: UnsafeRawPointer
    /// Number of bytes in the part.
    public let count: Int
    /// True when more parts of the same message follow this one.
    public let hasMore: Bool

    /// Receives one part from `handle` into a new object. The part is received into a message on the
    /// stack and moved to the heap slot only once it arrived: a poll round's last, failing receive
    /// (`.again`) allocates nothing.
    init(receivingFrom handle: UnsafeMutableRawPointer, flags: Int32) throws(ZMQError) {
        var received = zmq_msg_t()
        zmq_msg_init(&received)
        while zmq_msg_recv(&received, handle, flags) < 0 {
            let error = ZMQError.last("zmq_msg_recv")
            if error.code == .interrupted { continue }
            zmq_msg_close(&received)
            throw error
        }
        let storage = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)
        storage.initialize(to: zmq_msg_t())
        zmq_msg_init(storage)
        // Moves the content (a small part's bytes with it, into the slot's own inline buffer).
        zmq_msg_move(storage, &received)
        zmq_msg_close(&received)
        self.storage = storage
        count = zmq_msg_size(storage)
        // zmq_msg_data never returns NULL for an initialised message (an empty one points at its inline bytes).
        baseAddress = UnsafeRawPointer(zmq_msg_data(storage)!)
        hasMore = zmq_msg_more(storage) != 0
    }

    deinit {
        zmq_msg_close(storage)
        storage.deallocate()
    }

    /// Calls `body` with the part's bytes. The pointer is valid as long as this object is alive; to
    /// keep a view beyond the closure, keep a reference to the object with it (or use `baseAddress`).
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(self) { () throws(E) -> R in
            try body(UnsafeRawBufferPointer(start: baseAddress, count: count))
        }
    }

    /// The bytes as an array (a copy; for small control parts and tests).
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Whether the first byte's address is a multiple of `alignment` (a power of two), i.e. whether
    /// typed values of that alignment can be read in place.
    public func isAligned(to alignment: Int) -> Bool {
        Int(bitPattern: baseAddress) & (alignment - 1) == 0
    }

    /// A metadata property of the connection the part came from, e.g. `"User-Id"` (set by the ZAP
    /// handler for CURVE clients), `"Peer-Address"`, `"Socket-Type"`, `"Routing-Id"`; nil if absent.
    public func metadata(_ property: String) -> String? {
        guard let value = zmq_msg_gets(storage, property) else { return nil }
        return String(cString: value)
    }
}

extension ZMQSocket {
    /// Receives one part (zero copy: the object owns libzmq's message).
    /// - Throws: `ZMQError`: `.again` (nothing waiting with `.dontWait`, or `ZMQ_RCVTIMEO` expired),
    ///   `.terminated`, `.notSocket`.
    public func receive(flags: ZMQReceiveFlags = []) throws(ZMQError) -> ZMQReceivedMessage {
        let handle = try openHandle("zmq_msg_recv")
        return try ZMQReceivedMessage(receivingFrom: handle, flags: flags.rawValue)
    }

    /// Receives every part of one message. libzmq delivers multipart messages atomically, so only the
    /// first part can be missing (`.again` with `.dontWait`); the others are received without waiting.
    /// - Throws: `ZMQError` as `receive(flags:)`.
    public func receiveMultipart(flags: ZMQReceiveFlags = []) throws(ZMQError) -> [ZMQReceivedMessage] {
        // Room for a routing id, a header and a payload up front: growing the array part by part
        // reallocated it once per message on the subscriber's hot path.
        // The first part before the array: a poll round ends with a receive that finds nothing.
        let first = try receive(flags: flags)
        var parts: [ZMQReceivedMessage] = []
        parts.reserveCapacity(3)
        parts.append(first)
        while parts[parts.count - 1].hasMore { parts.append(try receive()) }
        return parts
    }

    /// Receives one part into a reusable message (no Swift allocation: the steady-state path for small
    /// control parts). Previous content of `message` is released.
    /// - Throws: `ZMQError` as `receive(flags:)`; `message` is then empty.
    public func receive(into message: inout ZMQMessage, flags: ZMQReceiveFlags = []) throws(ZMQError) {
        let handle = try openHandle("zmq_msg_recv")
        while zmq_msg_recv(&message.raw, handle, flags.rawValue) < 0 {
            let error = ZMQError.last("zmq_msg_recv")
            if error.code != .interrupted { throw error }
        }
    }
}
