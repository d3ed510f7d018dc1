import Testing

@testable import TributaryWire

/// Packages with no elements cost no bytes, so their other dimension is bounded
/// (docs/PROTOCOL.md §2.4): a few bytes must not make a receiver loop over 2^32 empty rows.
@Suite struct EmptyPackageTests {
    /// The frame's bytes with the u32 at payload offset `at` set to `value`.
    static func patched(_ frame: Frame, payloadOffset at: Int, _ value: UInt32) -> [UInt8] {
        var bytes = frame.encodedBytes
        for k in 0..<4 { bytes[WireLimits.headerLength + at + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(k))) }
        return bytes
    }

    @Test func anEmptyArrayHasAtMostTheBoundInItsOtherDimension() throws {
        for type in [ArrayElements.double([]), .string([])] {
            let edge = Frame(encoding: .array(Array2D(rowCount: 0, columnCount: WireLimits.maxEmptyDimension, elements: type)))
            guard case .array(let view)? = try? Frame(copying: edge.encodedBytes).payload() else {
                Issue.record("a 0 × \(WireLimits.maxEmptyDimension) array must decode")
                continue
            }
            #expect(view.materialize().columnCount == WireLimits.maxEmptyDimension)
            // The fuzzer's input: 2^32 − 1 rows of nothing (42 s of looping before the bound).
            let rows = Self.patched(Frame(encoding: .array(Array2D(rowCount: 0, columnCount: 0, elements: type))), payloadOffset: 4, .max)
            #expect(MalformedFrameTests.error(rows)?.field == "array.row_count")
            let columns = Self.patched(edge, payloadOffset: 8, UInt32(WireLimits.maxEmptyDimension + 1))
            #expect(MalformedFrameTests.error(columns)?.field == "array.column_count")
        }
    }

    @Test func framesWithoutChannelsOrLinesHaveBoundedSampleCounts() throws {
        let analog = Frame(encoding: .analog(AnalogData(channelIndexes: [], sampleCount: 0, samples: .float64([]))))
        #expect(MalformedFrameTests.error(Self.patched(analog, payloadOffset: 4, UInt32(WireLimits.maxEmptyDimension))) == nil)
        #expect(MalformedFrameTests.error(Self.patched(analog, payloadOffset: 4, .max))?.field == "analog.sample_count")
        let digital = Frame(encoding: .digital(DigitalData(lineIndexes: [], sampleCount: 0, bits: [])))
        #expect(MalformedFrameTests.error(Self.patched(digital, payloadOffset: 4, UInt32(WireLimits.maxEmptyDimension))) == nil)
        #expect(MalformedFrameTests.error(Self.patched(digital, payloadOffset: 4, .max))?.field == "digital.sample_count")
    }
}
