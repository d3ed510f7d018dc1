import TributaryDSP

/// One-pass statistics over 8 x 1M float64 against numpy's four calls, measured in the same run.
let statisticsSuite = Suite(
    name: "statistics",
    run: { context in
        let channels = 8, n = 1 << 20
        var data = [Double]()
        data.reserveCapacity(channels * n)
        for c in 0..<channels { data += SignalGenerator.whiteNoise(count: n, seed: UInt64(c)) }
        let bytes = Double(channels * n * 8)
        var result = MultichannelStatistics(channelCount: channels)
        let ns = data.withUnsafeBufferPointer { buffer in
            measure(repetitions: 21, warmup: 3) {
                var s = MultichannelStatistics(channelCount: channels)
                s.add(block: buffer, samplesPerChannel: n)
                result = s
            }
        }
        blackHole(result)
        let allocations = data.withUnsafeBufferPointer { buffer in
            var s = MultichannelStatistics(channelCount: channels)
            return allocationsPerOperation(operations: 1) { s.add(block: buffer, samplesPerChannel: n) }
        }
        let peer = try context.runPeer("statistics_peer.py", [String(channels), String(n), "11"])
        let numpy = peer["numpy_s"] as! Double, c = peer["c_one_pass_s"] as! Double
        let ours = ns / 1e9
        printTable(
            "statistics: count/min/max/mean/std/rms, 8 x 1M float64 (median of 21)",
            [
                BenchRow(
                    name: "one pass (GB/s)", tributary: fmt(bytes / ours / 1e9), peer: fmt(bytes / numpy / 1e9) + " numpy 4 calls",
                    ratio: fmt(numpy / ours) + "x faster"),
                BenchRow(
                    name: "one pass (GB/s) vs C", tributary: fmt(bytes / ours / 1e9), peer: fmt(bytes / c / 1e9) + " C one-pass -O2",
                    ratio: fmt(c / ours) + "x the C loop's speed"),
                BenchRow(
                    name: "time (ms)", tributary: fmt(ours * 1e3, 3), peer: "numpy \(fmt(numpy * 1e3, 3)), C \(fmt(c * 1e3, 3))", ratio: ""),
                BenchRow(name: "allocations per 8-channel pass", tributary: fmt(allocations, 1), peer: "", ratio: ""),
            ])
    })
