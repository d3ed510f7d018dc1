/// Why a `ByteReader` stopped: the field it was reading, where, and what was wrong. Neutral: each
/// module maps it once (its `ByteFailure` conformance) into the error it reports, with its own words.
public struct ByteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was wrong.
    public enum Reason: Equatable, Sendable {
        /// The bytes end before the field does: it needs `needed` bytes (`needed` may be negative
        /// when a caller asked to skip or take a negative length).
        case truncated(needed: Int)
        /// A count read from the bytes exceeds the caller's limit.
        case countTooLarge(count: Int, limit: Int)
        /// A count read from the bytes, times its element size, overflows or exceeds the bytes left.
        case countExceedsBytes(count: Int, elementSize: Int)
        /// A length-prefixed string of `length` bytes is not valid UTF-8.
        case invalidUTF8(length: Int)
    }

    /// What was wrong.
    public var reason: Reason
    /// The field being read, as its format's document names it (e.g. `analog.sample_count`).
    public var field: String
    /// The absolute byte offset of the field (`ByteReader.origin` plus its position): for a count,
    /// where the count starts; for a string's bytes, where they start.
    public var offset: Int
    /// Bytes left after the position the reader was at (after the count, for a count's reasons);
    /// never negative.
    public var remaining: Int

    public init(_ reason: Reason, field: String, offset: Int, remaining: Int) {
        self.reason = reason
        self.field = field
        self.offset = offset
        self.remaining = remaining
    }

    public var description: String {
        switch reason {
        case .truncated(let needed): "\(field) at byte \(offset): needs \(needed) bytes, \(remaining) left"
        case .countTooLarge(let count, let limit): "\(field) at byte \(offset): \(count) exceeds the limit \(limit)"
        case .countExceedsBytes(let count, let elementSize):
            "\(field) at byte \(offset): \(count) elements of \(elementSize) bytes do not fit in the \(remaining) bytes left"
        case .invalidUTF8(let length): "\(field) at byte \(offset): \(length) bytes are not valid UTF-8"
        }
    }
}

/// Whether `size` bytes at `offset` lie inside `count` bytes: two comparisons, no arithmetic that can
/// trap, so that a check after an earlier length test folds away on hot paths.
@inlinable @inline(__always)
func fits(_ offset: Int, _ size: Int, in count: Int) -> Bool {
    size >= 0 && size <= count && UInt(bitPattern: offset) <= UInt(bitPattern: count &- size)
}

/// An error a `ByteReader` reports: the module's own, made from a `ByteError` once, in one place.
public protocol ByteFailure: Error {
    /// The error for `error`, met while reading `source` (a file's name, or "" where the reader's
    /// caller names no source, as a frame decoder does).
    init(_ error: ByteError, source: String)
}

extension ByteError: ByteFailure {
    /// The error itself (a reader whose caller maps errors later, or tests).
    public init(_ error: ByteError, source: String) { self = error }
}
