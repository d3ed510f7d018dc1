import CAllocCounter
import Foundation
import TributarySources
import TributaryTransport
import TributaryWire

/// Allocations of an application's pushes (`PushSource`, the door of the C and Python publishing API),
/// with one subscriber in this process over TCP loopback.
struct PushAllocations {
    /// Per push, made by the pushing thread (the frame build, the source, the hand-off queue).
    var pushingThread: Double
    /// The same less the source's buffer pool growing (two allocations per buffer it adds).
    var pushingThreadBeyondPool: Double
    /// Per push, buffers made beyond the pool's bounds (its frames in flight exceeding them: live only).
    var beyondPoolBounds: Double
    /// Per push, made by the whole process (the publisher's loop, libzmq, the subscriber).
    var process: Double
    /// Blocks pushed in the counted part, and of them dropped (live).
    var pushed: Int
    var dropped: Int
}

/// Pushes `blocks` blocks of 8 × 1 024 float64 into a `PushSource`; the allocations are counted over the
/// last `blocks - warm` pushes (the first `warm` fill the source's buffer pool, the arrays and libzmq's
/// pipes) and until the subscriber has seen every frame. Lossless pushes go as fast as credit allows;
/// live ones every `livePeriodNs` (a live source pushed faster than the link carries has more frames
/// in flight, up to the hand-off queue's and libzmq's bounds, than its buffer pool keeps: those allocate).
func pushAllocationRun(delivery: SourceDelivery, blocks: Int, warm: Int, livePeriodNs: UInt64 = 1_000_000) throws -> PushAllocations {
    let channels = 8, samples = 1024
    let source = try PushSource(
        spec: PushSourceSpec(
            id: 1, name: "push", rate: 1_000_000, channelNames: (0..<channels).map { "ch\($0)" }, unit: "V",
            sampleType: .float64, range: -10...10, delivery: delivery))
    let publisher = try Publisher(
        configuration: PublisherConfiguration(endpoint: "tcp://127.0.0.1:0", apiKey: "bench"), sources: [source])
    defer { publisher.stop() }
    let subject = try Subject()
    let observer = ThroughputObserver(expected: blocks)
    try startSession(subject, observer: observer, publisher: publisher)
    let block = (0..<(channels * samples)).map { Double($0 % 1000) }
    var processBefore: UInt64 = 0, threadBefore: UInt64 = 0, dropped = 0, poolBefore = 0, unkeptBefore = 0
    try block.withUnsafeBytes { bytes in
        var due = nowNanoseconds()
        for k in 0..<blocks {
            if delivery == .live {
                due += livePeriodNs
                let now = nowNanoseconds()
                if due > now { usleep(UInt32(clamping: (due - now) / 1_000)) }
            }
            if k == warm {
                // Let the warm-up's frames reach the subscriber, so the count starts from a quiet state.
                let deadline = nowNanoseconds() + 5_000_000_000
                while observer.progress.load(ordering: .relaxed) < warm && nowNanoseconds() < deadline { usleep(1_000) }
                processBefore = allocationCount()
                threadBefore = tributary_thread_alloc_count()
                poolBefore = source.pooledBuffers
                unkeptBefore = source.unpooledBuffers
            }
            let outcome = try source.push(
                bytes.baseAddress!, type: .float64, channels: channels, samplesPerChannel: samples, layout: .channelMajor,
                firstSampleTimeNs: nil, timeoutNs: 10_000_000_000)
            switch outcome {
            case .sent: break
            case .dropped: if k >= warm { dropped += 1 }
            case .timedOut: throw BenchError("push allocations: a lossless push timed out")
            }
        }
    }
    let threadAfter = tributary_thread_alloc_count()
    let poolGrowth = source.pooledBuffers - poolBefore
    let unkept = source.unpooledBuffers - unkeptBefore
    // A live stream's last drops are announced only by a later frame: wait until nothing moves.
    var last = -1, still = 0
    let deadline = nowNanoseconds() + 10_000_000_000
    while still < 3 && nowNanoseconds() < deadline {
        if observer.progress.load(ordering: .relaxed) >= blocks { break }
        usleep(20_000)
        let now = observer.progress.load(ordering: .relaxed)
        still = now == last ? still + 1 : 0
        last = now
    }
    let processAfter = allocationCount()
    subject.close()
    let counted = Double(blocks - warm)
    return PushAllocations(
        pushingThread: Double(threadAfter - threadBefore) / counted,
        pushingThreadBeyondPool: (Double(threadAfter - threadBefore) - 2 * Double(poolGrowth)) / counted,
        beyondPoolBounds: Double(unkept) / counted,
        process: Double(processAfter - processBefore) / counted,
        pushed: blocks - warm, dropped: dropped)
}
