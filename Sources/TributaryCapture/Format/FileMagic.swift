import Foundation

/// The first bytes of a file, for recognising formats by their magic numbers.
public enum FileMagic {
    /// Up to `count` bytes from the start of `path`; empty when it cannot be read (missing, a
    /// directory, no permission). Plain read(2): Foundation's `FileHandle.readData` traps on errors
    /// such as EISDIR.
    public static func prefix(of path: String, count: Int = 8) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, count - filled) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            filled += n
        }
        return Array(bytes[..<filled])
    }
}
