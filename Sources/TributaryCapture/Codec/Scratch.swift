/// A growable scratch array of trivial elements (no initialisation; contents are the caller's).
final class Scratch<T> {
    private(set) var base: UnsafeMutablePointer<T> = .allocate(capacity: 1)
    private var capacity = 1

    deinit { base.deallocate() }

    func reserve(_ count: Int) {
        guard count > capacity else { return }
        base.deallocate()
        capacity = max(count, capacity * 3 / 2)
        base = .allocate(capacity: capacity)
    }
}
