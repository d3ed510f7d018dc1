import Foundation
import TributaryDSP
import TributaryWire

/// The analysis of one file: frames from `AnalysisInputs` through a `FrameAnalysis`.
package struct AnalysisJob: Sendable {
    package var request: AnalysisRequest
    package var filters: SubscriberFilters
    /// Channels asked for with --channels (each must exist in every source analysed).
    package var requestedChannels: [Int]?
    package var rate: Double?
    package var int16Scale: Double

    package init(request: AnalysisRequest, filters: SubscriberFilters, requestedChannels: [Int]?, rate: Double?, int16Scale: Double) {
        self.request = request
        self.filters = filters
        self.requestedChannels = requestedChannels
        self.rate = rate
        self.int16Scale = int16Scale
    }

    package func run(_ path: String) -> Result<(InputDescription, [SourceAnalysis]), CommandError> {
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
/// calling thread in index order, each as soon as it and every earlier one are done.
package enum ParallelMap {
    package static func run<T: Sendable>(_ count: Int, jobs: Int, work: @escaping @Sendable (Int) -> T, inOrder: (Int, T) -> Void) {
        let state = ResultSlots<T>(count: count)
        let workers = max(1, min(jobs, count))
        for _ in 0..<workers {
            Thread.detachNewThread {
                while let index = state.claim() { state.store(index, work(index)) }
            }
        }
        for index in 0..<count { inOrder(index, state.wait(index)) }
    }
}

/// Result slots filled by worker threads and awaited in order.
private final class ResultSlots<T: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: every field is accessed only with `condition` locked.
    private let condition = NSCondition()
    private var slots: [T?]
    private var next = 0

    init(count: Int) { slots = Array(repeating: nil, count: count) }

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
package final class ProgressBar {
    package let total: Int
    package let enabled: Bool
    private var done = 0
    private var shown = false

    package init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    package func advance() {
        done += 1
        guard enabled else { return }
        let width = 30
        let filled = total == 0 ? width : done * width / total
        let line = "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] \(done)/\(total) files"
        FileHandle.standardError.write(Data(line.utf8))
        shown = true
    }

    /// Erases the bar before other output.
    package func clear() {
        guard enabled, shown else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        shown = false
    }
}
