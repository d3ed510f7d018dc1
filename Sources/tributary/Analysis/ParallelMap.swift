import Foundation
import TributaryDSP
import TributaryWire

/// Runs `work` for indexes 0..<count on `jobs` threads and hands results to `inOrder` on the
/// calling thread in index order, each as soon as it and every earlier one are done. When `inOrder`
/// returns false (its output is gone) no further work starts and `run` returns.
enum ParallelMap {
    static func run<T: Sendable>(_ count: Int, jobs: Int, work: @escaping @Sendable (Int) -> T, inOrder: (Int, T) -> Bool) {
        let state = ResultSlots<T>(count: count)
        let workers = max(1, min(jobs, count))
        for _ in 0..<workers {
            Thread.detachNewThread {
                while let index = state.claim() { state.store(index, work(index)) }
            }
        }
        for index in 0..<count where !inOrder(index, state.wait(index)) {
            state.cancel()
            return
        }
    }
}

/// Result slots filled by worker threads and awaited in order.
private final class ResultSlots<T: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: every field is accessed only with `condition` locked.
    private let condition = NSCondition()
    private var slots: [T?]
    private var next = 0

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    /// Claims no more indexes (work already started finishes; its result is dropped).
    func cancel() {
        condition.lock(); defer { condition.unlock() }
        next = slots.count
    }

    func claim() -> Int? {
        condition.lock(); defer { condition.unlock() }
        guard next < slots.count else { return nil }
        next += 1
        return next - 1
    }

    func store(_ index: Int, _ value: T) {
        condition.lock()
        slots[index] = value
        condition.broadcast()
        condition.unlock()
    }

    func wait(_ index: Int) -> T {
        condition.lock(); defer { condition.unlock() }
        while slots[index] == nil { condition.wait() }
        let value = slots[index]!
        slots[index] = nil
        return value
    }
}

/// A one-line progress bar on standard error (only when it is a terminal).
final class ProgressBar {
    let total: Int
    let enabled: Bool
    private var done = 0
    private var shown = false

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    func advance() {
        done += 1
        guard enabled else { return }
        let width = 30
        let filled = total == 0 ? width : done * width / total
        let line =
            "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] \(done)/\(total) files"
        StandardOutput.error(line)
        shown = true
    }

    /// Erases the bar before other output.
    func clear() {
        guard enabled, shown else { return }
        StandardOutput.error("\r\u{1B}[K")
        shown = false
    }
}
