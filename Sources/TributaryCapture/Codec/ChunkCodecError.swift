/// Why a chunk payload could not be encoded or decoded.
public enum ChunkCodecError: Error, Sendable, Equatable, CustomStringConvertible {
    /// zstd failed (corrupt, truncated or oversized frame, checksum mismatch, bad level...).
    case zstd(ZstdError)
    /// The payload size is not a whole number of elements.
    case payloadSize(byteCount: Int, elementType: ChunkElementType)
    /// The transform flags are unknown or do not apply to the element type.
    case unsupportedTransforms(ChunkTransforms, elementType: ChunkElementType)
    /// The caller's buffer is smaller than the result.
    case destinationTooSmall(needed: Int, available: Int)
    /// The decompressed content does not have a size the transforms can produce.
    case contentSize(Int, elementType: ChunkElementType, transforms: ChunkTransforms)
    /// A quantised chunk's step is not a positive finite number.
    case invalidStep(Double)

    public var description: String {
        switch self {
        case .zstd(let error): "chunk: \(error)"
        case .payloadSize(let count, let type): "chunk: payload of \(count) bytes is not a whole number of \(type) elements"
        case .unsupportedTransforms(let transforms, let type): "chunk: transforms \(transforms) do not apply to \(type)"
        case .destinationTooSmall(let needed, let available): "chunk: needs \(needed) bytes, destination has \(available)"
        case .contentSize(let size, let type, let transforms):
            "chunk: decompressed content of \(size) bytes is impossible for \(type) with \(transforms)"
        case .invalidStep(let step): "chunk: quantisation step \(step) is not positive and finite"
        }
    }
}
