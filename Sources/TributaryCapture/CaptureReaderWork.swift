import Foundation

// The fuzz target (Fuzz/run.sh) compiles these files into one module together with TributaryWire.
#if canImport(TributaryWire)
    import TributaryWire
#endif

/// Hands out the positions 0..<count to worker threads, each once.
final class WorkClaims: @unchecked Sendable {
    // @unchecked Sendable: `next` is accessed only with `lock` held.
    private let lock = NSLock()
    private var nextPosition = 0
    private let count: Int
    init(count: Int) { self.count = count }
    func next() -> Int? {
        lock.lock(); defer { lock.unlock() }
        guard nextPosition < count else { return nil }
        nextPosition += 1
        return nextPosition - 1
    }
}

/// The decoded chunks of `forEachChunkInOrder`: claimed by worker threads at most `window` ahead of
/// the consumer, stored, and taken in order.
final class OrderedSlots: @unchecked Sendable {
    // @unchecked Sendable: every field is accessed only with `condition` locked.
    private let condition = NSCondition()
    private var slots: [Result<[Frame], CaptureReader.ChunkProblem>?]
    private let window: Int
    private var claimed = 0
    private var taken = 0
    private var stopped = false
    private var running: Int

    init(count: Int, window: Int, workers: Int) {
        slots = Array(repeating: nil, count: count)
        self.window = window
        running = workers
    }

    /// The next position to decode, when the consumer is near enough; nil when all are claimed or stopped.
    func claim() -> Int? {
        condition.lock(); defer { condition.unlock() }
        while !stopped && claimed < slots.count && claimed - taken >= window { condition.wait() }
        guard !stopped && claimed < slots.count else { return nil }
        claimed += 1
        return claimed - 1
    }

    func store(_ position: Int, _ result: Result<[Frame], CaptureReader.ChunkProblem>) {
        condition.lock(); defer { condition.unlock() }
        slots[position] = result
        condition.broadcast()
    }

    /// Waits for `position` (the consumer takes them in order) and hands it over.
    func take(_ position: Int) -> Result<[Frame], CaptureReader.ChunkProblem> {
        condition.lock(); defer { condition.unlock() }
        while slots[position] == nil { condition.wait() }
        let result = slots[position]!
        slots[position] = nil
        taken = position + 1
        condition.broadcast()
        return result
    }

    func workerDone() {
        condition.lock(); defer { condition.unlock() }
        running -= 1
        condition.broadcast()
    }

    /// Claims nothing more and waits until every worker has finished.
    func stop() {
        condition.lock(); defer { condition.unlock() }
        stopped = true
        condition.broadcast()
        while running > 0 { condition.wait() }
    }
}

/// Reasons for damaged chunks, collected from worker threads.
final class DamageReasons: @unchecked Sendable {
    // @unchecked Sendable: `items` is accessed only with `lock` held.
    private let lock = NSLock()
    private var items: [(Int, String)] = []
    func add(_ position: Int, _ reason: String) {
        lock.lock(); defer { lock.unlock() }
        items.append((position, reason))
    }
    func sorted() -> [(Int, String)] {
        lock.lock(); defer { lock.unlock() }
        return items.sorted { $0.0 < $1.0 }
    }
}
