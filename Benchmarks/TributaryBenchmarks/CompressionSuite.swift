import Foundation
import TributaryCapture
import TributaryTestSupport

/// Capture chunk compression: Tributary's ChunkCodec against python-blosc2 (bit-shuffle + zstd) and
/// the zstd command-line tool, on ADC-quantised float64 and on the same samples as int16 counts.
/// The transform sweeps are of the fast path (`entropyCoding: false`, `ChunkCodecOptions.fast`); the entropy-coded default
/// has one row here and its own suite against pcodec (CodecSuite.swift).
let compressionSuite = Suite(
    name: "compression",
    run: { context in
        try CompressionBenchmark(context: context).run()
    })

/// The benchmark data set: 8 channels x 1,048,576 samples at 51.2 kHz, channel-major. Channel c is a
/// sine of amplitude 0.5 + 8.5 c / 7 V, frequency 10 + 990 c / 7 Hz, phase 0.3 c rad, plus Gaussian
/// noise of 1 mV (SplitMix64 seed 2026, Box-Muller), quantised to 16 bits over ±10 V
/// (step 20 / 65536 V, counts clamped to Int16). Float64 values are `Double(count) * step`.
struct ADCDataSet {
    static let channels = 8
    static let samples = 1 << 20
    static let step = 20.0 / 65536
    var counts: [Int16]
    var volts: [Double]

    init() {
        var generator = SplitMix64(seed: 2026)
        func next() -> UInt64 { generator.next() }
        func uniform() -> Double { (Double(next() >> 11) + 1) * 0x1p-53 }  // (0, 1]
        let n = Self.samples
        var counts = [Int16](repeating: 0, count: Self.channels * n)
        for c in 0..<Self.channels {
            let amplitude = 0.5 + 8.5 * Double(c) / 7, frequency = 10 + 990 * Double(c) / 7
            for i in stride(from: 0, to: n, by: 2) {
                // Box-Muller gives two independent normals per pair of uniforms.
                let r = (-2 * log(uniform())).squareRoot(), theta = 2 * Double.pi * uniform()
                for (k, noise) in [(i, r * cos(theta)), (i + 1, r * sin(theta))] {
                    let t = Double(k) / 51_200
                    let v = amplitude * sin(2 * Double.pi * frequency * t + 0.3 * Double(c)) + 0.001 * noise
                    counts[c * n + k] = Int16(max(-32768, min(32767, (v / Self.step).rounded())))
                }
            }
        }
        self.counts = counts
        volts = counts.map { Double($0) * Self.step }
    }
}

/// Per-thread codecs and output slots shared with the two-thread runs.
/// @unchecked Sendable: worker w only touches codecs[w] and the chunk slots i with i % workers == w,
/// and the caller waits for all workers before reading anything.
private final class ChunkRun: @unchecked Sendable {
    let codecs: [ChunkCodec]
    let input: UnsafeRawBufferPointer
    let elementType: ChunkElementType
    let chunkBytes: Int
    let chunkCount: Int
    let slotBytes: Int
    let encoded: UnsafeMutableRawPointer
    let decoded: UnsafeMutableRawPointer
    var sizes: [Int]
    var transforms: [ChunkTransforms]

    init(input: UnsafeRawBufferPointer, elementType: ChunkElementType, chunkBytes: Int, options: ChunkCodecOptions) throws {
        codecs = try (0..<2).map { _ in try ChunkCodec(options: options) }
        self.input = input
        self.elementType = elementType
        self.chunkBytes = chunkBytes
        chunkCount = (input.count + chunkBytes - 1) / chunkBytes
        slotBytes = ChunkCodec.maxEncodedSize(payloadSize: chunkBytes)
        encoded = .allocate(byteCount: slotBytes * chunkCount, alignment: 16)
        decoded = .allocate(byteCount: input.count, alignment: 16)
        sizes = Array(repeating: 0, count: chunkCount)
        transforms = Array(repeating: [], count: chunkCount)
    }

    deinit {
        encoded.deallocate()
        decoded.deallocate()
    }

    private func payload(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: input[(i * chunkBytes)..<min(input.count, (i + 1) * chunkBytes)])
    }

    func encode(worker: Int, workers: Int) {
        for i in stride(from: worker, to: chunkCount, by: workers) {
            let slot = UnsafeMutableRawBufferPointer(start: encoded + i * slotBytes, count: slotBytes)
            do {
                (sizes[i], transforms[i]) = try codecs[worker].encode(payload(i), elementType: elementType, into: slot)
            } catch { fatalError("benchmark encode failed: \(error)") }
        }
    }

    func decode(worker: Int, workers: Int) {
        for i in stride(from: worker, to: chunkCount, by: workers) {
            let frame = UnsafeRawBufferPointer(start: encoded + i * slotBytes, count: sizes[i])
            let out = UnsafeMutableRawBufferPointer(start: decoded + i * chunkBytes, count: payload(i).count)
            do {
                _ = try codecs[worker].decode(frame, elementType: elementType, transforms: transforms[i], into: out)
            } catch { fatalError("benchmark decode failed: \(error)") }
        }
    }

    func parallel(_ body: @Sendable (ChunkRun, Int) -> Void) {
        DispatchQueue.concurrentPerform(iterations: 2) { worker in body(self, worker) }
    }

    var compressedBytes: Int { sizes.reduce(0, +) }
    var roundTripExact: Bool { memcmp(decoded, input.baseAddress!, input.count) == 0 }
}

private struct Figures {
    var ratio: Double, compressedBytes: Int
    var compress1: Double, compress2: Double, decompress1: Double, decompress2: Double
    var allocations: Double
    var transforms: ChunkTransforms
}

private struct CompressionBenchmark {
    let context: BenchContext
    let repetitions = 5

    func run() throws {
        print("compression: generating 8 x 1,048,576 ADC samples...")
        let data = ADCDataSet()
        let f64Path = context.scratchDirectory + "/adc-float64.bin", i16Path = context.scratchDirectory + "/adc-int16.bin"
        try data.volts.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: f64Path)) }
        try data.counts.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: i16Path)) }
        let rawFloat64 = Double(data.volts.count * 8)

        let f64Configs: [(String, ChunkCodecOptions)] = [
            ("zstd-1, no transform", .init(level: 1, bitShuffle: false, delta: false, quantiseFloats: false, entropyCoding: false)),
            ("zstd-3, no transform", .init(level: 3, bitShuffle: false, delta: false, quantiseFloats: false, entropyCoding: false)),
            ("bitshuffle + zstd-1", .init(level: 1, bitShuffle: true, delta: false, quantiseFloats: false, entropyCoding: false)),
            ("bitshuffle + zstd-3", .init(level: 3, bitShuffle: true, delta: false, quantiseFloats: false, entropyCoding: false)),
            (
                "bitshuffle + zstd -1, raw literals",
                .init(
                    level: -1, bitShuffle: true, delta: false, quantiseFloats: false,
                    entropyCoding: false, rawLiterals: true)
            ),
            (
                "quantised + bitshuffle + zstd-1",
                .init(level: 1, bitShuffle: true, delta: false, quantiseFloats: true, entropyCoding: false)
            ),
            ("quantised + delta + bitshuffle + zstd-1 (the fast path before round 21)", .init(entropyCoding: false)),
            ("quantised + delta + bitshuffle + zstd -1, raw literals (fast path)", .fast),
            ("entropy coded, §5.1 (default)", .init()),
        ]
        let i16Configs: [(String, ChunkCodecOptions)] = [
            ("zstd-1, no transform", .init(level: 1, bitShuffle: false, delta: false, entropyCoding: false)),
            ("bitshuffle + zstd-1", .init(level: 1, bitShuffle: true, delta: false, entropyCoding: false)),
            ("delta + bitshuffle + zstd-1 (the fast path before round 21)", .init(entropyCoding: false)),
            ("delta + bitshuffle + zstd -1, raw literals (fast path)", .fast),
            ("entropy coded, §5.1 (default)", .init()),
            ("delta + bitshuffle + zstd-3", .init(level: 3, entropyCoding: false)),
        ]

        for chunkBytes in [1 << 20, 4 << 20] {
            let mib = chunkBytes >> 20
            print("compression: chunk \(mib) MiB, running the peer (blosc2, zstd CLI)...")
            let peer = try context.runPeer("compression_peer.py", [f64Path, i16Path, String(chunkBytes), String(repetitions)])
            func peerFigure(_ key: String, _ field: String) -> Double {
                ((peer[key] as? [String: Any])?[field] as? NSNumber)?.doubleValue ?? .nan
            }
            // Smaller sweeps at 4 MiB: the defaults and the plain bit-shuffle reference only.
            let f64 = chunkBytes == 1 << 20 ? f64Configs : f64Configs.filter { $0.0.contains("default") || $0.0 == "bitshuffle + zstd-1" }
            let i16 = chunkBytes == 1 << 20 ? i16Configs : i16Configs.filter { $0.0.contains("default") }
            var rows: [BenchRow] = []
            for (set, configs, type, elementType) in [
                ("f64", f64, data.volts.withUnsafeBytes { Array($0) }, ChunkElementType.float64),
                ("i16", i16, data.counts.withUnsafeBytes { Array($0) }, .int16),
            ] {
                for (label, options) in configs {
                    let figures = try type.withUnsafeBytes {
                        try measureCodec($0, elementType: elementType, chunkBytes: chunkBytes, options: options)
                    }
                    let vsFloat64 = rawFloat64 / Double(figures.compressedBytes)
                    // blosc2 has no negative zstd levels: rows at zstd -1 are set against its level 1
                    // (and the zstd CLI's -1), the speed they are meant to beat.
                    let level = max(1, options.level)
                    let blosc = "\(set) blosc2 bitshuffle+zstd-\(level)"
                    let cli = "\(set) zstd-cli -\(level)"
                    let name = "\(set) \(label)"
                    rows.append(
                        BenchRow(
                            name: "\(name): ratio vs raw float64 [blosc2 | zstd CLI]",
                            tributary: fmt(vsFloat64),
                            peer:
                                "\(fmt(rawFloat64 / peerFigure(blosc + " 1t", "compressed_bytes"))) | \(fmt(rawFloat64 / peerFigure(cli, "compressed_bytes")))",
                            ratio: fmt(vsFloat64 / (rawFloat64 / peerFigure(blosc + " 1t", "compressed_bytes")))))
                    rows.append(
                        BenchRow(
                            name: "\(name): ratio vs own input", tributary: fmt(figures.ratio),
                            peer: fmt(peerFigure(blosc + " 1t", "ratio")),
                            ratio: fmt(figures.ratio / peerFigure(blosc + " 1t", "ratio"))))
                    for (what, mine, key) in [
                        ("compress MB/s, 1 core [blosc2 1t]", figures.compress1, (blosc + " 1t", "compress_mbps")),
                        ("compress MB/s, 2 cores [blosc2 2t]", figures.compress2, (blosc + " 2t", "compress_mbps")),
                        ("decompress MB/s, 1 core [blosc2 1t]", figures.decompress1, (blosc + " 1t", "decompress_mbps")),
                        ("decompress MB/s, 2 cores [blosc2 2t]", figures.decompress2, (blosc + " 2t", "decompress_mbps")),
                    ] {
                        let theirs = peerFigure(key.0, key.1)
                        rows.append(
                            BenchRow(name: "\(name): \(what)", tributary: fmt(mine, 0), peer: fmt(theirs, 0), ratio: fmt(mine / theirs)))
                    }
                    rows.append(
                        BenchRow(
                            name: "\(name): zstd CLI -\(level) compress / decompress MB/s (whole file)",
                            tributary: "-",
                            peer: "\(fmt(peerFigure(cli, "compress_mbps"), 0)) / \(fmt(peerFigure(cli, "decompress_mbps"), 0))", ratio: "-")
                    )
                    rows.append(
                        BenchRow(
                            name: "\(name): transforms applied; allocations per chunk (steady state)",
                            tributary: "\(figures.transforms); \(fmt(figures.allocations, 1))", peer: "-", ratio: "-"))
                    if context.checkAllocations && figures.allocations > 0 {
                        throw BenchError("\(name): \(figures.allocations) allocations per chunk, expected 0")
                    }
                }
            }
            printTable("Compression, \(mib) MiB chunks (medians of \(repetitions); MB/s of uncompressed input)", rows)
        }
        try kernels(data)
    }

    private func measureCodec(
        _ input: UnsafeRawBufferPointer, elementType: ChunkElementType, chunkBytes: Int,
        options: ChunkCodecOptions
    ) throws -> Figures {
        let run = try ChunkRun(input: input, elementType: elementType, chunkBytes: chunkBytes, options: options)
        let bytes = Double(input.count)
        let c1 = measure(repetitions: repetitions, warmup: 1) { run.encode(worker: 0, workers: 1) }
        let d1 = measure(repetitions: repetitions, warmup: 1) { run.decode(worker: 0, workers: 1) }
        guard run.roundTripExact else { throw BenchError("round trip differs for \(options)") }
        let c2 = measure(repetitions: repetitions, warmup: 1) { run.parallel { $0.encode(worker: $1, workers: 2) } }
        let d2 = measure(repetitions: repetitions, warmup: 1) { run.parallel { $0.decode(worker: $1, workers: 2) } }
        guard run.roundTripExact else { throw BenchError("two-thread round trip differs for \(options)") }
        let allocations = allocationsPerOperation(operations: run.chunkCount) { run.encode(worker: 0, workers: 1) }
        return Figures(
            ratio: bytes / Double(run.compressedBytes), compressedBytes: run.compressedBytes,
            compress1: bytes / c1 * 1e3, compress2: bytes / c2 * 1e3,
            decompress1: bytes / d1 * 1e3, decompress2: bytes / d2 * 1e3,
            allocations: allocations, transforms: run.transforms[0])
    }

    /// The building blocks alone, to see where the time goes.
    private func kernels(_ data: ADCDataSet) throws {
        var rows: [BenchRow] = []
        let chunk = 1 << 20
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { out.deallocate() }
        data.volts.withUnsafeBytes { all in
            let src = UnsafeRawBufferPointer(rebasing: all[..<chunk])
            for size in [2, 4, 8] {
                let ns = measure(repetitions: 15, warmup: 3) { BitShuffle.shuffle(src, into: out, elementSize: size) }
                let back = measure(repetitions: 15, warmup: 3) { BitShuffle.unshuffle(src, into: out, elementSize: size) }
                rows.append(
                    BenchRow(
                        name: "bit-shuffle / unshuffle, element size \(size), 1 MiB, MB/s",
                        tributary: "\(fmt(Double(chunk) / ns * 1e3, 0)) / \(fmt(Double(chunk) / back * 1e3, 0))", peer: "-", ratio: "-"))
            }
            let crc = measure(repetitions: 15, warmup: 3) { blackHole(CRC32C.checksum(src)) }
            rows.append(BenchRow(name: "CRC32C, 1 MiB, MB/s", tributary: fmt(Double(chunk) / crc * 1e3, 0), peer: "-", ratio: "-"))
            let values = src.assumingMemoryBound(to: Double.self)
            let counts = out.bindMemory(to: Int16.self)
            let q = measure(repetitions: 15, warmup: 3) {
                blackHole(Quantisation.toCounts(values, step: Quantisation.candidateStep(values) ?? 1, into: counts))
            }
            rows.append(
                BenchRow(
                    name: "quantisation check float64 -> int16, MB/s of float64", tributary: fmt(Double(chunk) / q * 1e3, 0), peer: "-",
                    ratio: "-"))
        }
        printTable("Codec kernels (medians, one core)", rows)
    }
}
