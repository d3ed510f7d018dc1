import Foundation
import Synchronization
import TributaryAnalysis
import TributaryCapture
import TributaryDSP
import TributarySources
import TributaryText
import TributaryTransport
import TributaryWire

/// `tributary demo`: the main job on an embedded default, end to end in one process.
enum DemoCommand: TableCommand {
    static let name = "demo"
    static let streamsFrames = true
    static let summary = "run the main job on an embedded default: publish, subscribe, record, analyse, plot"
    static let usage = """
        usage: tributary demo [--out DIR] [--seconds S]

        Runs Tributary's main job on an embedded default, in one process, over real sockets on
        127.0.0.1:
          1. a publisher with two simulated devices — USB-6009: 4 channels at 10 kS/s, 16-bit ADC
             counts, a 50 Hz x (k+1) tone with 1 % second and 0.5 % third harmonics; PCI-6024:
             8 channels at 20 kS/s, float64;
          2. a subscriber that selects source 1 and asks for channels 0-1 with an analog filter,
             which the publisher applies server-side;
          3. everything the subscriber receives recorded to a compressed capture;
          4. the capture analysed: statistics, Welch PSD, tone and distortion (THD, SINAD, ENOB,
             SFDR), printed as a report, and the PSD written as an SVG plot whose path is printed.

        \(options.help())
        """

    /// Where to write and how long to stream.
    struct Configuration {
        var out: String?
        var seconds: Double?
    }

    static var options: OptionTable<Configuration> {
        OptionTable([
            .text(
                "--out", "DIR",
                """
                where to write the capture and the plot (default: a new directory under
                the system's temporary directory, printed at the end)
                """, \.out),
            .parsed("--seconds", "S", "a duration in (0, 20] seconds", "seconds to stream (default 3, at most 20)", \.seconds) {
                Double($0).flatMap { $0 > 0 && $0 <= 20 ? $0 : nil }
            },
        ])
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var c = Configuration()
        let rest = try options.parse(arguments, into: &c)
        try Positionals.none(rest)
        return c
    }

    static func run(_ c: Configuration) throws -> Int32 {
        let outDirectory = try c.out ?? newTemporaryDirectory()
        let seconds = c.seconds ?? 3
        try FileManager.default.createDirectory(atPath: outDirectory, withIntermediateDirectories: true)
        let capturePath = (outDirectory as NSString).appendingPathComponent("demo.tcap")
        let plotPath = (outDirectory as NSString).appendingPathComponent("demo-spectrum.svg")

        // 1. The publisher and its two simulated devices.
        let specs = [
            try SimulationSpec(parsing: "id=1,name=USB-6009,rate=10000,channels=4,freq=50,amp=1,noise=0.0005,harmonics=0.01;0.005,bits=16"),
            try SimulationSpec(parsing: "id=2,name=PCI-6024,rate=20000,channels=8,freq=120,amp=2,noise=0.01"),
        ]
        let publisher: Publisher
        do {
            publisher = try Publisher(
                configuration: PublisherConfiguration(
                    endpoint: "tcp://127.0.0.1:0", apiKey: "demo-key", description: "Tributary demo publisher"),
                sources: specs.map { SimulatedDeviceSource(spec: $0) })
        } catch { throw CommandError("cannot start the publisher: \(error)") }
        defer { publisher.stop() }
        let port = publisher.port ?? 0
        print("Tributary demo")
        print("  publisher on tcp://127.0.0.1:\(port) with \(counted(specs.count, "simulated device")):")
        for s in specs {
            print(
                "    source \(s.id) \(s.name): \(counted(s.channels, "channel")) at \(Int(s.rate)) S/s, "
                    + "\(s.bits.map { "\($0)-bit ADC counts" } ?? "float64"), \(s.frequency) Hz x (k+1)")
        }

        // 2. The subscriber: source selection plus a server-side analog filter.
        let subject: Subject
        subject = try Subject()
        let run = SubscriptionRun()
        run.attach(to: subject)
        let query = "0-1;1"
        do {
            let welcome = try subject.open(
                address: "127.0.0.1", port: port, apiKey: "demo-key", description: "demo subscriber",
                timeout: 5, sourceFilterEnabled: true)
            let filterID = try subject.sendFilter(AnalogFilterRequest(query: query))
            try subject.selectSources([1])
            try subject.start()
            print("  subscriber: session \(welcome.sessionID), source 1 selected, analog filter \(filterID) '\(query)' (channels 0-1)")
        } catch let error as ErrorReport {
            run.abandon()
            throw CommandError("error \(error.code): \(error.message)")
        }

        // 3. Record what arrives for `seconds`.
        let writer: CaptureWriter
        do { writer = try CaptureWriter(path: capturePath) } catch {
            run.abandon()
            throw error
        }
        let counters = Mutex((frames: 0, bytes: 0, failure: String?.none))
        print(String(format: "  streaming and recording for %.0f s to %@ ...", seconds, capturePath))
        let end = run.run(subject: subject, duration: seconds) { package in
            do {
                let appended = try CaptureRecording.append(package, to: writer)
                counters.withLock {
                    $0.frames += appended.frames; $0.bytes += appended.bytes
                }
                return nil
            } catch {
                counters.withLock { $0.failure = "\(error)" }
                return "\(error)"
            }
        }
        let statistics = subject.statistics()
        let published = publisher.statistics()
        let summary: CaptureWriteSummary
        summary = try writer.close()
        if case .failed(let report) = end { throw CommandError("the subscription failed: error \(report.code): \(report.message)") }
        if let failure = counters.withLock({ $0.failure }) { throw CommandError("recording failed: \(failure)") }
        let received = counters.withLock { $0 }
        print(
            "  publisher: \(counted(published.framesPublished, "frame")) published; subscriber: \(counted(received.frames, "frame")) received "
                + "(\(received.bytes / 1024) KiB), \(statistics.framesMissing) lost and announced, \(statistics.unaccountedLoss) unaccounted; "
                + String(
                    format: "callback queue p50 %.0f µs, p99 %.0f µs", Double(statistics.callbackQueue.latencyP50Ns) / 1e3,
                    Double(statistics.callbackQueue.latencyP99Ns) / 1e3))
        print(
            "  capture: \(counted(summary.frames, "frame")) in \(counted(summary.records, "record")) (chunks of frames, "
                + "configuration and gap records), \(summary.fileBytes / 1024) KiB on disk, "
                + String(format: "%.1fx smaller than the frames", Double(summary.frameBytes) / Double(max(summary.fileBytes, 1))))

        // 4. Analyse the capture and plot.
        var request = AnalysisRequest(statistics: true, measurements: [.tone, .thd, .thdn, .sinad, .snr, .enob, .sfdr])
        request.welch = WelchConfiguration(segmentLength: 4096)
        let job = AnalysisJob(request: request, filters: SubscriberFilters(), requestedChannels: nil, rate: nil, int16Scale: 1)
        let (input, sources) = try job.run(capturePath).get()
        print("")
        print(AnalysisTable.render(file: capturePath, input: input, sources: sources, request: request))

        let series = SVGSpectrumPlot.Series.spectra(of: sources, file: capturePath, fileCount: 1)
        let units = Set(series.map(\.unit))
        let unit = units.count == 1 && !units.first!.isEmpty ? units.first! : "unit"
        // A log frequency axis, so that the 50 Hz tones' harmonics stand apart at the low end.
        let plot = SVGSpectrumPlot(
            title: "Welch PSD of the recorded subscription (nperseg 4096, hann)", xLabel: "Frequency (Hz), log scale",
            yLabel: "PSD (\(unit)²/Hz)", series: series, logFrequency: true)
        try plot.render().write(toFile: plotPath, atomically: true, encoding: .utf8)
        print("\nSpectrum plot: \(URL(fileURLWithPath: plotPath).standardizedFileURL.path)")
        return 0
    }
}

/// A new, empty directory for the demo's files under the system's temporary directory, so that a
/// demo never writes into the caller's working tree (or over an earlier demo's capture).
private func newTemporaryDirectory() -> String {
    var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("tributary-demo-XXXXXX").utf8CString)
    let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!).map { String(cString: $0) } }
    if let made { return made }
    return (NSTemporaryDirectory() as NSString).appendingPathComponent("tributary-demo-\(getpid())")
}
