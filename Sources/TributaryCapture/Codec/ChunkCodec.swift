/// Turns numeric chunk payloads into compressed bytes and back: the transforms of
/// `ChunkTransforms` followed by one independent zstd frame (content size and checksum on).
///
/// The public door to the capture codec: a payload is one numeric stream, transformed by the
/// writer's `ChunkEncoder.encodeStream` and restored by the reader's `ChunkDecoder.decodeStream`,
/// with their zstd contexts — so tests and benchmarks exercise and time the code captures use
/// (a capture adds the chunk body around its streams: docs/CAPTURE.md §4).
///
/// Owns its zstd contexts and scratch buffers, so it is for one thread at a time; create one per
/// worker. Scratch grows to the largest payload seen and is then reused: no allocation per chunk.
public final class ChunkCodec {
    /// The options in force.
    public let options: ChunkCodecOptions
    private let encoder: ChunkEncoder
    private let decoder: ChunkDecoder
    /// The transformed payload (encoding) or the decompressed content (decoding).
    private var scratch: UnsafeMutableRawPointer
    private var scratchCapacity: Int
    /// Empirical entropy (bits) of the latents coded since `resetEntropy()`, when `measureEntropy` is set
    /// (slow: for benchmarks).
    public var measureEntropy: Bool {
        get { encoder.numeric.measureEntropy }
        set { encoder.numeric.measureEntropy = newValue }
    }
    public var entropyBits: Double { encoder.numeric.entropyBits }
    public func resetEntropy() { encoder.numeric.resetEntropy() }

    /// Creates a codec.
    /// - Parameter options: which transforms to try and the zstd level.
    /// - Throws: `ChunkCodecError.zstd` when a context cannot be created or the level is rejected.
    public init(options: ChunkCodecOptions = ChunkCodecOptions()) throws(ChunkCodecError) {
        self.options = options
        do {
            encoder = try ChunkEncoder(options: options)
            decoder = try ChunkDecoder()
        } catch { throw .zstd(error) }
        scratchCapacity = 0
        scratch = .allocate(byteCount: 0, alignment: 16)
    }

    deinit {
        scratch.deallocate()
    }

    /// A destination size that always holds `encode`'s output for a payload of `payloadSize` bytes.
    public static func maxEncodedSize(payloadSize: Int) -> Int {
        ZstdCompressor.maxCompressedSize(payloadSize + 8)
    }

    /// Encodes a payload.
    /// - Parameters:
    ///   - payload: little-endian elements of `elementType`.
    ///   - elementType: what the payload holds; `.bytes` is compressed as it is.
    ///   - destination: where the zstd frame goes; `maxEncodedSize(payloadSize:)` bytes always suffice.
    /// - Returns: the frame size and the transforms applied (record them with the chunk).
    /// - Throws: `ChunkCodecError.payloadSize` when the payload is not whole elements, `.zstd` when
    ///   compression fails (for example a destination smaller than the bound that the data needs).
    public func encode(
        _ payload: UnsafeRawBufferPointer, elementType: ChunkElementType,
        into destination: UnsafeMutableRawBufferPointer
    ) throws(ChunkCodecError) -> (byteCount: Int, transforms: ChunkTransforms) {
        guard payload.count % elementType.size == 0 else { throw .payloadSize(byteCount: payload.count, elementType: elementType) }
        ensureScratch(payload.count + 8)
        let (content, transforms) = encoder.encodeStream(payload, elementType: elementType, segments: nil, into: scratch)
        do {
            return (try encoder.compressor.compress(content, into: destination), transforms)
        } catch { throw .zstd(error) }
    }

    /// The decoded size of an encoded chunk, from its zstd header (no decompression).
    /// - Throws: `ChunkCodecError` when the frame is malformed or its size is impossible for the transforms.
    public static func decodedSize(
        of encoded: UnsafeRawBufferPointer, elementType: ChunkElementType,
        transforms: ChunkTransforms
    ) throws(ChunkCodecError) -> Int {
        let contentSize: Int
        do { contentSize = try ZstdDecompressor.contentSize(of: encoded) } catch { throw .zstd(error) }
        return try decodedSize(contentSize: contentSize, elementType: elementType, transforms: transforms)
    }

    /// Decodes a chunk produced by `encode`.
    /// - Parameters:
    ///   - encoded: exactly one zstd frame.
    ///   - elementType: the element type given to `encode`.
    ///   - transforms: the transforms `encode` returned.
    ///   - destination: output; its size bounds the decoded size (checked before decompressing).
    /// - Returns: the number of payload bytes written.
    /// - Throws: `ChunkCodecError`: `.unsupportedTransforms`, `.zstd` (corrupt, truncated, checksum),
    ///   `.contentSize`, `.destinationTooSmall`, `.invalidStep`.
    public func decode(
        _ encoded: UnsafeRawBufferPointer, elementType: ChunkElementType, transforms: ChunkTransforms,
        into destination: UnsafeMutableRawBufferPointer
    ) throws(ChunkCodecError) -> Int {
        if transforms.contains(.coded) {
            return try decodeCoded(encoded, elementType: elementType, transforms: transforms, into: destination)
        }
        let decoded = try Self.decodedSize(of: encoded, elementType: elementType, transforms: transforms)
        guard decoded <= destination.count else { throw .destinationTooSmall(needed: decoded, available: destination.count) }
        let contentSize = transforms.contains(.quantised) ? 8 + decoded / 4 : decoded
        ensureScratch(decoded + 8)
        let direct = transforms.isEmpty
        let contentBuffer = UnsafeMutableRawBufferPointer(start: direct ? destination.baseAddress : scratch, count: contentSize)
        do {
            _ = try decoder.decompressor.decompress(encoded, into: contentBuffer)
        } catch { throw .zstd(error) }
        if direct { return decoded }
        try decodeStream(contentBuffer, elementType: elementType, transforms: transforms, into: destination, decoded)
        return decoded
    }

    /// A coded chunk: never larger than its payload (the encoder falls back otherwise), so the zstd
    /// content size is checked against the destination before anything is allocated.
    private func decodeCoded(
        _ encoded: UnsafeRawBufferPointer, elementType: ChunkElementType, transforms: ChunkTransforms,
        into destination: UnsafeMutableRawBufferPointer
    ) throws(ChunkCodecError) -> Int {
        guard NumericTransform.isValid(transforms, for: elementType) else {
            throw .unsupportedTransforms(transforms, elementType: elementType)
        }
        let contentSize: Int
        do { contentSize = try ZstdDecompressor.contentSize(of: encoded) } catch { throw .zstd(error) }
        guard contentSize <= destination.count, contentSize >= NumericCodec.streamHeaderSize else {
            throw .contentSize(contentSize, elementType: elementType, transforms: transforms)
        }
        ensureScratch(contentSize)
        let content = UnsafeMutableRawBufferPointer(start: scratch, count: contentSize)
        do { _ = try decoder.decompressor.decompress(encoded, into: content) } catch { throw .zstd(error) }
        guard let n = NumericCodec.elementCount(of: UnsafeRawBufferPointer(content), elementType: elementType) else {
            throw .contentSize(contentSize, elementType: elementType, transforms: transforms)
        }
        guard n <= destination.count / elementType.size else {
            throw .destinationTooSmall(needed: n * elementType.size, available: destination.count)
        }
        let decoded = n * elementType.size
        try decodeStream(content, elementType: elementType, transforms: transforms, into: destination, decoded)
        return decoded
    }

    /// Undoes the transforms of decompressed `content` into the first `decoded` bytes of `destination`.
    private func decodeStream(
        _ content: UnsafeMutableRawBufferPointer, elementType: ChunkElementType, transforms: ChunkTransforms,
        into destination: UnsafeMutableRawBufferPointer, _ decoded: Int
    ) throws(ChunkCodecError) {
        do throws(NumericTransform.Failure) {
            try decoder.decodeStream(
                UnsafeRawBufferPointer(content), elementType: elementType, transforms: transforms,
                into: UnsafeMutableRawBufferPointer(rebasing: destination[..<decoded]))
        } catch {
            throw Self.codecError(error, contentSize: content.count, elementType: elementType, transforms: transforms)
        }
    }

    /// Checks the transforms against the element type and maps the content size to the payload size.
    private static func decodedSize(
        contentSize: Int, elementType: ChunkElementType,
        transforms: ChunkTransforms
    ) throws(ChunkCodecError) -> Int {
        do throws(NumericTransform.Failure) {
            return try NumericTransform.payloadSize(storedSize: contentSize, elementType: elementType, transforms: transforms)
        } catch {
            throw codecError(error, contentSize: contentSize, elementType: elementType, transforms: transforms)
        }
    }

    private static func codecError(
        _ failure: NumericTransform.Failure, contentSize: Int, elementType: ChunkElementType,
        transforms: ChunkTransforms
    ) -> ChunkCodecError {
        switch failure {
        case .invalidTransforms: .unsupportedTransforms(transforms, elementType: elementType)
        case .storedSize: .contentSize(contentSize, elementType: elementType, transforms: transforms)
        case .invalidStep(let step): .invalidStep(step)
        }
    }

    private func ensureScratch(_ byteCount: Int) {
        guard byteCount > scratchCapacity else { return }
        // Grow geometrically so a slowly growing chunk size does not reallocate every time.
        let capacity = max(byteCount, scratchCapacity * 3 / 2)
        scratch.deallocate()
        scratch = .allocate(byteCount: capacity, alignment: 16)
        scratchCapacity = capacity
    }
}
