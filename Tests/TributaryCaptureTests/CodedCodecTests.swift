import Foundation
import Testing
import TributaryTestSupport
import TributaryWire

@testable import TributaryCapture

/// The entropy-coded transform (`ChunkTransforms.coded`, docs/CAPTURE.md §5.1).
@Suite struct CodedCodecTests {
    static func bytes<T>(_ values: [T]) -> [UInt8] { values.withUnsafeBytes { Array($0) } }

    /// Counts of a tone plus noise of `noise` LSB, clamped to `bits`.
    static func counts(_ n: Int, bits: Int, noise: Double, seed: UInt64) -> [Int64] {
        var rng = SplitMix64(seed: seed)
        let full = Double(1 << (bits - 1))
        return (0..<n).map { i in
            let u = Double(rng.next() >> 11) * 0x1p-53, w = Double(rng.next() >> 11) * 0x1p-53
            let gauss = (-2 * log(max(u, 1e-300))).squareRoot() * cos(2 * .pi * w)
            let v = 0.4 * full * sin(Double(i) * 0.01) + noise * gauss
            return Int64(max(-full, min(full - 1, v.rounded())))
        }
    }

    /// Every data class of the benchmark, as payloads.
    static func classes(_ n: Int, seed: UInt64 = 7) -> [(String, ChunkElementType, [UInt8])] {
        let k16 = counts(n, bits: 16, noise: 30, seed: seed), k24 = counts(n, bits: 24, noise: 100, seed: seed + 1)
        let step16 = 20.0 / 65536, step24 = 20.0 / 16_777_216
        // numpy.round gives -0.0 for values in (-0.5, 0): a few samples are -0.0 × step.
        let exact = k16.enumerated().map { i, k in k == 0 && i % 2 == 0 ? -0.0 : Double(k) * step16 }
        let range = k16.map { Double($0) / 32768 * 7.5 }
        let affine = k16.map { 0.0012345 + step16 * 1.000123 * Double($0) }
        let adc24 = k24.map { Double($0) * step24 }
        let float32 = k24.map { Float(Double($0) * step24) }
        var filtered = [Double](repeating: 0, count: n)
        var y = 0.0
        for i in 0..<n { y = 0.9 * y + 0.1 * Double(k16[i]) * step16; filtered[i] = y }
        return [
            ("adc16-exact", .float64, bytes(exact)), ("adc16-range", .float64, bytes(range)),
            ("daqmx-affine", .float64, bytes(affine)), ("adc24", .float64, bytes(adc24)),
            ("float32", .float32, bytes(float32)), ("float64-filtered", .float64, bytes(filtered)),
            ("int16", .int16, bytes(k16.map { Int16($0) })), ("int32", .int32, bytes(k24.map { Int32($0) })),
        ]
    }

    /// `payload` coded by `codec` in `segments`, in at most `capacity` bytes (default: the payload's
    /// size), or nil when coding it does not pay.
    static func coded(_ payload: [UInt8], _ type: ChunkElementType, segments: [Int], codec: NumericCodec, capacity: Int? = nil) -> [UInt8]?
    {
        var out = [UInt8](repeating: 0, count: capacity ?? payload.count)
        let size = payload.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { codec.encode(p, elementType: type, segments: segments, into: $0.baseAddress!, capacity: $0.count) }
        }
        return size.map { Array(out[..<$0]) }
    }

    static func roundTrip(_ payload: [UInt8], _ type: ChunkElementType, codec: ChunkCodec) throws -> (ChunkTransforms, [UInt8], Int) {
        var encoded = [UInt8](repeating: 0, count: ChunkCodec.maxEncodedSize(payloadSize: payload.count))
        let (size, transforms) = try payload.withUnsafeBytes { p in
            try encoded.withUnsafeMutableBytes { try codec.encode(p, elementType: type, into: $0) }
        }
        var out = [UInt8](repeating: 0xEE, count: payload.count)
        let n = try encoded.withUnsafeBytes { e in
            try out.withUnsafeMutableBytes {
                try codec.decode(UnsafeRawBufferPointer(rebasing: e[..<size]), elementType: type, transforms: transforms, into: $0)
            }
        }
        #expect(n == payload.count)
        return (transforms, out, size)
    }

    @Test(arguments: [0, 1, 2, 3, 17, 1000, 70_000])
    func everyClassRoundTripsBitExactly(count: Int) throws {
        let codec = try ChunkCodec()
        let fast = try ChunkCodec(options: ChunkCodecOptions(entropyCoding: false))
        for (name, type, payload) in Self.classes(count) {
            let (transforms, out, size) = try Self.roundTrip(payload, type, codec: codec)
            #expect(out == payload, "\(name) \(count)")
            if count >= 1000 && name != "float64-filtered" {
                #expect(transforms == .coded, "\(name)")
                let (_, _, fastSize) = try Self.roundTrip(payload, type, codec: fast)
                #expect(size < fastSize, "\(name): coded \(size) bytes, fast path \(fastSize)")
            }
        }
    }

    @Test func specialValuesRoundTrip() throws {
        let codec = try ChunkCodec()
        let step = 20.0 / 65536
        var rng = SplitMix64(seed: 3)
        let specials: [Double] = [
            .nan, -.nan, Double(bitPattern: 0x7FF0_0000_0000_0001), Double(bitPattern: 0xFFF8_0000_DEAD_BEEF),
            .infinity, -.infinity, -0.0, 0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
            .leastNormalMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 1e300, 40_000 * step,
        ]
        for n in [1, 2, 5, 100, 5000] {
            var grid = Self.counts(n, bits: 16, noise: 5, seed: UInt64(n)).map { Double($0) * step }
            for i in stride(from: 0, to: n, by: max(1, n / 13)) { grid[i] = specials[Int(rng.next() % UInt64(specials.count))] }
            let (_, out, _) = try Self.roundTrip(Self.bytes(grid), .float64, codec: codec)
            #expect(out == Self.bytes(grid))
            let floats = grid.map { Float($0) } + [Float(bitPattern: 0x7FC0_1234), .leastNonzeroMagnitude, -0.0]
            let (_, out32, _) = try Self.roundTrip(Self.bytes(floats), .float32, codec: codec)
            #expect(out32 == Self.bytes(floats))
            let random = (0..<n).map { _ in Double(bitPattern: rng.next()) }
            let (_, outRandom, _) = try Self.roundTrip(Self.bytes(random), .float64, codec: codec)
            #expect(outRandom == Self.bytes(random))
            let extremes = (0..<n).map { i -> Int32 in i % 3 == 0 ? .min : (i % 3 == 1 ? .max : Int32(truncatingIfNeeded: rng.next())) }
            let (_, outInt, _) = try Self.roundTrip(Self.bytes(extremes), .int32, codec: codec)
            #expect(outInt == Self.bytes(extremes))
            let extremes16 = (0..<n).map { i -> Int16 in i % 2 == 0 ? .min : .max }
            let (_, outInt16, _) = try Self.roundTrip(Self.bytes(extremes16), .int16, codec: codec)
            #expect(outInt16 == Self.bytes(extremes16))
        }
    }

    @Test func segmentsFollowTheGivenGroupsAndEachFindsItsOwnGrid() throws {
        // Two channels with different DAQmx calibrations, as one grouped stream.
        let k = Self.counts(3000, bits: 16, noise: 40, seed: 9)
        let a = k.map { 0.001 + 3.0517578125e-4 * 1.0002 * Double($0) }
        let b = k.map { -0.02 + 3.0517578125e-4 * 0.9997 * Double($0) }
        let payload = Self.bytes(a + b)
        let codec = try NumericCodec()
        let out = try #require(Self.coded(payload, .float64, segments: [3000, 3000], codec: codec))
        let coded = out.count
        // Each sample costs about its noise's entropy (~7.4 bits for 40 LSB), far below 64.
        #expect(coded * 8 < 6000 * 10)
        var back = [UInt8](repeating: 0, count: payload.count)
        try out.withUnsafeBytes { o in
            try back.withUnsafeMutableBytes {
                try codec.decode(UnsafeRawBufferPointer(rebasing: o[..<coded]), elementType: .float64, into: $0)
            }
        }
        #expect(back == payload)
    }

    @Test func corruptCodedStreamsAreErrorsNotCrashes() throws {
        let codec = try NumericCodec()
        var rng = SplitMix64(seed: 11)
        for (_, type, payload) in Self.classes(2000) {
            guard let good = Self.coded(payload, type, segments: [700, 1300], codec: codec) else { continue }
            var destination = [UInt8](repeating: 0, count: payload.count)
            for trial in 0..<300 {
                var bad = good
                switch trial % 4 {
                case 0: bad[Int(rng.next() % UInt64(bad.count))] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
                case 1: bad = Array(bad[..<Int(rng.next() % UInt64(bad.count))])
                case 2:
                    // A length or count field set to something huge.
                    let at = Int(rng.next() % UInt64(max(1, bad.count - 8)))
                    for j in 0..<4 { bad[at + j] = 0xFF }
                default:
                    bad += rng.bytes(Int(rng.next() % 16) + 1)
                }
                // Either an error or some payload of the right size: never a crash or a huge allocation.
                _ = try? bad.withUnsafeBytes { b in
                    try destination.withUnsafeMutableBytes { try codec.decode(b, elementType: type, into: $0) }
                }
            }
            // The intact stream still decodes with the same codec after all that.
            try good.withUnsafeBytes { b in try destination.withUnsafeMutableBytes { try codec.decode(b, elementType: type, into: $0) } }
            #expect(destination == payload)
        }
    }

    /// Seeds of the capture fuzzer for the coded decoder (mode byte 2, Fuzz/CaptureFuzz.swift).
    @Test func fuzzSeedsForCodedStreams() throws {
        guard ProcessInfo.processInfo.environment["TRIBUTARY_WRITE_FIXTURES"] == "1" else { return }
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/seeds/capture-fuzz")
        let codec = try NumericCodec()
        for (name, type, payload) in Self.classes(300) {
            guard let out = Self.coded(payload, type, segments: [100, 200], codec: codec) else { continue }
            // Seeds of earlier stream versions stay: their decoders are still reached.
            try Data([2] + out).write(to: directory.appendingPathComponent("coded-v\(NumericCodec.version)-\(name)"))
        }
    }

    @Test func codedFlagsAreExclusiveAndSizesAreChecked() throws {
        for type in ChunkElementType.allCases {
            #expect(NumericTransform.isValid(.coded, for: type) == (type != .bytes))
            #expect(!NumericTransform.isValid([.coded, .bitShuffle], for: type))
            #expect(!NumericTransform.isValid([.coded, .quantised], for: type))
        }
        // Readers before the coded flag knew bits 0-2 only: bit 3 made them refuse the chunk.
        #expect(ChunkTransforms.coded.rawValue == 8)
        #expect(!ChunkTransforms.known.contains(ChunkTransforms(rawValue: 16)))
        // A coded chunk whose header claims more samples than the destination holds is refused.
        let codec = try ChunkCodec()
        let payload = Self.classes(1000)[0].2
        var encoded = [UInt8](repeating: 0, count: ChunkCodec.maxEncodedSize(payloadSize: payload.count))
        let (size, transforms) = try payload.withUnsafeBytes { p in
            try encoded.withUnsafeMutableBytes { try codec.encode(p, elementType: .float64, into: $0) }
        }
        #expect(transforms == .coded)
        var small = [UInt8](repeating: 0, count: payload.count - 8)
        #expect(throws: ChunkCodecError.self) {
            try encoded.withUnsafeBytes { e in
                try small.withUnsafeMutableBytes {
                    try codec.decode(UnsafeRawBufferPointer(rebasing: e[..<size]), elementType: .float64, transforms: .coded, into: $0)
                }
            }
        }
        // A coded stream for another element type is refused.
        var other = [UInt8](repeating: 0, count: payload.count)
        #expect(throws: ChunkCodecError.self) {
            try encoded.withUnsafeBytes { e in
                try other.withUnsafeMutableBytes {
                    try codec.decode(UnsafeRawBufferPointer(rebasing: e[..<size]), elementType: .int32, transforms: .coded, into: $0)
                }
            }
        }
    }

    /// 8 channels of ADC-quantised float64 in frames of 8 × 1000, as `tributary record` sees them.
    static func adcFrames(_ count: Int) -> [Frame] {
        let step = 20.0 / 65536
        var k: [[Int64]] = []
        for c in 0..<8 { k.append(Self.counts(count * 1000, bits: 16, noise: Double(2 << c), seed: UInt64(c))) }
        var frames: [Frame] = []
        for f in 0..<count {
            var samples: [Double] = []
            for c in 0..<8 { for i in (f * 1000)..<((f + 1) * 1000) { samples.append(Double(k[c][i]) * step) } }
            let channels: [UInt32] = Array(0..<8)
            let data = AnalogData(channelIndexes: channels, sampleCount: 1000, samples: .float64(samples))
            let time = Int64(f) * 19_531_250
            frames.append(Frame(encoding: .analog(data), sequence: UInt64(f), timestampNs: time, sourceID: 3))
        }
        return frames
    }

    @Test(arguments: [true, false])
    func capturesRoundTripWithEitherOption(entropyCoding: Bool) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let frames = Self.adcFrames(40)
        try writeCapture(
            frames, to: path,
            options: CaptureWriterOptions(
                chunk: ChunkOptions(entropyCoding: entropyCoding), compressionThreads: 1, fsync: .none, checkpointInterval: 0))
        try readIntact(path, holding: frames)
    }

    @Test func chunksThatZstdShrinksKeepIt() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/m.tcap"
        // Source 2: a repetitive log. Source 4: a tone of exactly 100 samples' period, not on any grid
        // (its coded form repeats, and zstd finds the repeats). Source 3: 16-bit ADC counts of white
        // noise, whose coded form is as random as they are: stored as it is.
        var rng = SplitMix64(seed: 12)
        var frames: [Frame] = (0..<4).map { f in
            let samples = (0..<8000).map { _ in Double(Int16(truncatingIfNeeded: rng.next())) * (20.0 / 65536) }
            let data = AnalogData(channelIndexes: Array(0..<8), sampleCount: 1000, samples: .float64(samples))
            return Frame(encoding: .analog(data), sequence: UInt64(f), timestampNs: Int64(f) * 1_000_000, sourceID: 3)
        }
        for j in 0..<300 {
            frames.append(Frame(encoding: .message(Message("note \(j) of a long, repetitive log")), sequence: UInt64(j), sourceID: 2))
        }
        for f in 0..<40 {
            let samples = (0..<4000).map { i in sin(2 * Double.pi * Double((f * 1000 + i % 1000) % 100) / 100) * (i < 1000 ? 1 : 0.5) }
            let data = AnalogData(channelIndexes: Array(0..<4), sampleCount: 1000, samples: .float64(samples))
            frames.append(Frame(encoding: .analog(data), sequence: UInt64(f), timestampNs: Int64(f) * 1_000_000, sourceID: 4))
        }
        try writeCapture(frames, to: path, options: CaptureWriterOptions(compressionThreads: 1, fsync: .none, checkpointInterval: 0))
        let reader = try readIntact(path, holding: frames)
        func codecs(_ source: UInt32) -> Set<RecordCodec> {
            Set(reader.index.filter { $0.envelope.type == .chunk && $0.envelope.sourceID == source }.map(\.envelope.codec))
        }
        #expect(codecs(2) == [.zstd])
        #expect(codecs(4) == [.zstd])
        #expect(codecs(3) == [.none])
    }

    /// A capture written before the coded transform existed (entropy coding off writes exactly what
    /// that version wrote; the fixture was made that way and must keep reading).
    @Test func legacyCaptureFixtureStillReads() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("CaptureFixtures/legacy-bitshuffle-quantised.tcap").path
        let frames = Self.adcFrames(12) + syntheticFrames(60)
        if ProcessInfo.processInfo.environment["TRIBUTARY_WRITE_FIXTURES"] == "1" {
            try? FileManager.default.removeItem(atPath: fixture)
            try writeCapture(
                frames, to: fixture,
                options: CaptureWriterOptions(
                    chunk: ChunkOptions(entropyCoding: false), compressionThreads: 1, fsync: .none, checkpointInterval: 0))
        }
        try readIntact(fixture, holding: frames)
    }
}
