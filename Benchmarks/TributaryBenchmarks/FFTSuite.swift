import TributaryDSP

/// Real FFT of 8 channels at N = 1024, 4096, 65536 against a plain C loop over FFTW and numpy.fft.rfft.
let fftSuite = Suite(
    name: "fft",
    run: { context in
        let channels = 8
        let sizes = [1024, 4096, 65536]
        let peer = try context.runPeer("fft_peer.py", [String(channels), "15"] + sizes.map(String.init))
        let fftwUs = peer["fftw_us"] as! [String: Double], numpyUs = peer["numpy_us"] as! [String: Double]
        var rows: [BenchRow] = []
        for n in sizes {
            let fft = try RealFFT<Double>(count: n, rigor: .measure)
            let input = SignalGenerator.whiteNoise(count: n * channels, seed: 1)
            var output = [Double](repeating: 0, count: (n + 2) * channels)
            let inner = 1 + 2_000_000 / (n * channels)
            let ns = input.withUnsafeBufferPointer { i in
                output.withUnsafeMutableBufferPointer { o in
                    measure(repetitions: 15, warmup: 3, operations: inner * channels) {
                        for _ in 0..<inner { fft.forward(batch: i, into: o, channels: channels) }
                    }
                }
            }
            let allocations = input.withUnsafeBufferPointer { i in
                output.withUnsafeMutableBufferPointer { o in
                    allocationsPerOperation(operations: channels) { fft.forward(batch: i, into: o, channels: channels) }
                }
            }
            blackHole(output)
            let ours = ns / 1e3
            let c = fftwUs[String(n)]!, np = numpyUs[String(n)]!
            rows.append(
                BenchRow(
                    name: "N=\(n) us/transform (allocs \(fmt(allocations, 0)))", tributary: fmt(ours, 3),
                    peer: "C FFTW \(fmt(c, 3)) | numpy \(fmt(np, 3))",
                    ratio: "\(fmt(ours / c, 3))x FFTW, \(fmt(np / ours))x faster than numpy"))
        }
        printTable("real FFT, 8 channels, FFTW_MEASURE plans (median of 15)", rows)
    })
