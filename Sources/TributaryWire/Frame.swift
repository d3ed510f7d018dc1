/// One frame: a validated header and the bytes of its payload, held in place.
///
/// A frame does not copy its payload: it retains the `FrameBuffer` it was decoded from (a received
/// message, a decompressed capture chunk, the stream decoder's block) and the views its payload
/// decodes to point into that buffer. The header is held decoded; usually its bytes sit in the
/// same buffer just before the payload (a *contiguous* frame), but a frame can also pair a header
/// with a payload that lives elsewhere — a payload received as its own message part, or shared
/// by frames that differ only in their headers (`withHeader(_:)`).
public struct Frame: Sendable {
    public let header: FrameHeader
    /// The bytes the payload lives in.
    public let buffer: FrameBuffer
    /// Offset of the payload's first byte in `buffer` (8-byte aligned).
    public let payloadOffset: Int
    /// Position of the frame's first byte in the stream or file it came from (errors count from it).
    public let position: Int
    /// Whether the header's 40 bytes precede the payload in `buffer` exactly as encoded.
    public let isContiguous: Bool

    /// Offset of the frame's first header byte in `buffer`, for contiguous frames.
    @inlinable public var offset: Int { payloadOffset - header.headerLength }

    /// Validates the header of the frame that starts at `offset` in `buffer`.
    ///
    /// - Parameters:
    ///   - buffer: bytes holding at least the whole frame; the frame must start 8-byte aligned.
    ///   - offset: where the frame starts.
    ///   - maxFrameSize: the receiver's limit on header + payload.
    /// - Throws: `WireError` if the header is invalid, the kind unknown (including ignorable kinds:
    ///   use `FrameHeader.peek` to skip those), or the bytes end before the frame does.
    @inlinable
    public init(decoding buffer: FrameBuffer, at offset: Int = 0, maxFrameSize: Int = WireLimits.maxFrameSize) throws(WireError) {
        try self.init(decoding: buffer, at: offset, position: offset, maxFrameSize: maxFrameSize)
    }

    /// Validates the header of the frame at `offset` in `buffer`, which sits at `position` in a stream.
    @inlinable
    public init(decoding buffer: FrameBuffer, at offset: Int, position: Int, maxFrameSize: Int = WireLimits.maxFrameSize) throws(WireError)
    {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer.bytes[offset...])
        guard Int(bitPattern: bytes.baseAddress) & 7 == 0 else {
            throw WireError(
                .misalignedBuffer, field: "header", offset: position,
                detail: "frames must start on an 8-byte boundary; copy the bytes into a FrameBuffer")
        }
        switch try FrameHeader.peek(bytes, maxFrameSize: maxFrameSize, origin: position) {
        case .frame(let header):
            guard header.frameLength <= bytes.count else {
                throw WireError(
                    .truncated, field: "\(header.kind).payload", offset: position + bytes.count,
                    detail: "the frame has \(header.frameLength) bytes, \(bytes.count) present")
            }
            self.header = header
        case .ignorable(let kind, _):
            throw WireError(.unknownKind, field: "header.kind", offset: position + 5, detail: "ignorable kind \(kind)")
        }
        self.buffer = buffer
        self.payloadOffset = offset + header.headerLength
        self.position = position
        isContiguous = true
    }

    /// Pairs a validated header with a payload that lives in its own buffer (a payload received as
    /// a separate message part).
    ///
    /// - Parameters:
    ///   - header: a header validated by `FrameHeader.peek`.
    ///   - payload: holds the payload at `offset`; it must start 8-byte aligned (copy it into a new
    ///     `FrameBuffer` when the bytes arrived unaligned).
    /// - Throws: `WireError` if the payload's length is not the header's, or it is misaligned.
    public init(header: FrameHeader, payload: FrameBuffer, at offset: Int = 0, position: Int = 0) throws(WireError) {
        guard payload.count - offset == header.payloadLength else {
            throw WireError(
                .lengthMismatch, field: "header.payload_length", offset: position + 12,
                detail: "the header announces \(header.payloadLength) payload bytes, \(payload.count - offset) arrived")
        }
        guard Int(bitPattern: payload.baseAddress + offset) & 7 == 0 else {
            throw WireError(
                .misalignedBuffer, field: "payload", offset: position + header.headerLength,
                detail: "payloads must start on an 8-byte boundary; copy the bytes into a FrameBuffer")
        }
        self.header = header
        buffer = payload
        payloadOffset = offset
        self.position = position
        isContiguous = false
    }

    /// The same payload under another header (e.g. the next sequence number of one subscriber's
    /// stream), without copying the payload. Kind and payload length stay the payload's.
    public func withHeader(_ newHeader: FrameHeader) -> Frame {
        var h = newHeader
        h.kind = header.kind
        h.headerLength = header.headerLength
        h.payloadLength = header.payloadLength
        return Frame(header: h, buffer: buffer, payloadOffset: payloadOffset, position: position, contiguous: false)
    }

    /// Decodes a frame from bytes that are copied into an aligned buffer first.
    public init(copying bytes: some Sequence<UInt8>, maxFrameSize: Int = WireLimits.maxFrameSize) throws(WireError) {
        let buffer = FrameBuffer(copying: bytes)
        try self.init(decoding: buffer, maxFrameSize: maxFrameSize)
        guard header.frameLength == buffer.count else {
            throw WireError(
                .lengthMismatch, field: "header.payload_length", offset: 12,
                detail: "the frame has \(header.frameLength) bytes, \(buffer.count) were given")
        }
    }

    @usableFromInline
    init(header: FrameHeader, buffer: FrameBuffer, offset: Int, position: Int) {
        self.init(header: header, buffer: buffer, payloadOffset: offset + header.headerLength, position: position, contiguous: true)
    }

    @usableFromInline
    init(header: FrameHeader, buffer: FrameBuffer, payloadOffset: Int, position: Int, contiguous: Bool) {
        self.header = header
        self.buffer = buffer
        self.payloadOffset = payloadOffset
        self.position = position
        isContiguous = contiguous
    }

    /// The payload bytes, in place; only valid while `buffer` is kept alive by the caller.
    @inlinable
    var payloadBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: buffer.baseAddress + payloadOffset, count: header.payloadLength)
    }

    /// Calls `body` with the whole frame's bytes: in place for a contiguous frame, else assembled
    /// (header encoded, payload copied) in a temporary buffer. The pointer must not escape the closure.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        if isContiguous {
            return try withExtendedLifetime(buffer) { () throws(E) -> R in
                try body(UnsafeRawBufferPointer(start: buffer.baseAddress + offset, count: header.frameLength))
            }
        }
        var bytes = [UInt8](repeating: 0, count: header.frameLength)
        bytes.withUnsafeMutableBytes { out in
            header.encode(into: out.baseAddress!)
            withUnsafePayloadBytes {
                out.baseAddress!.advanced(by: header.headerLength).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
            }
        }
        let result: Result<R, E> = bytes.withUnsafeBytes { raw in
            do throws(E) { return .success(try body(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Calls `body` with the payload bytes in place; the pointer must not escape the closure.
    @inlinable
    public func withUnsafePayloadBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(buffer) { () throws(E) -> R in try body(payloadBytes) }
    }

    /// A copy of the frame's bytes, exactly as sent on the wire.
    public var encodedBytes: [UInt8] { withUnsafeBytes { Array($0) } }

    @inlinable var payloadOrigin: Int { position + header.headerLength }

    /// Decodes the payload: bulk data as zero-copy views, the rest as owned values.
    ///
    /// - Throws: `WireError` naming the field and byte offset that fail.
    public func payload() throws(WireError) -> Payload {
        try withExtendedLifetime(buffer) { () throws(WireError) -> Payload in try decodePayload() }
    }

    private func decodePayload() throws(WireError) -> Payload {
        let bytes = payloadBytes
        let origin = payloadOrigin
        var r = PayloadReader(bytes, origin: origin)
        let result: Payload
        switch header.kind {
        case .analog: return .analog(try AnalogView(header: header, payload: bytes, origin: origin, buffer: buffer))
        case .digital: return .digital(try DigitalView(payload: bytes, origin: origin, buffer: buffer))
        case .array: return .array(try ArrayView(payload: bytes, origin: origin, buffer: buffer))
        case .configuration: result = .configuration(try Configuration.read(&r))
        case .error: result = .error(try ErrorReport.read(&r))
        case .message: result = .message(try Message.read(&r))
        case .xml: result = .xml(try r.readString("xml.text", limit: Int.max))
        case .file: result = .file(try BlobChunk.read(&r, isImage: false))
        case .image: result = .image(try BlobChunk.read(&r, isImage: true))
        case .analogFilter: result = .analogFilter(try AnalogFilterRequest.read(&r))
        case .arrayFilter: result = .arrayFilter(try ArrayFilterRequest.read(&r))
        case .removeFilter: result = .removeFilter
        case .signalFilter: result = .signalFilter(try SignalFilterRequest.read(&r))
        case .hello: result = .hello(try Hello.read(&r))
        case .welcome: result = .welcome(try Welcome.read(&r))
        case .start: result = .start
        case .stop: result = .stop
        case .selectSources: result = .selectSources(try IDList.read(&r, "select_sources.source"))
        case .gap: result = .gap(try Gap.read(&r))
        case .close: result = .close(try Close.read(&r))
        case .credit: result = .credit(try r.read(UInt32.self, "credit.count"))
        case .properties: result = .properties(try SourceProperties.read(&r))
        }
        try r.finish(header.kind)
        return result
    }

    /// The analog view of an analog frame, validated in O(1) (the decoder's hot path).
    ///
    /// - Throws: `WireError` if the frame is not analog or its payload is malformed.
    @inlinable
    public func analog() throws(WireError) -> AnalogView {
        guard header.kind == .analog else {
            throw WireError(.invalidValue, field: "header.kind", offset: position + 5, detail: "\(header.kind) frame, not analog")
        }
        return try AnalogView(header: header, payload: payloadBytes, origin: payloadOrigin, buffer: buffer)
    }

    /// Decodes the header and analog preamble of the frame at `offset` straight into a view: the
    /// decoder's hot path (no intermediate `Frame`, one reference to the buffer).
    ///
    /// - Throws: `WireError` if the header is invalid, the frame is not analog, truncated, or its
    ///   preamble disagrees with its length.
    @inlinable
    public static func analogView(
        decoding buffer: FrameBuffer, at offset: Int = 0,
        maxFrameSize: Int = WireLimits.maxFrameSize
    ) throws(WireError) -> AnalogView {
        let available = buffer.count - offset
        let base = buffer.baseAddress + offset
        guard Int(bitPattern: base) & 7 == 0, available >= 0 else {
            throw WireError(
                .misalignedBuffer, field: "header", offset: offset,
                detail: "frames must start on an 8-byte boundary; copy the bytes into a FrameBuffer")
        }
        let bytes = UnsafeRawBufferPointer(start: base, count: available)
        guard case .frame(let header) = try FrameHeader.peek(bytes, maxFrameSize: maxFrameSize, origin: offset),
            header.kind == .analog, header.frameLength <= available
        else {
            throw try Frame(decoding: buffer, at: offset, maxFrameSize: maxFrameSize).notAnalogError()
        }
        let payload = UnsafeRawBufferPointer(start: base + header.headerLength, count: header.payloadLength)
        return try AnalogView(header: header, payload: payload, origin: offset + header.headerLength, buffer: buffer)
    }

    @usableFromInline
    func notAnalogError() -> WireError {
        WireError(.invalidValue, field: "header.kind", offset: position + 5, detail: "\(header.kind) frame, not analog")
    }

    // MARK: Encoding

    /// Encodes a package into a new frame: the size is computed first and every field is written
    /// once, straight into the frame's single buffer.
    ///
    /// - Parameters:
    ///   - package: what to send.
    ///   - header: sequence, timestamp, source and filter ids, flags; its kind and payload length are set here.
    public init(encoding package: Package, header: FrameHeader) {
        var header = header
        header.kind = package.kind
        header.headerLength = WireLimits.headerLength
        header.payloadLength = align8(package.contentLength)
        let buffer = FrameBuffer(capacity: header.frameLength)
        header.encode(into: buffer.mutableBase)
        var writer = PayloadWriter(
            UnsafeMutableRawBufferPointer(start: buffer.mutableBase + WireLimits.headerLength, count: header.payloadLength))
        package.write(&writer)
        precondition(
            writer.position == package.contentLength,
            "encoder wrote \(writer.position) bytes for \(package.kind), sized \(package.contentLength)")
        buffer.setCount(header.frameLength)
        self.init(header: header, buffer: buffer, offset: 0, position: 0)
    }

    /// Encodes a package with the given header fields.
    public init(
        encoding package: Package, sequence: UInt64 = 0, timestampNs: Int64 = 0, sourceID: UInt32 = 0,
        filterID: UInt32 = 0, flags: FrameFlags = []
    ) {
        self.init(
            encoding: package,
            header: FrameHeader(
                kind: package.kind, flags: flags, sequence: sequence,
                timestampNs: timestampNs, sourceID: sourceID, filterID: filterID))
    }

    /// Writes an analog frame whose samples the caller fills in place (no intermediate arrays):
    /// the path the publisher and the filters use.
    ///
    /// - Parameters:
    ///   - header: sequence, timestamp, source and filter ids.
    ///   - layout: channel count, sample count and format.
    ///   - firstSample: index of the first sample in the source's stream.
    ///   - fill: writes channel indexes, scales and samples through the `AnalogFrameWriter`.
    public static func analog(
        header: FrameHeader, layout: AnalogLayout, firstSample: UInt64,
        fill: (inout AnalogFrameWriter) throws -> Void
    ) rethrows -> Frame {
        let buffer = FrameBuffer(capacity: WireLimits.headerLength + layout.payloadLength)
        return try write(header: header, layout: layout, firstSample: firstSample, into: buffer, fill: fill)
    }

    /// Writes an analog frame as `analog(header:layout:firstSample:fill:)` does, into `buffer` instead of a
    /// new one: for a producer that pools its buffers (an application's pushes) and writes into one again
    /// once no frame of it is alive any more. The bytes come out identical to a new buffer's: the header,
    /// the preamble's padding and the payload's trailing padding are written, not left from the last frame.
    ///
    /// - Precondition: `buffer` was made with `FrameBuffer(reusableCapacity:)`, its `writableCapacity`
    ///   holds the whole frame (40 + `layout.payloadLength` bytes), and the caller holds the only
    ///   reference to it (`isKnownUniquelyReferenced`), so no earlier frame or view still reads it;
    ///   `fill` writes every row of samples (the rows are not cleared first).
    public static func analog(
        header: FrameHeader, layout: AnalogLayout, firstSample: UInt64, reusing buffer: FrameBuffer,
        fill: (inout AnalogFrameWriter) throws -> Void
    ) rethrows -> Frame {
        let frameLength = WireLimits.headerLength + layout.payloadLength
        precondition(buffer.writableCapacity >= frameLength, "the reused frame buffer cannot hold the frame")
        // The preamble's padding (bytes 17-23, the index table's alignment) and the tail past the content.
        buffer.mutableBase.initializeMemory(as: UInt8.self, repeating: 0, count: WireLimits.headerLength)
        let payload = buffer.mutableBase + WireLimits.headerLength
        payload.initializeMemory(as: UInt8.self, repeating: 0, count: layout.samplesOffset)
        (payload + layout.contentLength).initializeMemory(
            as: UInt8.self, repeating: 0, count: layout.payloadLength - layout.contentLength)
        return try write(header: header, layout: layout, firstSample: firstSample, into: buffer, fill: fill)
    }

    /// The encoding both `analog` calls share: `buffer` holds the frame and is zero where nothing is written.
    private static func write(
        header: FrameHeader, layout: AnalogLayout, firstSample: UInt64, into buffer: FrameBuffer,
        fill: (inout AnalogFrameWriter) throws -> Void
    ) rethrows -> Frame {
        var header = header
        header.kind = .analog
        header.headerLength = WireLimits.headerLength
        header.payloadLength = layout.payloadLength
        header.encode(into: buffer.mutableBase)
        let payload = buffer.mutableBase + WireLimits.headerLength
        layout.writePreamble(into: UnsafeMutableRawBufferPointer(start: payload, count: layout.contentLength), firstSample: firstSample)
        var writer = AnalogFrameWriter(layout: layout, payload: payload)
        try fill(&writer)
        buffer.setCount(header.frameLength)
        return Frame(header: header, buffer: buffer, offset: 0, position: 0)
    }
}

/// Fills the channel indexes, scales and samples of an analog frame being written.
public struct AnalogFrameWriter {
    public let layout: AnalogLayout
    let payload: UnsafeMutableRawPointer

    /// The payload's fields up to the samples.
    private var fields: PayloadWriter { PayloadWriter(UnsafeMutableRawBufferPointer(start: payload, count: layout.samplesOffset)) }

    /// Sets the configuration index of row `channel`.
    public func setChannelIndex(_ channel: Int, _ index: UInt32) {
        precondition(channel >= 0 && channel < layout.channelCount)
        var fields = self.fields
        fields.put(index, at: layout.indexesOffset + 4 * channel)
    }

    /// Sets the scale and offset of an int16 or int32 row.
    public func setScale(_ channel: Int, scale: Double, offset: Double) {
        precondition(layout.format.isCounts && channel >= 0 && channel < layout.channelCount)
        var fields = self.fields
        fields.put(scale, at: layout.scalesOffset + 8 * channel)
        fields.put(offset, at: layout.scalesOffset + 8 * (layout.channelCount + channel))
    }

    /// The writable samples of row `channel` (sampleCount × format.size bytes).
    public func samples(channel: Int) -> UnsafeMutableRawBufferPointer {
        precondition(channel >= 0 && channel < layout.channelCount)
        let size = layout.sampleCount * layout.format.size
        return UnsafeMutableRawBufferPointer(start: payload + layout.samplesOffset + channel * size, count: size)
    }
}
