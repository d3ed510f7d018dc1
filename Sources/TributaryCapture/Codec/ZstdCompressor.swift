import CZstd

/// Compresses buffers into single, independent zstd frames that carry their content size and a
/// content checksum, reusing one compression context (create one per thread; not thread-safe).
public final class ZstdCompressor {
    private let context: OpaquePointer

    /// The compression level (zstd's scale: negative = faster, 1 = fast default, up to 22).
    public private(set) var level: Int

    /// Creates a compressor.
    /// - Parameters:
    ///   - level: zstd compression level; 1 (fast) unless a slower, denser setting is wanted.
    ///   - checksum: whether frames carry their content's checksum (off only for frames nested in
    ///     a checksummed one).
    ///   - rawLiterals: store literals (the bytes no match covers) as they are instead of
    ///     Huffman-coding them: much faster where they are noise (the low bit rows of bit-shuffled
    ///     samples), larger where they are skewed. Any zstd decoder reads the frames.
    /// - Throws: `ZstdError` when the context cannot be created or the level is rejected.
    public init(level: Int = 1, checksum: Bool = true, rawLiterals: Bool = false) throws(ZstdError) {
        guard let context = ZSTD_createCCtx() else {
            throw ZstdError(.contextCreation, "ZSTD_createCCtx returned NULL")
        }
        self.context = context
        self.level = level
        try setLevel(level)
        // Both flags make every frame self-verifying and sized, so a reader can bound its buffer
        // before decompressing and detect corruption that the record CRC missed.
        try setParameter(ZSTD_c_checksumFlag, checksum ? 1 : 0)
        try setParameter(ZSTD_c_contentSizeFlag, 1)
        if rawLiterals {
            let result = tributary_zstd_set_raw_literals(context, 1)
            if ZSTD_isError(result) != 0 { throw ZstdError(.parameter, code: result) }
        }
    }

    deinit { ZSTD_freeCCtx(context) }

    /// Changes the compression level used by later calls.
    /// - Parameter level: zstd compression level.
    /// - Throws: `ZstdError` with kind `.parameter` when the level is outside `levels`.
    public func setLevel(_ level: Int) throws(ZstdError) {
        // zstd clamps levels silently; a typo such as 100 should be an error, not level 22.
        guard Self.levels.contains(level) else {
            throw ZstdError(.parameter, "compression level \(level) is outside \(Self.levels)")
        }
        try setParameter(ZSTD_c_compressionLevel, Int32(clamping: level))
        self.level = level
    }

    /// The largest compressed size of `byteCount` input bytes: a destination this large never fails.
    /// - Parameter byteCount: size of the input.
    /// - Returns: the worst-case size of one frame holding it.
    public static func maxCompressedSize(_ byteCount: Int) -> Int { ZSTD_compressBound(byteCount) }

    /// Compresses `source` into one zstd frame written at the start of `destination`.
    /// - Parameters:
    ///   - source: bytes to compress (may be empty).
    ///   - destination: where the frame goes; `maxCompressedSize(source.count)` bytes always suffice.
    /// - Returns: the size of the frame in bytes.
    /// - Throws: `ZstdError` with kind `.compression` (for example when `destination` is too small).
    public func compress(
        _ source: UnsafeRawBufferPointer,
        into destination: UnsafeMutableRawBufferPointer
    ) throws(ZstdError) -> Int {
        let written = ZSTD_compress2(
            context, destination.baseAddress, destination.count,
            source.baseAddress, source.count)
        if ZSTD_isError(written) != 0 { throw ZstdError(.compression, code: written) }
        return written
    }

    /// The levels zstd accepts (`ZSTD_minCLevel()...ZSTD_maxCLevel()`).
    public static var levels: ClosedRange<Int> { Int(ZSTD_minCLevel())...Int(ZSTD_maxCLevel()) }

    private func setParameter(_ parameter: ZSTD_cParameter, _ value: Int32) throws(ZstdError) {
        let result = ZSTD_CCtx_setParameter(context, parameter, value)
        if ZSTD_isError(result) != 0 { throw ZstdError(.parameter, code: result) }
    }
}
