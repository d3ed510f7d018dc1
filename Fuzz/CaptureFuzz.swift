// libFuzzer target for the capture reader: the input is written to a file and opened, indexed
// (footer or recovery scan), and every chunk is decoded and its frames' payloads parsed, then decoded
// again as the C interface's read does (analog rows without rebuilt frames). When bit 0
// of the first byte is set, the CRCs of the header and of every record found are fixed up first, so
// that the fuzzer gets past the checksums into the envelope fields and the chunk body (stored
// uncompressed with codec 0). When bit 1 is set, the rest is a coded numeric stream
// (docs/CAPTURE.md §5.1) decoded directly as each element type its header allows, so that the
// fuzzer works on the entropy decoder without a capture around it (seeds: Fuzz/seeds/capture-fuzz/coded-*).
// Any crash, sanitizer report or hang is a bug; the input goes to Fuzz/regressions/capture-fuzz/.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func captureFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 1 else { return 0 }
    if data[0] & 2 != 0 {
        fuzzCodedStream(UnsafeRawBufferPointer(start: data + 1, count: size - 1))
        return 0
    }
    var bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if data[0] & 1 != 0 { CaptureChecksums.recompute(&bytes) }
    let path = "/dev/shm/capture-fuzz-\(getpid()).tcap"
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { return 0 }
    defer { unlink(path) }
    guard let reader = try? CaptureReader(path: path) else { return 0 }
    reader.forEachFrame { frame in _ = try? frame.payload() }
    // The C interface's read path: analog rows decoded without rebuilding the frames, and (every
    // other chunk) straight into a buffer per channel sized from the frames, as a reader's array.
    let scratch = FuzzPlaces()
    try? reader.forEachAnalogChunkConcurrently(
        reader.index.filter { $0.envelope.type == .chunk }, threads: 1,
        direct: { position, frames in
            position % 2 == 0 ? scratch.places(for: frames) : nil
        }
    ) { _, frames in
        var sum = 0.0
        for frame in frames {
            for k in 0..<frame.channelCount {
                sum += frame.scale(k) + frame.offset(k) + Double(frame.channelIndex(k))
                let row = UnsafeRawBufferPointer(start: frame.samples(row: k), count: frame.sampleCount * frame.format.size)
                sum += Double(row.first ?? 0) + Double(row.last ?? 0)
            }
        }
        blackHole(sum)
    }
    _ = reader.sources
    _ = reader.gaps
    _ = reader.clockOffsets
    _ = reader.seek(timeNs: 0)
    return 0
}

/// Buffers for `direct` decoding, one per (format, channel), each exactly the frames' samples.
final class FuzzPlaces: @unchecked Sendable {
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    func places(for frames: [AnalogChunkFrame]) -> (SampleFormat, UInt32) -> UnsafeMutableRawPointer? {
        var sizes: [UInt64: Int] = [:]
        for f in frames {
            for k in 0..<f.channelCount {
                sizes[UInt64(f.format.rawValue) << 32 | UInt64(f.channelIndex(k)), default: 0] += f.sampleCount * f.format.size
            }
        }
        var places: [UInt64: UnsafeMutableRawPointer] = [:]
        for (key, size) in sizes {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 16)
            buffers.append(buffer)
            places[key] = buffer.baseAddress!
        }
        return { format, channel in places[UInt64(format.rawValue) << 32 | UInt64(channel)] }
    }
    deinit { for buffer in buffers { buffer.deallocate() } }
}

@inline(never) func blackHole(_ x: Double) { if x.isNaN && x.sign == .minus && x.significandWidth == 99 { print(x) } }

nonisolated(unsafe) let fuzzNumericCodec = try! NumericCodec()  // fails only out of memory

/// Decodes a coded stream into a destination of the size its header states (at most 8 MiB here).
func fuzzCodedStream(_ stored: UnsafeRawBufferPointer) {
    for type in [ChunkElementType.int16, .int32, .float32, .float64] {
        guard let n = NumericCodec.elementCount(of: stored, elementType: type), n <= 1 << 20 else { continue }
        let destination = UnsafeMutableRawBufferPointer.allocate(byteCount: n * type.size, alignment: 16)
        defer { destination.deallocate() }
        try? fuzzNumericCodec.decode(stored, elementType: type, into: destination)
    }
}
