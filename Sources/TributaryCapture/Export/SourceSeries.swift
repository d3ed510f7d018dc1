import Foundation
import TributaryFormats
import TributaryWire

/// One analog frame's place in a gathered series.
public struct SeriesBlock: Sendable, Equatable {
    /// Index of the frame's first sample in the series.
    public var start: Int
    public var count: Int
    /// The frame's `timestamp_ns` (time of its first sample, ns since 1970).
    public var timestampNs: Int64
    /// The frame's `first_sample` counter.
    public var firstSample: UInt64
}

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
    /// Channel-major samples as recorded (int16 as counts).
    public var samples: NPYSamples
    public var sampleCount: Int
    /// int16 rows: value = count × scale + offset.
    public var scale: [Double]
    public var offset: [Double]
    public var blocks: [SeriesBlock]
    /// Gap records of the source (lost frames).
    public var gaps: [CaptureGap]
    public var damage: [CaptureDamage]

    public var channelCount: Int { channelIndexes.count }
    /// Time of the first sample (ns since 1970).
    public var startNs: Int64 { blocks.first?.timestampNs ?? 0 }
    public var isCounts: Bool { if case .int16 = samples { true } else { false } }

    /// Series indexes where the `first_sample` counter jumps (samples missing before them).
    public var discontinuities: [Int] {
        var out: [Int] = []
        for k in blocks.indices.dropFirst() where blocks[k].firstSample != blocks[k - 1].firstSample &+ UInt64(blocks[k - 1].count) {
            out.append(blocks[k].start)
        }
        return out
    }

    /// Values as float64 (int16 counts × scale + offset), channel-major.
    public var physicalValues: [Double] {
        switch samples {
        case .float64(let v): return v
        case .float32(let v): return v.map(Double.init)
        case .int16(let v):
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
    }

    /// The sources of a capture that hold analog data, in id order.
    public static func analogSources(_ reader: CaptureReader) -> [UInt32] {
        let mask = UInt32(1) << UInt32(FrameKind.analog.rawValue)
        return Set(reader.index.filter { $0.envelope.type == .chunk && $0.envelope.kindMask & mask != 0 }.map(\.envelope.sourceID)).sorted()
    }

    /// Gathers every analog frame of `source` in one pass.
    /// - Throws: `CaptureError.usage` when frames change channels, format or scaling or a wanted channel is
    ///   missing; `.damagedRecord` when the reader found damage and `allowDamage` is false.
    public init(reader: CaptureReader, source: UInt32, channels: [UInt32]? = nil, allowDamage: Bool = false) throws(CaptureError) {
        sourceID = source
        let configuration = reader.configuration(source: source)
        deviceName = configuration?.deviceName ?? "source \(source)"
        deviceType = configuration?.deviceType ?? ""
        var rows: [Int] = []
        var indexes: [UInt32]?
        var format: SampleFormat?
        var f64: [[Double]] = [], f32: [[Float]] = [], i16: [[Int16]] = []
        var scale: [Double] = [], offset: [Double] = []
        var blocks: [SeriesBlock] = []
        var total = 0
        var problem: CaptureError?
        let path = reader.path
        reader.forEachAnalogBlock(source: source) { header, view in
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
                f64 = Array(repeating: [], count: rows.count)
                f32 = f64.map { _ in [] }
                i16 = f64.map { _ in [] }
            }
            guard viewIndexes == indexes, view.format == format, rows.map({ view.scale($0) }) == scale, rows.map({ view.offset($0) }) == offset else {
                problem = CaptureError(.usage, file: path, "the analog frames of source \(source) change channels, format or scaling; cannot export one matrix")
                return
            }
            blocks.append(SeriesBlock(start: total, count: view.sampleCount, timestampNs: header.timestampNs, firstSample: view.firstSample))
            total += view.sampleCount
            for (k, r) in rows.enumerated() {
                switch view.format {
                case .float64: view.withSamples(Double.self, channel: r) { f64[k].append(contentsOf: $0) }
                case .float32: view.withSamples(Float.self, channel: r) { f32[k].append(contentsOf: $0) }
                case .int16: view.withSamples(Int16.self, channel: r) { i16[k].append(contentsOf: $0) }
                }
            }
        }
        if let problem { throw problem }
        damage = reader.damage
        if let d = damage.first, !allowDamage {
            throw CaptureError(.damagedRecord, file: path, offset: d.offset,
                               "\(d.reason)" + (damage.count > 1 ? " (and \(damage.count - 1) more damaged regions)" : ""))
        }
        guard let indexes, let format else { throw CaptureError(.usage, file: path, "source \(source) has no analog data") }
        channelIndexes = rows.map { indexes[$0] }
        let configured = channelIndexes.map { i in configuration?.channels.first { $0.index == i } }
        channelNames = zip(channelIndexes, configured).map { i, c in c.map { $0.description.isEmpty ? "ch\(i)" : $0.description } ?? "ch\(i)" }
        units = configured.map { $0?.unit ?? "" }
        let rates = Set(configured.compactMap { $0?.samplingRate }.filter { $0 > 0 && $0.isFinite })
        rate = rates.count == 1 && configured.allSatisfy({ $0 != nil }) ? rates.first : nil
        self.scale = scale
        self.offset = offset
        self.blocks = blocks
        sampleCount = total
        switch format {
        case .float64: samples = .float64(f64.flatMap { $0 })
        case .float32: samples = .float32(f32.flatMap { $0 })
        case .int16: samples = .int16(i16.flatMap { $0 })
        }
        gaps = reader.gaps.filter { $0.sourceID == source }
    }

    /// The samples from `start` seconds after the first sample, for `duration` seconds (nil: to the end).
    /// Needs a rate. Blocks are cut to the selection; gaps outside it are dropped.
    public func selecting(start: Double, duration: Double?) throws(CaptureError) -> SourceSeries {
        guard let rate else { throw CaptureError(.usage, file: "", "source \(sourceID) has no single sampling rate; cannot select by time") }
        let first = min(sampleCount, max(0, Int((start * rate).rounded())))
        let end = duration.map { min(sampleCount, first + max(0, Int(($0 * rate).rounded()))) } ?? sampleCount
        var out = self
        out.sampleCount = end - first
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
        }
        out.blocks = blocks.compactMap { b -> SeriesBlock? in
            let s = max(b.start, first), e = min(b.start + b.count, end)
            guard s < e else { return nil }
            let skip = s - b.start
            return SeriesBlock(start: s - first, count: e - s, timestampNs: b.timestampNs + Int64((Double(skip) / rate * 1e9).rounded()),
                               firstSample: b.firstSample + UInt64(skip))
        }
        if let a = out.blocks.first, let z = out.blocks.last {
            let last = z.timestampNs + Int64((Double(z.count) / rate * 1e9).rounded())
            out.gaps = gaps.filter { $0.timeNs >= a.timestampNs && $0.timeNs <= last }
        } else {
            out.gaps = []
        }
        return out
    }
}
