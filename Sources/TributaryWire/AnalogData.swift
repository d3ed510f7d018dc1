// The fuzz targets (Fuzz/run.sh) compile TributaryBytes' files into one module with the wire's.
#if canImport(TributaryBytes)
    import TributaryBytes
#endif

/// How analog samples are stored in a frame.
public enum SampleFormat: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// IEEE 754 binary64.
    case float64 = 1
    /// IEEE 754 binary32.
    case float32 = 2
    /// Signed 16-bit ADC counts; value = count × scale + offset, per channel.
    case int16 = 3
    /// Signed 32-bit ADC counts (24-bit delta-sigma codes, S24/S32 sound cards); value = count ×
    /// scale + offset, per channel, as int16.
    case int32 = 4

    /// Bytes per sample.
    @inlinable public var size: Int {
        switch self {
        case .float64: 8
        case .float32: 4
        case .int16: 2
        case .int32: 4
        }
    }

    /// Whether the samples are counts with a per-channel scale and offset (int16, int32).
    @inlinable public var isCounts: Bool { self == .int16 || self == .int32 }

    public var description: String {
        switch self {
        case .float64: "float64"
        case .float32: "float32"
        case .int16: "int16"
        case .int32: "int32"
        }
    }
}

/// Sample storage of an owned analog matrix, channel-major.
public enum AnalogSamples: Sendable, Hashable {
    case float64([Double])
    case float32([Float])
    /// Counts with per-channel scale and offset: value = count × scale + offset.
    case int16(counts: [Int16], scale: [Double], offset: [Double])
    /// 32-bit counts with per-channel scale and offset, as int16.
    case int32(counts: [Int32], scale: [Double], offset: [Double])

    public var format: SampleFormat {
        switch self {
        case .float64: .float64
        case .float32: .float32
        case .int16: .int16
        case .int32: .int32
        }
    }

    /// The per-channel scales and offsets of counts (int16, int32); nil for float samples.
    public var scales: (scale: [Double], offset: [Double])? {
        switch self {
        case .int16(_, let s, let o), .int32(_, let s, let o): (s, o)
        case .float64, .float32: nil
        }
    }

    /// The number of values (channels × samples).
    package var valueCount: Int {
        switch self {
        case .float64(let v): v.count
        case .float32(let v): v.count
        case .int16(let v, _, _): v.count
        case .int32(let v, _, _): v.count
        }
    }

    /// An analog frame of samples `first ..< first + count` of every channel, these samples holding
    /// `samplesPerChannel` per channel (channel-major); rows carry channel indexes 0, 1, … and, for
    /// int16, each channel's scale and offset. What `import` writes, one frame at a time.
    public func frame(header: FrameHeader, samplesPerChannel n: Int, first: Int, count: Int, firstSample: UInt64) -> Frame {
        let channels = n > 0 ? valueCount / n : 0
        let layout = AnalogLayout(channelCount: channels, sampleCount: count, format: format)
        return Frame.analog(header: header, layout: layout, firstSample: firstSample) { w in
            for c in 0..<channels {
                w.setChannelIndex(c, UInt32(c))
                let destination = w.samples(channel: c)
                let range = (c * n + first)..<(c * n + first + count)
                switch self {
                case .float64(let v): v[range].withUnsafeBytes { destination.copyMemory(from: $0) }
                case .float32(let v): v[range].withUnsafeBytes { destination.copyMemory(from: $0) }
                case .int16(let v, let scale, let offset):
                    w.setScale(c, scale: scale[c], offset: offset[c])
                    v[range].withUnsafeBytes { destination.copyMemory(from: $0) }
                case .int32(let v, let scale, let offset):
                    w.setScale(c, scale: scale[c], offset: offset[c])
                    v[range].withUnsafeBytes { destination.copyMemory(from: $0) }
                }
            }
        }
    }
}

/// An owned analog data package: a channels × samples matrix (SCCT AnalogDataPackage).
///
/// Received frames are read through `AnalogView` without copying; this type is for building
/// packages to send and for tests.
public struct AnalogData: Sendable, Hashable {
    /// The configuration index of each row (filtered frames keep the original indexes).
    public var channelIndexes: [UInt32]
    public var sampleCount: Int
    /// Index of the first sample in the source's sample stream.
    public var firstSample: UInt64
    /// Channel-major samples: channel c's samples are elements c·sampleCount ..< (c+1)·sampleCount.
    public var samples: AnalogSamples

    public init(channelIndexes: [UInt32], sampleCount: Int, firstSample: UInt64 = 0, samples: AnalogSamples) {
        precondition(samples.valueCount == channelIndexes.count * sampleCount, "samples must be channels × sampleCount")
        if let (scale, offset) = samples.scales {
            precondition(
                scale.count == channelIndexes.count && offset.count == channelIndexes.count,
                "one scale and offset per channel")
        }
        self.channelIndexes = channelIndexes
        self.sampleCount = sampleCount
        self.firstSample = firstSample
        self.samples = samples
    }

    /// A float64 matrix from one array per channel, indexed 0, 1, 2, …
    public init(channels: [[Double]], firstSample: UInt64 = 0) {
        let n = channels.first?.count ?? 0
        precondition(channels.allSatisfy { $0.count == n }, "every channel needs the same number of samples")
        self.init(
            channelIndexes: (0..<UInt32(channels.count)).map { $0 }, sampleCount: n,
            firstSample: firstSample, samples: .float64(channels.flatMap { $0 }))
    }

    var layout: AnalogLayout {
        AnalogLayout(channelCount: channelIndexes.count, sampleCount: sampleCount, format: samples.format)
    }

    func write(_ w: inout PayloadWriter) {
        let layout = self.layout
        w.withRegion(count: layout.contentLength) { region in
            layout.writePreamble(into: region, firstSample: firstSample)
            var fields = PayloadWriter(region, position: layout.indexesOffset)
            for index in channelIndexes { fields.write(index) }
            switch samples {
            case .float64(let values):
                fields.position = layout.samplesOffset
                values.withUnsafeBytes { fields.write($0) }
            case .float32(let values):
                fields.position = layout.samplesOffset
                values.withUnsafeBytes { fields.write($0) }
            case .int16(let counts, let scale, let offset):
                fields.position = layout.scalesOffset
                for v in scale + offset { fields.write(v) }
                counts.withUnsafeBytes { fields.write($0) }
            case .int32(let counts, let scale, let offset):
                fields.position = layout.scalesOffset
                for v in scale + offset { fields.write(v) }
                counts.withUnsafeBytes { fields.write($0) }
            }
        }
    }
}

/// Byte offsets of the parts of an analog payload (docs/PROTOCOL.md §4.3).
public struct AnalogLayout: Sendable, Hashable {
    public let channelCount: Int
    public let sampleCount: Int
    public let format: SampleFormat
    /// Offset of the u32 channel index table.
    public var indexesOffset: Int { 24 }
    /// Offset of the f64 scale table (then the f64 offset table); int16 and int32 only.
    public let scalesOffset: Int
    /// Offset of the first sample.
    public let samplesOffset: Int
    /// Bytes up to the end of the samples (the payload is this rounded up to 8).
    public let contentLength: Int

    @inlinable
    public init(channelCount: Int, sampleCount: Int, format: SampleFormat) {
        self.channelCount = channelCount
        self.sampleCount = sampleCount
        self.format = format
        scalesOffset = align8(24 + 4 * channelCount)
        samplesOffset = scalesOffset + (format.isCounts ? 16 * channelCount : 0)
        contentLength = samplesOffset + channelCount * sampleCount * format.size
    }

    /// Payload length of the frame: the content rounded up to 8.
    public var payloadLength: Int { align8(contentLength) }

    /// Writes the counts, `first_sample` and the format at the start of `payload` (its reserved bytes
    /// are left as they are: zero).
    func writePreamble(into payload: UnsafeMutableRawBufferPointer, firstSample: UInt64) {
        var w = PayloadWriter(payload)
        w.write(UInt32(channelCount))
        w.write(UInt32(sampleCount))
        w.write(firstSample)
        w.write(format.rawValue)
    }
}

/// A zero-copy view of a received analog matrix: samples are read in place from the frame's bytes.
///
/// The view retains the frame's buffer, so the pointers it hands to closures stay valid for the
/// duration of the closure and the view itself; do not let them escape the closure.
///
/// `@unchecked Sendable`: `payload` points into `buffer`, which is immutable and kept alive by the view.
public struct AnalogView: @unchecked Sendable {
    /// The header of the frame the view was decoded from.
    public let header: FrameHeader
    public let layout: AnalogLayout
    /// Index of the first sample in the source's sample stream.
    public let firstSample: UInt64
    @usableFromInline let payload: UnsafeRawPointer
    @usableFromInline let buffer: FrameBuffer

    @inlinable public var channelCount: Int { layout.channelCount }
    @inlinable public var sampleCount: Int { layout.sampleCount }
    @inlinable public var format: SampleFormat { layout.format }

    /// Validates an analog payload in O(1): the layout is derived from the counts, no sample is touched.
    @inlinable @inline(__always)
    init(header: FrameHeader, payload bytes: UnsafeRawBufferPointer, origin: Int, buffer: FrameBuffer) throws(WireError) {
        // Hot path: read the preamble and test everything at once; the cold path names the failure.
        // Direct loads bounded by the guard (as in FrameHeader.peek: checked loads measured slower here).
        guard bytes.count >= 24 else { throw Self.preambleError(bytes, origin) }
        let channelCount = Int(UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)))
        let sampleCount = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        guard channelCount <= WireLimits.maxChannels, channelCount > 0 || sampleCount <= WireLimits.maxEmptyDimension,
            let format = SampleFormat(rawValue: bytes[16])
        else {
            throw Self.preambleError(bytes, origin)
        }
        let layout = AnalogLayout(channelCount: channelCount, sampleCount: sampleCount, format: format)
        guard align8(layout.contentLength) == bytes.count else { throw Self.preambleError(bytes, origin) }
        self.header = header
        self.layout = layout
        firstSample = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        payload = bytes.baseAddress!
        self.buffer = buffer
    }

    /// Says which preamble field is invalid (the cold path of `init`).
    @usableFromInline @inline(never)
    static func preambleError(_ bytes: UnsafeRawBufferPointer, _ origin: Int) -> WireError {
        var r = PayloadReader(bytes, origin: origin)
        do {
            let (channelCount, sampleCount) = try r.readRowAndSampleCounts(
                "analog.channel_count", "analog.sample_count", row: "channel")
            _ = try r.read(UInt64.self, "analog.first_sample")
            let rawFormat = try r.read(UInt8.self, "analog.sample_format")
            guard let format = SampleFormat(rawValue: rawFormat) else {
                return WireError(
                    .invalidValue, field: "analog.sample_format", offset: origin + 16,
                    detail: "\(rawFormat); expected 1 (float64), 2 (float32), 3 (int16) or 4 (int32)")
            }
            try r.skip(7, "analog.reserved")
            let layout = AnalogLayout(channelCount: channelCount, sampleCount: sampleCount, format: format)
            return WireError(
                .lengthMismatch, field: "analog.sample_count", offset: origin + 4,
                detail: "\(channelCount) channels × \(sampleCount) \(format) samples need a payload of "
                    + "\(align8(layout.contentLength)) bytes, the header says \(bytes.count)")
        } catch {
            return error
        }
    }

    /// The payload's fields up to the samples (validated when the view was made).
    @inlinable
    var fields: PayloadReader { PayloadReader(UnsafeRawBufferPointer(start: payload, count: layout.samplesOffset)) }

    /// The configuration index of row `channel`.
    @inlinable
    public func channelIndex(_ channel: Int) -> UInt32 {
        precondition(channel >= 0 && channel < channelCount, "channel \(channel) out of range 0..<\(channelCount)")
        return fields.u32(at: layout.indexesOffset + 4 * channel)
    }

    /// All channel indexes, in row order.
    public var channelIndexes: [UInt32] { (0..<channelCount).map(channelIndex) }

    /// Scale of an int16 or int32 channel (value = count × scale + offset); 1 for float formats.
    @inlinable
    public func scale(_ channel: Int) -> Double {
        guard format.isCounts else { return 1 }
        return fields.f64(at: layout.scalesOffset + 8 * channel)
    }

    /// Offset of an int16 or int32 channel; 0 for float formats.
    @inlinable
    public func offset(_ channel: Int) -> Double {
        guard format.isCounts else { return 0 }
        return fields.f64(at: layout.scalesOffset + 8 * (channelCount + channel))
    }

    /// Calls `body` with one channel's samples in place. `T` must match `format`
    /// (Double for float64, Float for float32, Int16 for int16).
    @inlinable
    public func withSamples<T: AnalogSampleType, R, E: Error>(
        _ type: T.Type, channel: Int, _ body: (UnsafeBufferPointer<T>) throws(E) -> R
    ) throws(E) -> R {
        precondition(T.sampleFormat == format, "samples are \(format), not \(T.self)")
        precondition(channel >= 0 && channel < channelCount, "channel \(channel) out of range 0..<\(channelCount)")
        let start = (payload + layout.samplesOffset + channel * sampleCount * format.size).assumingMemoryBound(to: T.self)
        return try withExtendedLifetime(buffer) { () throws(E) -> R in
            try body(UnsafeBufferPointer(start: start, count: sampleCount))
        }
    }

    /// Calls `body` with the whole channel-major matrix in place (channelCount × sampleCount elements).
    @inlinable
    public func withMatrix<T: AnalogSampleType, R, E: Error>(
        _ type: T.Type, _ body: (UnsafeBufferPointer<T>) throws(E) -> R
    ) throws(E) -> R {
        precondition(T.sampleFormat == format, "samples are \(format), not \(T.self)")
        let start = (payload + layout.samplesOffset).assumingMemoryBound(to: T.self)
        return try withExtendedLifetime(buffer) { () throws(E) -> R in
            try body(UnsafeBufferPointer(start: start, count: channelCount * sampleCount))
        }
    }

    /// The raw sample bytes of the whole matrix, in place.
    @inlinable
    public func withSampleBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(buffer) { () throws(E) -> R in
            try body(
                UnsafeRawBufferPointer(
                    start: payload + layout.samplesOffset,
                    count: channelCount * sampleCount * format.size))
        }
    }

    /// One sample converted to Double (int16 counts are scaled).
    @inlinable
    public func value(channel: Int, sample: Int) -> Double {
        precondition(sample >= 0 && sample < sampleCount, "sample \(sample) out of range 0..<\(sampleCount)")
        let at = payload + layout.samplesOffset + (channel * sampleCount + sample) * format.size
        switch format {
        case .float64: return at.load(as: Double.self)
        case .float32: return Double(at.load(as: Float.self))
        case .int16: return Double(at.loadUnaligned(as: Int16.self)) * scale(channel) + offset(channel)
        case .int32: return Double(at.loadUnaligned(as: Int32.self)) * scale(channel) + offset(channel)
        }
    }

    /// One channel's physical values (counts times scale plus offset) written to the first
    /// `sampleCount` places of `out`, which must hold that many; allocates nothing.
    public func copyValues(channel: Int, into out: UnsafeMutableBufferPointer<Double>) {
        precondition(out.count >= sampleCount, "the buffer holds \(out.count) values, not \(sampleCount)")
        switch format {
        case .float64:
            withSamples(Double.self, channel: channel) { _ = out.update(fromContentsOf: $0) }
        case .float32:
            withSamples(Float.self, channel: channel) { s in for i in 0..<s.count { out[i] = Double(s[i]) } }
        case .int16:
            let scale = scale(channel), offset = offset(channel)
            withSamples(Int16.self, channel: channel) { s in for i in 0..<s.count { out[i] = Double(s[i]) * scale + offset } }
        case .int32:
            let scale = scale(channel), offset = offset(channel)
            withSamples(Int32.self, channel: channel) { s in for i in 0..<s.count { out[i] = Double(s[i]) * scale + offset } }
        }
    }

    /// A copy of one channel converted to Double (int16 and int32 counts are scaled).
    public func values(channel: Int) -> [Double] {
        switch format {
        case .float64: return withSamples(Double.self, channel: channel) { Array($0) }
        case .float32: return withSamples(Float.self, channel: channel) { $0.map(Double.init) }
        case .int16:
            let s = scale(channel), o = offset(channel)
            return withSamples(Int16.self, channel: channel) { $0.map { Double($0) * s + o } }
        case .int32:
            let s = scale(channel), o = offset(channel)
            return withSamples(Int32.self, channel: channel) { $0.map { Double($0) * s + o } }
        }
    }

    /// An owned copy of the package.
    public func materialize() -> AnalogData {
        let samples: AnalogSamples
        switch format {
        case .float64: samples = .float64(withMatrix(Double.self) { Array($0) })
        case .float32: samples = .float32(withMatrix(Float.self) { Array($0) })
        case .int16:
            samples = .int16(
                counts: withMatrix(Int16.self) { Array($0) },
                scale: (0..<channelCount).map(scale), offset: (0..<channelCount).map(offset))
        case .int32:
            samples = .int32(
                counts: withMatrix(Int32.self) { Array($0) },
                scale: (0..<channelCount).map(scale), offset: (0..<channelCount).map(offset))
        }
        return AnalogData(channelIndexes: channelIndexes, sampleCount: sampleCount, firstSample: firstSample, samples: samples)
    }
}

/// Sample types that an analog frame can hold.
public protocol AnalogSampleType: Sendable {
    static var sampleFormat: SampleFormat { get }
}
extension Double: AnalogSampleType { public static var sampleFormat: SampleFormat { .float64 } }
extension Float: AnalogSampleType { public static var sampleFormat: SampleFormat { .float32 } }
extension Int16: AnalogSampleType { public static var sampleFormat: SampleFormat { .int16 } }
extension Int32: AnalogSampleType { public static var sampleFormat: SampleFormat { .int32 } }
