import Synchronization

/// What reading and decoding chunks needs besides the file: a buffer for a record's bytes and a
/// chunk decoder (its zstd context and scratch buffers, which grow to the largest chunk seen).
///
/// Readers take one from a `DecodeWorkspacePool` and give it back when they are done, so that a
/// process that opens capture after capture (a batch analysis, a Python loop over `tributary.open`)
/// does not allocate and fault in megabytes of fresh memory for every file. That cost is real where
/// freed memory goes back to the kernel at once: Dask starts its workers with
/// `MALLOC_TRIM_THRESHOLD_=65536`, which also fixes glibc's mmap threshold at 128 KiB, and a fresh
/// reader's buffers then took about 850 page faults per analysed file.
///
/// `@unchecked Sendable`: a workspace is used by one thread at a time — the reader or the decoding
/// worker that took it — and passes between threads only through the pool's lock.
final class DecodeWorkspace: @unchecked Sendable {
    let record: ByteStorage
    let decoder: ChunkDecoder

    init() throws(ZstdError) {
        record = ByteStorage(capacity: 1 << 20)
        decoder = try ChunkDecoder()
    }

    /// Bytes its buffers hold, which grow to the largest chunk read.
    var retainedBytes: Int { record.capacity + decoder.retainedBytes }
}

/// Idle decode workspaces, handed out to readers and taken back (see `DecodeWorkspace`).
final class DecodeWorkspacePool: Sendable {
    /// The process's pool, which readers use unless given another (tests give their own).
    static let shared = DecodeWorkspacePool()

    /// How many idle workspaces are kept: one per decoding thread of two concurrent readers on a
    /// two-core machine. More are made when more are in use; those given back beyond it are freed.
    let capacity: Int
    /// A workspace whose buffers grew beyond this is freed rather than kept (a capture with huge
    /// chunks, or a crafted one, should not pin their memory after it is closed).
    let largestKept: Int
    private let idle = Mutex<[DecodeWorkspace]>([])

    init(capacity: Int = 4, largestKept: Int = 64 << 20) {
        self.capacity = capacity
        self.largestKept = largestKept
    }

    /// An idle workspace, or a new one when none is idle.
    /// - Throws: `ZstdError` when a new zstd context cannot be made.
    func take() throws(ZstdError) -> DecodeWorkspace {
        if let kept = idle.withLock({ $0.popLast() }) { return kept }
        return try DecodeWorkspace()
    }

    /// Gives a workspace back; the caller must not use it after this.
    func giveBack(_ workspace: DecodeWorkspace) {
        guard workspace.retainedBytes <= largestKept else { return }
        idle.withLock { list in
            if list.count < capacity { list.append(workspace) }
        }
    }

    /// How many idle workspaces the pool holds.
    var idleCount: Int { idle.withLock { $0.count } }
}
