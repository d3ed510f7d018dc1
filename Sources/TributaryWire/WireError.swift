/// A malformed or unacceptable frame: what was wrong, in which field, at which byte offset.
///
/// Offsets count from the start of the buffer or stream being decoded (for a single frame: from
/// its first header byte), so that a hex dump and the error point at the same byte.
public struct WireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The class of problem.
    public enum Code: String, Sendable, Equatable {
        /// The bytes end before the field does.
        case truncated
        /// The first four bytes are not the frame magic "TRIB".
        case badMagic
        /// The header's version is not one this decoder implements.
        case unsupportedVersion
        /// The header's kind is unknown and not in the ignorable range (>= 128).
        case unknownKind
        /// A critical flag (bits 0-7) that this decoder does not know is set.
        case unsupportedFlags
        /// The header length is below 40 or not a multiple of 8.
        case badHeaderLength
        /// The payload length is not a multiple of 8.
        case misalignedLength
        /// The frame is larger than the receiver's limit.
        case frameTooLarge
        /// A count times an element size overflows, or exceeds a protocol limit.
        case countTooLarge
        /// Lengths inside the payload disagree with the payload length.
        case lengthMismatch
        /// A string is not valid UTF-8.
        case invalidUTF8
        /// A field holds a value outside its defined set or range.
        case invalidValue
        /// The bytes handed to the decoder do not start on an 8-byte boundary.
        case misalignedBuffer
    }

    /// The class of problem.
    public var code: Code
    /// The field that failed, as named in docs/PROTOCOL.md (e.g. `analog.sample_count`).
    public var field: String
    /// Byte offset of the failing field from the start of the decoded bytes.
    public var offset: Int
    /// Further detail: the value found, the limit, what was expected.
    public var detail: String

    public init(_ code: Code, field: String, offset: Int, detail: String = "") {
        self.code = code
        self.field = field
        self.offset = offset
        self.detail = detail
    }

    public var description: String {
        "\(code.rawValue) in field \(field) at byte \(offset)" + (detail.isEmpty ? "" : ": \(detail)")
    }
}
