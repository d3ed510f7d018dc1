import Foundation
import TributaryCapture
import TributaryFormats
import TributaryWire

/// The analog data of one source of a capture with everything the measurement formats carry: names,
/// units, rate, device, the time of every frame and the recorded gaps. What `export` writes as TDMS/XDF.
public struct SourceSeries: Sendable {
    public var sourceID: UInt32
    public var deviceName: String
    public var deviceType: String
    public var channelIndexes: [UInt32]
    public var channelNames: [String]
    public var units: [String]
    /// Samples per second (from the configuration; nil when unknown or mixed).
    public var rate: Double?
    /// Channel-major samples as recorded (int16 and int32 as counts).
    public var samples: NPYSamples
    public var sampleCount: Int
    /// int16 and int32 rows: value = count × scale + offset.
    public var scale: [Double]
    public var offset: [Double]
    public var blocks: [SeriesBlock]
    /// The source's sample (counted from its first) at which this series starts: 0 unless the
    /// gather was given a window and skipped the chunks before it (`selecting` counts from the source's first sample).
    public var firstSampleIndex = 0
    /// The source's free-form properties (`CaptureReader.properties`), in their order.
    public var properties: [Property] = []
    /// Each exported channel's properties, in the order of `channelIndexes`.
    public var channelProperties: [[Property]] = []
    /// Gap records of the source (lost frames).
    public var gaps: [CaptureGap]
    public var damage: [CaptureDamage]

    public var channelCount: Int { channelIndexes.count }
    /// Time of the first sample (ns since 1970).
    public var startNs: Int64 { blocks.first?.timestampNs ?? 0 }
    /// Time of the last sample (ns since 1970): its block's time + its index in the block / rate,
    /// saturated; the block's time without a rate.
    var endNs: Int64 {
        guard let b = blocks.last else { return 0 }
        guard let rate, rate > 0 else { return b.timestampNs }
        return SampleTime.adding(saturating: Double(max(0, b.count - 1)) / rate, to: b.timestampNs)
    }
    public var isCounts: Bool {
        switch samples {
        case .int16, .int32: true
        case .float64, .float32: false
        }
    }

    /// Series indexes where the `first_sample` counter jumps (samples missing before them).
    public var discontinuities: [Int] {
        var out: [Int] = []
        for k in blocks.indices.dropFirst() where blocks[k].firstSample != blocks[k - 1].firstSample &+ UInt64(blocks[k - 1].count) {
            out.append(blocks[k].start)
        }
        return out
    }

    /// Values as float64 (int16 / int32 counts × scale + offset), channel-major.
    public var physicalValues: [Double] {
        switch samples {
        case .float64(let v): return v
        case .float32(let v): return v.map(Double.init)
        case .int16(let v): return scaled(v)
        case .int32(let v): return scaled(v)
        }
    }

    /// Counts × scale + offset, channel by channel.
    private func scaled<T: BinaryInteger>(_ v: [T]) -> [Double] {
        var out = [Double](repeating: 0, count: v.count)
        out.withUnsafeMutableBufferPointer { o in
            v.withUnsafeBufferPointer { i in
                for c in 0..<channelCount {
                    let s = scale[c], f = offset[c], base = c * sampleCount
                    for k in base..<(base + sampleCount) { o[k] = Double(i[k]) * s + f }
                }
            }
        }
        return out
    }

    /// The time of every sample in seconds since `originNs` (the source's first sample: a part selected
    /// from 1 s on starts at 1.0): what `export --time-column` writes (`sampleTimes(of:since:rate:in:into:)`);
    /// nil without one sampling rate.
    public func sampleTimes(since originNs: Int64) -> [Double]? {
        guard let rate else { return nil }
        var times = [Double](repeating: 0, count: sampleCount)
        times.withUnsafeMutableBufferPointer { Self.sampleTimes(of: blocks, since: originNs, rate: rate, in: 0..<sampleCount, into: $0) }
        return times
    }

    /// The time of samples `range` (numbered as `blocks` number them) in seconds since `originNs`,
    /// into `out[0 ..< range.count]`: each frame's recorded `timestamp_ns` plus k / `rate` for its
    /// k-th sample, so that samples after a gap (frames lost, a publisher restarted) are where they
    /// were recorded, not where an even clock would put them. The one computation of these times:
    /// `export --time-column` and the C interface's `tributary_capture_times` both call it. Samples
    /// of `range` that no block holds are left as they are; `out` shorter than `range` gets its first ones.
    public static func sampleTimes(
        of blocks: [SeriesBlock], since originNs: Int64, rate: Double, in range: Range<Int>,
        into out: UnsafeMutableBufferPointer<Double>
    ) {
        let range = range.lowerBound..<(range.lowerBound + min(range.count, out.count))
        for b in blocks {
            let (end, overflow) = b.start.addingReportingOverflow(b.count)
            let lower = max(b.start, range.lowerBound), upper = min(overflow ? .max : end, range.upperBound)
            guard lower < upper else { continue }
            let t = seconds(b.timestampNs, since: originNs)
            for i in lower..<upper { out[i - range.lowerBound] = t + Double(i - b.start) / rate }
        }
    }

    /// `ns` − `originNs` in seconds: exact to the nanosecond as an Int64 difference; timestamps so
    /// far apart that the difference overflows (a damaged or hostile file) as a difference of doubles.
    static func seconds(_ ns: Int64, since originNs: Int64) -> Double {
        let (difference, overflow) = ns.subtractingReportingOverflow(originNs)
        return overflow ? (Double(ns) - Double(originNs)) / 1e9 : Double(difference) / 1e9
    }

    /// The one sampling rate of the channels `channels` of `source` as its configuration gives it
    /// (what a gathered series' `rate` is); nil when unknown or mixed.
    public static func rate(reader: CaptureReader, source: UInt32, channels: [UInt32]) -> Double? {
        rate(of: configured(channels, of: reader.configuration(source: source)))
    }

    /// The sources of a capture that hold analog data, in id order.
    public static func analogSources(_ reader: CaptureReader) -> [UInt32] {
        let mask = UInt32(1) << UInt32(FrameKind.analog.rawValue)
        return Set(reader.index.filter { $0.envelope.type == .chunk && $0.envelope.kindMask & mask != 0 }.map(\.envelope.sourceID)).sorted()
    }

    /// The configured channels of `indexes` (nil where the configuration has none).
    static func configured(_ indexes: [UInt32], of configuration: Configuration?) -> [ChannelConfiguration?] {
        let byIndex = Dictionary((configuration?.channels ?? []).map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
        return indexes.map { byIndex[$0] }
    }

    /// The one sampling rate of `configured` channels, or nil (unknown or mixed).
    static func rate(of configured: [ChannelConfiguration?]) -> Double? {
        let rates = Set(configured.compactMap { $0?.samplingRate }.filter { $0 > 0 && $0.isFinite })
        return rates.count == 1 && configured.allSatisfy({ $0 != nil }) ? rates.first : nil
    }

    /// The samples of `source` that `selecting(start:duration:)` will keep, by the rate its
    /// configuration gives the channels of its first analog frame (or `channels`), as a `window`
    /// for `init`; nil when that rate is not known (then `selecting` says why) or no frame is readable.
    public static func window(reader: CaptureReader, source: UInt32, channels: [UInt32]?, start: Double, duration: Double?) -> Range<Int>? {
        guard let view = firstAnalogView(reader, analogEntries(reader, source: source)),
            let rate = rate(of: configured(channels ?? view.channelIndexes, of: reader.configuration(source: source)))
        else { return nil }
        let lower = samples(start, rate: rate)
        return lower..<(duration.map { lower + samples($0, rate: rate) } ?? Int.max / 2)
    }

    /// `seconds` × `rate` as a number of samples, rounded, within 0 … Int.max / 4 (further than any
    /// capture reaches; two of them still add up without overflow): a time of 1e300 s selects
    /// nothing or everything instead of trapping.
    static func samples(_ seconds: Double, rate: Double) -> Int {
        let n = (seconds * rate).rounded()
        return n.isNaN ? 0 : Int(max(0, min(Double(Int.max / 4), n)))
    }

    /// What gathering `source` (`init`) holds in memory, estimated before any sample is decoded: the
    /// values — its channels (or the `channels` wanted) × the samples its chunks hold, the seek
    /// table's counts bounded by what the chunks' frames can hold — and the bytes each takes in the
    /// type of its first analog frame, plus a float64 copy when int16 counts will be turned into
    /// `physical` values; and whether the source holds counts. nil when the source has no readable
    /// analog frame (the gather then says why).
    public static func gatherSize(
        reader: CaptureReader, source: UInt32, channels: [UInt32]?, window: Range<Int>? = nil,
        physical: Bool
    ) -> (values: Int, bytesPerValue: Int, counts: Bool)? {
        let all = analogEntries(reader, source: source)
        let entries = window.flatMap { Self.entries(all, covering: $0)?.kept } ?? all
        guard let view = firstAnalogView(reader, entries) else { return nil }
        let samples = min(claimedSamples(entries), samplesTheFramesCanHold(entries, format: view.format, channels: view.channelCount))
        let (values, overflow) = (channels?.count ?? view.channelCount).multipliedReportingOverflow(by: samples)
        let perValue = view.format.size + (physical && view.format.isCounts ? MemoryLayout<Double>.size : 0)
        return (overflow ? .max : values, perValue, view.format.isCounts)
    }

    /// Gathers every analog frame of `source` in one pass.
    /// - Throws: `CaptureError.usage` when frames change channels, format or scaling or a wanted channel is
    ///   missing; `.damagedRecord` when the reader found damage and `allowDamage` is false.
    /// - Parameter window: the source's samples (counted from its first, by the seek table's counts)
    ///   that will be used (`selecting`); the chunks wholly outside it are not read. When the chunks
    ///   read do not hold the samples their counts claim, every chunk is read after all.
    public init(
        reader: CaptureReader, source: UInt32, channels: [UInt32]? = nil, allowDamage: Bool = false,
        window: Range<Int>? = nil
    ) throws(CaptureError) {
        let all = Self.analogEntries(reader, source: source)
        if let window, let (kept, skipped) = Self.entries(all, covering: window), kept.count < all.count {
            let part = try SourceSeries(
                reader: reader, source: source, channels: channels, allowDamage: allowDamage, entries: kept,
                skipped: skipped)
            if part.sampleCount == Self.claimedSamples(kept) {
                self = part
                firstSampleIndex = skipped
                return
            }
        }
        try self.init(reader: reader, source: source, channels: channels, allowDamage: allowDamage, entries: all, skipped: 0)
    }

    /// The first analog frame of the first of `entries` (the view keeps its frame's buffer), or nil
    /// when there is none or that chunk cannot be read.
    static func firstAnalogView(_ reader: CaptureReader, _ entries: [IndexEntry]) -> AnalogView? {
        guard let first = entries.first, let frames = try? reader.frames(of: first),
            let frame = frames.first(where: { $0.header.kind == .analog })
        else { return nil }
        return try? frame.analog()
    }

    /// The analog chunks of `source`, in file order.
    static func analogEntries(_ reader: CaptureReader, source: UInt32) -> [IndexEntry] {
        let analogMask = UInt32(1) << UInt32(FrameKind.analog.rawValue)
        return reader.index.filter {
            $0.envelope.type == .chunk && $0.envelope.sourceID == source && $0.envelope.kindMask & analogMask != 0
        }
    }

    /// The chunks of `entries` holding any of the samples `window` (by their claimed counts), and
    /// the samples before the first of them; nil when none does or the counts overflow.
    static func entries(_ entries: [IndexEntry], covering window: Range<Int>) -> (kept: [IndexEntry], skipped: Int)? {
        var start = 0, kept: [IndexEntry] = [], skipped = 0
        for e in entries {
            let end = saturatingSum(start, e.envelope.sampleCount)
            guard end < Int.max else { return nil }
            if start < window.upperBound && end > window.lowerBound {
                if kept.isEmpty { skipped = start }
                kept.append(e)
            }
            start = end
        }
        return kept.isEmpty ? nil : (kept, skipped)
    }

    private init(
        reader: CaptureReader, source: UInt32, channels: [UInt32]?, allowDamage: Bool, entries: [IndexEntry],
        skipped: Int
    ) throws(CaptureError) {
        sourceID = source
        let configuration = reader.configuration(source: source)
        deviceName = configuration?.deviceName ?? "source \(source)"
        deviceType = configuration?.deviceType ?? ""
        // The window read (every core, straight into place) when nothing is unusual; else (or when it
        // finds anything odd) one frame at a time here, which reads around damage and says what is wrong.
        var gathered = Self.windowRead(reader: reader, source: source, channels: channels, entries: entries, skipped: skipped)
        if gathered == nil { gathered = try Self.gatherFrameByFrame(reader: reader, source: source, channels: channels, entries: entries) }
        damage = reader.damage
        if let d = damage.first, !allowDamage {
            throw CaptureError(
                .damagedRecord, file: reader.path, offset: d.offset,
                "\(d.reason)" + (damage.count > 1 ? " (and \(damage.count - 1) more damaged regions)" : ""))
        }
        guard let gathered else { throw CaptureError(.usage, file: reader.path, "source \(source) has no analog data") }
        channelIndexes = gathered.rows.map { gathered.indexes[$0] }
        let configured = Self.configured(channelIndexes, of: configuration)
        channelNames = zip(channelIndexes, configured).map { i, c in
            c.map { $0.description.isEmpty ? "ch\(i)" : $0.description } ?? "ch\(i)"
        }
        units = configured.map { $0?.unit ?? "" }
        rate = Self.rate(of: configured)
        scale = gathered.scale
        offset = gathered.offset
        blocks = gathered.blocks
        sampleCount = gathered.total
        samples = gathered.samples
        gaps = reader.gaps.filter { $0.sourceID == source }
        let recorded = reader.properties(source: source)
        properties = recorded.source
        channelProperties = channelIndexes.map { recorded.channel($0) }
    }

    /// The samples from `start` seconds after the first sample, for `duration` seconds (nil: to the end).
    /// Needs a rate. Blocks are cut to the selection; gaps outside it are dropped.
    public func selecting(start: Double, duration: Double?) throws(CaptureError) -> SourceSeries {
        guard let rate else {
            throw CaptureError(.usage, file: "", "source \(sourceID) has no single sampling rate; cannot select by time")
        }
        let first = min(sampleCount, max(0, Self.samples(start, rate: rate) - firstSampleIndex))
        let end = duration.map { min(sampleCount, first + Self.samples($0, rate: rate)) } ?? sampleCount
        var out = self
        out.sampleCount = end - first
        out.firstSampleIndex = firstSampleIndex + first
        func cut<T>(_ v: [T]) -> [T] {
            var r: [T] = []
            r.reserveCapacity(channelCount * (end - first))
            for c in 0..<channelCount { r.append(contentsOf: v[(c * sampleCount + first)..<(c * sampleCount + end)]) }
            return r
        }
        switch samples {
        case .float64(let v): out.samples = .float64(cut(v))
        case .float32(let v): out.samples = .float32(cut(v))
        case .int16(let v): out.samples = .int16(cut(v))
        case .int32(let v): out.samples = .int32(cut(v))
        }
        var cut: [SeriesBlock] = []
        for b in blocks {
            let s = max(b.start, first), e = min(b.start + b.count, end)
            guard s < e else { continue }
            let skip = s - b.start
            // The counter wraps as the recorded ones may (`discontinuities` compares with &+ too).
            cut.append(
                SeriesBlock(
                    start: s - first, count: e - s, timestampNs: try time(b.timestampNs, after: skip, rate: rate),
                    firstSample: b.firstSample &+ UInt64(skip)))
        }
        out.blocks = cut
        if let a = out.blocks.first, let z = out.blocks.last {
            let last = try time(z.timestampNs, after: z.count, rate: rate)
            out.gaps = gaps.filter { $0.timeNs >= a.timestampNs && $0.timeNs <= last }
        } else {
            out.gaps = []
        }
        return out
    }

    /// The time `samples` samples at `rate` after a frame's `timestampNs`, checked: a rate from the
    /// configuration (1e-300 Hz) or a frame time near the end of `timestamp_ns`'s range would otherwise
    /// trap in the conversion or the sum.
    /// - Throws: `CaptureError.usage` naming the source, the frame time and the rate.
    private func time(_ timestampNs: Int64, after samples: Int, rate: Double) throws(CaptureError) -> Int64 {
        let offset = (Double(samples) / rate * 1e9).rounded()
        if let offset = Int64(exactly: offset), case (let t, false) = timestampNs.addingReportingOverflow(offset) { return t }
        throw CaptureError(
            .usage, file: "",
            "source \(sourceID): \(samples) samples at \(rate) Hz after the frame stamped \(timestampNs) ns "
                + "is beyond the range of timestamp_ns (about ±292 years from 1970); cannot select by time")
    }
}

/// What a gather produced: the rows read of the recorded channels, their layout, the samples and frames.
struct GatheredSamples {
    var rows: [Int]
    var indexes: [UInt32]
    var format: SampleFormat
    var scale: [Double]
    var offset: [Double]
    var samples: NPYSamples
    var blocks: [SeriesBlock]
    var total: Int
}

extension SourceSeries {
    /// `a` + `b` samples, or Int.max when that does not fit (the counts come from the file).
    static func saturatingSum(_ a: Int, _ b: UInt64) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(Int(clamping: b))
        return overflow ? .max : sum
    }

    /// The samples per channel that the seek table claims for `entries` (saturating).
    static func claimedSamples(_ entries: [IndexEntry]) -> Int {
        entries.reduce(0) { saturatingSum($0, $1.envelope.sampleCount) }
    }

    /// The most samples per channel that the frames of `entries` can hold with `channels` rows of
    /// `format` (every such sample takes that many bytes of the frames).
    static func samplesTheFramesCanHold(_ entries: [IndexEntry], format: SampleFormat, channels: Int) -> Int {
        let bytes = entries.reduce(0) { $0 + Int($1.envelope.framesLength) }
        return bytes / max(1, format.size * channels)
    }
}

extension SourceSeries {
    /// Reads the chunks `entries` of `source` (its samples from `skipped` on) with the one window read,
    /// `SampleWindow` (every core, each chunk decoded straight into its place). Returns nil — and
    /// the caller gathers frame by frame, which reports what went wrong — on anything unusual:
    /// damage, a chunk claiming no samples, a wanted channel missing, frames that change channels,
    /// format or scaling from the source's first, or a chunk whose samples differ from its seek-table count.
    static func windowRead(reader: CaptureReader, source: UInt32, channels: [UInt32]?, entries: [IndexEntry], skipped: Int)
        -> GatheredSamples?
    {
        guard reader.damage.isEmpty, !entries.isEmpty, entries.allSatisfy({ $0.envelope.sampleCount > 0 }),
            let window = try? SampleWindow(reader: reader, source: source), let first = UInt64(exactly: skipped)
        else { return nil }
        let shape = window.shape
        var rows = Array(shape.channelIndexes.indices)
        if let channels {
            rows = []
            for w in channels {
                guard let r = shape.channelIndexes.firstIndex(of: w) else { return nil }
                rows.append(r)
            }
        }
        let total = claimedSamples(entries)
        // The seek table's counts are claims: one the chunks' frames cannot hold goes the careful way.
        guard !rows.isEmpty, total > 0, total <= samplesTheFramesCanHold(entries, format: shape.format, channels: shape.channelCount) else {
            return nil
        }
        var read: SampleWindowRead?
        func gather<T>(_: T.Type) -> [T] {
            [T](unsafeUninitializedCapacity: rows.count * total) { buffer, count in
                count = rows.count * total
                read = try? window.read(
                    rows: rows, first: first, count: total, as: .stored, into: UnsafeMutableRawBufferPointer(buffer), blocks: true)
            }
        }
        let samples: NPYSamples
        switch shape.format {
        case .float64: samples = .float64(gather(Double.self))
        case .float32: samples = .float32(gather(Float.self))
        case .int16: samples = .int16(gather(Int16.self))
        case .int32: samples = .int32(gather(Int32.self))
        }
        guard let read, read.samples == total else { return nil }
        let blocks = read.blocks.map {
            SeriesBlock(start: $0.start - skipped, count: $0.count, timestampNs: $0.timestampNs, firstSample: $0.firstSample)
        }
        return GatheredSamples(
            rows: rows, indexes: shape.channelIndexes, format: shape.format, scale: rows.map { shape.scale[$0] },
            offset: rows.map { shape.offset[$0] }, samples: samples, blocks: blocks, total: total)
    }
}

extension SourceSeries {
    /// Gathers the analog frames of `entries` one at a time, in order, into one channel-major buffer
    /// sized from the seek table (chunk envelopes count samples per channel) and filled in place,
    /// grown when the chunks hold more and closed up when they hold fewer (a chunk skipped as
    /// damaged, and added to the reader's `damage`). Nil when no frame is readable.
    /// - Throws: `CaptureError.usage` when frames change channels, format or scaling or a wanted channel is missing.
    static func gatherFrameByFrame(reader: CaptureReader, source: UInt32, channels: [UInt32]?, entries: [IndexEntry]) throws(CaptureError)
        -> GatheredSamples?
    {
        var rows: [Int] = []
        var indexes: [UInt32]?
        var format: SampleFormat?
        var capacity = claimedSamples(entries)
        var f64: [Double] = [], f32: [Float] = [], i16: [Int16] = [], i32: [Int32] = []
        var scale: [Double] = [], offset: [Double] = []
        var blocks: [SeriesBlock] = []
        var total = 0
        var problem: CaptureError?
        let path = reader.path
        func grow<T>(_ v: inout [T], rows: Int, from old: Int, to new: Int, zero: T) {
            var bigger = [T](repeating: zero, count: rows * new)
            for r in 0..<rows { bigger[(r * new)..<(r * new + old)] = v[(r * old)..<(r * old + old)] }
            v = bigger
        }
        // Copies `count` samples of the view's row `channel` into `v` from `at`.
        func place<T: AnalogSampleType>(_ v: inout [T], channel: Int, of view: AnalogView, at: Int, count: Int) {
            view.withSamples(T.self, channel: channel) { src in
                v.withUnsafeMutableBufferPointer { _ = UnsafeMutableBufferPointer(rebasing: $0[at..<(at + count)]).initialize(from: src) }
            }
        }
        reader.forEachAnalogBlock(in: entries) { header, view in
            guard problem == nil else { return }
            let viewIndexes = view.channelIndexes
            if indexes == nil {
                indexes = viewIndexes
                format = view.format
                if let wanted = channels {
                    for w in wanted {
                        guard let r = viewIndexes.firstIndex(of: w) else {
                            problem = CaptureError(.usage, file: path, "source \(source) has no channel \(w) (recorded: \(viewIndexes))")
                            return
                        }
                        rows.append(r)
                    }
                } else {
                    rows = Array(0..<viewIndexes.count)
                }
                scale = rows.map { view.scale($0) }
                offset = rows.map { view.offset($0) }
                // The seek table's counts are claims: reserve no more than the chunks' frames can hold.
                capacity = min(capacity, Self.samplesTheFramesCanHold(entries, format: view.format, channels: viewIndexes.count))
                switch view.format {
                case .float64: f64 = [Double](repeating: 0, count: rows.count * capacity)
                case .float32: f32 = [Float](repeating: 0, count: rows.count * capacity)
                case .int16: i16 = [Int16](repeating: 0, count: rows.count * capacity)
                case .int32: i32 = [Int32](repeating: 0, count: rows.count * capacity)
                }
            }
            guard viewIndexes == indexes, view.format == format, rows.map({ view.scale($0) }) == scale,
                rows.map({ view.offset($0) }) == offset
            else {
                problem = CaptureError(
                    .usage, file: path, "the analog frames of source \(source) change channels, format or scaling; cannot export one matrix"
                )
                return
            }
            let n = view.sampleCount
            if total + n > capacity {
                let bigger = max(2 * capacity, total + n)
                switch view.format {
                case .float64: grow(&f64, rows: rows.count, from: capacity, to: bigger, zero: 0)
                case .float32: grow(&f32, rows: rows.count, from: capacity, to: bigger, zero: 0)
                case .int16: grow(&i16, rows: rows.count, from: capacity, to: bigger, zero: 0)
                case .int32: grow(&i32, rows: rows.count, from: capacity, to: bigger, zero: 0)
                }
                capacity = bigger
            }
            blocks.append(SeriesBlock(start: total, count: n, timestampNs: header.timestampNs, firstSample: view.firstSample))
            for (k, r) in rows.enumerated() {
                let at = k * capacity + total
                switch view.format {
                case .float64: place(&f64, channel: r, of: view, at: at, count: n)
                case .float32: place(&f32, channel: r, of: view, at: at, count: n)
                case .int16: place(&i16, channel: r, of: view, at: at, count: n)
                case .int32: place(&i32, channel: r, of: view, at: at, count: n)
                }
            }
            total += n
        }
        if let problem { throw problem }
        guard let indexes, let format else { return nil }
        // Fewer samples than the seek table promised (a chunk skipped as damaged): close the rows up.
        func compact<T>(_ v: [T]) -> [T] {
            guard capacity != total else { return v }
            var out: [T] = []
            out.reserveCapacity(rows.count * total)
            for r in 0..<rows.count { out.append(contentsOf: v[(r * capacity)..<(r * capacity + total)]) }
            return out
        }
        let samples: NPYSamples
        switch format {
        case .float64: samples = .float64(compact(f64))
        case .float32: samples = .float32(compact(f32))
        case .int16: samples = .int16(compact(i16))
        case .int32: samples = .int32(compact(i32))
        }
        return GatheredSamples(
            rows: rows, indexes: indexes, format: format, scale: scale, offset: offset, samples: samples,
            blocks: blocks, total: total)
    }
}
