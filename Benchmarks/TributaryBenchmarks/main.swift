import Foundation
import TributaryTransport

/// A benchmark suite: a name (used by --filter) and the function that runs it.
struct Suite: Sendable {
    var name: String
    var run: @Sendable (BenchContext) throws -> Void
}

/// Every suite, in the order they run. Each lives in its own file named after it.
let suites: [Suite] = [
    allocationGuardSuite,
    wireSuite,
    compressionSuite,
    codecSuite,
    captureSuite,
    zmqRawSuite,
    transportSuite,
    slowSubscriberSuite,
    statisticsSuite,
    fftSuite,
    welchSuite,
    signalSuite,
]

@MainActor func usage() -> String {
    """
    usage: tributary-bench [--python PATH] [--filter NAME]... [--check-allocations]
      --python PATH          Python with numpy/scipy/pyzmq/blosc2 for the peers (default .venv/bin/python)
      --filter NAME          run only suites whose name contains NAME (repeatable); suites: \
    \(suites.map(\.name).joined(separator: ", "))
      --check-allocations    exit non-zero when an allocation guard is exceeded
    """
}

var context = BenchContext(
    python: ".venv/bin/python", peersDirectory: "Benchmarks/peers",
    scratchDirectory: NSTemporaryDirectory() + "tributary-bench", filters: [], checkAllocations: false)
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let flag = arguments.removeFirst()
    switch flag {
    case "--python" where !arguments.isEmpty: context.python = arguments.removeFirst()
    case "--filter" where !arguments.isEmpty: context.filters.append(arguments.removeFirst())
    case "--check-allocations": context.checkAllocations = true
    case "--help", "-h": print(usage()); exit(0)
    default:
        FileHandle.standardError.write(Data("tributary-bench: unknown or incomplete option '\(flag)'\n\(usage())\n".utf8))
        exit(2)
    }
}
try? FileManager.default.createDirectory(atPath: context.scratchDirectory, withIntermediateDirectories: true)
// The benchmark process streams frames as the `tributary` streaming commands do, with the same
// allocator settings; the peers run as users run them (docs/PERFORMANCE.md, "Transport in one process").
AllocatorTuning.keepFreedMemoryForStreaming()

var failures = 0
for suite in suites where context.filters.isEmpty || context.filters.contains(where: { suite.name.contains($0) }) {
    do { try suite.run(context) } catch {
        failures += 1
        FileHandle.standardError.write(Data("tributary-bench: suite \(suite.name) failed: \(error)\n".utf8))
    }
}
// The suites' data files (the codec suite's alone are about 400 MB): a machine of this project's kind
// has been seen with 287 MB of free disk.
try? FileManager.default.removeItem(atPath: context.scratchDirectory)
exit(failures == 0 ? 0 : 1)
