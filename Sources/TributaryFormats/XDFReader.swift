/// Reads the chunks of an XDF file (`XDFFile.read`): the file header, each stream's header, samples,
/// clock offsets and footer (unknown tags skipped, as the specification asks; a truncated last chunk
/// ends the file, as a crashed recorder leaves it), then transposes each stream's samples to
/// channel-major.
struct XDFReader {
    /// A stream as its chunks are read.
    final class Stream {
        var header: XDFStreamHeader
        var xml: String
        var footer: String?
        /// A string stream's values sample-major as read (transposed at the end): they grow with
        /// what the file holds, not with what its header declares.
        var strings: [String] = []
        var timestamps: [Double] = []
        var stamped: [Int] = []
        /// Samples read, the first and last timestamps, and the stamped samples whose timestamp breaks
        /// the nominal pace by more than half a sample (`XDFStream.timeBreaks`).
        var count = 0
        var first: Double?, last: Double?
        var breaks: [(sample: Int, time: Double)] = []
        /// For a stream with a nominal rate: the current run's (cut at `breaks`) first sample and
        /// timestamp, the largest distance of a timestamp from its run's first + k / rate, and the
        /// longest run's span (`XDFStream.paceDrift`, `runSpan`).
        var runStart = 0, runTime = 0.0
        var paceDrift = 0.0, runSpan = 0.0
        /// Whether every timestamp is kept: always for values read into memory, and for irregular
        /// streams (no nominal rate), whose rate comes from all of them.
        var keepTimestamps = true
        /// Where the samples are in the file (index mode).
        var extents: [XDFValueExtent] = []
        var offsets: [(time: Double, value: Double)] = []
        /// Numeric values sample-major as stored (little-endian), transposed at the end.
        var raw: [UInt8] = []

        init(_ h: XDFStreamHeader, _ xml: String) {
            header = h
            self.xml = xml
        }

        /// A sample's timestamp: 8 bytes of f64 after its length byte, or none (0): the previous one
        /// plus `step`. A NaN or infinite timestamp is refused: it is no time.
        func readTimestamp(_ c: inout FileReader, step: Double) throws(FormatError) {
            let tb = try c.u8("timestamp bytes")
            let value: Double
            if tb == 8 {
                let at = c.position
                let t = try c.f64("timestamp")
                guard t.isFinite else {
                    throw c.fail(
                        "timestamp of sample \(count) of stream \(header.streamID) is \(t), not a finite number of seconds",
                        at: at)
                }
                let rate = header.nominalRate
                if rate > 0, count > 0, let last, abs(t - (last + 1 / rate)) > 0.5 / rate {
                    breaks.append((count, t))
                    (runStart, runTime) = (count, t)
                }
                if keepTimestamps { stamped.append(count) }
                value = t
            } else if tb == 0 {
                value = (last ?? 0) + step
            } else {
                throw c.fail("timestamp bytes \(tb), must be 0 or 8")
            }
            let rate = header.nominalRate
            if rate > 0 {
                if count == 0 { (runStart, runTime) = (0, value) }
                let drift = abs(value - (runTime + Double(count - runStart) / rate)), span = abs(value - runTime)
                // NaN (an infinite period) counts as infinitely far.
                if !(drift <= paceDrift) { paceDrift = drift.isNaN ? .infinity : drift }
                if !(span <= runSpan) { runSpan = span.isNaN ? .infinity : span }
            }
            if keepTimestamps { timestamps.append(value) }
            if first == nil { first = value }
            last = value
            count += 1
        }
    }

    let bytes: UnsafeRawBufferPointer
    let file: String
    /// Index mode: numeric values are not read, their places recorded (`XDFStream.valueExtents`),
    /// and the pages of a mapped file given back as the walk passes them.
    var mapped: MappedFile?
    private var fileHeader = ""
    private var streams: [UInt32: Stream] = [:]
    private var order: [UInt32] = []
    /// Each stream's sample count from a first pass over the chunk headers, so that its buffer is
    /// allocated once (growing it chunk by chunk copied and faulted in the data several times).
    private var expected: [UInt32: Int] = [:]

    init(bytes: UnsafeRawBufferPointer, file: String) {
        self.bytes = bytes
        self.file = file
    }

    /// A variable-length count: 1, 4 or 8 bytes, as its length byte says.
    static func varlen(_ s: inout FileReader, _ what: String) throws(FormatError) -> Int {
        let at = s.position
        switch try s.u8("length bytes of \(what)") {
        case 1: return Int(try s.u8(what))
        case 4: return Int(try s.u32(what))
        case 8:
            let v = try s.u64(what)
            guard v < UInt64(Int.max) else { throw s.fail("\(what): \(v) is too large", at: at) }
            return Int(v)
        case let n: throw s.fail("\(what): length bytes \(n), must be 1, 4 or 8", at: at)
        }
    }

    mutating func readChunks() throws(FormatError) {
        var src = FileReader(bytes, source: file)
        guard bytes.count >= 4, try src.utf8(4, "magic") == "XDF:" else { throw src.fail("not an XDF file (no 'XDF:' magic)", at: 0) }
        if mapped == nil { countSamples() }
        while src.remaining > 0 {
            let chunkStart = src.position
            mapped?.release(before: chunkStart)
            // a truncated tail ends the walk
            guard let length = try? Self.varlen(&src, "chunk length"), length >= 2, length <= src.remaining else { break }
            var c = FileReader(UnsafeRawBufferPointer(rebasing: bytes[0..<(src.position + length)]), position: src.position, source: file)
            src.position += length
            let tagValue = try c.u16("chunk tag")
            guard let tag = XDFTag(rawValue: tagValue) else { continue }  // unknown tags are skipped, as the specification asks
            switch tag {
            case .fileHeader:
                fileHeader = try c.utf8(c.remaining, "file header")
            case .streamHeader:
                try readStreamHeader(&c, chunkStart: chunkStart)
            case .samples:
                try readSamples(&c, chunkStart: chunkStart)
            case .clockOffset:
                let id = try c.u32("stream id")
                let at = c.position
                let t = try c.f64("collection time"), v = try c.f64("offset value")
                guard t.isFinite, v.isFinite else {
                    throw c.fail("clock offset of stream \(id): collection time \(t) s, offset \(v) s; both must be finite numbers", at: at)
                }
                streams[id]?.offsets.append((t, v))
            case .boundary:
                continue
            case .streamFooter:
                let id = try c.u32("stream id")
                streams[id]?.footer = try c.utf8(c.remaining, "stream footer")
            }
        }
    }

    /// The first pass: samples announced per stream by the samples chunks' headers.
    private mutating func countSamples() {
        var scan = FileReader(bytes, position: 4, source: file)
        while scan.remaining > 0 {
            guard let length = try? Self.varlen(&scan, "chunk length"), length >= 2, length <= scan.remaining else { break }
            let end = scan.position + length
            if let tag = try? scan.u16("chunk tag"), tag == XDFTag.samples.rawValue, length >= 2 + 4 + 2,
                let id = try? scan.u32("stream id"), let n = try? Self.varlen(&scan, "sample count"), n <= length
            {
                expected[id, default: 0] += n
            }
            scan.position = end
        }
    }

    private mutating func readStreamHeader(_ c: inout FileReader, chunkStart: Int) throws(FormatError) {
        let id = try c.u32("stream id")
        let xml = try c.utf8(c.remaining, "stream header")
        let header: XDFStreamHeader
        do { header = try XDFStreamHeader(streamID: id, xml: xml) } catch {
            throw c.fail("stream \(id) header: \(error.reason)", at: chunkStart)
        }
        if streams[id] == nil { order.append(id) }
        let stream = Stream(header, xml)
        if mapped != nil, header.format.size != nil, header.nominalRate > 0 { stream.keepTimestamps = false }
        // The counts are only a hint: never more than the file could hold.
        if let size = header.format.size, let n = expected[id] {
            let (perSample, overflow) = header.channelCount.multipliedReportingOverflow(by: size)
            if !overflow, perSample > 0 {
                let count = min(n, bytes.count / perSample)
                stream.raw.reserveCapacity(count * perSample)
                stream.timestamps.reserveCapacity(count)
            }
        }
        streams[id] = stream
    }

    private func readSamples(_ c: inout FileReader, chunkStart: Int) throws(FormatError) {
        let id = try c.u32("stream id")
        guard let s = streams[id] else { throw c.fail("samples of stream \(id) before its header", at: chunkStart) }
        let n = try Self.varlen(&c, "sample count")
        let channels = s.header.channelCount
        let step = s.header.nominalRate > 0 ? 1 / s.header.nominalRate : 0
        guard let size = s.header.format.size else {
            for _ in 0..<n {
                try s.readTimestamp(&c, step: step)
                for _ in 0..<channels {
                    let len = try Self.varlen(&c, "string length")
                    s.strings.append(try c.utf8(len, "string"))
                }
            }
            return
        }
        guard n <= c.remaining / max(1, 1 + channels * size) else { throw c.fail("sample count \(n) exceeds the chunk", at: chunkStart) }
        if mapped != nil {
            // Index mode: the timestamps are read, the values skipped (the data pass reads them).
            s.extents.append(XDFValueExtent(offset: c.position, end: c.bytes.count, count: n))
            for _ in 0..<n {
                try s.readTimestamp(&c, step: step)
                _ = try c.slice(channels * size, "values")
            }
            return
        }
        // Fixed-size values: copied into the stream's buffer, grown once per chunk.
        let width = channels * size, old = s.raw.count
        s.raw.append(contentsOf: repeatElement(0, count: n * width))
        s.timestamps.reserveCapacity(s.timestamps.count + n)
        try typedFormatError {
            try s.raw.withUnsafeMutableBytes { dst in
                var p = dst.baseAddress! + old
                for _ in 0..<n {
                    try s.readTimestamp(&c, step: step)
                    let v = try c.slice(width, "values")
                    if width > 0 { p.copyMemory(from: v.baseAddress!, byteCount: width) }
                    p += width
                }
            }
        }
    }

    /// The streams in the order their headers came, their values channel-major.
    func assemble() -> XDFFile {
        var out = XDFFile(fileHeaderXML: fileHeader, streams: [])
        for id in order {
            guard let s = streams[id] else { continue }
            let n = s.count, channels = s.header.channelCount, indexed = mapped != nil && s.header.format.size != nil
            func transpose<T, U>(_: T.Type, _ convert: (T) -> U, zero: U) -> [U] {
                if indexed { return [] }
                var result = [U](repeating: zero, count: n * channels)
                s.raw.withUnsafeBytes { src in
                    result.withUnsafeMutableBufferPointer { dst in
                        let size = MemoryLayout<T>.size
                        for i in 0..<n {
                            for k in 0..<channels {
                                dst[k * n + i] = convert(src.loadUnaligned(fromByteOffset: (i * channels + k) * size, as: T.self))
                            }
                        }
                    }
                }
                return result
            }
            let data: XDFData
            switch s.header.format {
            case .double64: data = .float64(transpose(Double.self, { $0 }, zero: 0))
            case .int32: data = .int32(transpose(Int32.self, { $0 }, zero: 0))
            case .int64: data = .float64(transpose(Int64.self, { Double($0) }, zero: 0))
            case .float32: data = .float32(transpose(Float.self, { $0 }, zero: 0))
            case .int16: data = .int16(transpose(Int16.self, { $0 }, zero: 0))
            case .int8: data = .int16(transpose(Int8.self, { Int16($0) }, zero: 0))
            case .string:
                var strings: [String] = []
                strings.reserveCapacity(s.strings.count)
                for k in 0..<(n > 0 ? channels : 0) { for i in 0..<n { strings.append(s.strings[i * channels + k]) } }
                data = .strings(strings)
            }
            out.streams.append(
                XDFStream(
                    header: s.header, headerXML: s.xml, footerXML: s.footer, sampleCount: n, data: data,
                    timestamps: s.timestamps, stampedSamples: s.stamped, clockOffsets: s.offsets,
                    firstTimestamp: s.first, lastTimestamp: s.last, timeBreaks: s.breaks, paceDrift: s.paceDrift, runSpan: s.runSpan,
                    valueExtents: indexed ? s.extents : nil))
        }
        return out
    }
}
