import Foundation
import TributaryDSP
import TributaryWire

/// The analysis of one file: frames from `AnalysisInputs` through a `FrameAnalysis`.
struct AnalysisJob: Sendable {
    var request: AnalysisRequest
    var filters: SubscriberFilters
    /// Channels asked for with --channels (each must exist in every source analysed).
    var requestedChannels: [Int]?
    var rate: Double?
    var int16Scale: Double

    func run(_ path: String) -> Result<(InputDescription, [SourceAnalysis]), CommandError> {
        do {
            let analysis = FrameAnalysis(request: request, filters: filters, sampleRate: rate)
            let input = try AnalysisInputs.frames(of: path, rate: rate, int16Scale: int16Scale) { try analysis.add($0) }
            let sources = try analysis.finish()
            if let requestedChannels {
                for source in sources {
                    let present = Set(source.channels.map(\.index))
                    if let missing = requestedChannels.first(where: { !present.contains($0) }) {
                        let count = input.channelCounts[source.id] ?? present.count
                        throw CommandError("\(path): --channels: channel \(missing) is not in source \(source.id) (\(count) channels)")
                    }
                }
            }
            if sources.isEmpty { throw CommandError("\(path): no analog data") }
            return .success((input, sources))
        } catch let error as CommandError {
            return .failure(error)
        } catch {
            return .failure(CommandError("\(path): \(error)"))
        }
    }
}

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
        let line = "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] \(done)/\(total) files"
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
