/// Splits a byte stream that arrives in pieces of any size into frames.
///
/// Bytes are copied once, into 8-byte-aligned blocks; each complete frame is handed out as a
/// `Frame` that points into its block (no further copy), so a frame and the views decoded from it
/// keep only their own block alive. At most one incomplete frame is buffered, and a header that
/// announces a frame above `maxFrameSize` is rejected before any of its payload is buffered, so
/// memory stays bounded by `max(blockSize, maxFrameSize)` whatever the input.
///
/// After an error the decoder stays failed: a byte stream cannot be trusted to resynchronise.
public struct FrameStreamDecoder {
    /// The largest frame accepted.
    public let maxFrameSize: Int
    /// Capacity of a new block (at least one frame's length is always allocated).
    public let blockSize: Int

    private var block: FrameBuffer
    /// Start of the first byte not yet handed out as part of a frame, in `block`.
    private var readIndex = 0
    /// Stream position of `block`'s first byte.
    private var blockOrigin = 0
    private var failure: WireError?

    /// Frames of unknown ignorable kinds (>= 128) skipped so far.
    public private(set) var skippedFrames = 0

    public init(maxFrameSize: Int = WireLimits.maxFrameSize, blockSize: Int = 1 << 20) {
        self.maxFrameSize = maxFrameSize
        self.blockSize = max(blockSize, WireLimits.headerLength)
        block = FrameBuffer(capacity: self.blockSize)
    }

    /// Bytes received but not yet part of a complete frame.
    public var bufferedByteCount: Int { block.count - readIndex }

    /// Stream position of the next byte to be fed.
    public var streamPosition: Int { blockOrigin + block.count }

    /// Feeds the next piece of the stream and calls `onFrame` for each frame it completes, in order.
    ///
    /// - Throws: the `WireError` of an invalid header (its offset counts from the start of the
    ///   stream), or whatever `onFrame` throws.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ onFrame: (Frame) throws -> Void) throws {
        if let failure { throw failure }
        var input = bytes
        while !input.isEmpty {
            if block.spareCapacity == 0 { try makeRoom() }
            let taken = block.append(input)
            input = UnsafeRawBufferPointer(rebasing: input[taken...])
            try extractFrames(onFrame)
        }
    }

    /// Feeds a byte array (convenience for tests and small inputs).
    public mutating func feed(_ bytes: [UInt8], _ onFrame: (Frame) throws -> Void) throws {
        try bytes.withUnsafeBytes { try feed($0, onFrame) }
    }

    /// Declares the end of the stream.
    ///
    /// - Throws: `WireError.truncated` if the stream ends inside a frame.
    public mutating func finish() throws(WireError) {
        if let failure { throw failure }
        let pending = bufferedByteCount
        guard pending == 0 else {
            let error = WireError(
                .truncated, field: pending < WireLimits.headerLength ? "header" : "payload",
                offset: streamPosition,
                detail: "the stream ends \(pending) bytes into the frame at byte \(blockOrigin + readIndex)")
            failure = error
            throw error
        }
    }

    /// Hands out every complete frame at `readIndex`.
    private mutating func extractFrames(_ onFrame: (Frame) throws -> Void) throws {
        while block.count - readIndex >= WireLimits.headerLength {
            let available = UnsafeRawBufferPointer(rebasing: block.bytes[readIndex...])
            let length: Int
            let header: FrameHeader?
            do {
                switch try FrameHeader.peek(available, maxFrameSize: maxFrameSize, origin: blockOrigin + readIndex) {
                case .frame(let h): header = h; length = h.frameLength
                case .ignorable(_, let l): header = nil; length = l
                }
            } catch {
                failure = error
                throw error
            }
            guard available.count >= length else { return }
            if let header {
                try onFrame(Frame(header: header, buffer: block, offset: readIndex, position: blockOrigin + readIndex))
            } else {
                skippedFrames += 1
            }
            readIndex += length
        }
    }

    /// Starts a new block that holds the incomplete frame at `readIndex` and room for more.
    private mutating func makeRoom() throws {
        let pending = UnsafeRawBufferPointer(rebasing: block.bytes[readIndex...])
        var needed = blockSize
        if pending.count >= WireLimits.headerLength {
            // The header was validated by extractFrames, so the length is within maxFrameSize.
            let header = PayloadReader(pending)
            let length = Int(header.u32(at: 12)) + Int(header.u16(at: 8))
            needed = max(needed, length)
        }
        let next = FrameBuffer(capacity: needed)
        _ = next.append(pending)
        blockOrigin += readIndex
        readIndex = 0
        block = next
    }
}
