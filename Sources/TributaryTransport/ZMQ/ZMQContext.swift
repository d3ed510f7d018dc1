import CZMQ
import Synchronization

/// A libzmq context: the I/O threads and the inproc namespace that a group of sockets shares.
///
/// Every `ZMQSocket` keeps its context alive, so the context is terminated (in `deinit`) only after the
/// last socket on it was closed and released; `zmq_ctx_term` then cannot block on a forgotten socket.
/// Sockets are created with `ZMQ_LINGER` 0, so termination does not wait for unsent messages either,
/// except those of a socket whose linger was raised before it closed, for at most that linger (a
/// publisher's drain, a subscriber's closing error and close frames).
///
/// `@unchecked Sendable`: libzmq documents contexts as thread-safe (any thread may create sockets on
/// one, shut it down or terminate it); the only Swift state is behind `Mutex`/`Atomic`.
public final class ZMQContext: @unchecked Sendable {
    /// The `void *` returned by `zmq_ctx_new`; valid until `deinit`.
    let handle: UnsafeMutableRawPointer
    /// Whether a ZAP handler (`ZMQZAPHandler`) is bound on this context right now. A CURVE server socket
    /// refuses to bind without one (see `ZMQSocket.bind`).
    let zapHandlerRunning = Atomic<Bool>(false)
    private let isShutDown = Atomic<Bool>(false)

    /// Creates a context.
    /// - Parameter ioThreads: libzmq I/O threads (libzmq's rule of thumb: one per GB/s moved); the publisher may want two.
    /// - Throws: `ZMQError` when libzmq cannot create the context or rejects the thread count.
    public init(ioThreads: Int32 = 1) throws(ZMQError) {
        guard let handle = zmq_ctx_new() else { throw ZMQError.last("zmq_ctx_new") }
        if zmq_ctx_set(handle, ZMQ_IO_THREADS, ioThreads) != 0 {
            let error = ZMQError.last("zmq_ctx_set", detail: "ZMQ_IO_THREADS=\(ioThreads)")
            zmq_ctx_term(handle)
            throw error
        }
        self.handle = handle
    }

    /// Makes every blocking call on every socket of this context return `.terminated` now; sockets must
    /// still be closed. Used to unblock threads at shutdown. Idempotent, callable from any thread.
    public func shutdown() {
        if isShutDown.exchange(true, ordering: .sequentiallyConsistent) { return }
        zmq_ctx_shutdown(handle)
    }

    deinit {
        // No socket can be open here: each one retains its context. Retry on EINTR as the man page asks.
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }
}
