/// A file that could not be read or written as the format it claims to be, saying where and why.
public struct FormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file (path as given by the caller, or a description such as "<memory>").
    public var file: String
    /// Where in the file: for text formats "line L, column C"; for binary formats "byte offset N (field)".
    public var location: String
    /// What is wrong there.
    public var reason: String

    /// Creates an error.
    public init(file: String, location: String, reason: String) {
        self.file = file
        self.location = location
        self.reason = reason
    }

    public var description: String {
        location.isEmpty ? "\(file): \(reason)" : "\(file): \(location): \(reason)"
    }
}
