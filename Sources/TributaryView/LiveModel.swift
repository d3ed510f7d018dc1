import Foundation
import TributaryDSP
import TributaryText
import TributaryTransport
import TributaryWire

/// A channel of a source.
public struct ChannelKey: Hashable, Sendable, Comparable {
    public var source: UInt32
    public var channel: UInt32
    public init(source: UInt32, channel: UInt32) {
        self.source = source
        self.channel = channel
    }
    public static func < (a: ChannelKey, b: ChannelKey) -> Bool { (a.source, a.channel) < (b.source, b.channel) }
}

/// The link's health at one moment.
public struct LinkHealth: Sendable, Equatable {
    public var framesPerSecond = 0.0
    public var megabytesPerSecond = 0.0
    public var framesReceived: UInt64 = 0
    public var gapNotices: UInt64 = 0
    /// Frames the publisher dropped for this subscriber, as its gap notices say.
    public var framesLost: UInt64 = 0
    /// Sequence jumps no gap notice explained.
    public var unaccountedLoss: UInt64 = 0
    public var reconnections: UInt64 = 0
    public var callbackLatencyP50Ms = 0.0
    public var callbackLatencyP99Ms = 0.0
    /// The latest estimate of the publisher's clock (offset and round trip, docs/PROTOCOL.md §4.9);
    /// nil before the first, or when the publisher answers no clock probes.
    public var clock: ClockEstimate?
    /// Whether the session is up.
    public var connected = true
    /// The session is down because the publisher ended it normally (it stopped, its replay ended),
    /// not lost: the view still reconnects, for when it comes back.
    public var publisherEnded = false
    /// The last SCCT error in words ("error 5 (lost connection): …"), or the publisher's normal end
    /// ("the publisher closed the session: the replay has ended"); nil before either.
    public var lastError: String?
}

/// One channel's state for an update.
public struct ChannelSnapshot: Sendable {
    public var key: ChannelKey
    public var sampleRate: Double
    public var windowSeconds: Double
    public var traceMin: [Float]
    public var traceMax: [Float]
    /// Welch power spectrum (unit² per bin, `scaling: .spectrum`), nil before the first segment.
    public var spectrum: PowerSpectralDensity?
    /// The spectrogram's newest column: the spectrum (same scaling and bins) of the segments completed
    /// since the previous snapshot; nil when none was.
    public var spectrogramColumn: PowerSpectralDensity?
    public var readings: ChannelReadings
}

/// A filter every shown channel's samples go through before they are shown — trace, spectrum,
/// spectrogram and readings alike (`view --filter`, `monitor --notch`). What the session receives is
/// not changed: it is for display.
public struct DisplayFilter: Sendable {
    /// How it was asked for, shown with the channels (e.g. `butter:8:lowpass:1000, notch 50:30`).
    public var text: String
    /// Its second-order sections for a channel of this rate; throws (a message) when it cannot be
    /// designed for it, e.g. a frequency at or above half the rate.
    public var design: @Sendable (Double) throws -> SecondOrderSections

    public init(text: String, design: @escaping @Sendable (Double) throws -> SecondOrderSections) {
        self.text = text
        self.design = design
    }
}

/// The live state of a subscription, fed by its Subject (an `Observer` on the callback queue) and read
/// by the update loop: configurations, the selected channels' `ChannelMonitor`s and link counters.
///
/// `@unchecked Sendable`: every mutable field is guarded by `lock`.
public final class LiveModel: Observer, @unchecked Sendable {
    /// Channels shown at most (bounds the update size).
    public static let maxChannels = 8
    /// Time windows the page offers, in seconds.
    public static let windows: [Double] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10]

    private let lock = NSLock()
    private var configurations: [UInt32: Configuration] = [:]
    private var sourceNames: [UInt32: String] = [:]
    private var selection: [ChannelKey] = []
    private var monitors: [ChannelKey: ChannelMonitor] = [:]
    private var analyzers: [ChannelKey: ChannelAnalyzer] = [:]
    private var window: Double = 0.1
    private var scratch = [Double](repeating: 0, count: 4_096)
    private var bytesReceived: UInt64 = 0
    private var framesCounted: UInt64 = 0
    private var lastTimestampNs: Int64 = 0
    private var connected = true
    private var publisherEnded = false
    private var lastError: String?
    /// Channels whose rate the display filter could not be designed for (said once each).
    private var filterRefusals: Set<ChannelKey> = []
    /// Incremented when configurations, selection or window change (the page's description is resent).
    public private(set) var revision = 0

    /// The filter applied for display, if any.
    public let displayFilter: DisplayFilter?

    public init(sources: [SourceInfo] = [], displayFilter: DisplayFilter? = nil) {
        self.displayFilter = displayFilter
        for s in sources { sourceNames[s.id] = s.description }
    }

    /// Names the sources (from the welcome).
    public func name(_ sources: [SourceInfo]) {
        lock.withLock {
            for s in sources { sourceNames[s.id] = s.description }
            revision += 1
        }
    }

    // MARK: Observer (callback queue)

    public func didReceiveConfiguration(_ configuration: Configuration, header: FrameHeader) {
        lock.lock()
        defer { lock.unlock() }
        if configurations[header.sourceID] != configuration {
            configurations[header.sourceID] = configuration
            // Rates may have changed: rebuild the monitors of this source.
            for key in monitors.keys where key.source == header.sourceID { monitors[key] = nil }
            filterRefusals = filterRefusals.filter { $0.source != header.sourceID }
            revision += 1
        }
    }

    public func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) {
        lock.lock()
        defer { lock.unlock() }
        bytesReceived += UInt64(header.frameLength)
        framesCounted += 1
        lastTimestampNs = header.timestampNs
        let n = data.sampleCount
        if scratch.count < n { scratch = [Double](repeating: 0, count: n) }
        for row in 0..<data.channelCount {
            let key = ChannelKey(source: header.sourceID, channel: data.channelIndex(row))
            guard let monitor = monitor(for: key) else { continue }
            scratch.withUnsafeMutableBufferPointer { out in
                data.copyValues(channel: row, into: out)
                monitor.add(UnsafeBufferPointer(rebasing: out[0..<n]))
            }
        }
    }

    public func didReceiveDigitalData(_ data: DigitalView, header: FrameHeader) { count(header) }
    public func didReceiveArray(_ array: ArrayView, header: FrameHeader) { count(header) }

    public func didReceiveError(_ error: ErrorReport, header: FrameHeader) {
        lock.lock()
        defer { lock.unlock() }
        // A normal end by the publisher (it stopped, its replay ended) is said as the end it is, not as error 5.
        lastError = error.isNormalCloseByPublisher ? error.message : "error \(error.code): \(error.message)"
        if [.expiredTimeout, .lostConnection].contains(error.code) || error.isNormalCloseByPublisher { connected = false }
        if error.isNormalCloseByPublisher { publisherEnded = true }  // until the next welcome
        revision += 1
    }

    public func didReconnect(_ welcome: Welcome) {
        lock.lock()
        defer { lock.unlock() }
        connected = true
        publisherEnded = false
        for s in welcome.sources { sourceNames[s.id] = s.description }
        revision += 1
    }

    private func count(_ header: FrameHeader) {
        lock.lock()
        defer { lock.unlock() }
        bytesReceived += UInt64(header.frameLength)
        framesCounted += 1
    }

    /// The monitor of a selected channel, created once its source's configuration gives its rate.
    private func monitor(for key: ChannelKey) -> ChannelMonitor? {
        if let m = monitors[key] { return m }
        guard selection.contains(key), !filterRefusals.contains(key), let rate = sampleRate(key), rate > 0 else { return nil }
        var sections: SecondOrderSections?
        if let displayFilter {
            do { sections = try displayFilter.design(rate) } catch {
                // Said once per configuration (the monitor is asked for again only after a new one).
                if filterRefusals.insert(key).inserted {
                    lastError =
                        "display filter \(displayFilter.text): source \(key.source) channel \(key.channel) at \(rate) Hz: \(error); not shown"
                    revision += 1
                }
                return nil
            }
        }
        let m = try? ChannelMonitor(sampleRate: rate, windowSeconds: window, displayFilter: sections)
        monitors[key] = m
        return m
    }

    private func sampleRate(_ key: ChannelKey) -> Double? {
        configurations[key.source]?.channels.first { $0.index == key.channel }?.samplingRate
    }

    // MARK: Control (any thread)

    /// The channels shown.
    public var selectedChannels: [ChannelKey] { lock.withLock { selection } }

    /// Every source's configuration received so far.
    public var knownConfigurations: [UInt32: Configuration] { lock.withLock { configurations } }

    /// Shows these channels (at most `maxChannels`, unknown ones refused by the caller).
    public func select(_ keys: [ChannelKey]) {
        lock.withLock {
            selection = Array(keys.prefix(Self.maxChannels))
            monitors = monitors.filter { selection.contains($0.key) }
            revision += 1
        }
    }

    /// The trace's time window (one of `windows`); the traces restart.
    public func setWindow(_ seconds: Double) {
        lock.withLock {
            window = seconds
            monitors.removeAll()
            revision += 1
        }
    }

    public var windowSeconds: Double { lock.withLock { window } }

    /// The publisher timestamp of the newest data, in ns (0 before any).
    public var newestTimestampNs: Int64 { lock.withLock { lastTimestampNs } }

    /// Bytes and frames received so far (every kind).
    public var traffic: (bytes: UInt64, frames: UInt64) { lock.withLock { (bytesReceived, framesCounted) } }

    /// Session state and the last error.
    public var session: (connected: Bool, publisherEnded: Bool, lastError: String?) {
        lock.withLock { (connected, publisherEnded, lastError) }
    }

    /// The selected channels' traces, spectra and readings (readings computed outside the lock on a
    /// copy of the recent samples).
    /// - Parameter readings: compute the readings (they cost an FFT of `recentCapacity` per channel).
    public func snapshot(readings computeReadings: Bool, previous: [ChannelKey: ChannelReadings] = [:]) -> [ChannelSnapshot] {
        var pending: [(ChannelSnapshot, [Double])] = []
        lock.withLock {
            for key in selection {
                guard let m = monitors[key] else { continue }
                m.refreshSpectrum()
                let (mins, maxs) = m.trace()
                let samples = computeReadings ? m.recentSamples(ChannelMonitor.recentCapacity) : []
                pending.append(
                    (
                        ChannelSnapshot(
                            key: key, sampleRate: m.sampleRate, windowSeconds: m.windowSeconds,
                            traceMin: mins, traceMax: maxs, spectrum: m.spectrum, spectrogramColumn: m.column,
                            readings: previous[key] ?? ChannelReadings()), samples
                    ))
            }
        }
        return pending.map { snapshot, samples in
            var s = snapshot
            if computeReadings, let analyzer = analyzer(for: s.key, rate: s.sampleRate) {
                s.readings = ChannelReadings.measure(samples, analyzer: analyzer)
            }
            return s
        }
    }

    private func analyzer(for key: ChannelKey, rate: Double) -> ChannelAnalyzer? {
        if let a = lock.withLock({ analyzers[key] }), a.sampleRate == rate { return a }
        let a = try? ChannelAnalyzer(request: ChannelReadings.request, sampleRate: rate)
        lock.withLock { analyzers[key] = a }
        return a
    }

    /// The description of sources, channels, selection and window the page draws its controls from
    /// (docs/VIEW.md, message "config").
    /// `recorder`: whether the view has the recorder (`view --record-dir`, docs/VIEW.md §6).
    public func describe(filters: [UInt32: (id: UInt32, query: String)], recorder: Bool = false) -> String {
        lock.withLock {
            var sources: [String] = []
            let ids = Set(configurations.keys).union(sourceNames.keys).sorted()
            for id in ids {
                let c = configurations[id]
                let channels = (c?.channels ?? []).map { ch in
                    "{\"index\":\(ch.index),\"name\":\(jsonString(ch.description)),\"unit\":\(jsonString(ch.unit)),"
                        + "\"rate\":\(jsonNumber(ch.samplingRate)),\"min\":\(jsonNumber(ch.minValue)),\"max\":\(jsonNumber(ch.maxValue))}"
                }
                let filter = filters[id].map { "{\"id\":\($0.id),\"query\":\(jsonString($0.query))}" } ?? "null"
                sources.append(
                    "{\"id\":\(id),\"name\":\(jsonString(sourceNames[id] ?? c?.deviceName ?? "")),"
                        + "\"device\":\(jsonString(c?.deviceName ?? "")),\"channels\":[\(channels.joined(separator: ","))],"
                        + "\"filter\":\(filter)}")
            }
            let selected = selection.map { "[\($0.source),\($0.channel)]" }.joined(separator: ",")
            return "{\"type\":\"config\",\"sources\":[\(sources.joined(separator: ","))],\"selection\":[\(selected)],"
                + "\"window\":\(jsonNumber(window)),\"windows\":[\(Self.windows.map(jsonNumber).joined(separator: ","))],"
                + "\"maxChannels\":\(Self.maxChannels),\"displayFilter\":\(displayFilter.map { jsonString($0.text) } ?? "null"),"
                + "\"recorder\":\(recorder)}"
        }
    }
}

/// A JSON string literal that never closes a script element (`<` escaped), its control characters
/// escaped as in every JSON output of the tool.
func jsonString(_ s: String) -> String { JSON.quoted(s, inScript: true) }

/// A JSON number (null for NaN and infinities).
func jsonNumber(_ x: Double) -> String {
    guard x.isFinite else { return "null" }
    if x == x.rounded() && abs(x) < 1e15 { return String(Int64(x)) }
    return "\(x)"
}
