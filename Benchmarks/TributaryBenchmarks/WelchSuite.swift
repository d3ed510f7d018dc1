import TributaryDSP

/// Welch PSD over 8 x 1,048,576 float64 (nperseg 4096, hann, 50 %) against scipy.signal.welch.
let welchSuite = Suite(
    name: "welch",
    run: { context in
        let channels = 8, n = 1 << 20, nperseg = 4096
        let data = (0..<channels).flatMap { SignalGenerator.whiteNoise(count: n, seed: UInt64($0)) }
        let estimator = try WelchEstimator(configuration: WelchConfiguration(segmentLength: nperseg, rigor: .measure), sampleRate: 1)
        var last: [PowerSpectralDensity] = []
        let ns = try data.withUnsafeBufferPointer { buffer in
            _ = try estimator.estimate(channels: buffer, channelCount: channels)
            return measure(repetitions: 11, warmup: 2) {
                last = try! estimator.estimate(channels: buffer, channelCount: channels)
            }
        }
        blackHole(last)
        let peer = try context.runPeer("welch_peer.py", [String(channels), String(n), String(nperseg), "7"])
        let scipy = peer["scipy_s"] as! Double
        let ours = ns / 1e9
        printTable(
            "Welch, 8 x 1,048,576 float64, nperseg 4096, hann, 50 % (median)",
            [
                BenchRow(name: "time (s)", tributary: fmt(ours, 4), peer: fmt(scipy, 4) + " scipy", ratio: fmt(scipy / ours) + "x faster")
            ])
    })
