import Synchronization

// The fuzz target (Fuzz/run.sh) compiles these files into one module together with TributaryWire.
#if canImport(TributaryWire)
    import TributaryWire
#endif

/// One analog frame of a chunk as `ChunkDecoder.analogFrames` hands it out: its header, its layout
/// and where its rows' samples were decoded (valid during the call that hands it out).
package struct AnalogChunkFrame {
    /// The frame's header.
    package let header: FrameHeader
    /// The frame's payload up to its sample matrix: layout, channel indexes, scales and offsets.
    package let layout: UnsafeRawBufferPointer
    /// The frame's rows and those after it, in walk order.
    let rows: UnsafeBufferPointer<StreamGrouping.Row>
    /// Where each format's stream starts in the decoder's buffer.
    let streams: (UnsafeRawPointer, UnsafeRawPointer, UnsafeRawPointer, UnsafeRawPointer)

    /// The layout's fields (checked when the chunk was decoded).
    private var fields: RecordReader { RecordReader(layout) }
    /// Rows of the matrix.
    package var channelCount: Int { Int(fields.u32(at: 0)) }
    /// Samples per row.
    package var sampleCount: Int { Int(fields.u32(at: 4)) }
    /// The frame's `first_sample` counter.
    package var firstSample: UInt64 { fields.u64(at: 8) }
    package var format: SampleFormat { SampleFormat(rawValue: fields.u8(at: 16))! }
    /// The configuration index of row `k`.
    package func channelIndex(_ k: Int) -> UInt32 { fields.u32(at: 24 + 4 * k) }
    /// Scale of row `k` (int16, int32: value = count × scale + offset); 1 for float formats.
    package func scale(_ k: Int) -> Double {
        format.isCounts ? Double(bitPattern: fields.u64(at: pad8(24 + 4 * channelCount) + 8 * k)) : 1
    }
    /// Offset of row `k`; 0 for float formats.
    package func offset(_ k: Int) -> Double {
        format.isCounts ? Double(bitPattern: fields.u64(at: pad8(24 + 4 * channelCount) + 8 * (channelCount + k))) : 0
    }

    /// The samples of row `k` of the matrix (0 ..< its channel count).
    package func samples(row k: Int) -> UnsafeRawPointer {
        let row = rows[k]
        let base =
            switch row.key >> 32 {
            case 1: streams.0;
            case 2: streams.1;
            case 3: streams.2;
            default: streams.3
            }
        return base + row.grouped
    }
}

/// Decodes chunk record payloads back into the exact frame bytes. One per reading thread.
///
/// Its stream decoding (`decodeStream`) and zstd context are also what the public `ChunkCodec`
/// decodes with, so that the codec tests and benchmarks take the reader's path.
final class ChunkDecoder {
    /// The zstd context of chunk bodies (`ChunkCodec` decompresses its payloads with it too).
    let decompressor: ZstdDecompressor
    private let body = ByteStorage(capacity: 1 << 20)
    private let samples = ByteStorage(capacity: 1 << 20)
    private let counts = ByteStorage(capacity: 1 << 18)
    private let numeric: NumericCodec
    private var grouping = StreamGrouping()
    /// The buffer of the last decoded chunk's frames, reused for the next once nothing else holds it.
    private var output: ByteStorage?

    init() throws(ZstdError) {
        decompressor = try ZstdDecompressor()
        numeric = try NumericCodec()
    }

    /// Bytes held by its buffers that grow with the chunks decoded (and the last chunk's frames).
    var retainedBytes: Int { body.capacity + samples.capacity + counts.capacity + (output?.capacity ?? 0) }

    /// A buffer for a chunk's frames: the previous one when every frame decoded into it has been
    /// released (so a reader that handles each chunk's frames and lets them go allocates — and
    /// faults in — no new memory per chunk), otherwise a new one.
    private func outputStorage(capacity: Int) -> ByteStorage {
        if output != nil, isKnownUniquelyReferenced(&output!) {
            // Frames of the last chunk may have been read and released on another thread (a replay's
            // publisher loop, or a reader closed there whose workspace this is now): the acquiring
            // fence orders the writes below after those reads, which the release published.
            atomicMemoryFence(ordering: .acquiring)
            output!.removeAll()
            output!.reserve(capacity)
            return output!
        }
        let fresh = ByteStorage(capacity: capacity)
        output = fresh
        return fresh
    }

    /// Decodes a chunk payload into a new buffer of concatenated frames.
    /// - Parameters:
    ///   - stored: the record payload (without padding).
    ///   - envelope: its envelope (codec, content length, frame count).
    ///   - samples: false to leave the numeric streams undecoded and the analog sample matrices zero:
    ///     the frames' headers, layouts and every other payload, for a fraction of the work.
    /// - Returns: the frames' bytes, 16-byte aligned, exactly as they were recorded.
    /// - Throws: a description of what is inconsistent (the caller adds file and offset).
    func decode(_ stored: UnsafeRawBufferPointer, envelope: RecordEnvelope, samples: Bool = true) throws(RecordEnvelope.Problem)
        -> FrameBuffer
    {
        let content = try decompress(stored, envelope: envelope)
        let frames = try assemble(content, frameCount: Int(envelope.frameCount), samples: samples)
        guard frames.count == Int(envelope.framesLength) else {
            throw .invalidField("chunk decodes to \(frames.count) bytes of frames, the envelope says \(envelope.framesLength)")
        }
        return frames
    }

    /// Decodes a chunk's analog samples without rebuilding its frames, for readers that copy samples
    /// out (the C interface's read): `body` gets the chunk's analog frames with samples, in order,
    /// their samples where the numeric streams were decoded — one copy of every sample fewer than
    /// `decode`, and no frame buffer. The chunk is checked as `decode` checks it before `body` is called.
    /// - Parameter direct: called first, with the frames' headers and layouts (their samples not yet
    ///   decoded); it may name where each channel's samples of the chunk go, by format and channel
    ///   index (room for all of them, aligned to the sample size). When it names a place for every
    ///   channel and the streams are entropy coded, they are decoded straight there (no copy at all),
    ///   `body` is not called and the result is true.
    @discardableResult
    func analogFrames(
        _ stored: UnsafeRawBufferPointer, envelope: RecordEnvelope,
        direct: (([AnalogChunkFrame]) -> ((_ format: SampleFormat, _ channel: UInt32) -> UnsafeMutableRawPointer?)?)? = nil,
        _ body: ([AnalogChunkFrame]) -> Void
    ) throws(RecordEnvelope.Problem) -> Bool {
        let content = try decompress(stored, envelope: envelope)
        let streams = try parseStreams(content, frameCount: Int(envelope.frameCount))
        var analog: [(structureOffset: Int, layoutEnd: Int, firstRow: Int)] = []
        analog.reserveCapacity(Int(envelope.frameCount))
        let length = try walkStructure(streams) { s, _, _, split in
            if let split, split.count > 0 { analog.append((s, split.start, grouping.rows.count)) }
        }
        guard length == Int(envelope.framesLength) else {
            throw .invalidField("chunk decodes to \(length) bytes of frames, the envelope says \(envelope.framesLength)")
        }
        var headers: [FrameHeader] = []
        headers.reserveCapacity(analog.count)
        for frame in analog {
            // The header is checked as `Frame(decoding:)` checks it when frames are rebuilt.
            let piece = UnsafeRawBufferPointer(rebasing: streams.structure[frame.structureOffset...])
            guard case .frame(let header)? = try? FrameHeader.peek(piece, maxFrameSize: .max) else {
                throw .invalidField("chunk structure at byte \(frame.structureOffset): not a valid analog frame header")
            }
            headers.append(header)
        }
        // The streams' place in `samples` is fixed before the frames point into it.
        samples.removeAll()
        samples.reserve(streams.total)
        let base = UnsafeRawPointer(samples.base)
        let starts = (base + streams.start[0], base + streams.start[1], base + streams.start[2], base + streams.start[3])
        func frames(_ rows: UnsafeBufferPointer<StreamGrouping.Row>) -> [AnalogChunkFrame] {
            zip(analog, headers).map { frame, header in
                let piece = UnsafeRawBufferPointer(rebasing: streams.structure[frame.structureOffset...])
                return AnalogChunkFrame(
                    header: header, layout: UnsafeRawBufferPointer(rebasing: piece[header.headerLength..<frame.layoutEnd]),
                    rows: UnsafeBufferPointer(rebasing: rows[frame.firstRow...]), streams: starts)
            }
        }
        if let direct, streams.stored.allSatisfy({ $0.transforms.contains(.coded) }),
            let target = grouping.rows.withUnsafeBufferPointer({ direct(frames($0)) }),
            try decodeDirect(streams, target)
        {
            return true
        }
        try decode(streams)
        grouping.rows.withUnsafeBufferPointer { body(frames($0)) }
        return false
    }

    /// Decodes every stream with each channel group's segments at `target`'s place for the group;
    /// false (part of it written) when a group has no place or a segment spans two groups (which
    /// the encoder never writes; the caller then decodes as usual).
    private func decodeDirect(
        _ streams: Streams,
        _ target: (_ format: SampleFormat, _ channel: UInt32) -> UnsafeMutableRawPointer?
    ) throws(RecordEnvelope.Problem) -> Bool {
        // Per format: the groups in stream order with their places.
        var groups: [[(start: Int, end: Int, place: UnsafeMutableRawPointer)]] = [[], [], [], []]
        for stream in streams.stored {
            let f = Int(stream.format.rawValue) - 1
            for range in grouping.groupRanges(format: stream.format.rawValue) {
                guard let place = target(stream.format, UInt32(truncatingIfNeeded: range.key)) else { return false }
                groups[f].append((range.start, range.start + range.bytes, place))
            }
        }
        var cursor = [0, 0, 0, 0]
        var spanned = false
        try decode(streams) { format, first, count in
            let f = Int(format.rawValue) - 1, size = format.size
            let start = first * size, end = (first + count) * size
            while cursor[f] < groups[f].count && groups[f][cursor[f]].end <= start { cursor[f] += 1 }
            guard cursor[f] < groups[f].count, groups[f][cursor[f]].start <= start, end <= groups[f][cursor[f]].end else {
                spanned = true
                return nil
            }
            return groups[f][cursor[f]].place + (start - groups[f][cursor[f]].start)
        }
        return !spanned
    }

    /// The chunk body, decompressed when the record is.
    private func decompress(_ stored: UnsafeRawBufferPointer, envelope: RecordEnvelope) throws(RecordEnvelope.Problem)
        -> UnsafeRawBufferPointer
    {
        let contentLength = Int(envelope.contentLength)
        switch envelope.codec {
        case .none:
            return stored
        case .zstd:
            body.reserve(contentLength)
            do {
                let n = try decompressor.decompress(stored, into: UnsafeMutableRawBufferPointer(start: body.base, count: contentLength))
                guard n == contentLength else {
                    throw RecordEnvelope.Problem.invalidField("zstd content is \(n) bytes, the envelope says \(contentLength)")
                }
            } catch let error as ZstdError {
                throw .invalidField("chunk payload: \(error)")
            } catch let problem as RecordEnvelope.Problem {
                throw problem
            } catch {
                throw .invalidField("\(error)")
            }
            return UnsafeRawBufferPointer(start: body.base, count: contentLength)
        }
    }

    /// A chunk body's numeric streams, decoded one after another into `samples`.
    private struct Streams {
        var structure: UnsafeRawBufferPointer
        var frameCount: Int
        /// Start and length in `samples` of each format's stream (index `SampleFormat.rawValue - 1`).
        var start = [0, 0, 0, 0], length = [0, 0, 0, 0]
        var total = 0
        /// Each stream as stored, in order: its format, transforms and bytes in the body.
        var stored: [(format: SampleFormat, transforms: ChunkTransforms, bytes: UnsafeRawBufferPointer)] = []
    }

    /// Checks a chunk body's header and stream descriptors and decodes its streams into `samples`
    /// (or, with `samples` false, only checks and measures them).
    private func decodeStreams(_ c: UnsafeRawBufferPointer, frameCount: Int, samples wanted: Bool) throws(RecordEnvelope.Problem) -> Streams
    {
        let streams = try parseStreams(c, frameCount: frameCount)
        if wanted { try decode(streams) }
        return streams
    }

    /// Decodes the streams into `samples`, one after another; a segment that `placement` gives a
    /// place (by format, its first element in the stream and its element count) is written there
    /// instead.
    private func decode(
        _ streams: Streams,
        placement: ((_ format: SampleFormat, _ first: Int, _ count: Int) -> UnsafeMutableRawPointer?)? = nil
    ) throws(RecordEnvelope.Problem) {
        samples.removeAll()
        samples.reserve(streams.total)
        for (i, stream) in streams.stored.enumerated() {
            let f = Int(stream.format.rawValue) - 1
            let place = placement.map { place in { (first: Int, count: Int) in place(stream.format, first, count) } }
            try untransform(
                stream.bytes, raw: streams.length[f], format: stream.format, transforms: stream.transforms,
                into: samples.base + streams.start[f], stream: i, placement: place)
        }
        samples.setCount(streams.total)
    }

    /// Checks a chunk body's header and stream descriptors, and measures the streams.
    private func parseStreams(_ c: UnsafeRawBufferPointer, frameCount expectedFrames: Int) throws(RecordEnvelope.Problem) -> Streams {
        guard c.count >= 16 else { throw .invalidField("chunk body of \(c.count) bytes is shorter than its 16-byte header") }
        let body = RecordReader(c)
        let frameCount = Int(body.u32(at: 0))
        let streamCount = Int(body.u16(at: 4))
        let structureLength64 = body.u64(at: 8)
        guard frameCount == expectedFrames else {
            throw .invalidField("chunk body holds \(frameCount) frames, the envelope says \(expectedFrames)")
        }
        guard streamCount <= 4, body.u16(at: 6) == 0 else {
            throw .invalidField("chunk body: stream_count \(streamCount) > 4 or reserved bits set")
        }
        let descriptorEnd = 16 + 24 * streamCount
        guard c.count >= descriptorEnd, structureLength64 <= UInt64(c.count - descriptorEnd) else {
            throw .invalidField("chunk body: structure_length \(structureLength64) exceeds the body")
        }
        let structureLength = Int(structureLength64)
        var streams = Streams(
            structure: UnsafeRawBufferPointer(rebasing: c[descriptorEnd..<(descriptorEnd + structureLength)]),
            frameCount: frameCount)
        // The streams lie in `samples` one after another: remember where each starts.
        var position = descriptorEnd + structureLength
        var lastFormat = 0
        for i in 0..<streamCount {
            let d = RecordReader(UnsafeRawBufferPointer(rebasing: c[(16 + 24 * i)..<(40 + 24 * i)]))
            guard let format = SampleFormat(rawValue: d.u8(at: 0)), Int(format.rawValue) > lastFormat else {
                throw .invalidField("chunk stream \(i): sample_format \(d.u8(at: 0)) unknown or out of order")
            }
            lastFormat = Int(format.rawValue)
            let transforms = ChunkTransforms(rawValue: d.u8(at: 1))
            let raw64 = d.u64(at: 8), stored64 = d.u64(at: 16)
            position = pad8(position)
            guard d.u16(at: 2) == 0, d.u32(at: 4) == 0, raw64 <= UInt64(CaptureFormat.maxRecordLength),
                stored64 <= UInt64(max(0, c.count - position))
            else {
                throw .invalidField("chunk stream \(i): lengths \(raw64)/\(stored64) exceed the body")
            }
            let raw = Int(raw64), stored = Int(stored64)
            guard raw % format.size == 0 else { throw .invalidField("chunk stream \(i): \(raw) bytes is not whole \(format) samples") }
            streams.stored.append((format, transforms, UnsafeRawBufferPointer(rebasing: c[position..<(position + stored)])))
            streams.start[Int(format.rawValue) - 1] = streams.total
            streams.length[Int(format.rawValue) - 1] = raw
            streams.total += raw
            position += stored
        }
        guard position == c.count || (streamCount == 0 && descriptorEnd + structureLength == c.count) else {
            throw .invalidField("chunk body has \(c.count - position) bytes after its last stream")
        }
        return streams
    }

    /// Walks the frames of a chunk's structure, checking each, and notes every analog row in
    /// `grouping` (position: the row's offset in the rebuilt frames); `visit` is called for each frame
    /// before its rows are noted, with its offset in the structure and in the rebuilt frames, its
    /// header length and, for an analog frame, its matrix's place.
    /// - Returns: the length of the rebuilt frames; `grouping` is finished.
    private func walkStructure(
        _ streams: Streams,
        _ visit: (_ s: Int, _ o: Int, _ headerLength: Int, _ split: (start: Int, count: Int, format: SampleFormat)?) -> Void
    ) throws(RecordEnvelope.Problem) -> Int {
        grouping.reset()
        let structure = streams.structure
        var s = 0, o = 0, frames = 0
        var used = [0, 0, 0, 0]
        while s < structure.count {
            let rest = UnsafeRawBufferPointer(rebasing: structure[s...])
            guard rest.count >= WireLimits.headerLength else { throw .invalidField("chunk structure ends inside frame \(frames)'s header") }
            let fields = RecordReader(rest)
            let headerLength = Int(fields.u16(at: 8)), payloadLength = Int(fields.u32(at: 12))
            guard headerLength >= WireLimits.headerLength, headerLength & 7 == 0, payloadLength & 7 == 0 else {
                throw .invalidField("chunk frame \(frames): header_length \(headerLength) / payload_length \(payloadLength) invalid")
            }
            if let split = analogSplit(rest, headerLength: headerLength, payloadLength: payloadLength) {
                let f = Int(split.format.rawValue) - 1
                let tail = headerLength + payloadLength - split.start - split.count
                guard rest.count >= split.start + tail, used[f] + split.count <= streams.length[f] else {
                    throw .invalidField("chunk frame \(frames): its samples exceed the \(split.format) stream or the structure")
                }
                visit(s, o, headerLength, split)
                let sampleCount = Int(fields.u32(at: headerLength + 4))
                let rowLength = sampleCount * split.format.size
                if rowLength > 0 {
                    for r in 0..<(split.count / rowLength) {
                        grouping.add(
                            format: split.format.rawValue, channel: fields.u32(at: headerLength + 24 + 4 * r),
                            length: rowLength, position: o + split.start + r * rowLength)
                    }
                }
                used[f] += split.count
                s += split.start + tail
                o += split.start + split.count + tail
            } else {
                let length = headerLength + payloadLength
                guard rest.count >= length else { throw .invalidField("chunk structure ends inside frame \(frames)") }
                visit(s, o, headerLength, nil)
                s += length
                o += length
            }
            frames += 1
        }
        guard frames == streams.frameCount, used == streams.length else {
            throw .invalidField(
                "chunk body: \(frames) frames and \(used) stream bytes used, \(streams.frameCount) and \(streams.length) declared")
        }
        // Every row's bytes are in its channel's group; the groups fill each stream exactly (the rows
        // add up to `used`, checked above), so every row lies inside its stream.
        grouping.finish()
        return o
    }

    private func assemble(_ c: UnsafeRawBufferPointer, frameCount: Int, samples wanted: Bool) throws(RecordEnvelope.Problem) -> FrameBuffer
    {
        let streams = try decodeStreams(c, frameCount: frameCount, samples: wanted)
        // Rebuild the frames: structure pieces first, leaving a hole for each sample matrix, then the
        // rows of every matrix taken from the channel groups.
        let storage = outputStorage(capacity: streams.structure.count + streams.total)
        let out = storage.base
        let structure = streams.structure
        let length = try walkStructure(streams) { s, o, headerLength, split in
            let rest = UnsafeRawBufferPointer(rebasing: structure[s...])
            let frameLength = headerLength + Int(RecordReader(rest).u32(at: 12))
            guard let split else {
                out.advanced(by: o).copyMemory(from: rest.baseAddress!, byteCount: frameLength)
                return
            }
            out.advanced(by: o).copyMemory(from: rest.baseAddress!, byteCount: split.start)
            let tail = frameLength - split.start - split.count
            if tail > 0 {
                out.advanced(by: o + split.start + split.count).copyMemory(from: rest.baseAddress! + split.start, byteCount: tail)
            }
        }
        for row in grouping.rows {
            let f = Int(row.key >> 32) - 1
            if wanted {
                out.advanced(by: row.position).copyMemory(from: samples.base + streams.start[f] + row.grouped, byteCount: row.length)
            } else {
                out.advanced(by: row.position).initializeMemory(as: UInt8.self, repeating: 0, count: row.length)
            }
        }
        storage.setCount(length)
        return FrameBuffer(owner: storage, baseAddress: UnsafeRawPointer(storage.base), count: length)
    }

    private func untransform(
        _ source: UnsafeRawBufferPointer, raw: Int, format: SampleFormat, transforms: ChunkTransforms,
        into out: UnsafeMutableRawPointer, stream: Int,
        placement: ((_ first: Int, _ count: Int) -> UnsafeMutableRawPointer?)? = nil
    ) throws(RecordEnvelope.Problem) {
        do throws(NumericTransform.Failure) {
            // `raw` was checked against the record's limit; a coded stream's header must agree with it.
            try decodeStream(
                source, elementType: format.chunkElementType, transforms: transforms,
                into: UnsafeMutableRawBufferPointer(start: out, count: raw), placement: placement)
        } catch {
            switch error {
            case .invalidTransforms:
                throw .invalidField("chunk stream \(stream): transforms \(transforms) do not apply to \(format)")
            case .storedSize:
                throw .invalidField(
                    "chunk stream \(stream): \(source.count) stored bytes cannot hold \(raw) bytes of \(format) with \(transforms)")
            case .invalidStep(let step):
                throw .invalidField("chunk stream \(stream): quantisation step \(step) invalid")
            }
        }
    }

    /// One numeric stream back from its stored bytes into `destination` (its size the stream's raw
    /// size); `placement` as `NumericCodec.decode` takes it (coded streams only).
    func decodeStream(
        _ source: UnsafeRawBufferPointer, elementType: ChunkElementType, transforms: ChunkTransforms,
        into destination: UnsafeMutableRawBufferPointer,
        placement: ((_ first: Int, _ count: Int) -> UnsafeMutableRawPointer?)? = nil
    ) throws(NumericTransform.Failure) {
        counts.reserve(destination.count)
        if transforms.contains(.coded) {
            guard NumericTransform.isValid(transforms, for: elementType) else { throw .invalidTransforms }
            try numeric.decode(source, elementType: elementType, into: destination, placement: placement)
            return
        }
        try NumericTransform.reverse(source, elementType: elementType, transforms: transforms, scratch: counts.base, into: destination)
    }
}
