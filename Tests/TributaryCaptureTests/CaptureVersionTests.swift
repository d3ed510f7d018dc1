import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

/// Version 4 (coded streams of stream version 4) is written; versions 1 to 4 are read; others are refused at the header.
@Suite final class CaptureVersionTests {
    /// Every capture of a test lives here, removed when the test's instance goes.
    private let dir = temporaryDirectory()
    deinit { try? FileManager.default.removeItem(atPath: dir) }

    private func capture(version: UInt16?) throws -> String {
        let path = dir + "/v\(version.map(String.init) ?? "").tcap"
        let writer = try CaptureWriter(path: path, options: CaptureWriterOptions(fsync: .none, checkpointInterval: 0))
        for frame in syntheticFrames(40) { try writer.append(frame) }
        _ = try writer.close()
        if let version {
            // Rewrite the version field and the header CRC, as a writer of that version would have.
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            bytes[8] = UInt8(version & 0xFF)
            bytes[9] = UInt8(version >> 8)
            let headerLength = Int(bytes[12]) | Int(bytes[13]) << 8 | Int(bytes[14]) << 16 | Int(bytes[15]) << 24
            let crc = bytes[0..<(headerLength - 4)].withUnsafeBytes { CRC32C.checksum($0) }
            for i in 0..<4 { bytes[headerLength - 4 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
        return path
    }

    @Test func writesVersionFourAndReadsOneToFour() throws {
        let written = try capture(version: nil)
        let head = try [UInt8](Data(contentsOf: URL(fileURLWithPath: written)).prefix(10))
        #expect(head[8] == 4 && head[9] == 0)
        for version: UInt16 in [1, 2, 3, 4] {
            let reader = try CaptureReader(path: try capture(version: version))
            #expect(reader.damage.isEmpty, "version \(version): \(reader.damage)")
            var frames = 0
            reader.forEachFrame { _ in frames += 1 }
            #expect(frames > 0)
        }
    }

    @Test func anUnknownVersionIsRefusedByName() throws {
        do {
            _ = try CaptureReader(path: try capture(version: 5))
            Issue.record("a version 5 capture was read")
        } catch let error as CaptureError {
            #expect("\(error)".contains("version 5"))
            #expect("\(error)".contains("versions 1-4"))
        }
    }
}
