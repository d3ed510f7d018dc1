import Foundation
import TributaryDSP
import TributaryFormats

// Issue 42's signal-processing speed list on 8 x 1,048,576 float64 white noise: the Swift library
// call against scipy.signal, and tributary.signal (Python, through the C library) against the same,
// on the same input. Each operation's Swift output is written as NPY and compared by the peer with
// scipy's (max|a - b| / max|b| ≤ 1e-12, or the suite fails), so a fast wrong kernel cannot win.
// Swift is timed in `rounds` runs after a warm-up, then the peer times scipy and tributary.signal
// in `rounds` interleaved rounds right after, so all three see about the same machine load.

/// One operation: its name (the peer's), and the Swift call writing outer × length' values to y.
private struct SignalOperation {
    var name: String
    var outputLength: Int
    var outputRows: Int
    var run: (UnsafePointer<Double>, UnsafeMutablePointer<Double>) throws -> Void
}

private func signalOperations(channels: Int, n: Int, sos: SecondOrderSections) throws -> [SignalOperation] {
    let layout = FilterLayout(outer: channels, length: n, inner: 1)
    let half = channels / 2
    let spectrogramParameters = SegmentParameters(
        window: try SpectralWindow.values(name: "tukey", parameters: [0.25], count: 1024), overlap: 1024 / 8)
    let spectrogramBins = spectrogramParameters.binCount(twoSided: false)
    let spectrogramSegments = try spectrogramParameters.segmentCount(signalLength: n)
    let coherence = CrossSpectralConfiguration.scipyDefaults(segmentLength: 4096)
    return [
        SignalOperation(name: "sosfilt", outputLength: n, outputRows: channels) { x, y in
            try IIRFilter.sosfilt(sos, x: x, y: y, layout: layout, initial: nil, final: nil)
        },
        SignalOperation(name: "sosfiltfilt", outputLength: n, outputRows: channels) { x, y in
            try IIRFilter.sosfiltfilt(sos, x: x, y: y, layout: layout)
        },
        SignalOperation(name: "resample_poly", outputLength: try RateChange.resampleLength(length: n, up: 2, down: 3), outputRows: channels)
        {
            x, y in try RateChange.resamplePoly(x: x, y: y, layout: layout, up: 2, down: 3)
        },
        SignalOperation(name: "decimate", outputLength: try RateChange.decimateLength(length: n, q: 10), outputRows: channels) { x, y in
            try RateChange.decimate(x: x, y: y, layout: layout, q: 10)
        },
        SignalOperation(name: "spectrogram", outputLength: spectrogramBins * spectrogramSegments, outputRows: channels) { x, y in
            try SpectrogramBatch.psd(
                x, rows: channels, length: n, parameters: spectrogramParameters, sampleRate: 1, scaling: .density,
                into: UnsafeMutableBufferPointer(start: y, count: channels * spectrogramBins * spectrogramSegments))
        },
        SignalOperation(name: "coherence", outputLength: coherence.segments.binCount(twoSided: false), outputRows: half) { x, y in
            try CrossSpectralBatch.coherence(
                x, x + half * n, rows: half, length: n, configuration: coherence, sampleRate: 1,
                into: UnsafeMutableBufferPointer(start: y, count: half * coherence.segments.binCount(twoSided: false)))
        },
    ]
}

/// Median, minimum and maximum of a list of seconds, as "median (min–max)".
private func spread(_ values: [Double]) -> String {
    "\(fmt(median(values), 4)) (\(fmt(values.min()!, 4))–\(fmt(values.max()!, 4)))"
}

let signalSuite = Suite(
    name: "signal",
    run: { context in
        let channels = 8, n = 1 << 20, rounds = 7
        let data = (0..<channels).flatMap { SignalGenerator.whiteNoise(count: n, seed: UInt64(100 + $0)) }
        // butter(8, 0.1) as second-order sections: the same coefficients go to scipy and tributary.signal.
        let sos = try FilterDesign.iirSOS(order: 8, frequencies: [0.1], band: .lowpass, family: .butterworth)
        let input = context.scratchDirectory + "/signal-input.npy", sosPath = context.scratchDirectory + "/signal-sos.npy"
        let outputPath = context.scratchDirectory + "/signal-output.npy"
        try NPY.write(NPYArray(channels: channels, samplesPerChannel: n, samples: .float64(data)), path: input)
        try NPY.write(NPYArray(channels: sos.count, samplesPerChannel: 6, samples: .float64(sos.coefficients)), path: sosPath)
        defer {
            if ProcessInfo.processInfo.environment["TRIBUTARY_BENCH_KEEP"] == nil {
                for path in [input, sosPath, outputPath] { try? FileManager.default.removeItem(atPath: path) }
            }
        }
        // tributary.signal from this checkout's python/ with the C library built next to this executable.
        var environment: [String: String] = ["PYTHONPATH": FileManager.default.currentDirectoryPath + "/python"]
        let library = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("libTributaryC.so")
            .path
        if FileManager.default.fileExists(atPath: library) { environment["TRIBUTARY_LIBRARY"] = library }
        var rows: [BenchRow] = []
        var notes: [String] = []
        for operation in try signalOperations(channels: channels, n: n, sos: sos) {
            var output = [Double](repeating: 0, count: operation.outputRows * operation.outputLength)
            var times: [Double] = []
            try data.withUnsafeBufferPointer { x in
                try output.withUnsafeMutableBufferPointer { y in
                    try operation.run(x.baseAddress!, y.baseAddress!)  // warm-up (plans, first touches)
                    for _ in 0..<rounds {
                        let start = nowNanoseconds()
                        try operation.run(x.baseAddress!, y.baseAddress!)
                        times.append(Double(nowNanoseconds() - start) / 1e9)
                    }
                }
            }
            try NPY.write(
                NPYArray(channels: operation.outputRows, samplesPerChannel: operation.outputLength, samples: .float64(output)),
                path: outputPath)
            let peer = try context.runPeer(
                "signal_peer.py", [operation.name, input, sosPath, outputPath, String(rounds)], environment: environment)
            let scipy = peer["scipy_s"] as! [Double]
            let swiftError = peer["swift_error"] as! Double
            guard swiftError <= 1e-12 else {
                throw BenchError("signal \(operation.name): the Swift result differs from scipy's by \(swiftError) (more than 1e-12)")
            }
            rows.append(
                BenchRow(
                    name: "\(operation.name) Swift", tributary: spread(times), peer: spread(scipy) + " scipy",
                    ratio: fmt(median(scipy) / median(times)) + "x faster, error \(String(format: "%.1e", swiftError))"))
            if let python = peer["python_s"] as? [Double], let pythonError = peer["python_error"] as? Double {
                guard pythonError <= 1e-12 else {
                    throw BenchError("signal \(operation.name): tributary.signal differs from scipy by \(pythonError) (more than 1e-12)")
                }
                // Interleaved rounds: the ratio is the median of the per-round ratios.
                let ratios = zip(scipy, python).map { $0 / $1 }
                rows.append(
                    BenchRow(
                        name: "\(operation.name) tributary.signal", tributary: spread(python), peer: spread(scipy) + " scipy",
                        ratio: fmt(median(ratios)) + "x faster (\(fmt(ratios.min()!))–\(fmt(ratios.max()!))), error "
                            + String(format: "%.1e", pythonError)))
            } else if let reason = peer["python_skipped"] as? String {
                notes.append("\(operation.name): tributary.signal not measured (\(reason))")
            }
        }
        printTable("Signal processing, 8 x 1,048,576 float64, seconds: median (min–max) of \(rounds) runs", rows)
        for note in notes { print(note) }
    })
