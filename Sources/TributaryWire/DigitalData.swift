/// An owned digital data package: the states of lines over samples, bit-packed (SCCT DigitalDataPackage).
///
/// Row `l` holds line `l`'s samples in `bytesPerLine` bytes; sample `s` is bit `s % 8` (least
/// significant first) of byte `s / 8` of the row. Unused bits of a row's last byte are 0.
public struct DigitalData: Sendable, Hashable {
    public var lineIndexes: [UInt32]
    public var sampleCount: Int
    public var firstSample: UInt64
    /// lineCount × bytesPerLine bytes.
    public var bits: [UInt8]

    public init(lineIndexes: [UInt32], sampleCount: Int, firstSample: UInt64 = 0, bits: [UInt8]) {
        precondition(bits.count == lineIndexes.count * ((sampleCount + 7) / 8), "bits must be lines × bytesPerLine")
        self.lineIndexes = lineIndexes
        self.sampleCount = sampleCount
        self.firstSample = firstSample
        self.bits = bits
    }

    /// Packs one Bool array per line, lines indexed 0, 1, 2, …
    public init(lines: [[Bool]], firstSample: UInt64 = 0) {
        let n = lines.first?.count ?? 0
        precondition(lines.allSatisfy { $0.count == n }, "every line needs the same number of samples")
        let perLine = (n + 7) / 8
        var bits = [UInt8](repeating: 0, count: perLine * lines.count)
        for (l, line) in lines.enumerated() {
            for (s, on) in line.enumerated() where on { bits[l * perLine + s / 8] |= 1 << UInt8(s % 8) }
        }
        self.init(lineIndexes: (0..<UInt32(lines.count)).map { $0 }, sampleCount: n, firstSample: firstSample, bits: bits)
    }

    @inlinable public var bytesPerLine: Int { (sampleCount + 7) / 8 }

    /// The state of line row `line` at sample `sample`.
    public func state(line: Int, sample: Int) -> Bool {
        bits[line * bytesPerLine + sample / 8] & (1 << UInt8(sample % 8)) != 0
    }

    var layout: DigitalLayout { DigitalLayout(lineCount: lineIndexes.count, sampleCount: sampleCount) }

    func write(_ w: inout PayloadWriter) {
        w.write(UInt32(lineIndexes.count))
        w.write(UInt32(sampleCount))
        w.write(firstSample)
        for index in lineIndexes { w.write(index) }
        w.align8()
        w.write(bits)
    }
}

/// Byte offsets of a digital payload (docs/PROTOCOL.md §4.4).
public struct DigitalLayout: Sendable, Hashable {
    public let lineCount: Int
    public let sampleCount: Int
    public var bytesPerLine: Int { (sampleCount + 7) / 8 }
    public var indexesOffset: Int { 16 }
    public var bitsOffset: Int { align8(16 + 4 * lineCount) }
    public var contentLength: Int { bitsOffset + lineCount * bytesPerLine }
}

/// A zero-copy view of a received digital package.
///
/// `@unchecked Sendable`: `payload` points into `buffer`, which is immutable and kept alive by the view.
public struct DigitalView: @unchecked Sendable {
    public let layout: DigitalLayout
    public let firstSample: UInt64
    @usableFromInline let payload: UnsafeRawPointer
    @usableFromInline let buffer: FrameBuffer

    public var lineCount: Int { layout.lineCount }
    public var sampleCount: Int { layout.sampleCount }

    init(payload bytes: UnsafeRawBufferPointer, origin: Int, buffer: FrameBuffer) throws(WireError) {
        var r = PayloadReader(bytes, origin: origin)
        let (lineCount, sampleCount) = try r.readRowAndSampleCounts("digital.line_count", "digital.sample_count", row: "line")
        firstSample = try r.read(UInt64.self, "digital.first_sample")
        let layout = DigitalLayout(lineCount: lineCount, sampleCount: sampleCount)
        guard align8(layout.contentLength) == bytes.count else {
            throw WireError(
                .lengthMismatch, field: "digital.sample_count", offset: origin + 4,
                detail: "\(lineCount) lines × \(sampleCount) samples need a payload of "
                    + "\(align8(layout.contentLength)) bytes, the header says \(bytes.count)")
        }
        self.layout = layout
        payload = bytes.baseAddress!
        self.buffer = buffer
    }

    /// The configuration index of row `line`.
    public func lineIndex(_ line: Int) -> UInt32 {
        precondition(line >= 0 && line < lineCount, "line \(line) out of range 0..<\(lineCount)")
        return PayloadReader(UnsafeRawBufferPointer(start: payload, count: 16 + 4 * lineCount)).u32(at: 16 + 4 * line)
    }

    /// The state of row `line` at `sample`.
    public func state(line: Int, sample: Int) -> Bool {
        precondition(sample >= 0 && sample < sampleCount, "sample \(sample) out of range 0..<\(sampleCount)")
        let byte = (payload + layout.bitsOffset + line * layout.bytesPerLine + sample / 8).load(as: UInt8.self)
        return byte & (1 << UInt8(sample % 8)) != 0
    }

    /// Calls `body` with one line's packed bits in place.
    public func withBits<R>(line: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(buffer) {
            try body(
                UnsafeRawBufferPointer(
                    start: payload + layout.bitsOffset + line * layout.bytesPerLine,
                    count: layout.bytesPerLine))
        }
    }

    /// An owned copy of the package.
    public func materialize() -> DigitalData {
        let bits = withExtendedLifetime(buffer) {
            Array(UnsafeRawBufferPointer(start: payload + layout.bitsOffset, count: lineCount * layout.bytesPerLine))
        }
        return DigitalData(
            lineIndexes: (0..<lineCount).map(lineIndex), sampleCount: sampleCount,
            firstSample: firstSample, bits: bits)
    }
}
