import CZMQ
import TributaryWire

/// Closes a received message held by a `FrameBuffer` and frees its heap slot (the buffer's release hook;
/// `ZMQReceivePool`'s buffers use it too).
///
/// Here the slot is allocated per message. A process-wide pool behind one lock made a convoy of 64
/// subscribers' I/O and callback threads (a bench with 64 sessions stalled in the pool's lock); the
/// pool that a Subject uses (`ZMQReceivePool`) is its loop's own, without a lock.
let closeReceivedMessage: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    guard let slot = context?.assumingMemoryBound(to: zmq_msg_t.self) else { return }
    zmq_msg_close(slot)
    slot.deallocate()
}

extension ZMQSocket {
    /// Receives one part as a `FrameBuffer` over libzmq's own bytes (zero copy). The buffer closes the
    /// message when it dies. Unlike `receive(flags:)` this costs one object and the message's heap slot,
    /// not two objects and the slot.
    /// Parts of up to 32 bytes live inside the message handle and parts from libzmq's receive batch sit
    /// at any offset (see `ZMQReceivedMessage`): check `isAligned(to:)` before decoding in place.
    /// - Throws: `ZMQError` as `receive(flags:)`.
    public func receiveBuffer(flags: ZMQReceiveFlags = []) throws(ZMQError) -> (buffer: FrameBuffer, hasMore: Bool) {
        let handle = try openHandle("zmq_msg_recv")
        let slot = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)
        slot.initialize(to: zmq_msg_t())
        zmq_msg_init(slot)
        while zmq_msg_recv(slot, handle, flags.rawValue) < 0 {
            let error = ZMQError.last("zmq_msg_recv")
            if error.code == .interrupted { continue }
            zmq_msg_close(slot)
            slot.deallocate()
            throw error
        }
        let hasMore = zmq_msg_more(slot) != 0
        // zmq_msg_data never returns NULL for an initialised message (an empty one points at its inline bytes).
        let buffer = FrameBuffer(
            borrowing: UnsafeRawPointer(zmq_msg_data(slot)!), count: zmq_msg_size(slot),
            release: closeReceivedMessage, context: UnsafeMutableRawPointer(slot))
        return (buffer, hasMore)
    }
}
