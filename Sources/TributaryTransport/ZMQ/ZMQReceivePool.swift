import CZMQ
import Synchronization
import TributaryWire

/// Received message parts for one socket loop, as `FrameBuffer`s that are reused: each slot is a
/// message handle and the buffer over its bytes, allocated once, refilled in place when the frames
/// that pointed into it are gone. A subscriber's frame then costs no object and no handle of ours
/// (`ZMQSocket.receiveBuffer` costs both).
///
/// A slot is free when the pool holds the only reference to its buffer: every view, frame and
/// package decoded from it has been released (on the callback queue's thread, typically). Slots are
/// taken in ring order, which is the order the callback queue releases them in; a slot still held
/// (an application keeping a package) is skipped and that part gets a buffer of its own, as does a
/// part larger than `maxPooledPartSize`, so that the pool never keeps large messages alive.
/// The messages of released slots are closed as soon as the loop next receives (`closeReleased`), and
/// `trim()` (the loop's housekeeping) closes those behind a slot still held, so the bytes of frames
/// already consumed are not kept until their slot comes round again.
///
///
/// Parts of at most `smallCopyLimit` bytes are copied into the slot's own aligned memory and their
/// message closed at once. libzmq hands such parts out as views into its shared read buffer, at
/// whatever offset the stream put them (so 7 in 8 are not 8-byte aligned, and each got a copy of its
/// own, two allocations, before its frame could be decoded in place), and while any view lives
/// libzmq allocates a new read buffer for its next read. The slots' copies are bounded by
/// `maxCopyBytes` in all; beyond that small parts are views as before.
///
/// Lives on its loop's thread only (not Sendable); one pool per socket, never shared, so that no lock
/// sits between subscribers (a process-wide pool behind one lock made a convoy of 64 sessions).
final class ZMQReceivePool {
    /// Parts above this size are not pooled (their own allocation is small beside their bytes).
    static let maxPooledPartSize = 1 << 20
    /// Parts up to this size are copied into the slot's memory (libzmq's read buffer is 8 KiB).
    static let smallCopyLimit = 4_096
    /// The most memory all slots' copies may hold.
    static let maxCopyBytes = 8 << 20

    private var buffers: [FrameBuffer]
    private let handles: [UnsafeMutablePointer<ReceiveSlot>]
    /// Bytes of the slots' copy memory.
    private(set) var copyBytes = 0
    /// Small parts received as copies (for tests and diagnostics).
    private(set) var copiedParts: UInt64 = 0
    /// Whether a slot's handle holds a received message (not yet closed by reuse or `trim`).
    private var filled: [Bool]
    private var next = 0
    /// The oldest slot that may still hold a message: `receive` closes released ones from here on.
    private var oldest = 0
    /// Parts that got a buffer of their own because the next slot was still held or the part was large.
    private(set) var unpooledParts: UInt64 = 0
    /// Slots whose handle holds a received message (for tests and diagnostics).
    var filledSlots: Int { filled.reduce(0) { $0 + ($1 ? 1 : 0) } }

    /// - Parameters:
    ///   - capacity: slots; at least the frames that may wait in the callback queue at once.
    ///   - reservedCopyBytes: copy memory given to every slot now (rounded up to 256 bytes; 0: each slot
    ///     gets its memory when it first receives a small part). A pool that sees only small parts
    ///     (the publisher's, of credits and requests) then allocates nothing after it is made.
    init(capacity: Int, reservedCopyBytes: Int = 0) {
        precondition(MemoryLayout<ReceiveSlot>.offset(of: \ReceiveSlot.messageStorage) == 0, "a slot's message must lie at its start")
        let count = max(1, capacity)
        var handles: [UnsafeMutablePointer<ReceiveSlot>] = []
        var buffers: [FrameBuffer] = []
        handles.reserveCapacity(count)
        buffers.reserveCapacity(count)
        for _ in 0..<count {
            let handle = UnsafeMutablePointer<ReceiveSlot>.allocate(capacity: 1)
            handle.initialize(to: ReceiveSlot())
            zmq_msg_init(handle.message)
            handles.append(handle)
            // The buffer owns its slot: its release hook closes the message and frees the slot (and its
            // copy memory) when the buffer dies (with the pool, or later if a frame still holds it then).
            buffers.append(
                FrameBuffer(
                    borrowing: UnsafeRawPointer(zmq_msg_data(handle.message)!), count: 0,
                    release: releaseReceiveSlot, context: UnsafeMutableRawPointer(handle)))
        }
        self.handles = handles
        self.buffers = buffers
        filled = [Bool](repeating: false, count: count)
        if reservedCopyBytes > 0 {
            for handle in handles {
                // nil once the pool's copies reach maxCopyBytes: the remaining slots get theirs when used.
                guard copyMemory(of: handle, for: min(reservedCopyBytes, Self.smallCopyLimit)) != nil else { break }
            }
        }
    }

    /// Receives one part into the next free slot (or, when it is held, into a buffer of its own).
    /// - Throws: `ZMQError` as `ZMQSocket.receiveBuffer`; the slot stays free.
    func receive(on socket: ZMQSocket, flags: ZMQReceiveFlags = []) throws(ZMQError) -> (buffer: FrameBuffer, hasMore: Bool) {
        closeReleased()
        let index = next
        next = next + 1 == buffers.count ? 0 : next + 1
        guard isFree(index) else {
            unpooledParts += 1
            return try socket.receiveBuffer(flags: flags)
        }
        let slot = handles[index]
        let handle = slot.message
        if filled[index] {
            zmq_msg_close(handle)
            zmq_msg_init(handle)
            filled[index] = false
        }
        let socketHandle = try socket.openHandle("zmq_msg_recv")
        while zmq_msg_recv(handle, socketHandle, flags.rawValue) < 0 {
            let error = ZMQError.last("zmq_msg_recv")
            if error.code == .interrupted { continue }
            throw error
        }
        let hasMore = zmq_msg_more(handle) != 0
        let size = zmq_msg_size(handle)
        if size > Self.maxPooledPartSize {
            // Moved out to a handle of its own, which its own buffer closes when it dies.
            unpooledParts += 1
            let own = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)
            own.initialize(to: zmq_msg_t())
            zmq_msg_init(own)
            zmq_msg_move(own, handle)
            let buffer = FrameBuffer(
                borrowing: UnsafeRawPointer(zmq_msg_data(own)!), count: zmq_msg_size(own),
                release: closeReceivedMessage, context: UnsafeMutableRawPointer(own))
            return (buffer, hasMore)
        }
        if size <= Self.smallCopyLimit, let copy = copyMemory(of: slot, for: size) {
            if size > 0 { copy.copyMemory(from: zmq_msg_data(handle)!, byteCount: size) }
            zmq_msg_close(handle)
            zmq_msg_init(handle)
            copiedParts += 1
            buffers[index].rebind(borrowing: UnsafeRawPointer(copy), count: size)
            return (buffers[index], hasMore)
        }
        filled[index] = true
        // zmq_msg_data never returns NULL for an initialised message (an empty one points at its inline bytes).
        buffers[index].rebind(borrowing: UnsafeRawPointer(zmq_msg_data(handle)!), count: size)
        return (buffers[index], hasMore)
    }

    /// The slot's copy memory, grown to hold `size` bytes (in steps of 256, 16-byte aligned), or nil
    /// when growing it would take the pool's copies beyond `maxCopyBytes`. The slot is free (only
    /// the pool holds its buffer), so its old memory may be replaced.
    private func copyMemory(of slot: UnsafeMutablePointer<ReceiveSlot>, for size: Int) -> UnsafeMutableRawPointer? {
        if let copy = slot.pointee.copy, slot.pointee.copyCapacity >= size { return copy }
        let capacity = max(256, (size + 255) & ~255)
        guard copyBytes - slot.pointee.copyCapacity + capacity <= Self.maxCopyBytes else { return nil }
        copyBytes += capacity - slot.pointee.copyCapacity
        slot.pointee.copy?.deallocate()
        let copy = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        slot.pointee.copy = copy
        slot.pointee.copyCapacity = capacity
        return copy
    }

    /// Closes the messages of the slots released since the last call, oldest first, up to the first
    /// slot still held. The bytes of a consumed frame go back to the allocator at once, as they did when
    /// each frame had its own buffer: libzmq's I/O thread, which allocates the next parts, then gets
    /// memory that is still in the cache instead of cycling through a pool's worth of it.
    private func closeReleased() {
        while oldest != next {
            if filled[oldest] {
                guard isFree(oldest) else { return }
                zmq_msg_close(handles[oldest].message)
                zmq_msg_init(handles[oldest].message)
                filled[oldest] = false
            }
            oldest = oldest + 1 == buffers.count ? 0 : oldest + 1
        }
    }

    /// Closes the messages of every free slot (what `closeReleased` left behind a slot still held).
    func trim() {
        for index in buffers.indices where filled[index] && isFree(index) {
            zmq_msg_close(handles[index].message)
            zmq_msg_init(handles[index].message)
            filled[index] = false
        }
    }

    /// Whether only the pool holds the slot's buffer. The acquiring fence orders the loop's next writes
    /// into the slot after the other thread's last reads of it, which its release of the buffer published.
    private func isFree(_ index: Int) -> Bool {
        guard isKnownUniquelyReferenced(&buffers[index]) else { return false }
        atomicMemoryFence(ordering: .acquiring)
        return true
    }
}

/// One slot of a `ZMQReceivePool`: its message (first, so that the slot's address is the message's)
/// and the memory small parts are copied into. Allocated once; freed by its buffer's release hook.
struct ReceiveSlot {
    var messageStorage = zmq_msg_t()
    var copy: UnsafeMutableRawPointer?
    var copyCapacity = 0
}

extension UnsafeMutablePointer where Pointee == ReceiveSlot {
    /// The slot's message, in place (libzmq keeps a small message's bytes inside it).
    var message: UnsafeMutablePointer<zmq_msg_t> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: zmq_msg_t.self) }
}

/// A pool slot's release hook: closes its message and frees its copy memory and the slot.
let releaseReceiveSlot: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    guard let slot = context?.assumingMemoryBound(to: ReceiveSlot.self) else { return }
    zmq_msg_close(slot.message)
    slot.pointee.copy?.deallocate()
    slot.deinitialize(count: 1)
    slot.deallocate()
}
