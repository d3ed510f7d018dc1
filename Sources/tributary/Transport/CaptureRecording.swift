import Foundation
import TributaryCapture
import TributaryTransport
import TributaryWire

/// What a subscriber receives, stored in a capture exactly as it arrived: used by `record` and `demo`.
enum CaptureRecording {
    /// Appends what a package carries to the capture.
    /// - Parameter captureSourceID: the capture's id for the package's source (`record` of several
    ///   publishers renumbers colliding ids); nil: the publisher's id, as received.
    /// - Returns: frames and frame bytes appended.
    static func append(
        _ package: ReceivedPackage, to writer: CaptureWriter, captureSourceID: UInt32? = nil
    ) throws -> (frames: Int, bytes: Int) {
        var header = package.header
        if let captureSourceID { header.sourceID = captureSourceID }
        if let frame = package.frame {
            // The header as delivered: the filter id the subscriber was given (stable across reconnections).
            let stored = frame.withHeader(header)
            try writer.append(stored)
            return (1, stored.header.frameLength)
        }
        switch package.content {
        case .error(let report) where report.isNormalCloseByPublisher:
            return (0, 0)  // the end of the session, not an error of the stream
        case .error(let report):
            // Detected by the Subject itself (lost connection, expired timeout): recorded as an error frame.
            let frame = Frame(encoding: .error(report), timestampNs: wallClockNanoseconds())
            try writer.append(frame)
            return (1, frame.header.frameLength)
        case .file(let file), .image(let file):
            let chunks = BlobChunk.chunks(
                of: file.content, transferID: UInt64.random(in: 1...UInt64.max), name: file.originalName,
                attributes: file.attributes, imageFormat: file.imageFormat)
            var bytes = 0
            for chunk in chunks {
                let encoded = Frame(encoding: file.imageFormat == nil ? .file(chunk) : .image(chunk), header: header)
                try writer.append(encoded)
                bytes += encoded.header.frameLength
            }
            return (chunks.count, bytes)
        default:
            return (0, 0)
        }
    }
}
