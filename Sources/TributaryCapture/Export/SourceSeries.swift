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
        // One channel-major buffer sized from the seek table (chunk envelopes count samples per
        // channel), filled in place: no growth, no per-channel arrays to join.
        let analogMask = UInt32(1) << UInt32(FrameKind.analog.rawValue)
        let expected = reader.index.filter { $0.envelope.type == .chunk && $0.envelope.sourceID == source && $0.envelope.kindMask & analogMask != 0 }
            .reduce(0) { $0 + Int($1.envelope.sampleCount) }
        var capacity = expected
        var f64: [Double] = [], f32: [Float] = [], i16: [Int16] = []
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
                switch view.format {
                case .float64: f64 = [Double](repeating: 0, count: rows.count * capacity)
                case .float32: f32 = [Float](repeating: 0, count: rows.count * capacity)
                case .int16: i16 = [Int16](repeating: 0, count: rows.count * capacity)
                }
            }
            guard viewIndexes == indexes, view.format == format, rows.map({ view.scale($0) }) == scale, rows.map({ view.offset($0) }) == offset else {
                problem = CaptureError(.usage, file: path, "the analog frames of source \(source) change channels, format or scaling; cannot export one matrix")
                return
            }
            let n = view.sampleCount
            if total + n > capacity {
                let bigger = max(2 * capacity, total + n)
                switch view.format {
                case .float64: grow(&f64, rows: rows.count, from: capacity, to: bigger, zero: 0)
                case .float32: grow(&f32, rows: rows.count, from: capacity, to: bigger, zero: 0)
                case .int16: grow(&i16, rows: rows.count, from: capacity, to: bigger, zero: 0)
                }
                capacity = bigger
            }
            blocks.append(SeriesBlock(start: total, count: n, timestampNs: header.timestampNs, firstSample: view.firstSample))
            for (k, r) in rows.enumerated() {
                let at = k * capacity + total
                switch view.format {
                case .float64: view.withSamples(Double.self, channel: r) { src in f64.withUnsafeMutableBufferPointer { _ = UnsafeMutableBufferPointer(rebasing: $0[at..<(at + n)]).initialize(from: src) } }
                case .float32: view.withSamples(Float.self, channel: r) { src in f32.withUnsafeMutableBufferPointer { _ = UnsafeMutableBufferPointer(rebasing: $0[at..<(at + n)]).initialize(from: src) } }
                case .int16: view.withSamples(Int16.self, channel: r) { src in i16.withUnsafeMutableBufferPointer { _ = UnsafeMutableBufferPointer(rebasing: $0[at..<(at + n)]).initialize(from: src) } }
                }
            }
            total += n
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
        // Fewer samples than the seek table promised (a chunk skipped as damaged): close the rows up.
        func compact<T>(_ v: [T]) -> [T] {
            guard capacity != total else { return v }
            var out: [T] = []
            out.reserveCapacity(rows.count * total)
            for r in 0..<rows.count { out.append(contentsOf: v[(r * capacity)..<(r * capacity + total)]) }
            return out
        }
        switch format {
        case .float64: samples = .float64(compact(f64))
        case .float32: samples = .float32(compact(f32))
        case .int16: samples = .int16(compact(i16))
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
