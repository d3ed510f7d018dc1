import CZMQ
import Synchronization
import TributaryWire

/// Heap slots for received `zmq_msg_t`s, reused across messages: the subscriber's payload parts are
/// received into a slot and handed out as a `FrameBuffer` that closes the message and returns the slot
/// when the last view of the frame dies (on any thread). In the steady state a received frame then
/// costs one Swift object (the buffer) and no allocation for the message handle.
enum ZMQMessageSlots {
    /// Free slots kept at most; beyond that a returned slot is freed.
    static let limit = 1024

    /// The free slots' addresses (as integers: pointers are not Sendable).
    private static let free = Mutex<[UInt]>({
        var slots: [UInt] = []
        slots.reserveCapacity(limit)  // pushes and pops never reallocate
        return slots
    }())

    /// A slot holding no message (uninitialised).
    static func take() -> UnsafeMutablePointer<zmq_msg_t> {
        if let address = free.withLock({ $0.popLast() }) { return UnsafeMutablePointer(bitPattern: address)! }
        return .allocate(capacity: 1)
    }

    /// Returns a slot whose message is closed.
    static func give(_ slot: UnsafeMutablePointer<zmq_msg_t>) {
        let address = UInt(bitPattern: slot)
        let kept = free.withLock { slots -> Bool in
            guard slots.count < limit else { return false }
            slots.append(address)
            return true
        }
        if !kept { slot.deallocate() }
    }
}

/// Closes a received message held by a `FrameBuffer` and returns its slot (the buffer's release hook).
private let closeReceivedMessage: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    guard let slot = context?.assumingMemoryBound(to: zmq_msg_t.self) else { return }
    zmq_msg_close(slot)
    ZMQMessageSlots.give(slot)
}

extension ZMQSocket {
    /// Receives one part as a `FrameBuffer` over libzmq's own bytes (zero copy). The buffer closes the
    /// message when it dies. Unlike `receive(flags:)` this costs one object, not two plus a heap slot.
    /// Parts of up to 32 bytes live inside the message handle and parts from libzmq's receive batch sit
    /// at any offset (see `ZMQReceivedMessage`): check `isAligned(to:)` before decoding in place.
    /// - Throws: `ZMQError` as `receive(flags:)`.
    public func receiveBuffer(flags: ZMQReceiveFlags = []) throws(ZMQError) -> (buffer: FrameBuffer, hasMore: Bool) {
        let handle = try openHandle("zmq_msg_recv")
        let slot = ZMQMessageSlots.take()
        zmq_msg_init(slot)
        while zmq_msg_recv(slot, handle, flags.rawValue) < 0 {
            let error = ZMQError.last("zmq_msg_recv")
            if error.code == .interrupted { continue }
            zmq_msg_close(slot)
            ZMQMessageSlots.give(slot)
            throw error
        }
        let hasMore = zmq_msg_more(slot) != 0
        // zmq_msg_data never returns NULL for an initialised message (an empty one points at its inline bytes).
        let buffer = FrameBuffer(borrowing: UnsafeRawPointer(zmq_msg_data(slot)!), count: zmq_msg_size(slot),
                                 release: closeReceivedMessage, context: UnsafeMutableRawPointer(slot))
        return (buffer, hasMore)
    }
}
