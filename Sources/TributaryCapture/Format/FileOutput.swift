import Foundation

/// Appends bytes to an open file descriptor, retrying short writes and EINTR, and keeps the file
/// offset so that a failure says where it happened. Used by the capture writer and by repair.
struct FileOutput {
    let fd: Int32
    /// The path, for error messages.
    let path: String
    /// Bytes written so far (the offset of the next byte).
    private(set) var offset: Int

    init(fd: Int32, path: String, offset: Int = 0) {
        self.fd = fd
        self.path = path
        self.offset = offset
    }

    /// Writes all of `bytes`.
    /// - Throws: `CaptureError.io` with the offset of the first byte that could not be written.
    mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CaptureError) {
        var done = 0
        while done < bytes.count {
            let n = Foundation.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw CaptureError(.io, file: path, offset: offset + done, "write failed: \(String(cString: strerror(errno)))")
            }
            done += n
        }
        offset += done
    }

    /// Writes all of `array`.
    mutating func write(_ array: [UInt8]) throws(CaptureError) {
        let failure: CaptureError? = array.withUnsafeBytes { (raw) -> CaptureError? in
            do throws(CaptureError) { try write(raw); return nil } catch { return error }
        }
        if let failure { throw failure }
    }

    /// Moves the offset (after the caller truncated or repositioned the file).
    mutating func reset(to offset: Int) { self.offset = offset }
}
