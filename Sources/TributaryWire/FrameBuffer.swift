/// Immutable bytes that frames and package views point into, kept alive by reference.
///
/// A frame buffer either owns an 8-byte-aligned allocation (frames the encoder writes, bytes the
/// stream decoder assembles), or borrows memory from an owner object (a decompressed capture chunk)
/// and keeps that owner alive, or borrows memory from a foreign handle that it releases through a C
/// function when it dies (a received libzmq message: no second object per frame). Views decoded from a frame retain the
/// buffer, so the bytes they point at stay valid as long as any view lives: no payload is copied.
///
/// `@unchecked Sendable`: the bytes are written only before the buffer is shared (by the encoder
/// that creates it, or by the stream decoder beyond every offset it has handed out), and only read
/// afterwards; the owner object is never touched after initialisation except to be released.
public final class FrameBuffer: @unchecked Sendable {
    /// Start of the bytes (changed only by `rebind`, while the caller holds the only reference).
    @usableFromInline @exclusivity(unchecked) var baseAddress: UnsafeRawPointer
    /// Number of valid bytes.
    // Written only by the stream decoder while it alone holds the bytes beyond every handed-out frame;
    // exclusivity checks on it would cost more than the whole header validation.
    @exclusivity(unchecked) public private(set) var count: Int
    private var capacity: Int
    private let owner: AnyObject?
    private let ownsMemory: Bool
    /// Called with `releaseContext` in deinit, for bytes borrowed from a foreign handle.
    private let release: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
    private let releaseContext: UnsafeMutableRawPointer?

    /// Allocates an 8-byte-aligned, zero-filled buffer of `capacity` bytes with `count` 0.
    init(capacity: Int) {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: max(capacity, 8), alignment: 16)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: max(capacity, 8))
        baseAddress = UnsafeRawPointer(raw)
        self.capacity = capacity
        count = 0
        owner = nil
        ownsMemory = true
        release = nil
        releaseContext = nil
    }

    /// A zero-filled buffer of `capacity` bytes that an encoder may write frames into again and again
    /// (`Frame.analog(header:layout:firstSample:reusing:fill:)`): for a producer that pools its buffers.
    public convenience init(reusableCapacity capacity: Int) { self.init(capacity: capacity) }

    /// Bytes an encoder may write into this buffer: its capacity when it owns its memory, else 0.
    public var writableCapacity: Int { ownsMemory ? capacity : 0 }

    /// Copies `bytes` into a new 8-byte-aligned buffer.
    public convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(capacity: bytes.count)
        if let source = bytes.baseAddress, bytes.count > 0 {
            mutableBase.copyMemory(from: source, byteCount: bytes.count)
        }
        count = bytes.count
    }

    /// Copies a byte sequence into a new 8-byte-aligned buffer.
    public convenience init(copying bytes: some Sequence<UInt8>) {
        let array = Array(bytes)
        self.init(capacity: array.count)
        array.withUnsafeBytes { mutableBase.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        count = array.count
    }

    /// Borrows `count` bytes at `baseAddress`, keeping `owner` alive for as long as this buffer lives.
    ///
    /// - Parameters:
    ///   - owner: the object whose lifetime guarantees the bytes (e.g. a received message).
    ///   - baseAddress: start of the bytes; must stay valid and unchanged while `owner` lives.
    ///   - count: number of bytes.
    public init(owner: AnyObject, baseAddress: UnsafeRawPointer, count: Int) {
        self.baseAddress = baseAddress
        self.count = count
        capacity = count
        self.owner = owner
        ownsMemory = false
        release = nil
        releaseContext = nil
    }

    /// Borrows `count` bytes at `baseAddress` from a foreign handle, and calls `release(context)` when
    /// this buffer dies (on whichever thread drops the last reference).
    ///
    /// - Parameters:
    ///   - baseAddress: start of the bytes; must stay valid and unchanged until `release` is called.
    ///   - count: number of bytes.
    ///   - release: frees the handle (a C function: it captures nothing; `context` says which handle).
    ///   - context: passed to `release`.
    public init(
        borrowing baseAddress: UnsafeRawPointer, count: Int,
        release: @escaping @convention(c) (UnsafeMutableRawPointer?) -> Void, context: UnsafeMutableRawPointer?
    ) {
        self.baseAddress = baseAddress
        self.count = count
        capacity = count
        owner = nil
        ownsMemory = false
        self.release = release
        releaseContext = context
    }

    /// Points a buffer made by `init(borrowing:count:release:context:)` at new bytes of the same handle,
    /// for a receiver that reuses its buffers and handles (a pool of received libzmq messages refilled
    /// in place: no object per frame). The release hook and its context stay as they were.
    ///
    /// - Precondition: the caller holds the only reference (`isKnownUniquelyReferenced`), so no view
    ///   into the old bytes is alive; the buffer borrows from a foreign handle.
    public func rebind(borrowing baseAddress: UnsafeRawPointer, count: Int) {
        precondition(release != nil && !ownsMemory && owner == nil, "only a buffer borrowing a foreign handle can be rebound")
        self.baseAddress = baseAddress
        self.count = count
        capacity = count
    }

    deinit {
        if ownsMemory { UnsafeMutableRawPointer(mutating: baseAddress).deallocate() }
        release?(releaseContext)
    }

    /// Whether the first byte's address is a multiple of `alignment` (a power of two), i.e. whether
    /// frames can be decoded in place (they need 8).
    public func isAligned(to alignment: Int) -> Bool {
        Int(bitPattern: baseAddress) & (alignment - 1) == 0
    }

    /// The valid bytes; only valid while the caller keeps this buffer alive.
    @inlinable
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: baseAddress, count: count) }

    /// Calls `body` with the valid bytes; the pointer must not escape the closure.
    @inlinable
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(self) { () throws(E) -> R in try body(bytes) }
    }

    /// A copy of the valid bytes as an array (for tests, files and diagnostics).
    public var array: [UInt8] { Array(bytes) }

    // MARK: Writing (only before the buffer is shared)

    var mutableBase: UnsafeMutableRawPointer { UnsafeMutableRawPointer(mutating: baseAddress) }
    var spareCapacity: Int { capacity - count }

    /// Appends bytes into spare capacity (stream decoder only); returns how many were taken.
    func append(_ source: UnsafeRawBufferPointer) -> Int {
        let n = min(source.count, capacity - count)
        if n > 0, let from = source.baseAddress {
            (mutableBase + count).copyMemory(from: from, byteCount: n)
            count += n
        }
        return n
    }

    /// Marks `n` bytes written by an encoder as valid.
    func setCount(_ n: Int) {
        precondition(n <= capacity, "frame buffer overrun")
        count = n
    }
}
