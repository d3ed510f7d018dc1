import CZstd

/// Decompresses single zstd frames with a bound on the output size, reusing one decompression
/// context (create one per thread; not thread-safe).
public final class ZstdDecompressor {
    private let context: OpaquePointer

    /// Creates a decompressor.
    /// - Throws: `ZstdError` with kind `.contextCreation` when zstd cannot allocate the context.
    public init() throws(ZstdError) {
        guard let context = ZSTD_createDCtx() else {
            throw ZstdError(.contextCreation, "ZSTD_createDCtx returned NULL")
        }
        self.context = context
    }

    deinit { ZSTD_freeDCtx(context) }

    /// The decompressed size a frame declares, after checking that `frame` is exactly one whole frame.
    /// - Parameter frame: the compressed bytes.
    /// - Returns: the declared content size in bytes.
    /// - Throws: `ZstdError` with kind `.malformedFrame` or `.missingContentSize`.
    public static func contentSize(of frame: UnsafeRawBufferPointer) throws(ZstdError) -> Int {
        let frameSize = ZSTD_findFrameCompressedSize(frame.baseAddress, frame.count)
        if ZSTD_isError(frameSize) != 0 { throw ZstdError(.malformedFrame, code: frameSize) }
        guard frameSize == frame.count else {
            throw ZstdError(.malformedFrame, "\(frame.count - frameSize) bytes follow the frame of \(frameSize) bytes")
        }
        let declared = ZSTD_getFrameContentSize(frame.baseAddress, frame.count)
        // ZSTD_CONTENTSIZE_UNKNOWN and ZSTD_CONTENTSIZE_ERROR are the two largest UInt64 values.
        if declared == UInt64.max - 1 { throw ZstdError(.malformedFrame, "frame header is invalid") }
        if declared == UInt64.max { throw ZstdError(.missingContentSize, "frame does not declare its content size") }
        guard declared <= UInt64(Int.max) else { throw ZstdError(.contentTooLarge, "frame declares \(declared) bytes") }
        return Int(declared)
    }

    /// Decompresses exactly one frame into `destination`, refusing more than `destination.count` bytes.
    /// - Parameters:
    ///   - frame: one complete zstd frame with its content size (no bytes after it).
    ///   - destination: the output buffer; its size is the bound on the decompressed size.
    /// - Returns: the number of bytes written (equal to the frame's declared content size).
    /// - Throws: `ZstdError`: `.malformedFrame`, `.missingContentSize`, `.contentTooLarge`, or
    ///   `.decompression` (corrupt data or checksum mismatch).
    public func decompress(
        _ frame: UnsafeRawBufferPointer,
        into destination: UnsafeMutableRawBufferPointer
    ) throws(ZstdError) -> Int {
        let declared = try Self.contentSize(of: frame)
        guard declared <= destination.count else {
            throw ZstdError(.contentTooLarge, "frame declares \(declared) bytes, bound is \(destination.count)")
        }
        // An empty destination may have a nil base address; zstd accepts NULL with capacity 0.
        let written = ZSTD_decompressDCtx(
            context, destination.baseAddress, destination.count,
            frame.baseAddress, frame.count)
        if ZSTD_isError(written) != 0 { throw ZstdError(.decompression, code: written) }
        guard written == declared else {
            throw ZstdError(.decompression, "frame declares \(declared) bytes but holds \(written)")
        }
        return written
    }
}
