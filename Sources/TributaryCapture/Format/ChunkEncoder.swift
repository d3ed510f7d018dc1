// The fuzz target (Fuzz/run.sh) compiles these files into one module together with TributaryWire.
#if canImport(TributaryWire)
    import TributaryWire
#endif

/// Which transforms the chunk encoder applies to numeric streams: the codec's own options, so that
/// a capture and a bare chunk codec are configured (and documented) in one place.
public typealias ChunkOptions = ChunkCodecOptions

/// Turns a `ChunkBuilder` into a chunk record payload (one zstd frame). One per worker thread.
///
/// Its stream transform (`encodeStream`) and zstd context are also what the public `ChunkCodec`
/// encodes with, so that the codec tests and benchmarks take the writer's path.
final class ChunkEncoder {
    let options: ChunkOptions
    /// The zstd context of chunk bodies (`ChunkCodec` compresses its payloads with it too).
    let compressor: ZstdCompressor
    private let body = ByteStorage(capacity: 1 << 20)
    private let counts = ByteStorage(capacity: 1 << 18)
    /// The entropy coder of numeric streams (`ChunkCodec` reads its entropy measurement).
    let numeric: NumericCodec
    /// The numeric streams regrouped per channel (§4.3), one after another.
    private let grouped = ByteStorage(capacity: 1 << 20)
    /// A chunk body is stored without zstd when its zstd frame would save less than 1/`storedShare` of it.
    static let storedShare = 128

    init(options: ChunkOptions) throws(ZstdError) {
        self.options = options
        compressor = try ZstdCompressor(level: options.level, rawLiterals: options.usesRawLiterals)
        numeric = try NumericCodec()
    }

    /// Encodes the chunk into `chunk.encoded` and returns its envelope (payload CRC included).
    func encode(_ chunk: ChunkBuilder) throws(ZstdError) -> RecordEnvelope {
        let output = chunk.encoded
        let present = (0..<4).filter { chunk.streamBytes[$0] > 0 }
        // Regroup the frame-order sample matrices so that each channel's samples are contiguous.
        chunk.grouping.finish()
        // Each format's stream after the previous formats' (index `SampleFormat.rawValue - 1`).
        var groupedStart = [0, 0, 0, 0]
        for f in 1..<groupedStart.count { groupedStart[f] = groupedStart[f - 1] + chunk.streamBytes[f - 1] }
        grouped.reserve(groupedStart[3] + chunk.streamBytes[3])
        let sources = chunk.rowSources
        for (i, row) in chunk.grouping.rows.enumerated() {
            let f = Int(row.key >> 32) - 1
            let source = sources[i] ?? UnsafeRawPointer(chunk.streams[f].base + row.position)
            (grouped.base + groupedStart[f] + row.grouped).copyMemory(from: source, byteCount: row.length)
        }
        // The received frames' samples are in `grouped` now: their buffers go back to the receiver.
        chunk.releaseHeld()
        let descriptorEnd = 16 + 24 * present.count
        // Worst case every stream is stored as it is.
        var bound = pad8(descriptorEnd + chunk.structure.count)
        for s in present { bound += pad8(chunk.streamBytes[s] + 8) }
        body.reserve(bound)
        let b = body.base
        var w = RecordWriter(UnsafeMutableRawBufferPointer(start: b, count: descriptorEnd))
        w.write(chunk.frameCount)
        w.write(UInt16(present.count))
        w.write(UInt16(0))
        w.write(UInt64(chunk.structure.count))
        if chunk.structure.count > 0 {
            (b + descriptorEnd).copyMemory(from: chunk.structure.base, byteCount: chunk.structure.count)
        }
        var position = descriptorEnd + chunk.structure.count
        for s in present {
            let padded = pad8(position)
            (b + position).initializeMemory(as: UInt8.self, repeating: 0, count: padded - position)
            position = padded
            let format = SampleFormat(rawValue: UInt8(s + 1))!
            let raw = UnsafeRawBufferPointer(start: grouped.base + groupedStart[s], count: chunk.streamBytes[s])
            let (transforms, stored) = transform(
                raw, format: format, groups: chunk.grouping.groupLengths(format: format.rawValue),
                into: b + position)
            w.write(format.rawValue)
            w.write(transforms.rawValue)
            w.write(UInt16(0))
            w.write(UInt32(0))
            w.write(UInt64(chunk.streamBytes[s]))
            w.write(UInt64(stored))
            position += stored
        }
        let content = UnsafeRawBufferPointer(start: b, count: position)
        output.reserve(max(position, ZstdCompressor.maxCompressedSize(position)))
        var size = try compressor.compress(content, into: UnsafeMutableRawBufferPointer(start: output.base, count: output.capacity))
        // A body that zstd shrinks by less than 1/`storedShare` is stored as it is, and read without a
        // decompression pass: entropy-coded streams leave zstd next to nothing (their records came out
        // slightly larger compressed), periodic or repetitive data does not (docs/CAPTURE.md §4).
        let stored = size > position - position / Self.storedShare
        if stored {
            output.base.copyMemory(from: b, byteCount: position)
            size = position
        }
        output.setCount(size)
        return RecordEnvelope(
            type: .chunk, codec: stored ? .none : .zstd, sourceID: chunk.sourceID, firstSequence: chunk.firstSequence,
            lastSequence: chunk.lastSequence, firstTimeNs: chunk.firstTimeNs, lastTimeNs: chunk.lastTimeNs,
            sampleCount: chunk.sampleCount, frameCount: chunk.frameCount, kindMask: chunk.kindMask,
            storedLength: UInt32(size), contentLength: UInt32(position), framesLength: UInt32(chunk.byteCount),
            payloadCRC: CRC32C.checksum(output.bytes))
    }

    /// Applies the transforms to one stream, writing the stored bytes at `out`; returns them and the size.
    private func transform(
        _ raw: UnsafeRawBufferPointer, format: SampleFormat, groups: [Int],
        into out: UnsafeMutableRawPointer
    ) -> (ChunkTransforms, Int) {
        // One segment per channel group.
        let coded = options.entropyCoding && groups.reduce(0, +) == raw.count
        let (stored, transforms) = encodeStream(
            raw, elementType: format.chunkElementType,
            segments: coded ? groups.map { $0 / format.size } : nil, coded: coded, into: out)
        if stored.baseAddress != UnsafeRawPointer(out), !stored.isEmpty {
            out.copyMemory(from: stored.baseAddress!, byteCount: stored.count)
        }
        return (transforms, stored.count)
    }

    /// One numeric stream's stored form: entropy coded (§5.1) when `options` and `coded` allow it and
    /// it beats the stream's size, the other transforms of `options` otherwise.
    /// - Parameters:
    ///   - segments: element counts of the stream's segments (its channel groups), or nil for
    ///     `NumericCodec.maxSegment` pieces.
    ///   - out: room for `raw.count + 8` bytes.
    /// - Returns: the stored bytes — at `out`, or `raw` itself when no transform applies — and the
    ///   transforms applied.
    func encodeStream(
        _ raw: UnsafeRawBufferPointer, elementType: ChunkElementType, segments: [Int]?, coded: Bool = true,
        into out: UnsafeMutableRawPointer
    ) -> (stored: UnsafeRawBufferPointer, transforms: ChunkTransforms) {
        if options.entropyCoding, coded, elementType != .bytes, raw.count > 0,
            let size = numeric.encode(raw, elementType: elementType, segments: segments, into: out, capacity: raw.count)
        {
            return (UnsafeRawBufferPointer(start: out, count: size), .coded)
        }
        counts.reserve(raw.count)
        return NumericTransform.apply(raw, elementType: elementType, options: options, scratch: counts.base, into: out)
    }
}

extension SampleFormat {
    /// The chunk element type of a stream of samples of this format.
    var chunkElementType: ChunkElementType {
        switch self {
        case .float64: .float64
        case .float32: .float32
        case .int16: .int16
        case .int32: .int32
        }
    }
}
