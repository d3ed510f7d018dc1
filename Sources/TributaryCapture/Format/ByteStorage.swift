/// A growable, 16-byte-aligned byte buffer that is reused from chunk to chunk (capacity is kept on
/// `removeAll`), so steady-state recording allocates nothing.
///
/// `@unchecked Sendable`: a storage is owned by one thread at a time — the recording thread while a
/// chunk is built, then the compression worker it is handed to through a lock — and it is never
/// touched by two threads at once; decoded chunks are immutable once handed to a `FrameBuffer`.
final class ByteStorage: @unchecked Sendable {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var count = 0
    private(set) var capacity: Int

    init(capacity: Int = 0) {
        self.capacity = capacity
        base = .allocate(byteCount: max(capacity, 16), alignment: 16)
    }

    deinit { base.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    func removeAll() { count = 0 }

    /// Makes room for `total` bytes, keeping the first `count`.
    func reserve(_ total: Int) {
        guard total > capacity else { return }
        let newCapacity = max(total, capacity * 3 / 2)
        let fresh = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if count > 0 { fresh.copyMemory(from: base, byteCount: count) }
        base.deallocate()
        base = fresh
        capacity = newCapacity
    }

    func append(_ source: UnsafeRawBufferPointer) {
        guard !source.isEmpty else { return }
        reserve(count + source.count)
        (base + count).copyMemory(from: source.baseAddress!, byteCount: source.count)
        count += source.count
    }

    /// Sets the count after the caller wrote bytes up to `n` (within capacity).
    func setCount(_ n: Int) {
        precondition(n <= capacity, "byte storage overrun")
        count = n
    }
}
