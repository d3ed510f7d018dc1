import CKernels
import CLinearPredictor
import Foundation

/// The entropy-coded numeric transform (`ChunkTransforms.coded`, docs/CAPTURE.md §5.1): a stream of
/// int16, int32, float32 or float64 samples cut into segments (one per channel group, at most
/// `maxSegment` samples), each turned into integer latents and entropy coded by `LatentCoder`.
///
/// Per segment, chosen by measurement:
/// - the **mode**: integers are their own latents; floats on an exact or affine grid
///   (`offset + gain × k`, found from the data) become the counts `k` plus a second latent, the
///   difference in bits between the sample and the grid value (zero on an exact grid, a few ulps
///   where the writer rounded differently, anything for NaN, −0.0 …: lossless whatever it is);
///   other floats become their order-preserving bit patterns;
/// - the **predictor**: none, delta, delta of delta, or a linear predictor of order 2, 4 or 8
///   (fixed-point coefficients fitted by least squares: cancels tones that delta only shrinks).
///
/// Owns its scratch buffers (grown to the largest stream, then reused): one per thread.
///
/// This file holds the type and its entry points (`encode`, `decode`); the rest is by concern in
/// `NumericCodec+SegmentEncoding` (a segment's mode and blocks), `+Grid`, `+Predictors`,
/// `+LeastSquares`, `+Linear8` (the unrolled order-8 integrators), `+Lanes` (several segments at
/// once) and `+Outputs` (latents to samples).
final class NumericCodec {
    /// The stream version written: 4 (latent blocks with zstd-coded symbols of one, two or three
    /// bins a byte); 3 (one a byte), 2 (4 rANS lanes) and 1 (2 lanes) are read too.
    static let version: UInt8 = 4
    static let readableVersions: ClosedRange<UInt8> = 1...4
    static let maxSegment = 1 << 16
    static let streamHeaderSize = 16

    let latents = Scratch<Int64>()
    let adjustments = Scratch<Int64>()
    let symbols = Scratch<UInt8>()
    let packedSymbols = Scratch<UInt8>()
    let escapePositions = Scratch<UInt32>()
    private let output = Scratch<UInt8>()
    let histogram = Scratch<Int>()
    let alternative = Scratch<UInt8>()
    let predictorSample = Scratch<Int64>(reserving: 4096)
    let fitted = Scratch<Int64>(reserving: 24)
    let chosen = Scratch<Int64>(reserving: 8)
    let gridSample = Scratch<Double>(reserving: 2048)
    let gridTests = Scratch<Double>(reserving: 128)
    let gridKeys = Scratch<UInt64>(reserving: 2 * 2048)
    let gridCounts = Scratch<Int>(reserving: RadixSort.countsSize)
    /// Bits of a fixed-point latent below the largest value of its segment (float64): small enough
    /// that linear prediction does not overflow, the finer bits go to the adjustments.
    static let fixedPointBits = 36
    private let coefficients = Scratch<Int64>(reserving: 8)
    /// Segments of linear prediction waiting to be undone `lanes` at a time (`finishLanes`), with their
    /// coefficients (8 per lane; an order below 8 padded with zeros, which the order-8 rule then
    /// computes exactly), orders, shifts and undone latents (`latents` holds their residuals).
    var waiting: [SegmentOutput] = {
        var w: [SegmentOutput] = []; w.reserveCapacity(8); return w
    }()
    let laneCoefficients = Scratch<Int64>(reserving: 64)
    let laneShifts = Scratch<Int64>(reserving: 8)
    let laneOrders = Scratch<Int>(reserving: 8)
    let laneLatents = Scratch<Int64>()
    /// Segments whose predictor a lane kernel (four or eight at a time) undid (tests and profiles look at it).
    var laneSegments = 0
    private let tables = LatentCoder.Tables()
    /// The symbols' zstd frames of stream versions 3 and 4 (nested in the chunk's frame: no checksum of their own).
    let symbolCompressor: ZstdCompressor
    private let symbolDecompressor: ZstdDecompressor
    /// Grids found in earlier segments, tried first (a channel keeps its scaling from chunk to chunk).
    var knownGrids: [(offset: Double, gain: Double, fit: Double)] = []

    /// When set, `entropyBits` accumulates the empirical order-0 entropy of the coded latents.
    var measureEntropy = false
    var entropyBits = 0.0
    func resetEntropy() { entropyBits = 0 }

    /// - Throws: `ZstdError` when a zstd context cannot be created (out of memory).
    init() throws(ZstdError) {
        symbolCompressor = try ZstdCompressor(level: 1, checksum: false)
        symbolDecompressor = try ZstdDecompressor()
    }

    /// Bytes the coded form of `count` elements can take at most (the encoder gives up beyond the caller's capacity).
    static func workingSize(elementCount n: Int) -> Int {
        streamHeaderSize + 20 * n + (n / maxSegment + 1) * 2 * 1400 + 64
    }

    // MARK: Entry points

    /// Encodes `raw` (whole elements of `elementType`, not `.bytes`).
    /// - Parameters:
    ///   - segments: element counts of the channel groups, in order (summing to the element count);
    ///     nil cuts the stream into `maxSegment` pieces.
    ///   - out: where the coded stream goes when it fits in `capacity` bytes.
    /// - Returns: the coded size, or nil when it would not be smaller than `capacity`.
    func encode(
        _ raw: UnsafeRawBufferPointer, elementType: ChunkElementType, segments: [Int]? = nil,
        into out: UnsafeMutableRawPointer, capacity: Int
    ) -> Int? {
        let size = elementType.size
        let n = raw.count / size
        latents.reserve(n)
        adjustments.reserve(n)
        symbols.reserve(n)
        packedSymbols.reserve(n)
        escapePositions.reserve(n)
        histogram.reserve(LatentCoder.histogramSize)
        output.reserve(Self.workingSize(elementCount: n))
        let o = UnsafeMutableRawPointer(output.base)
        var segmentCount = 0
        func pieces(_ group: Int) -> Int { (group + Self.maxSegment - 1) / Self.maxSegment }
        if let segments { for group in segments { segmentCount += pieces(group) } } else { segmentCount = pieces(n) }
        o.storeBytes(of: Self.version, toByteOffset: 0, as: UInt8.self)
        o.storeBytes(of: elementType.rawValue, toByteOffset: 1, as: UInt8.self)
        o.storeBytes(of: UInt16(0), toByteOffset: 2, as: UInt16.self)
        o.storeBytes(of: UInt32(segmentCount).littleEndian, toByteOffset: 4, as: UInt32.self)
        o.storeBytes(of: UInt64(n).littleEndian, toByteOffset: 8, as: UInt64.self)
        var p = Self.streamHeaderSize
        var first = 0
        let groups = segments?.count ?? 1
        for g in 0..<groups {
            var left = segments?[g] ?? n
            while left > 0 {
                let length = min(left, Self.maxSegment)
                p += encodeSegment(raw.baseAddress! + first * size, count: length, elementType: elementType, into: o + p)
                first += length
                left -= length
                if p >= capacity { return nil }
            }
        }
        precondition(first == n, "segments do not add up to the stream")
        out.copyMemory(from: o, byteCount: p)
        return p
    }

    /// The element count a coded stream declares (nil when its header is malformed).
    static func elementCount(of stored: UnsafeRawBufferPointer, elementType: ChunkElementType) -> Int? {
        guard stored.count >= streamHeaderSize, readableVersions.contains(stored[0]), stored[1] == elementType.rawValue,
            stored[2] == 0, stored[3] == 0
        else { return nil }
        let n = UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        guard n <= UInt64(Int.max / 8) else { return nil }
        return Int(n)
    }

    /// Decodes a coded stream into `destination`, whose size must be the stream's element count × size.
    /// - Parameter placement: where to write the segment of `count` elements that starts at element
    ///   `first` of the stream instead (nil: its place in `destination`); it must have room for them.
    func decode(
        _ stored: UnsafeRawBufferPointer, elementType: ChunkElementType,
        into destination: UnsafeMutableRawBufferPointer,
        placement: ((_ first: Int, _ count: Int) -> UnsafeMutableRawPointer?)? = nil
    ) throws(NumericTransform.Failure) {
        guard elementType != .bytes, let n = Self.elementCount(of: stored, elementType: elementType) else { throw .storedSize }
        let size = elementType.size
        guard n * size == destination.count else { throw .storedSize }
        let segments = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        // Every segment holds at least one sample and at most maxSegment.
        guard segments <= n, n <= segments * Self.maxSegment else { throw .storedSize }
        let version = stored[0], lanes = LatentCoder.lanes(version: version)
        func latentBlock(at p: Int, count: Int, into r: UnsafeMutablePointer<Int64>) throws(LatentCoder.Corrupt) -> Int {
            let block = UnsafeRawBufferPointer(rebasing: stored[p...])
            return version >= 3
                ? try LatentCoder.decodeV3(
                    block, count: count, version: version, tables: tables,
                    decompressor: symbolDecompressor, into: r)
                : try LatentCoder.decode(block, count: count, lanes: lanes, tables: tables, into: r)
        }
        // A latent slot per lane (the segments `finishLanes` takes together), each the longest segment's length.
        let stride = min(n, Self.maxSegment)
        latents.reserve(max(1, Self.lanes) * stride)
        adjustments.reserve(max(1, Self.lanes) * stride)
        if Self.lanes > 0 { laneLatents.reserve(Self.lanes * stride) }
        waiting.removeAll(keepingCapacity: true)
        var p = Self.streamHeaderSize
        var done = 0
        for _ in 0..<segments {
            guard stored.count - p >= 8 else { throw .storedSize }
            let count = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: p, as: UInt32.self)))
            let mode = stored[p + 4], predictor = Int(stored[p + 5]), flags = stored[p + 6]
            guard count >= 1, count <= Self.maxSegment, count <= n - done, predictor <= 3, flags <= 2, stored[p + 7] == 0 else {
                throw .storedSize
            }
            let isFloat = elementType == .float32 || elementType == .float64
            guard isFloat ? (mode == 1 || mode == 2) : mode == 0, flags == 0 || mode == 1 else { throw .invalidTransforms }
            p += 8
            var offset = 0.0, gain = 0.0
            if mode == 1 {
                guard stored.count - p >= 16 else { throw .storedSize }
                offset = Double(bitPattern: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: p, as: UInt64.self)))
                gain = Double(bitPattern: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: p + 8, as: UInt64.self)))
                p += 16
            }
            var order = 0, shift = 0
            if predictor == 3 {
                guard stored.count - p >= 2 else { throw .storedSize }
                order = Int(stored[p])
                shift = Int(stored[p + 1])
                guard order >= 1, order <= 8, shift >= 1, shift <= 62, stored.count - p - 2 >= 8 * order else { throw .storedSize }
                for j in 0..<order {
                    coefficients.base[j] = Int64(
                        bitPattern: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: p + 2 + 8 * j, as: UInt64.self)))
                }
                p += 2 + 8 * order
            }
            // A linear predictor waits for `finishLanes`, which undoes up to `lanes` segments of one
            // length at once (each with its latent and adjustment slots) by the order-8 rule, a lower
            // order's coefficients padded with zeros: the same sums, and four or eight chains at once
            // are faster than one of order 2 or 4. Any other segment lets the waiting ones go first.
            let waits = Self.lanes > 0 && predictor == 3
            if let first = waiting.first, first.count != count || !waits {
                finishLanes(stride: stride, elementType: elementType, stored: stored)
            }
            let v = latents.base + waiting.count * stride, adj = adjustments.base + waiting.count * stride
            do {
                p += try latentBlock(at: p, count: count, into: v)
                if flags == 1 { p += try latentBlock(at: p, count: count, into: adj) }
            } catch { throw .storedSize }
            // An exception list: checked whole before anything is written.
            var listStart = 0, listCount = 0
            if flags == 2 {
                guard stored.count - p >= 4 else { throw .storedSize }
                listCount = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: p, as: UInt32.self)))
                guard listCount >= 1, listCount <= count, (stored.count - p - 4) / 12 >= listCount else { throw .storedSize }
                listStart = p + 4
                var previous = -1
                for e in 0..<listCount {
                    let index = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: listStart + 12 * e, as: UInt32.self)))
                    guard index > previous, index < count else { throw .storedSize }
                    previous = index
                }
                p = listStart + 12 * listCount
            }
            let segment = SegmentOutput(
                count: count, out: placement?(done, count) ?? destination.baseAddress! + done * size,
                mode: mode, flags: flags, offset: offset, gain: gain, listStart: listStart, listCount: listCount)
            if waits {
                let lane = waiting.count
                for j in 0..<8 { laneCoefficients.base[8 * lane + j] = j < order ? coefficients.base[j] : 0 }
                laneShifts.base[lane] = Int64(shift)
                laneOrders.base[lane] = order
                waiting.append(segment)
                if waiting.count == Self.lanes { finishLanes(stride: stride, elementType: elementType, stored: stored) }
            } else {
                // The predictor is undone and the latents converted to the element type in one pass
                // (specialised per conversion).
                write(
                    segment, elementType: elementType, stored: stored, adjustments: adj,
                    from: Residuals(v: v, predictor: predictor, order: order, shift: shift, coefficients: coefficients.base))
            }
            done += count
        }
        guard done == n, p == stored.count else { throw .storedSize }
        if !waiting.isEmpty { finishLanes(stride: stride, elementType: elementType, stored: stored) }
    }

    /// Where and how one segment's latents are written (`decode`).
    struct SegmentOutput {
        var count: Int
        var out: UnsafeMutableRawPointer
        var mode: UInt8, flags: UInt8
        var offset: Double, gain: Double
        /// The segment's exception list in the stored stream (none when `listCount` is 0).
        var listStart: Int, listCount: Int
    }
}
