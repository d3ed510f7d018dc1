import CAllocCounter
import Foundation
import TributaryTransport

/// Keeps the optimiser from deleting the work under measurement.
@inline(never) @_optimize(none)
func blackHole<T>(_ value: T) {}

/// Monotonic clock in nanoseconds.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Heap allocations made by this process so far (malloc-counting shim in CAllocCounter).
func allocationCount() -> UInt64 { tributary_alloc_count() }

/// The median of a list of measurements.
func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty, "median of no values")
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// Runs `body` (which performs `operations` operations) `repetitions` times after `warmup` runs
/// and returns the median time per operation in nanoseconds.
func measure(repetitions: Int = 15, warmup: Int = 3, operations: Int = 1, _ body: () -> Void) -> Double {
    for _ in 0..<warmup { body() }
    var samples: [Double] = []
    samples.reserveCapacity(repetitions)
    for _ in 0..<repetitions {
        let start = nowNanoseconds()
        body()
        samples.append(Double(nowNanoseconds() - start) / Double(operations))
    }
    return median(samples)
}

/// Allocations per operation made by `body` (run once after a warm-up run).
func allocationsPerOperation(operations: Int, _ body: () -> Void) -> Double {
    body()
    let before = allocationCount()
    body()
    return Double(allocationCount() - before) / Double(operations)
}

/// Options shared by every suite.
struct BenchContext {
    /// The Python interpreter of the project's virtual environment (numpy, scipy, pyzmq, blosc2).
    var python: String
    /// Directory of the peer scripts (Benchmarks/peers).
    var peersDirectory: String
    /// Scratch directory for files the suites write.
    var scratchDirectory: String
    /// Only run suites whose name contains one of these (empty: all).
    var filters: [String]
    /// Gate mode: fail (exit non-zero) when an allocation guard is exceeded.
    var checkAllocations: Bool

    /// Runs a peer script with arguments and parses the JSON object it prints on its last line.
    func runPeer(_ script: String, _ arguments: [String] = [], environment: [String: String] = [:]) throws -> [String: Any] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [peersDirectory + "/" + script] + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("peer \(script) exited with status \(process.terminationStatus)")
        }
        guard let text = String(data: data, encoding: .utf8),
            let last = text.split(separator: "\n").last,
            let object = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any]
        else { throw BenchError("peer \(script) printed no JSON object on its last line") }
        return object
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One row of a results table: what was measured, Tributary's figure, the peer's, and their ratio.
struct BenchRow {
    var name: String
    var tributary: String
    var peer: String
    var ratio: String
}

/// Prints rows as an aligned table under a title.
func printTable(_ title: String, _ rows: [BenchRow]) {
    let header = BenchRow(name: "benchmark", tributary: "tributary", peer: "peer", ratio: "ratio")
    let all = [header] + rows
    let w0 = all.map(\.name.count).max()!, w1 = all.map(\.tributary.count).max()!
    let w2 = all.map(\.peer.count).max()!
    print("\n== \(title) ==")
    for row in all {
        print(
            row.name.padding(toLength: w0, withPad: " ", startingAt: 0) + "  "
                + row.tributary.padding(toLength: w1, withPad: " ", startingAt: 0) + "  "
                + row.peer.padding(toLength: w2, withPad: " ", startingAt: 0) + "  " + row.ratio)
    }
}

/// Formats a number with a fixed count of decimals.
func fmt(_ value: Double, _ decimals: Int = 2) -> String { String(format: "%.\(decimals)f", value) }

/// Registers `observer` on `subject`, opens its session with the benchmark publisher on loopback (API
/// key "bench") and returns once the publisher counts the session as started, so that what the
/// benchmark then sends is not held back or lost to the opening.
func startSession(_ subject: Subject, observer: some Observer, publisher: Publisher) throws {
    subject.register(observer)
    try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "bench", description: "bench", timeout: 10)
    try subject.start()
    while publisher.subscribers().first?.isStarted != true { usleep(1_000) }
}
