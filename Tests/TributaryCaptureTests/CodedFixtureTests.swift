import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

/// Captures written with coded streams of version 1 (2 rANS lanes; Fixtures/coded-v1-*.tcap),
/// version 2 (4 lanes; coded-v2-*.tcap) and version 3 (zstd-coded symbols, one a byte;
/// coded-v3-*.tcap), made by Tests/Interop/make_coded_fixtures.py with the writers on main before
/// versions 2, 3 and 4, still read bit for bit (coded-v1-*.npy holds what was imported into all). test_coded_spec.py checks the same files against the independent decoder
/// of docs/CAPTURE.md §5.1.
@Suite struct CodedFixtureTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// The data bytes of a .npy file (format 1.0: a 2-byte header length at offset 8).
    static func npyData(_ url: URL) throws -> [UInt8] {
        let bytes = try [UInt8](Data(contentsOf: url))
        let headerLength = Int(bytes[8]) | Int(bytes[9]) << 8
        return Array(bytes[(10 + headerLength)...])
    }

    @Test(
        arguments: [1, 2, 3],
        ["float32-adc24", "float64-affine", "float64-bits", "float64-exact", "float64-range", "float64-wide", "int16-counts"])
    func earlierStreamVersionsReadBitForBit(version: Int, name: String) throws {
        let reader = try CaptureReader(path: Self.directory.appendingPathComponent("coded-v\(version)-\(name).tcap").path)
        #expect(reader.damage.isEmpty, "\(reader.damage)")
        // Imported as (2 channels, 3000 samples): channel-major.
        let expected = try Self.npyData(Self.directory.appendingPathComponent("coded-v1-\(name).npy"))
        var rows: [[UInt8]] = [[], []]
        var frames = 0
        reader.forEachFrame { frame in
            guard frame.header.kind == .analog, let analog = try? frame.analog() else { return }
            frames += 1
            analog.withSampleBytes { bytes in
                let row = bytes.count / analog.channelCount
                for c in 0..<min(2, analog.channelCount) { rows[c] += bytes[(c * row)..<((c + 1) * row)] }
            }
        }
        #expect(frames > 0)
        #expect(rows[0] + rows[1] == expected)
    }
}
