import Foundation
import TributaryCapture

/// Issue 11: the entropy-coded chunk codec against pcodec (levels 3 and 8), blosc2 (bit-shuffle +
/// zstd-1) and zstd -3, measured in the same run on the generated data classes of
/// Benchmarks/peers/codec_data.py (8 channels, noise from 2 to 400 LSB), and against the empirical
/// entropy of the latents the codec chose (the limit of any order-0 coder of those latents).
///
/// TRIBUTARY_CODEC_SAMPLES sets the samples per channel (default 1,048,576).
let codecSuite = Suite(name: "codec", run: { context in
    try CodecBenchmark(context: context).run()
})

private struct CodecBenchmark {
    let context: BenchContext
    let repetitions = 3
    let chunkBytes = 1 << 20

    func run() throws {
        let samples = Int(ProcessInfo.processInfo.environment["TRIBUTARY_CODEC_SAMPLES"] ?? "") ?? 1 << 20
        let directory = context.scratchDirectory + "/codec"
        print("codec: generating 8 x \(samples) samples per data class...")
        let info = try context.runPeer("codec_data.py", [directory, String(samples)])
        let infoPath = directory + "/info.json"
        try JSONSerialization.data(withJSONObject: info).write(to: URL(fileURLWithPath: infoPath))
        // TRIBUTARY_CODEC_NO_PEERS=1 skips the peers (for profiling the codec alone).
        let environment = ProcessInfo.processInfo.environment
        var peer: [String: Any] = [:]
        if environment["TRIBUTARY_CODEC_NO_PEERS"] != "1" {
            print("codec: running the peers (pcodec 3/8, blosc2, zstd-3)...")
            peer = try context.runPeer("codec_peer.py", [infoPath, String(repetitions)])
        }
        var lines: [[String]] = [["class", "trib", "limit", "fast", "pco-3", "pco-8", "blosc2", "zstd-3", "trib/pco8",
                                  "c MB/s trib", "pco-8", "d MB/s trib", "pco-8", "transforms"]]
        for name in info.keys.sorted() where environment["TRIBUTARY_CODEC_ONLY"].map({ name == $0 }) ?? true {
            guard let meta = info[name] as? [String: Any], let file = meta["file"] as? String, let dtype = meta["dtype"] as? String,
                  let channels = (meta["channels"] as? NSNumber)?.intValue, let perChannel = (meta["samples"] as? NSNumber)?.intValue else {
                throw BenchError("codec_data.py: no file, dtype, channels or samples for \(name)")
            }
            let elementType: ChunkElementType = switch dtype {
            case "float64": .float64
            case "float32": .float32
            case "int16": .int16
            default: .int32
            }
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            let raw64 = Double(channels * perChannel * 8)
            func peerFigure(_ key: String, _ field: String) -> Double {
                (((peer[name] as? [String: Any])?[key] as? [String: Any])?[field] as? NSNumber)?.doubleValue ?? .nan
            }
            let figures = try data.withUnsafeBytes { try measure($0, elementType: elementType, options: ChunkCodecOptions()) }
            let fast = try data.withUnsafeBytes {
                try measure($0, elementType: elementType, options: ChunkCodecOptions(entropyCoding: false), speeds: false)
            }
            let ratio = raw64 / Double(figures.bytes)
            let pco8 = raw64 / peerFigure("pcodec-8", "compressed_bytes")
            lines.append([name, fmt(ratio, 3), fmt(raw64 / (figures.entropyBits / 8), 3), fmt(raw64 / Double(fast.bytes), 3),
                          fmt(raw64 / peerFigure("pcodec-3", "compressed_bytes"), 3), fmt(pco8, 3),
                          fmt(raw64 / peerFigure("blosc2-bitshuffle-zstd1", "compressed_bytes"), 3),
                          fmt(raw64 / peerFigure("zstd-3", "compressed_bytes"), 3), fmt(ratio / pco8, 3),
                          fmt(figures.compress, 0), fmt(peerFigure("pcodec-8", "compress_mbps"), 0),
                          fmt(figures.decompress, 0), fmt(peerFigure("pcodec-8", "decompress_mbps"), 0), figures.transforms])
        }
        print("\n== Codec: ratio vs raw float64 (8 B/sample), MB/s of the class's own bytes, one core, 1 MiB chunks ==")
        print("   (limit = raw / empirical order-0 entropy of the latents tributary chose, per 64 Ki-sample segment: a bound")
        print("    where latents repeat, as on grids; for latents that are nearly all distinct (float32-adc24,")
        print("    float64-filtered) the estimate saturates at 16 bits and means nothing. fast = entropyCoding off)")
        let widths = (0..<lines[0].count).map { c in lines.map { $0[c].count }.max()! }
        for line in lines {
            print(line.enumerated().map { c, cell in c == 0 ? cell.padding(toLength: widths[c], withPad: " ", startingAt: 0)
                : String(repeating: " ", count: widths[c] - cell.count) + cell }.joined(separator: "  "))
        }
    }

    struct Figures {
        var bytes: Int
        var entropyBits: Double
        var compress: Double
        var decompress: Double
        var transforms: String
    }

    private func measure(_ input: UnsafeRawBufferPointer, elementType: ChunkElementType, options: ChunkCodecOptions,
                         speeds: Bool = true) throws -> Figures {
        let codec = try ChunkCodec(options: options)
        let count = (input.count + chunkBytes - 1) / chunkBytes
        let slot = ChunkCodec.maxEncodedSize(payloadSize: chunkBytes)
        let encoded = UnsafeMutableRawBufferPointer.allocate(byteCount: slot * count, alignment: 16)
        let decoded = UnsafeMutableRawBufferPointer.allocate(byteCount: input.count, alignment: 16)
        defer { encoded.deallocate(); decoded.deallocate() }
        var sizes = [Int](repeating: 0, count: count), transforms = [ChunkTransforms](repeating: [], count: count)
        func chunk(_ i: Int) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: input[(i * chunkBytes)..<min(input.count, (i + 1) * chunkBytes)])
        }
        func encodeAll() {
            for i in 0..<count {
                do {
                    (sizes[i], transforms[i]) = try codec.encode(chunk(i), elementType: elementType,
                                                                 into: UnsafeMutableRawBufferPointer(rebasing: encoded[(i * slot)..<((i + 1) * slot)]))
                } catch { fatalError("codec benchmark: encode failed: \(error)") }
            }
        }
        func decodeAll() {
            for i in 0..<count {
                do {
                    _ = try codec.decode(UnsafeRawBufferPointer(rebasing: encoded[(i * slot)..<(i * slot + sizes[i])]), elementType: elementType,
                                         transforms: transforms[i],
                                         into: UnsafeMutableRawBufferPointer(rebasing: decoded[(i * chunkBytes)..<(i * chunkBytes + chunk(i).count)]))
                } catch { fatalError("codec benchmark: decode failed: \(error)") }
            }
        }
        codec.measureEntropy = true
        encodeAll()
        codec.measureEntropy = false
        let entropy = codec.entropyBits
        decodeAll()
        guard memcmp(decoded.baseAddress!, input.baseAddress!, input.count) == 0 else { throw BenchError("codec round trip differs (\(options))") }
        var c = Double.nan, d = Double.nan
        if speeds {
            c = Double(input.count) / TributaryBenchmarks.measure(repetitions: repetitions, warmup: 0) { encodeAll() } * 1e3
            d = Double(input.count) / TributaryBenchmarks.measure(repetitions: repetitions, warmup: 0) { decodeAll() } * 1e3
        }
        let names = Set(transforms.map(\.description)).sorted().joined(separator: ",")
        return Figures(bytes: sizes.reduce(0, +), entropyBits: entropy, compress: c, decompress: d, transforms: names)
    }
}
