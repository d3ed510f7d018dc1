import Foundation
import TributaryCapture
import TributaryDSP
import TributaryWire

/// `tributary demo`: the main job on an embedded default.
enum DemoCommand: Command {
    static let name = "demo"
    static let summary = "run the main job on an embedded default: simulate, filter, analyse, plot"
    static let usage = """
    usage: tributary demo [--out DIR] [--seconds S]

    Runs Tributary's main job on an embedded default, in one process: two simulated devices
    (USB-6009: 4 channels at 10 kS/s, 16-bit, a 50 Hz tone with 1 % second and 0.5 % third
    harmonics; PCI-6024: 8 channels at 20 kS/s), a subscriber that asks for channels 0-1 of
    source 1 only (the filter is applied as the publisher applies it), everything it receives
    recorded to a compressed capture, then the capture analysed — statistics, Welch PSD, tone and
    distortion measurements — with a readable report and an SVG spectrum whose path is printed.

      --out DIR      where to write the capture and the plot (default ./out)
      --seconds S    seconds of data to simulate (default 3)
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let outDirectory = try arguments.option("--out") ?? "out"
        let seconds = try arguments.option("--seconds", "a duration in (0, 60] seconds") { Double($0).flatMap { $0 > 0 && $0 <= 60 ? $0 : nil } } ?? 3
        _ = try arguments.finish()
        try FileManager.default.createDirectory(atPath: outDirectory, withIntermediateDirectories: true)

        let specs = [
            try SimulationSpec(parsing: "id=1,name=USB-6009,rate=10000,channels=4,freq=50,amp=1,noise=0.0005,harmonics=0.01;0.005,bits=16"),
            try SimulationSpec(parsing: "id=2,name=PCI-6024,rate=20000,channels=8,freq=120,amp=2,noise=0.01"),
        ]
        print("Tributary demo: \(specs.count) simulated devices, \(seconds) s of data")
        for s in specs {
            print("  source \(s.id) \(s.name): \(s.channels) channels at \(Int(s.rate)) S/s, \(s.bits.map { "\($0)-bit int16 counts" } ?? "float64"), "
                  + "\(s.frequency) Hz x (k+1)")
        }
        var filters = SubscriberFilters()
        let query = "0-1;1"
        try filters.add(AnalogFilterRequest(query: query), id: 1)
        print("  subscriber filter 1: analog query '\(query)' (channels 0-1 of source 1)")

        let capturePath = (outDirectory as NSString).appendingPathComponent("demo.tcap")
        let recorder: CaptureWriter
        do { recorder = try CaptureWriter(path: capturePath) } catch { throw CommandError("\(error)") }

        // Publisher side: each device's frames in time order; the subscriber's filter decides what it receives.
        var devices = specs.map(SimulatedDevice.init)
        var sent = 0, received = 0, receivedBytes = 0
        let start = Date()
        func record(_ frame: Frame) throws {
            do { try recorder.append(frame) } catch { throw CommandError("\(error)") }
        }
        for device in devices {
            try filters.outputs(for: device.configurationFrame()) { try record($0) }
        }
        for i in devices.indices {
            let frames = Int((seconds * devices[i].spec.rate / Double(devices[i].spec.samplesPerFrame)).rounded(.up))
            for f in 0..<frames {
                let t = Int64(Double(f * devices[i].spec.samplesPerFrame) / devices[i].spec.rate * 1e9)
                let frame = devices[i].nextAnalogFrame(timestampNs: t, sequence: UInt64(f))
                sent += 1
                try filters.outputs(for: frame) { out in
                    received += 1
                    receivedBytes += out.header.frameLength
                    try record(out)
                }
            }
        }
        let summary: CaptureWriteSummary
        do { summary = try recorder.close() } catch { throw CommandError("\(error)") }
        print("  \(sent) frames published, \(received) received after filtering (\(receivedBytes / 1024) KiB), "
              + String(format: "%.2f s", Date().timeIntervalSince(start)))
        print("  recorded to \(capturePath): \(summary.records) records, \(summary.fileBytes / 1024) KiB, "
              + String(format: "%.1fx smaller than the frames", Double(summary.frameBytes) / Double(max(summary.fileBytes, 1))))

        var request = AnalysisRequest(statistics: true, measurements: [.tone, .thd, .thdn, .sinad, .snr, .enob, .sfdr])
        request.welch = WelchConfiguration(segmentLength: 4096)
        let job = AnalysisJob(request: request, filters: SubscriberFilters(), requestedChannels: nil, rate: nil, int16Scale: 1)
        let (input, sources) = try job.run(capturePath).get()
        print("")
        print(AnalysisTable.render(file: capturePath, input: input, sources: sources, request: request))

        var series: [SVGSpectrumPlot.Series] = []
        for source in sources {
            for r in source.channels {
                if let w = r.welch { series.append(.init(label: "source \(source.id) ch \(r.index)", x: w.frequencies, y: w.values)) }
            }
        }
        let plotPath = (outDirectory as NSString).appendingPathComponent("demo-spectrum.svg")
        let plot = SVGSpectrumPlot(title: "Welch PSD of the filtered stream (nperseg 4096, hann)", xLabel: "Frequency (Hz)",
                                   yLabel: "PSD (V²/Hz)", series: series)
        try plot.render().write(toFile: plotPath, atomically: true, encoding: .utf8)
        print("\nSpectrum plot: \(FileManager.default.currentDirectoryPath)/\(plotPath)")
        return 0
    }
}
