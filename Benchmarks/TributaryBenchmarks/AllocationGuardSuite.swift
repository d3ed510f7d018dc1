import Foundation
import TributaryCapture
import TributaryDSP
import TributaryTransport
import TributaryWire

/// Allocation counts of the hot paths, with their limits: counts are stable where times are not,
/// so `make test` runs this suite with --check-allocations as a guard (no timing, no peers).
let allocationGuardSuite = Suite(name: "alloc-guard") { context in
    var rows: [BenchRow] = []
    var failures: [String] = []
    func guardRow(_ name: String, limit: Double, _ perOperation: Double) {
        let ok = perOperation <= limit
        rows.append(
            BenchRow(
                name: name, tributary: fmt(perOperation, 4), peer: "limit \(limit == limit.rounded() ? fmt(limit, 0) : "\(limit)")",
                ratio: ok ? "ok" : "EXCEEDED"))
        if !ok { failures.append("\(name): \(perOperation) allocations per operation, limit \(limit)") }
    }

    // Decoding an analog frame: header + preamble + typed view, in place.
    let channels = (0..<8).map { c in (0..<1000).map { Double($0 * (c + 1)) } }
    let buffer = FrameBuffer(copying: Frame(encoding: .analog(AnalogData(channels: channels)), sequence: 1).encodedBytes)
    guardRow(
        "decode 8x1000 f64 analog frame + channel view", limit: 0,
        allocationsPerOperation(operations: 1000) {
            for _ in 0..<1000 {
                let view = try! Frame.analogView(decoding: buffer)
                view.withSamples(Double.self, channel: 7) { blackHole($0[999]) }
            }
        })

    // One-pass statistics over 8 channels.
    let data = SignalGenerator.whiteNoise(count: 8 * 65_536, seed: 3)
    data.withUnsafeBufferPointer { block in
        var stats = MultichannelStatistics(channelCount: 8)
        guardRow(
            "statistics pass over 8 x 65536 f64", limit: 0,
            allocationsPerOperation(operations: 1) {
                stats.add(block: block, samplesPerChannel: 65_536)
            })
    }

    // A batch of real FFTs with a cached plan.
    let fft = try RealFFT<Double>(count: 4096)
    var spectrum = [Double](repeating: 0, count: 4098 * 8)
    data.withUnsafeBufferPointer { input in
        spectrum.withUnsafeMutableBufferPointer { output in
            guardRow(
                "real FFT batch, 8 x 4096", limit: 0,
                allocationsPerOperation(operations: 1) {
                    fft.forward(batch: UnsafeBufferPointer(rebasing: input[0..<(8 * 4096)]), into: output, channels: 8)
                })
        }
    }

    // Streaming Welch fed a block.
    let welch = try StreamingWelch(configuration: WelchConfiguration(segmentLength: 1024), sampleRate: 1000, channelCount: 8)
    data.withUnsafeBufferPointer { block in
        guardRow(
            "streaming Welch block, 8 x 65536", limit: 0,
            allocationsPerOperation(operations: 1) {
                welch.add(block: block, samplesPerChannel: 65_536)
            })
    }

    // Compressing a chunk with a warm codec.
    let codec = try ChunkCodec()
    var compressed = [UInt8](repeating: 0, count: ChunkCodec.maxEncodedSize(payloadSize: data.count * 8))
    data.withUnsafeBytes { payload in
        compressed.withUnsafeMutableBytes { destination in
            guardRow(
                "chunk codec encode, 4 MiB f64", limit: 0,
                allocationsPerOperation(operations: 1) {
                    _ = try! codec.encode(payload, elementType: .float64, into: destination)
                })
        }
    }
    // And decoding it back (the coded stream's latent blocks, predictors and conversions).
    let (encodedSize, transforms) = try data.withUnsafeBytes { payload in
        try compressed.withUnsafeMutableBytes { try codec.encode(payload, elementType: .float64, into: $0) }
    }
    var decoded = [Double](repeating: 0, count: data.count)
    compressed.withUnsafeBytes { encoded in
        decoded.withUnsafeMutableBytes { destination in
            let frame = UnsafeRawBufferPointer(rebasing: encoded[..<encodedSize])
            guardRow(
                "chunk codec decode, 4 MiB f64", limit: 0,
                allocationsPerOperation(operations: 1) {
                    _ = try! codec.decode(frame, elementType: .float64, transforms: transforms, into: destination)
                })
        }
    }
    guard decoded == data else { throw BenchError("allocation guard: the chunk codec's round trip differs") }

    // The whole publisher -> subscriber path over TCP loopback, both processes' halves counted
    // (publisher, subscriber, libzmq): 64 KiB frames, lossless and live.
    let frames = Int(ProcessInfo.processInfo.environment["TRIBUTARY_ALLOC_FRAMES"] ?? "") ?? 32_768
    for delivery in [SourceDelivery.lossless, .live] {
        let result = try transportThroughputRun(frames: frames, delivery: delivery, steadyStateAfter: frames / 4)
        // Per frame, all of it libzmq's: the zero-copy send's content record on the publisher and the
        // 64 KiB receive buffer in the subscriber's libzmq, both unavoidable through its API. Tributary's
        // own code allocates nothing per frame: the header part is compact (32 bytes, kept inside the
        // message: PROTOCOL.md §3.2), the payload is received into the Subject's pool of reused buffers
        // (ZMQReceivePool), the publisher reads what subscribers send into reused messages, a pool whose
        // copy memory is reserved up front and a routing-id key, the subscriber sends its credit grants
        // with compact headers too, and the monitor's empty reads (every 20 ms) reuse their messages.
        // The credit window is bounded in bytes (8 MiB: 127 frames here), so the publisher never runs
        // more than one 256-part chunk of libzmq's pipe ahead of its I/O thread: a 256-frame window
        // allocated a chunk about once per 600 frames (`CreditWindow`).
        // The steady state is counted after a quarter of the frames, with the stream paused until
        // everything has arrived: the whole run adds its first uses (pool slots, arrays reaching their
        // size, pipe chunks), and a short run may include two pipes' first second chunk. The limits
        // catch one allocation per grant (one per 64 frames: +0.016) or per 1 000 frames. Today's
        // counts: docs/PERFORMANCE.md, "Wire codec and allocations".
        let path = delivery == .lossless ? "lossless" : "live"
        guardRow("publisher -> subject, 64 KiB \(path), per frame", limit: 2.01, result.allocationsPerFrame)
        guardRow("  the same, steady state (last 3/4)", limit: delivery == .lossless ? 2.001 : 2.01, result.steadyAllocationsPerFrame!)
    }

    // An application's push (the C and Python publishing API): the frame is written into a buffer of
    // the source's pool that the publisher has let go of, so a push allocates nothing; the pool grows
    // (two allocations a buffer) only to a new peak of frames in flight, which a stall of the machine
    // can set after the warm-up: the guard is on what is left beyond that growth (0), and the whole
    // count has a limit that one allocation a push would exceed 25 times over. The process as a whole
    // allocates what the path above does (libzmq's content record and receive buffer). Lossless pushes
    // go as fast as credit allows, live ones at 1 000 blocks/s (faster than the link carries, a live
    // source's frames in flight outgrow the pool: docs/PERFORMANCE.md, "Publishing from Python and C").
    let pushes = Int(ProcessInfo.processInfo.environment["TRIBUTARY_ALLOC_PUSHES"] ?? "") ?? 20_000
    for delivery in [SourceDelivery.lossless, .live] {
        let blocks = delivery == .lossless ? pushes : pushes / 4
        let result = try pushAllocationRun(delivery: delivery, blocks: blocks, warm: blocks / 4)
        let path = delivery == .lossless ? "lossless" : "live 1000/s"
        // Lossless: 0. A lossless push whose pool is full of frames in flight waits for one of them, as it
        // waits for credit; before it did, a stall of the loaded CI machine could hold more of them than the
        // pool's 16 MiB, and a push made a buffer beyond it (two allocations) that the guard caught. A live
        // push takes such a buffer rather than wait: at 1 000 blocks/s it would take a stall of 255 ms.
        guardRow(
            "push 8x1024 f64 \(path), pushing thread, per push", limit: delivery == .lossless ? 0 : 0.001, result.pushingThreadBeyondPool)
        guardRow("  the same, with the buffer pool's growth", limit: 0.04, result.pushingThread)
        guardRow("  the same, whole process, per push", limit: 2.05, result.process)
        guardRow("  buffers made beyond the pool's bounds, per push", limit: delivery == .lossless ? 0 : 0.001, result.beyondPoolBounds)
    }

    printTable("allocation guard (allocations per operation, steady state)", rows)
    if context.checkAllocations && !failures.isEmpty {
        throw BenchError("allocation guard: " + failures.joined(separator: "; "))
    }
}
