import Foundation
import Testing
import TributaryTestSupport
import TributaryWire

@testable import TributaryCapture

/// The per-channel regrouping of numeric streams (docs/CAPTURE.md §4.3): every frame must come back
/// bit for bit whatever the mix of channel sets, orders, formats, scales and empty matrices in a chunk.
@Suite struct ChunkRegroupingTests {
    static let allOptions = [
        ChunkOptions(), ChunkOptions(bitShuffle: false, delta: false, quantiseFloats: false),
        ChunkOptions(bitShuffle: true, delta: false, quantiseFloats: true),
        ChunkOptions(bitShuffle: false, delta: true, quantiseFloats: true),
    ]

    /// Encodes the frames as one chunk and decodes it; returns the decoded bytes and the decompressed body.
    func roundTrip(_ frames: [[UInt8]], options: ChunkOptions) throws -> (frames: [UInt8], body: [UInt8]) {
        let builder = ChunkBuilder()
        builder.reset(sourceID: 1)
        for bytes in frames {
            let header = try Frame(copying: bytes).header
            bytes.withUnsafeBytes { builder.append($0, header: header, now: 0) }
        }
        let envelope = try ChunkEncoder(options: options).encode(builder)
        let decoded = try ChunkDecoder().decode(builder.encoded.bytes, envelope: envelope)
        let body = try builder.encoded.bytes.withUnsafeBytes { stored -> [UInt8] in
            var out = [UInt8](repeating: 0, count: Int(envelope.contentLength))
            let n = try out.withUnsafeMutableBytes { try ZstdDecompressor().decompress(stored, into: $0) }
            #expect(n == out.count)
            return out
        }
        return (decoded.array, body)
    }

    func analog(
        _ channels: [UInt32], _ samples: Int, _ format: SampleFormat, seed: UInt64, scale: Double = 20.0 / 65536,
        sequence: UInt64 = 0
    ) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        let n = channels.count * samples
        // Smooth-ish counts per row so delta coding has something to do, plus noise.
        let counts = (0..<n).map { i in
            Int16(truncatingIfNeeded: Int(2000 * sin(Double(i % max(1, samples)) * 0.05)) + Int(rng.next() % 9) - 4)
        }
        let data: AnalogSamples
        switch format {
        case .float64: data = .float64(counts.map { Double($0) * scale })
        case .float32: data = .float32(counts.map { Float($0) * 0.25 })
        case .int16: data = .int16(counts: counts, scale: channels.map { (Double($0) + 1) * scale }, offset: channels.map { -Double($0) })
        case .int32:
            // 24-bit codes: the counts shifted up, with a finer scale.
            data = .int32(
                counts: counts.map { Int32($0) << 8 | Int32(rng.next() % 256) }, scale: channels.map { (Double($0) + 1) * scale / 256 },
                offset: channels.map { -Double($0) })
        }
        return Frame(
            encoding: .analog(AnalogData(channelIndexes: channels, sampleCount: samples, firstSample: sequence * 100, samples: data)),
            sequence: sequence, timestampNs: Int64(sequence) * 1000, sourceID: 1
        ).encodedBytes
    }

    func expectExact(_ frames: [[UInt8]], _ comment: Comment? = nil) throws {
        for options in Self.allOptions {
            let (decoded, _) = try roundTrip(frames, options: options)
            #expect(decoded == frames.flatMap { $0 }, "\(options) \(comment?.description ?? "")")
        }
    }

    @Test func differentChannelSetsAndOrdersInOneChunk() throws {
        let sets: [[UInt32]] = [[0, 1, 2, 3], [3, 2, 1, 0], [2], [7, 0], [0, 1, 2, 3], [5, 5, 1], [70_000, 0], [UInt32.max]]
        for format in SampleFormat.allCases {
            let frames = sets.enumerated().map { analog($1, 37 + $0, format, seed: UInt64($0), sequence: UInt64($0)) }
            try expectExact(frames, "\(format)")
        }
    }

    @Test func int16WithDifferentScalesPerFrame() throws {
        let frames = (0..<6).map { analog([0, 1, 2], 100, .int16, seed: UInt64($0), scale: Double($0 + 1) * 1e-4, sequence: UInt64($0)) }
        try expectExact(frames)
    }

    @Test func framesWithNoChannelsOrNoSamples() throws {
        var frames: [[UInt8]] = []
        for format in SampleFormat.allCases {
            frames.append(analog([], 50, format, seed: 1))
            frames.append(analog([0, 1], 0, format, seed: 2))
            frames.append(analog([0, 1], 3, format, seed: 3))
            frames.append(analog([], 0, format, seed: 4))
        }
        try expectExact(frames)
        try expectExact([analog([], 0, .int16, seed: 5)])
    }

    @Test func mixedFormatsAndOtherKindsInOneChunk() throws {
        var frames: [[UInt8]] = []
        for i in 0..<12 {
            let format = SampleFormat.allCases[i % 4]
            frames.append(analog(i % 2 == 0 ? [0, 1] : [1, 0, 4], 11 + i, format, seed: UInt64(i), sequence: UInt64(i)))
            if i % 4 == 0 {
                frames.append(
                    Frame(encoding: .message(Message("between \(i)", code: Int32(i))), sequence: UInt64(i), sourceID: 1).encodedBytes)
            }
        }
        try expectExact(frames)
    }

    @Test func paddingAndQuantisationMissesStayExact() throws {
        // float32 with an odd matrix has 4 bytes of payload padding: make them non-zero.
        var odd = analog([0, 1, 2], 5, .float32, seed: 9)
        odd[odd.count - 1] = 0xAB
        odd[odd.count - 4] = 0xCD
        // float64 rows that are not all on one quantisation grid (the whole stream must then be stored as floats).
        let offGrid = Frame(
            encoding: .analog(AnalogData(channelIndexes: [0], sampleCount: 4, samples: .float64([0.1, -0.0, .nan, 1e300]))),
            sourceID: 1
        ).encodedBytes
        try expectExact([odd, analog([0], 64, .float64, seed: 1), offGrid, analog([1], 64, .float64, seed: 2)])
    }

    @Test func streamHoldsEachChannelContiguouslyInIncreasingChannelIndex() throws {
        // With no transforms the int16 stream is readable in the body: channel 1's rows of both frames,
        // then channel 4's, then channel 9's — whatever the row order in the frames.
        let a = AnalogData(
            channelIndexes: [9, 1], sampleCount: 2, samples: .int16(counts: [90, 91, 10, 11], scale: [1, 1], offset: [0, 0]))
        let b = AnalogData(
            channelIndexes: [4, 1, 9], sampleCount: 3,
            samples: .int16(counts: [40, 41, 42, 12, 13, 14, 92, 93, 94], scale: [1, 1, 1], offset: [0, 0, 0]))
        let frames = [a, b].enumerated().map { Frame(encoding: .analog($1), sequence: UInt64($0), sourceID: 1).encodedBytes }
        let (decoded, body) = try roundTrip(frames, options: ChunkOptions(bitShuffle: false, delta: false, quantiseFloats: false))
        #expect(decoded == frames.flatMap { $0 })
        #expect(body.withUnsafeBytes { RecordReader($0).u16(at: 4) } == 1)
        let structureLength = Int(body.withUnsafeBytes { RecordReader($0).u64(at: 8) })
        let start = pad8(16 + 24 + structureLength)
        let stream = body[start...].withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(stream == [10, 11, 12, 13, 14, 40, 41, 42, 90, 91, 92, 93, 94])
    }

    @Test func writerAndReaderRoundTripRegroupedChunks() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        var frames: [Frame] = []
        for i in 0..<300 {
            let channels: [UInt32] = i % 7 == 0 ? [3, 0] : [0, 1, 2, 3]
            frames.append(
                try Frame(copying: analog(channels, 200 + i % 5, SampleFormat.allCases[(i / 50) % 4], seed: UInt64(i), sequence: UInt64(i)))
            )
        }
        try record(frames, to: path, maxChunkBytes: 256 << 10, chunkDuration: 100)
        let reader = try CaptureReader(path: path)
        #expect(reader.index.count > 3)
        #expect(framesBySource(reader) == bySource(frames))
    }
    /// The grouping itself against its definition (stable by (format, channel), offsets per format),
    /// with channels on both sides of the direct table's 1 024 and the same grouping reused.
    @Test func groupingMatchesItsDefinitionAcrossChunks() {
        var grouping = StreamGrouping()
        var generator = SystemRandomNumberGenerator()
        for chunk in 0..<6 {
            grouping.reset()
            var added: [(format: UInt8, channel: UInt32, length: Int, position: Int)] = []
            for position in 0..<(200 + chunk * 50) {
                let channel: UInt32 =
                    chunk % 2 == 0
                    ? UInt32.random(in: 0..<12, using: &generator)
                    : [0, 5, 1_023, 1_024, 70_000, UInt32.max].randomElement(using: &generator)!
                let format = UInt8.random(in: 1...4, using: &generator)
                let length = Int.random(in: 0..<40, using: &generator) * 8
                grouping.add(format: format, channel: channel, length: length, position: position)
                if length > 0 { added.append((format, channel, length, position)) }
            }
            grouping.finish()
            #expect(grouping.rows.map(\.position) == added.map(\.position))
            let order = added.indices.sorted {
                (added[$0].format, added[$0].channel, $0) < (added[$1].format, added[$1].channel, $1)
            }
            var expected = [Int](repeating: 0, count: added.count)
            var totals = [0, 0, 0, 0]
            for index in order {
                expected[index] = totals[Int(added[index].format) - 1]
                totals[Int(added[index].format) - 1] += added[index].length
            }
            #expect(grouping.rows.map(\.grouped) == expected, "chunk \(chunk)")
            #expect(grouping.totals == totals)
        }
    }
}
