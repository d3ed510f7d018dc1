/// A growable scratch array of trivial elements (no initialisation; contents are the caller's).
final class Scratch<T> {
    private(set) var base: UnsafeMutablePointer<T>
    private var capacity: Int

    /// Room for `count` elements (at least one) from the start, so that the first uses do not allocate.
    init(reserving count: Int = 1) {
        capacity = max(1, count)
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    func reserve(_ count: Int) {
        guard count > capacity else { return }
        base.deallocate()
        capacity = max(count, capacity * 3 / 2)
        base = .allocate(capacity: capacity)
    }
}
