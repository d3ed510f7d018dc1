import Testing

@testable import TributaryWire

@Suite struct FrameRoundTripTests {
    @Test(arguments: FrameKind.allCases)
    func everyKindRoundTrips(kind: FrameKind) throws {
        var factory = PackageFactory(seed: UInt64(kind.rawValue) * 7919)
        for _ in 0..<200 {
            let original = factory.frame(kind)
            let package = try original.payload().materialize()
            // Decode from a fresh copy of the bytes, as a receiver would.
            let received = try Frame(copying: original.encodedBytes)
            #expect(received.header == original.header)
            #expect(received.header.frameLength % 8 == 0)
            let decoded = try received.payload().materialize()
            #expect(decoded == package)
            // Re-encoding the decoded package reproduces the bytes exactly.
            let again = Frame(encoding: decoded, header: received.header)
            #expect(again.encodedBytes == original.encodedBytes)
        }
    }

    @Test func edgeCasesRoundTrip() throws {
        let packages: [Package] = [
            .analog(AnalogData(channelIndexes: [], sampleCount: 0, samples: .float64([]))),
            .analog(AnalogData(channelIndexes: [3, 5], sampleCount: 0, samples: .float32([]))),
            .analog(AnalogData(channelIndexes: [], sampleCount: 1000, samples: .int16(counts: [], scale: [], offset: []))),
            .digital(DigitalData(lines: [])),
            .array(Array2D(rowCount: 0, columnCount: 7, elements: .string([]))),
            .array(Array2D(rowCount: 2, columnCount: 2, elements: .string(["", "", "", ""]))),
            .message(Message("")),
            .message(Message("Grüße, 世界 🙂", code: -1)),
            .xml(""),
            .configuration(Configuration(deviceName: "", deviceType: "")),
            .selectSources([]),
            .file(BlobChunk.chunks(of: [], transferID: 1, name: "empty.bin")[0]),
        ]
        for package in packages {
            let frame = Frame(encoding: package, sequence: 1)
            #expect(try Frame(copying: frame.encodedBytes).payload().materialize() == package)
        }
    }

    @Test func analogViewReadsInPlace() throws {
        let data = AnalogData(channels: [[1, 2, 3], [4, 5, 6]], firstSample: 42)
        let frame = Frame(encoding: .analog(data), sequence: 9, timestampNs: 123, sourceID: 2, filterID: 1)
        let view = try frame.analog()
        #expect(view.channelCount == 2 && view.sampleCount == 3 && view.firstSample == 42)
        #expect(view.channelIndexes == [0, 1])
        view.withSamples(Double.self, channel: 1) { samples in
            #expect(Array(samples) == [4, 5, 6])
            // The samples are the frame's own bytes, not a copy.
            let base = frame.buffer.baseAddress
            #expect(UnsafeRawPointer(samples.baseAddress!) >= base)
            #expect(UnsafeRawPointer(samples.baseAddress!) < base + frame.buffer.count)
            #expect(Int(bitPattern: samples.baseAddress!) % 8 == 0)
        }
        #expect(view.value(channel: 0, sample: 2) == 3)
    }

    @Test func int16SamplesAreScaled() throws {
        let data = AnalogData(channelIndexes: [7], sampleCount: 3, samples: .int16(counts: [-2, 0, 2], scale: [0.5], offset: [1]))
        let view = try Frame(encoding: .analog(data)).analog()
        #expect(view.values(channel: 0) == [0, 1, 2])
        #expect(view.scale(0) == 0.5 && view.offset(0) == 1)
    }

    @Test func analogWriterMatchesPackageEncoder() throws {
        let data = AnalogData(
            channelIndexes: [4, 9], sampleCount: 5, firstSample: 10,
            samples: .float32([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))
        let header = FrameHeader(kind: .analog, sequence: 3, timestampNs: 99, sourceID: 1, filterID: 2)
        let viaPackage = Frame(encoding: .analog(data), header: header)
        let viaWriter = Frame.analog(header: header, layout: data.layout, firstSample: 10) { writer in
            writer.setChannelIndex(0, 4)
            writer.setChannelIndex(1, 9)
            for c in 0..<2 {
                let values: [Float] = (1...5).map { Float(c * 5 + $0) }
                values.withUnsafeBytes { writer.samples(channel: c).copyMemory(from: $0) }
            }
        }
        #expect(viaWriter.encodedBytes == viaPackage.encodedBytes)
    }

    /// A pooled buffer written again gives the bytes a new buffer does, whatever the frame before left
    /// in the padding (the index table's alignment, the payload's tail).
    @Test func aReusedBufferWritesTheBytesOfANewOne() throws {
        var buffer = FrameBuffer(reusableCapacity: 2048)
        // One channel of 500 int16 counts, every sample 0xFFFF: bytes 48-1047 of the payload dirty.
        let dirty = AnalogLayout(channelCount: 1, sampleCount: 500, format: .int16)
        _ = Frame.analog(header: FrameHeader(kind: .analog, sequence: 9, sourceID: 4), layout: dirty, firstSample: 5, reusing: buffer) {
            writer in
            writer.setChannelIndex(0, 0xFFFF_FFFF)
            writer.setScale(0, scale: -1, offset: .greatestFiniteMagnitude)
            writer.samples(channel: 0).initializeMemory(as: UInt8.self, repeating: 0xFF)
        }
        #expect(isKnownUniquelyReferenced(&buffer))
        // Five float32 channels of three samples: padding after the index table and after the samples.
        let layout = AnalogLayout(channelCount: 5, sampleCount: 3, format: .float32)
        let header = FrameHeader(kind: .analog, sequence: 3, timestampNs: 99, sourceID: 1, filterID: 2)
        func fill(_ writer: inout AnalogFrameWriter) {
            for c in 0..<5 {
                writer.setChannelIndex(c, UInt32(c * 2))
                let values: [Float] = (1...3).map { Float(c * 3 + $0) }
                values.withUnsafeBytes { writer.samples(channel: c).copyMemory(from: $0) }
            }
        }
        let reused = Frame.analog(header: header, layout: layout, firstSample: 10, reusing: buffer, fill: fill)
        let fresh = Frame.analog(header: header, layout: layout, firstSample: 10, fill: fill)
        #expect(reused.buffer === buffer)
        #expect(reused.encodedBytes == fresh.encodedBytes)
        #expect(buffer.writableCapacity == 2048)
    }

    @Test func digitalStatesAndStringArrays() throws {
        let lines: [[Bool]] = [
            [true, false, true, true, false, false, false, false, true], [false, true, false, false, false, false, false, false, false],
        ]
        let digital = DigitalData(lines: lines)
        guard case .digital(let view) = try Frame(encoding: .digital(digital)).payload() else { Issue.record("not digital"); return }
        for l in 0..<2 { for s in 0..<9 { #expect(view.state(line: l, sample: s) == lines[l][s]) } }

        let strings = Array2D(rowCount: 2, columnCount: 2, elements: .string(["a", "bé", "", "温度"]))
        guard case .array(let array) = try Frame(encoding: .array(strings)).payload() else { Issue.record("not array"); return }
        #expect(array.string(row: 1, column: 1) == "温度")
        #expect(array.string(row: 0, column: 1) == "bé")
    }

    @Test func md5MatchesKnownDigests() {
        #expect(MD5.hex(MD5.digest(Array("".utf8))) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(MD5.hex(MD5.digest(Array("The quick brown fox jumps over the lazy dog".utf8))) == "9e107d9d372bb6826bd81d3542a419d6")
        #expect(MD5.hex(MD5.digest([UInt8](repeating: 0x61, count: 1000))) == "cabe45dcc9ae5b66ba86600cca6b8ba8")
    }
}

@Suite struct SplitFrameTests {
    @Test func headerAndPayloadInSeparateBuffers() throws {
        let original = Frame(encoding: .analog(AnalogData(channels: [[1, 2], [3, 4]])), sequence: 4, sourceID: 2)
        let bytes = original.encodedBytes
        guard case .frame(let header) = try bytes.withUnsafeBytes({ raw throws(WireError) in try FrameHeader.peek(raw) }) else {
            Issue.record("not a frame"); return
        }
        let payload = FrameBuffer(copying: bytes[40...])
        let split = try Frame(header: header, payload: payload)
        #expect(!split.isContiguous)
        #expect(split.encodedBytes == bytes)
        #expect(try split.analog().values(channel: 1) == [3, 4])
        // A payload of the wrong length is refused.
        #expect(throws: WireError.self) { try Frame(header: header, payload: FrameBuffer(copying: bytes[48...])) }
    }

    @Test func withHeaderSharesThePayload() throws {
        let original = Frame(encoding: .message(Message("shared")), sequence: 1)
        var header = original.header
        header.sequence = 99
        header.filterID = 3
        let renumbered = original.withHeader(header)
        #expect(renumbered.buffer === original.buffer)
        let decoded = try Frame(copying: renumbered.encodedBytes)
        #expect(decoded.header.sequence == 99 && decoded.header.filterID == 3)
        #expect(try decoded.payload().materialize() == .message(Message("shared")))
    }
}

@Suite struct PayloadEncoderTests {
    @Test(arguments: FrameKind.allCases)
    func encodePayloadMatchesTheFrameEncoder(kind: FrameKind) {
        var factory = PackageFactory(seed: 31 + UInt64(kind.rawValue))
        for _ in 0..<20 {
            let package = factory.package(kind)
            let frame = Frame(encoding: package)
            var bytes = [UInt8](repeating: 0xAA, count: package.payloadLength + 8)
            let written = bytes.withUnsafeMutableBytes { package.encodePayload(into: $0) }
            #expect(written == frame.header.payloadLength)
            #expect(Array(bytes[..<written]) == Array(frame.encodedBytes[40...]))
            #expect(bytes[written...].allSatisfy { $0 == 0xAA })  // nothing written past the payload
        }
    }
}
