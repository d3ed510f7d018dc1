import Foundation
import TributaryDSP
import TributaryWire

/// The analysis of one file: frames from `AnalysisInputs` through a `FrameAnalysis`.
struct AnalysisJob: Sendable {
    var request: AnalysisRequest
    var filters: SubscriberFilters
    /// Channels asked for with --channels (each must exist in every source analysed).
    var requestedChannels: [Int]?
    /// Sources asked for with --source (nil: every source); each must have analog data.
    var requestedSources: Set<UInt32>?
    var rate: Double?
    var int16Scale: Double

    /// The analyses of the file's sources, in order of source id.
    func run(_ path: String) -> Result<(InputDescription, [SourceAnalysis]), CommandError> {
        do {
            let analysis = FrameAnalysis(request: request, filters: filters, sampleRate: rate)
            let input = try AnalysisInputs.frames(of: path, rate: rate, int16Scale: int16Scale) { frame in
                if let requestedSources, !requestedSources.contains(frame.header.sourceID) { return }
                try analysis.add(frame)
            }
            let sources = try analysis.finish().sorted { $0.id < $1.id }
            try check(path, input)
            if sources.isEmpty { throw CommandError("\(path): no analog data") }
            return .success((input, sources))
        } catch let error as CommandError {
            return .failure(error)
        } catch {
            return .failure(CommandError("\(path): \(error)"))
        }
    }

    /// Names what --source and --channels asked for that the file does not have, and what it has.
    private func check(_ path: String, _ input: InputDescription) throws {
        let present = input.channelIndexes.keys.sorted()
        let list = present.isEmpty ? "none" : present.map(String.init).joined(separator: ", ")
        if let requestedSources, let missing = requestedSources.sorted().first(where: { input.channelIndexes[$0] == nil }) {
            throw CommandError("\(path): --source: source \(missing) has no analog data in this file (sources with analog data: \(list))")
        }
        guard let requestedChannels else { return }
        for id in present where requestedSources?.contains(id) ?? true {
            let channels = input.channelIndexes[id] ?? []
            if let missing = requestedChannels.first(where: { !channels.contains($0) }) {
                throw CommandError("\(path): --channels: channel \(missing) is not in source \(id) (\(input.channelCounts[id] ?? channels.count) channels), which has channels "
                                   + FrameDescription.rangeText(channels.sorted().map { UInt32($0) }))
            }
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
