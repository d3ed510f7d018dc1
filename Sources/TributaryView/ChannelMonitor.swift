import TributaryDSP
import TributaryWire

/// What one channel's live view keeps, in memory bounded whatever the sampling rate: the min/max of
/// each trace column of the time window, the last `recentCapacity` samples (for the readings), and a
/// streaming Welch accumulator (for the spectrum). Fed sample blocks by `LiveModel`; allocates nothing
/// per block.
final class ChannelMonitor {
    /// Trace columns at most (one per pixel column of a wide screen, halved: the page joins them).
    static let maxColumns = 600
    /// Samples kept for the readings.
    static let recentCapacity = 16_384
    /// Welch segments after which the running average restarts (so that the spectrum follows changes).
    static let maxSegments = 32

    let sampleRate: Double
    let windowSeconds: Double
    let columns: Int
    let samplesPerColumn: Int
    // Trace: a ring of completed columns and the column being filled.
    private(set) var columnMin: [Float]
    private(set) var columnMax: [Float]
    private var columnHead = 0
    private(set) var columnsFilled = 0
    private var currentMin = Double.infinity, currentMax = -Double.infinity, currentCount = 0
    // Recent samples.
    private var recent: [Double]
    private var recentHead = 0
    private(set) var recentCount = 0
    // Spectrum.
    let welch: StreamingWelch
    /// The last estimate over at least 4 segments, or the running one before there is such.
    private(set) var spectrum: PowerSpectralDensity?
    // Spectrogram: the segments completed since the previous refresh, averaged (one column a refresh).
    let columnWelch: StreamingWelch
    /// The spectrum of the segments completed between the last two refreshes; nil when none was.
    private(set) var column: PowerSpectralDensity?
    // The display filter: its state, and the filtered samples of the block being added.
    private var filter: SOSStream?
    private var filtered: [Double] = []

    /// - Parameter displayFilter: sections every sample goes through before it is shown (trace, spectra
    ///   and readings alike), their state carried from block to block.
    init(sampleRate: Double, windowSeconds: Double, displayFilter: SecondOrderSections? = nil) throws {
        // The rate comes from a publisher's configuration (checked by the wire decoder); a library
        // caller's is checked here too, before it sizes anything.
        // The window's samples are bounded too (1e9: far beyond a page's 10 s at any real rate), before
        // they are converted to column counts.
        guard WireLimits.isValidSamplingRate(sampleRate), sampleRate > 0, windowSeconds.isFinite, windowSeconds > 0,
            sampleRate * windowSeconds <= 1e9
        else {
            throw ChannelMonitorError(sampleRate: sampleRate, windowSeconds: windowSeconds)
        }
        self.sampleRate = sampleRate
        self.windowSeconds = windowSeconds
        // Columns of S = ceil(N / 600) samples, as many as cover the window's N samples: together they
        // span the window (and at most one column more), so the page's plot is filled from its left edge.
        // (S = round(N / 600) with 600 columns spanned 90 % of the window at 20 kS/s, 120 % at 1 kS/s.)
        let samplesInWindow = max(2.0, (sampleRate * windowSeconds).rounded())
        samplesPerColumn = max(1, Int((samplesInWindow / Double(Self.maxColumns)).rounded(.up)))
        columns = Int((samplesInWindow / Double(samplesPerColumn)).rounded(.up))
        columnMin = [Float](repeating: 0, count: columns)
        columnMax = [Float](repeating: 0, count: columns)
        recent = [Double](repeating: 0, count: Self.recentCapacity)
        // Segments of about half a second (at least 256, at most 8192 samples): 1-4 updates a second.
        var segment = 256
        while segment * 2 <= min(8_192, Int(sampleRate / 2)) { segment *= 2 }
        welch = try StreamingWelch(
            configuration: WelchConfiguration(segmentLength: segment, scaling: .spectrum),
            sampleRate: sampleRate, channelCount: 1)
        columnWelch = try StreamingWelch(configuration: welch.configuration, sampleRate: sampleRate, channelCount: 1)
        filter = try displayFilter.map { s throws(FilterError) in try SOSStream(sections: s, channels: 1) }
    }

    /// Consumes consecutive samples (physical values), through the display filter when there is one.
    /// The filtered copy's buffer grows to the largest block once; nothing is allocated per block after.
    func add(_ samples: UnsafeBufferPointer<Double>) {
        guard filter != nil, let input = samples.baseAddress else { return show(samples) }
        if filtered.count < samples.count { filtered = [Double](repeating: 0, count: samples.count) }
        filtered.withUnsafeMutableBufferPointer { out in
            let part = UnsafeMutableBufferPointer(rebasing: out[0..<samples.count])
            filter!.filter(UnsafeBufferPointer(start: input, count: samples.count), channel: 0, into: part)
            show(UnsafeBufferPointer(part))
        }
    }

    private func show(_ samples: UnsafeBufferPointer<Double>) {
        for v in samples {
            if v < currentMin { currentMin = v }
            if v > currentMax { currentMax = v }
            currentCount += 1
            if currentCount == samplesPerColumn {
                columnMin[columnHead] = Float(currentMin)
                columnMax[columnHead] = Float(currentMax)
                columnHead = (columnHead + 1) % columns
                columnsFilled = min(columns, columnsFilled + 1)
                currentMin = .infinity
                currentMax = -.infinity
                currentCount = 0
            }
        }
        // Recent samples: copy the tail that fits.
        let capacity = recent.count
        let take = min(samples.count, capacity)
        var from = samples.count - take
        recent.withUnsafeMutableBufferPointer { r in
            var left = take
            while left > 0 {
                let chunk = min(left, capacity - recentHead)
                (r.baseAddress! + recentHead).update(from: samples.baseAddress! + from, count: chunk)
                recentHead = (recentHead + chunk) % capacity
                from += chunk
                left -= chunk
            }
        }
        recentCount = min(capacity, recentCount + take)
        welch.add(block: samples, samplesPerChannel: samples.count)
        columnWelch.add(block: samples, samplesPerChannel: samples.count)
    }

    /// Refreshes `spectrum` from the accumulator, and `column` from the segments completed since the
    /// previous refresh (called at the update rate, not per block).
    func refreshSpectrum() {
        column = columnWelch.segments > 0 ? columnWelch.estimate(channel: 0) : nil
        if column != nil { columnWelch.restartAverage() }
        guard welch.segments > 0 else { return }
        if welch.segments >= 4 || spectrum == nil || spectrum!.segments < 4 { spectrum = welch.estimate(channel: 0) }
        if welch.segments >= Self.maxSegments { welch.reset() }
    }

    /// Completed columns, oldest first, as (min, max) pairs.
    func trace() -> (min: [Float], max: [Float]) {
        var mins = [Float](), maxs = [Float]()
        mins.reserveCapacity(columnsFilled)
        maxs.reserveCapacity(columnsFilled)
        let start = (columnHead - columnsFilled + columns) % columns
        for i in 0..<columnsFilled {
            mins.append(columnMin[(start + i) % columns])
            maxs.append(columnMax[(start + i) % columns])
        }
        return (mins, maxs)
    }

    /// The last `count` samples (at most `recentCount`), oldest first.
    func recentSamples(_ count: Int) -> [Double] {
        let n = min(count, recentCount)
        let capacity = recent.count
        let start = (recentHead - n + capacity) % capacity
        return (0..<n).map { recent[(start + $0) % capacity] }
    }
}

/// The readings of one channel (the library's `ChannelAnalyzer`: statistics, tone, distortion); NaN
/// where a reading is not available (no tone found, too few samples).
public struct ChannelReadings: Sendable, Equatable {
    public var samples: Int = 0
    public var rms = Double.nan
    public var peakToPeak = Double.nan
    public var mean = Double.nan
    public var toneFrequency = Double.nan
    public var toneAmplitude = Double.nan
    /// THD as a ratio (harmonics' RMS over the fundamental's), as `analyze --json`'s `thd`.
    public var thd = Double.nan
    /// THD in dB (20 log10 `thd`).
    public var thdDB = Double.nan
    /// THD in percent (100 × `thd`).
    public var thdPercent = Double.nan
    /// SINAD in dB.
    public var sinadDB = Double.nan
    public var enob = Double.nan
    /// Why the tone readings are missing, if they are.
    public var problem: String?

    /// The readings in the order of the update layout (docs/VIEW.md).
    public var values: [Double] { [rms, peakToPeak, mean, toneFrequency, toneAmplitude, thdDB, sinadDB, enob] }

    /// Analyses `samples` with the same code as `tributary analyze --stats --measure tone,thd,sinad,enob`.
    static func measure(_ samples: [Double], analyzer: ChannelAnalyzer) -> ChannelReadings {
        var readings = ChannelReadings()
        readings.samples = samples.count
        guard samples.count >= 16 else { readings.problem = "too few samples"; return readings }
        do {
            let report = try samples.withUnsafeBufferPointer { try analyzer.analyze(.float64($0), index: 0) }
            if let s = report.statistics {
                readings.rms = s.rms
                readings.peakToPeak = s.peakToPeak
                readings.mean = s.mean
            }
            if let tone = report.tone {
                readings.toneFrequency = tone.frequency
                readings.toneAmplitude = tone.amplitude
            }
            if let d = report.distortion {
                readings.thd = d.thd
                readings.thdDB = d.thdDB
                readings.thdPercent = d.thdPercent
                readings.sinadDB = d.sinadDB
                readings.enob = d.enob
            }
            readings.problem = report.measurementError
        } catch {
            readings.problem = "\(error)"
        }
        return readings
    }

    static let request = AnalysisRequest(statistics: true, measurements: [.tone, .thd, .sinad, .enob])
}

/// A channel monitor asked for a rate or window it cannot size itself for.
struct ChannelMonitorError: Error, CustomStringConvertible {
    var sampleRate: Double
    var windowSeconds: Double
    var description: String { "cannot monitor a channel at \(sampleRate) S/s over \(windowSeconds) s" }
}
