import CZstd

/// A failure reported by zstd or by the checks around it, with zstd's own error text.
public struct ZstdError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, in the terms a caller can act on.
    public enum Kind: Sendable, Equatable {
        /// zstd could not create a context (out of memory).
        case contextCreation
        /// zstd rejected a parameter (for example a compression level out of range).
        case parameter
        /// Compression failed (for example the destination buffer is too small).
        case compression
        /// The input is not one complete zstd frame: truncated, corrupt, or followed by extra bytes.
        case malformedFrame
        /// The frame does not declare its decompressed size (Tributary always writes it).
        case missingContentSize
        /// The declared or actual decompressed size exceeds the caller's bound.
        case contentTooLarge
        /// Decompression failed: corrupt data, or the content checksum does not match.
        case decompression
    }

    /// What went wrong.
    public var kind: Kind
    /// zstd's name for the error (`ZSTD_getErrorName`), or a description of the failed check.
    public var message: String

    /// Creates an error of a kind with a message.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// Builds an error from a zstd return code (which must satisfy `ZSTD_isError`).
    init(_ kind: Kind, code: Int) {
        self.init(kind, String(cString: ZSTD_getErrorName(code)))
    }

    public var description: String { "zstd \(kind): \(message)" }
}
