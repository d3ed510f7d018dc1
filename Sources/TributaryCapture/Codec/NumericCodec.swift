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
final class NumericCodec {
    /// The stream version written: 4 (latent blocks with zstd-coded symbols of one, two or three
    /// bins a byte); 3 (one a byte), 2 (4 rANS lanes) and 1 (2 lanes) are read too.
    static let version: UInt8 = 4
    static let readableVersions: ClosedRange<UInt8> = 1...4
    static let maxSegment = 1 << 16
    static let streamHeaderSize = 16

    private let latents = Scratch<Int64>()
    private let adjustments = Scratch<Int64>()
    private let symbols = Scratch<UInt8>()
    private let packedSymbols = Scratch<UInt8>()
    private let escapePositions = Scratch<UInt32>()
    private let output = Scratch<UInt8>()
    private let histogram = Scratch<Int>()
    private let alternative = Scratch<UInt8>()
    private let predictorSample: Scratch<Int64> = { let c = Scratch<Int64>(); c.reserve(4096); return c }()
    private let fitted: Scratch<Int64> = { let c = Scratch<Int64>(); c.reserve(24); return c }()
    private let chosen: Scratch<Int64> = { let c = Scratch<Int64>(); c.reserve(8); return c }()
    private let gridSample: Scratch<Double> = { let c = Scratch<Double>(); c.reserve(2048); return c }()
    private let gridTests: Scratch<Double> = { let c = Scratch<Double>(); c.reserve(128); return c }()
    private let gridKeys: Scratch<UInt64> = { let c = Scratch<UInt64>(); c.reserve(2 * 2048); return c }()
    private let gridCounts: Scratch<Int> = { let c = Scratch<Int>(); c.reserve(RadixSort.countsSize); return c }()
    /// Bits of a fixed-point latent below the largest value of its segment (float64): small enough
    /// that linear prediction does not overflow, the finer bits go to the adjustments.
    static let fixedPointBits = 36
    private let coefficients: Scratch<Int64> = { let c = Scratch<Int64>(); c.reserve(8); return c }()
    /// Segments of linear prediction waiting to be undone `lanes` at a time (`finishLanes`), with their
    /// coefficients (8 per lane; an order below 8 padded with zeros, which the order-8 rule then
    /// computes exactly), orders, shifts and undone latents (`latents` holds their residuals).
    private var waiting: [SegmentOutput] = { var w: [SegmentOutput] = []; w.reserveCapacity(8); return w }()
    private let laneCoefficients: Scratch<Int64> = { let c = Scratch<Int64>(); c.reserve(64); return c }()
    private let laneShifts: Scratch<Int64> = { let c = Scratch<Int64>(); c.reserve(8); return c }()
    private let laneOrders: Scratch<Int> = { let c = Scratch<Int>(); c.reserve(8); return c }()
    private let laneLatents = Scratch<Int64>()
    /// Segments whose predictor a lane kernel (four or eight at a time) undid (tests and profiles look at it).
    private(set) var laneSegments = 0
    private let tables = LatentCoder.Tables()
    /// The symbols' zstd frames of stream versions 3 and 4 (nested in the chunk's frame: no checksum of their own).
    private let symbolCompressor: ZstdCompressor
    private let symbolDecompressor: ZstdDecompressor
    /// Grids found in earlier segments, tried first (a channel keeps its scaling from chunk to chunk).
    private var knownGrids: [(offset: Double, gain: Double, fit: Double)] = []

    /// When set, `entropyBits` accumulates the empirical order-0 entropy of the coded latents.
    var measureEntropy = false
    private(set) var entropyBits = 0.0
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

    // MARK: Encoding

    /// Encodes `raw` (whole elements of `elementType`, not `.bytes`).
    /// - Parameters:
    ///   - segments: element counts of the channel groups, in order (summing to the element count);
    ///     nil cuts the stream into `maxSegment` pieces.
    ///   - out: where the coded stream goes when it fits in `capacity` bytes.
    /// - Returns: the coded size, or nil when it would not be smaller than `capacity`.
    func encode(_ raw: UnsafeRawBufferPointer, elementType: ChunkElementType, segments: [Int]? = nil,
                into out: UnsafeMutableRawPointer, capacity: Int) -> Int? {
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

    /// How a float segment becomes latents.
    private enum FloatChoice { case detect, fixedPoint, bits }

    private func encodeSegment(_ values: UnsafeRawPointer, count n: Int, elementType: ChunkElementType,
                               into out: UnsafeMutableRawPointer) -> Int {
        guard elementType == .float32 || elementType == .float64 else {
            return encodeSegment(values, count: n, elementType: elementType, choice: .detect, into: out)
        }
        if let size = encodeSegment(values, count: n, elementType: elementType, choice: .detect, into: out) as Int?, size > 0 {
            return size
        }
        // No grid: a fixed-point grid (a power-of-two gain; the bits below it go to the adjustments,
        // and prediction works on values) or the bit patterns, whichever codes smaller. A longer
        // segment is judged on the estimated cost of its first `trialLength` samples (latents,
        // predictor and binning plans as the encoder makes them; no block coded), then coded once.
        if n > Self.trialLength {
            let fixed = trialCost(values, count: Self.trialLength, elementType: elementType, choice: .fixedPoint)
            let bits = trialCost(values, count: Self.trialLength, elementType: elementType, choice: .bits)
            return encodeSegment(values, count: n, elementType: elementType, choice: bits < fixed ? .bits : .fixedPoint, into: out)
        }
        alternative.reserve(Self.workingSize(elementCount: n))
        let fixed = encodeSegment(values, count: n, elementType: elementType, choice: .fixedPoint, into: out)
        let bits = encodeSegment(values, count: n, elementType: elementType, choice: .bits, into: alternative.base)
        if bits < fixed {
            out.copyMemory(from: alternative.base, byteCount: bits)
            return bits
        }
        return fixed
    }

    /// The estimated bits of coding `n` float samples the `choice` way: the binning plans' costs of
    /// the residuals, under the predictor the encoder would choose, and of the adjustments.
    private func trialCost(_ values: UnsafeRawPointer, count n: Int, elementType: ChunkElementType, choice: FloatChoice) -> Double {
        let v = latents.base, adj = adjustments.base
        guard let made = makeLatents(values, count: n, elementType: elementType, choice: choice) else { return .infinity }
        let predictor = choosePredictor(v, count: n)
        if predictor.linear {
            Self.predictLinear(v, count: n, coefficients: chosen.base, order: predictor.order)
        } else {
            Self.predict(v, count: n, order: predictor.order)
        }
        var bits = LatentCoder.plan(v, count: n, histogram: histogram.base, maxShift: LatentCoder.maxShiftV3, huffmanBound: true).bits
        if made.hasAdjustments {
            let exceptions = adjustmentCount(n)
            bits += Self.asExceptionList(exceptions, of: n) ? Double(exceptions) * 96
                : LatentCoder.plan(adj, count: n, histogram: histogram.base, maxShift: LatentCoder.maxShiftV3, huffmanBound: true).bits
        }
        return bits + Double(predictor.linear ? predictor.order * 64 : 0)
    }

    /// The adjustments of the first `n` samples that are not 0.
    private func adjustmentCount(_ n: Int) -> Int {
        let adj = adjustments.base
        return tributary_count_nonzero64(adj, n)   // a C kernel (VPTESTMQ and a popcount where the processor has them)
    }

    /// Whether `exceptions` adjustments of `n` go in an exception list (ALP-style; 12 bytes each,
    /// nothing to decode per sample) rather than a latent block.
    static func asExceptionList(_ exceptions: Int, of n: Int) -> Bool { exceptions <= n / 64 }

    /// Samples on which the float modes without a grid are compared.
    static let trialLength = 2048

    /// Writes the latents of `n` samples to `latents` (and, on a grid, the bit differences from it
    /// to `adjustments`): mode 0 integers, 1 a grid (found, or the fixed-point one), 2 float bit
    /// patterns. Nil when `.detect` finds no grid in float samples.
    private func makeLatents(_ values: UnsafeRawPointer, count n: Int, elementType: ChunkElementType, choice: FloatChoice)
        -> (mode: UInt8, grid: (offset: Double, gain: Double)?, hasAdjustments: Bool)? {
        let v = latents.base
        var mode: UInt8 = 0
        var grid: (offset: Double, gain: Double)?
        var hasAdjustments = false
        switch elementType {
        case .int16:
            let x = values.assumingMemoryBound(to: Int16.self)
            for i in 0..<n { v[i] = Int64(Int16(littleEndian: x[i])) }
        case .int32:
            let x = values.assumingMemoryBound(to: Int32.self)
            for i in 0..<n { v[i] = Int64(Int32(littleEndian: x[i])) }
        case .float64, .float32:
            let float32 = elementType == .float32
            switch choice {
            case .detect:
                grid = findGrid(values, count: n, float32: float32)
                if grid == nil { return nil }
            case .fixedPoint:
                var largest = 0.0
                for i in 0..<n {
                    let x = float32 ? Double(values.load(fromByteOffset: 4 * i, as: Float.self)) : values.load(fromByteOffset: 8 * i, as: Double.self)
                    if x.isFinite && abs(x) > largest { largest = abs(x) }
                }
                let exponent = largest > 0 ? Int(largest.exponent) : 0
                grid = (0, Double(sign: .plus, exponent: exponent - (float32 ? 23 : Self.fixedPointBits), significand: 1))
            case .bits:
                grid = nil
            }
            if let (offset, gain) = grid {
                mode = 1
                hasAdjustments = toGrid(values, count: n, float32: float32, offset: offset, gain: gain)
            } else {
                mode = 2
                if float32 {
                    let x = values.assumingMemoryBound(to: UInt32.self)
                    for i in 0..<n { v[i] = Self.ordered32(Int64(Int32(bitPattern: UInt32(littleEndian: x[i])))) }
                } else {
                    let x = values.assumingMemoryBound(to: UInt64.self)
                    for i in 0..<n { v[i] = Self.ordered(Int64(bitPattern: UInt64(littleEndian: x[i]))) }
                }
            }
        case .bytes:
            preconditionFailure("bytes are not coded")
        }
        return (mode, grid, hasAdjustments)
    }

    /// Encodes one segment; with `.detect`, returns 0 for a float segment that shows no grid.
    private func encodeSegment(_ values: UnsafeRawPointer, count n: Int, elementType: ChunkElementType, choice: FloatChoice,
                               into out: UnsafeMutableRawPointer) -> Int {
        let v = latents.base, adj = adjustments.base
        guard let (mode, grid, hasAdjustments) = makeLatents(values, count: n, elementType: elementType, choice: choice) else { return 0 }
        let predictor = choosePredictor(v, count: n)
        let linearOrder = predictor.linear ? predictor.order : 0
        if predictor.linear {
            Self.predictLinear(v, count: n, coefficients: chosen.base, order: linearOrder)
        } else {
            Self.predict(v, count: n, order: predictor.order)
        }
        out.storeBytes(of: UInt32(n).littleEndian, toByteOffset: 0, as: UInt32.self)
        out.storeBytes(of: mode, toByteOffset: 4, as: UInt8.self)
        out.storeBytes(of: UInt8(predictor.linear ? 3 : predictor.order), toByteOffset: 5, as: UInt8.self)
        // Few adjustments (−0.0, the odd value off the grid) go in an exception list (ALP-style),
        // which costs nothing per sample when decoding; many go in a latent block.
        let exceptions = hasAdjustments ? adjustmentCount(n) : 0
        let asList = hasAdjustments && Self.asExceptionList(exceptions, of: n)
        out.storeBytes(of: UInt8(hasAdjustments ? (asList ? 2 : 1) : 0), toByteOffset: 6, as: UInt8.self)
        out.storeBytes(of: UInt8(0), toByteOffset: 7, as: UInt8.self)
        var p = 8
        if let (offset, gain) = grid {
            out.storeBytes(of: offset.bitPattern.littleEndian, toByteOffset: 8, as: UInt64.self)
            out.storeBytes(of: gain.bitPattern.littleEndian, toByteOffset: 16, as: UInt64.self)
            p = 24
        }
        if predictor.linear {
            out.storeBytes(of: UInt8(linearOrder), toByteOffset: p, as: UInt8.self)
            out.storeBytes(of: UInt8(Self.linearShift), toByteOffset: p + 1, as: UInt8.self)
            p += 2
            for j in 0..<linearOrder {
                out.storeBytes(of: UInt64(bitPattern: chosen.base[j]).littleEndian, toByteOffset: p, as: UInt64.self)
                p += 8
            }
        }
        p += block(v, count: n, into: out + p)
        if asList {
            out.storeBytes(of: UInt32(exceptions).littleEndian, toByteOffset: p, as: UInt32.self)
            p += 4
            for i in 0..<n where adj[i] != 0 {
                out.storeBytes(of: UInt32(i).littleEndian, toByteOffset: p, as: UInt32.self)
                out.storeBytes(of: UInt64(bitPattern: adj[i]).littleEndian, toByteOffset: p + 4, as: UInt64.self)
                p += 12
            }
            if measureEntropy { entropyBits += Double(exceptions) * 96 }
        } else if hasAdjustments {
            p += block(adj, count: n, into: out + p)
        }
        return p
    }

    private func block(_ r: UnsafeMutablePointer<Int64>, count n: Int, into out: UnsafeMutableRawPointer) -> Int {
        let plan = LatentCoder.plan(r, count: n, histogram: histogram.base, maxShift: LatentCoder.maxShiftV3,
                                    huffmanBound: true, multiSymbol: true)
        if measureEntropy { entropyBits += Self.entropy(r, count: n) }
        return LatentCoder.encodeV4(r, count: n, plan: plan, symbols: symbols.base, packed: packedSymbols.base,
                                    positions: escapePositions.base, compressor: symbolCompressor, into: out)
    }

    /// Empirical order-0 entropy (bits) of `n` values.
    static func entropy(_ r: UnsafePointer<Int64>, count n: Int) -> Double {
        guard n > 0 else { return 0 }
        var sorted = Array(UnsafeBufferPointer(start: r, count: n))
        sorted.sort()
        var bits = 0.0, run = 1
        let total = Double(n)
        for i in 1...n {
            if i < n && sorted[i] == sorted[i - 1] { run += 1; continue }
            bits += Double(run) * log2(total / Double(run))
            run = 1
        }
        return bits
    }

    /// Order-preserving map of a float's bit pattern (sign-extended) to an integer; its own inverse.
    @inline(__always) static func ordered(_ bits: Int64) -> Int64 { bits >= 0 ? bits : bits ^ Int64.max }
    @inline(__always) static func ordered32(_ bits: Int64) -> Int64 { bits >= 0 ? bits : bits ^ Int64(Int32.max) }

    /// Replaces `v` by its residuals of the given order (0 none, 1 delta, 2 delta of delta), from 0.
    static func predict(_ v: UnsafeMutablePointer<Int64>, count n: Int, order: Int) {
        for _ in 0..<order {
            var i = n - 1
            while i > 0 { v[i] = v[i] &- v[i - 1]; i -= 1 }
        }
    }

    /// Undoes `predict`, handing each latent to `out` (which may be `v` itself: the latent at i is
    /// stored after v[i] is read and before v[i + 1] is).
    static func integrate<Out: LatentOutput>(_ v: UnsafeMutablePointer<Int64>, count n: Int, order: Int, into out: Out) {
        if order == 1 {
            var s: Int64 = 0
            for i in 0..<n { s = s &+ v[i]; out.store(i, s) }
        } else if order == 2 {
            var s: Int64 = 0, d: Int64 = 0
            for i in 0..<n { d = d &+ v[i]; s = s &+ d; out.store(i, s) }
        } else {
            for i in 0..<n { out.store(i, v[i]) }
        }
    }

    /// Fractional bits of the linear predictor's coefficients.
    static let linearShift = 20

    /// Residuals of the linear predictor `(2^(shift−1) + Σ c[j] × v[i−1−j]) >> shift` (wrapping
    /// 64-bit arithmetic; missing history counts as 0), written in place from the end.
    static func predictLinear(_ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>, order p: Int) {
        let half: Int64 = 1 << (Int64(linearShift) - 1)
        var i = n - 1
        // Backwards, so every prediction reads samples not yet replaced.
        if p == 8 {
            // The C kernel (eight residuals at a time with VPMULLQ where the processor has it)
            // computes exactly `predictLinearReference` for i ≥ 8.
            if n > 8 { tributary_predict_linear8(v, n, c, UInt32(linearShift)) }
            i = min(i, 7)
        } else if p == 4 {
            let c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3]
            while i >= 4 {
                let sum = half &+ c0 &* v[i - 1] &+ c1 &* v[i - 2] &+ c2 &* v[i - 3] &+ c3 &* v[i - 4]
                v[i] = v[i] &- (sum &>> Int64(linearShift))
                i -= 1
            }
        } else if p == 2 {
            let c0 = c[0], c1 = c[1]
            while i >= 2 {
                v[i] = v[i] &- ((half &+ c0 &* v[i - 1] &+ c1 &* v[i - 2]) &>> Int64(linearShift))
                i -= 1
            }
        }
        while i >= 0 {
            var sum = half
            for j in 0..<min(p, i) { sum = sum &+ c[j] &* v[i - 1 - j] }
            v[i] = v[i] &- (sum &>> Int64(linearShift))
            i -= 1
        }
    }

    /// `predictLinear`'s order-8 rule in Swift (the kernel's reference in the tests).
    static func predictLinearReference8(_ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>) {
        let half: Int64 = 1 << (Int64(linearShift) - 1)
        var i = n - 1
        while i >= 0 {
            var sum = half
            for j in 0..<min(8, i) { sum = sum &+ c[j] &* v[i - 1 - j] }
            v[i] = v[i] &- (sum &>> Int64(linearShift))
            i -= 1
        }
    }

    /// Undoes `predictLinear` for one channel, handing each latent to `out` (`decode` takes order 8
    /// four or eight channels at a time where it can: `finishLanes`). The last latents are kept in registers
    /// (no store-to-load round trip in the dependency chain) and shifts mask (`&>>`: `shift` is
    /// checked to be 1 … 62). The conversion `out` makes to the element type costs little here: the
    /// loop is bound by its multiplies (8 per sample at order 8).
    static func integrateLinear<Out: LatentOutput>(_ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>,
                                                   order p: Int, shift: Int, into out: Out) {
        if p == 8 {
            if !integrateLinear8Split(v, count: n, coefficients: c, shift: shift, into: out) {
                integrateLinear8(v, count: n, coefficients: c, shift: shift, into: out)
            }
            return
        }
        let half: Int64 = 1 &<< (Int64(shift) - 1)
        let q = Int64(shift)
        // Orders 2 and 4 from sample 0 with the missing history as zeros, on the prediction t
        // (x = v + t) rather than the latent: t(i) = (r + c0 × t(i−1)) >> shift, where r = the
        // sum's other terms + c0 × v(i−1) (the same sum modulo 2^64, as c0 × x = c0 × v + c0 × t).
        // The dependency chain is then a multiply, an add and the shift — one add shorter than on
        // the latent — and bounds these loops (one more multiply per sample is off the chain).
        if p == 2 {
            let c0 = c[0], c1 = c[1]
            var t: Int64 = 0, a1: Int64 = 0, r = half
            for i in 0..<n {
                t = (r &+ c0 &* t) &>> q
                let vi = v[i]
                let x = vi &+ t
                r = half &+ c0 &* vi &+ c1 &* a1
                out.store(i, x)
                a1 = x
            }
            return
        }
        if p == 4 {
            let c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3]
            var t: Int64 = 0, a1: Int64 = 0, a2: Int64 = 0, a3: Int64 = 0, r = half
            for i in 0..<n {
                t = (r &+ c0 &* t) &>> q
                let vi = v[i]
                let x = vi &+ t
                r = half &+ c0 &* vi &+ c1 &* a1 &+ c2 &* a2 &+ c3 &* a3
                out.store(i, x)
                a3 = a2; a2 = a1; a1 = x
            }
            return
        }
        // Other orders (1, 3, 5, 6, 7: never written by the encoder) in place, then handed on.
        for i in 0..<n {
            var sum = half
            for j in 0..<min(p, i) { sum = sum &+ c[j] &* v[i - 1 - j] }
            v[i] = v[i] &+ (sum &>> q)
        }
        for i in 0..<n { out.store(i, v[i]) }
    }

    /// `integrateLinear` of order 8, from sample 0 with the missing history as zeros (the sums are
    /// then those of the first samples' shorter ones). Unrolled by 8 so that the history is a ring of
    /// eight registers renamed from step to step, not moved: the loop is bound by its instruction
    /// count (8 multiplies, each after a copy, and 8 adds per sample), and the moves were a fifth of it.
    static func integrateLinear8<Out: LatentOutput>(_ v: UnsafeMutablePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>,
                                                    shift: Int, into out: Out) {
        let half: Int64 = 1 &<< (Int64(shift) - 1)
        let q = Int64(shift)
        let c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4], c5 = c[5], c6 = c[6], c7 = c[7]
        // h(k mod 8) holds the latent of sample i + k − 8 …; `rest` is the next sum but for c0 × the newest.
        var h0: Int64 = 0, h1: Int64 = 0, h2: Int64 = 0, h3: Int64 = 0, h4: Int64 = 0, h5: Int64 = 0, h6: Int64 = 0, h7: Int64 = 0
        var rest = half
        var i = 0
        while i + 8 <= n {
            let x0 = v[i + 0] &+ ((rest &+ c0 &* h7) &>> q)
            rest = half &+ c1 &* h7 &+ c2 &* h6 &+ c3 &* h5 &+ c4 &* h4 &+ c5 &* h3 &+ c6 &* h2 &+ c7 &* h1
            out.store(i + 0, x0)
            h0 = x0
            let x1 = v[i + 1] &+ ((rest &+ c0 &* h0) &>> q)
            rest = half &+ c1 &* h0 &+ c2 &* h7 &+ c3 &* h6 &+ c4 &* h5 &+ c5 &* h4 &+ c6 &* h3 &+ c7 &* h2
            out.store(i + 1, x1)
            h1 = x1
            let x2 = v[i + 2] &+ ((rest &+ c0 &* h1) &>> q)
            rest = half &+ c1 &* h1 &+ c2 &* h0 &+ c3 &* h7 &+ c4 &* h6 &+ c5 &* h5 &+ c6 &* h4 &+ c7 &* h3
            out.store(i + 2, x2)
            h2 = x2
            let x3 = v[i + 3] &+ ((rest &+ c0 &* h2) &>> q)
            rest = half &+ c1 &* h2 &+ c2 &* h1 &+ c3 &* h0 &+ c4 &* h7 &+ c5 &* h6 &+ c6 &* h5 &+ c7 &* h4
            out.store(i + 3, x3)
            h3 = x3
            let x4 = v[i + 4] &+ ((rest &+ c0 &* h3) &>> q)
            rest = half &+ c1 &* h3 &+ c2 &* h2 &+ c3 &* h1 &+ c4 &* h0 &+ c5 &* h7 &+ c6 &* h6 &+ c7 &* h5
            out.store(i + 4, x4)
            h4 = x4
            let x5 = v[i + 5] &+ ((rest &+ c0 &* h4) &>> q)
            rest = half &+ c1 &* h4 &+ c2 &* h3 &+ c3 &* h2 &+ c4 &* h1 &+ c5 &* h0 &+ c6 &* h7 &+ c7 &* h6
            out.store(i + 5, x5)
            h5 = x5
            let x6 = v[i + 6] &+ ((rest &+ c0 &* h5) &>> q)
            rest = half &+ c1 &* h5 &+ c2 &* h4 &+ c3 &* h3 &+ c4 &* h2 &+ c5 &* h1 &+ c6 &* h0 &+ c7 &* h7
            out.store(i + 6, x6)
            h6 = x6
            let x7 = v[i + 7] &+ ((rest &+ c0 &* h6) &>> q)
            rest = half &+ c1 &* h6 &+ c2 &* h5 &+ c3 &* h4 &+ c4 &* h3 &+ c5 &* h2 &+ c6 &* h1 &+ c7 &* h0
            out.store(i + 7, x7)
            h7 = x7
            i += 8
        }
        // The last n mod 8 samples: the same steps, each behind its own exit. (Putting those exits in
        // the main loop instead, one body for both, measured slower on the 24-bit and
        // float64-filtered classes, so the steps are written twice, here and in
        // `integrateLinear8Split`.)
        if i < n {
            if i + 0 == n { return }
            let x0 = v[i + 0] &+ ((rest &+ c0 &* h7) &>> q)
            rest = half &+ c1 &* h7 &+ c2 &* h6 &+ c3 &* h5 &+ c4 &* h4 &+ c5 &* h3 &+ c6 &* h2 &+ c7 &* h1
            out.store(i + 0, x0)
            h0 = x0
            if i + 1 == n { return }
            let x1 = v[i + 1] &+ ((rest &+ c0 &* h0) &>> q)
            rest = half &+ c1 &* h0 &+ c2 &* h7 &+ c3 &* h6 &+ c4 &* h5 &+ c5 &* h4 &+ c6 &* h3 &+ c7 &* h2
            out.store(i + 1, x1)
            h1 = x1
            if i + 2 == n { return }
            let x2 = v[i + 2] &+ ((rest &+ c0 &* h1) &>> q)
            rest = half &+ c1 &* h1 &+ c2 &* h0 &+ c3 &* h7 &+ c4 &* h6 &+ c5 &* h5 &+ c6 &* h4 &+ c7 &* h3
            out.store(i + 2, x2)
            h2 = x2
            if i + 3 == n { return }
            let x3 = v[i + 3] &+ ((rest &+ c0 &* h2) &>> q)
            rest = half &+ c1 &* h2 &+ c2 &* h1 &+ c3 &* h0 &+ c4 &* h7 &+ c5 &* h6 &+ c6 &* h5 &+ c7 &* h4
            out.store(i + 3, x3)
            h3 = x3
            if i + 4 == n { return }
            let x4 = v[i + 4] &+ ((rest &+ c0 &* h3) &>> q)
            rest = half &+ c1 &* h3 &+ c2 &* h2 &+ c3 &* h1 &+ c4 &* h0 &+ c5 &* h7 &+ c6 &* h6 &+ c7 &* h5
            out.store(i + 4, x4)
            h4 = x4
            if i + 5 == n { return }
            let x5 = v[i + 5] &+ ((rest &+ c0 &* h4) &>> q)
            rest = half &+ c1 &* h4 &+ c2 &* h3 &+ c3 &* h2 &+ c4 &* h1 &+ c5 &* h0 &+ c6 &* h7 &+ c7 &* h6
            out.store(i + 5, x5)
            h5 = x5
            if i + 6 == n { return }
            let x6 = v[i + 6] &+ ((rest &+ c0 &* h5) &>> q)
            rest = half &+ c1 &* h5 &+ c2 &* h4 &+ c3 &* h3 &+ c4 &* h2 &+ c5 &* h1 &+ c6 &* h0 &+ c7 &* h7
            out.store(i + 6, x6)
            h6 = x6
            if i + 7 == n { return }
            let x7 = v[i + 7] &+ ((rest &+ c0 &* h6) &>> q)
            rest = half &+ c1 &* h6 &+ c2 &* h5 &+ c3 &* h4 &+ c4 &* h3 &+ c5 &* h2 &+ c6 &* h1 &+ c7 &* h0
            out.store(i + 7, x7)
            h7 = x7
        }
    }

    /// `integrateLinear8` with c4 … c7 × the four older latents in binary64 (exact: every product and
    /// partial sum an integer below 2^51, turned back into an integer by adding 1.5 × 2^52 and reading
    /// the bits) while every latent stays within ±`bound` (4 × max |c4 … c7| × `bound` < 2^51), so
    /// that the sum is the one of wrapping 64-bit arithmetic. The integer loop is bound by its 8
    /// multiplies per sample on the one integer multiplier; this leaves it 4 and gives the others to
    /// the floating-point units. Returns false, having stored part of the output, when a latent
    /// leaves the bound (at once for latents of 2^36, as float64 without a grid has): the caller
    /// starts over with the integer loop from `v`, which this does not write.
    static func integrateLinear8Split<Out: LatentOutput>(_ v: UnsafePointer<Int64>, count n: Int, coefficients c: UnsafePointer<Int64>,
                                                         shift: Int, into out: Out) -> Bool {
        var largest: Int64 = 0
        for j in 4..<8 {
            guard c[j] > -(1 << 40), c[j] < 1 << 40 else { return false }
            largest = max(largest, abs(c[j]))
        }
        let bound = (Int64(1) << 51) / (4 * (largest + 1))
        let span = UInt64(2 * bound)
        let half: Int64 = 1 &<< (Int64(shift) - 1)
        let q = Int64(shift)
        let magic = 0x1.8p52, magicBits = Int64(bitPattern: magic.bitPattern)
        let c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3]
        let d4 = Double(c[4]), d5 = Double(c[5]), d6 = Double(c[6]), d7 = Double(c[7])
        var h0: Int64 = 0, h1: Int64 = 0, h2: Int64 = 0, h3: Int64 = 0, h4: Int64 = 0, h5: Int64 = 0, h6: Int64 = 0, h7: Int64 = 0
        var g0 = 0.0, g1 = 0.0, g2 = 0.0, g3 = 0.0, g4 = 0.0, g5 = 0.0, g6 = 0.0, g7 = 0.0
        // t: the last prediction, so that the dependency chain is t → c0 × t → + → >> (the latent
        // v(i−1) enters `rest` as c0 × v(i−1), off the chain: c0 × x = c0 × v + c0 × t modulo 2^64).
        var rest = half, t: Int64 = 0
        var i = 0
        while i + 8 <= n {
            t = (rest &+ c0 &* t) &>> q
            let x0 = v[i + 0] &+ t
            guard UInt64(bitPattern: x0 &+ bound) <= span else { return false }
            let older0 = Int64(bitPattern: ((d4 * g4 + d5 * g3) + (d6 * g2 + d7 * g1) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 0] &+ c1 &* h7 &+ c2 &* h6 &+ c3 &* h5 &+ older0
            out.store(i + 0, x0)
            h0 = x0; g0 = Double(x0)
            t = (rest &+ c0 &* t) &>> q
            let x1 = v[i + 1] &+ t
            guard UInt64(bitPattern: x1 &+ bound) <= span else { return false }
            let older1 = Int64(bitPattern: ((d4 * g5 + d5 * g4) + (d6 * g3 + d7 * g2) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 1] &+ c1 &* h0 &+ c2 &* h7 &+ c3 &* h6 &+ older1
            out.store(i + 1, x1)
            h1 = x1; g1 = Double(x1)
            t = (rest &+ c0 &* t) &>> q
            let x2 = v[i + 2] &+ t
            guard UInt64(bitPattern: x2 &+ bound) <= span else { return false }
            let older2 = Int64(bitPattern: ((d4 * g6 + d5 * g5) + (d6 * g4 + d7 * g3) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 2] &+ c1 &* h1 &+ c2 &* h0 &+ c3 &* h7 &+ older2
            out.store(i + 2, x2)
            h2 = x2; g2 = Double(x2)
            t = (rest &+ c0 &* t) &>> q
            let x3 = v[i + 3] &+ t
            guard UInt64(bitPattern: x3 &+ bound) <= span else { return false }
            let older3 = Int64(bitPattern: ((d4 * g7 + d5 * g6) + (d6 * g5 + d7 * g4) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 3] &+ c1 &* h2 &+ c2 &* h1 &+ c3 &* h0 &+ older3
            out.store(i + 3, x3)
            h3 = x3; g3 = Double(x3)
            t = (rest &+ c0 &* t) &>> q
            let x4 = v[i + 4] &+ t
            guard UInt64(bitPattern: x4 &+ bound) <= span else { return false }
            let older4 = Int64(bitPattern: ((d4 * g0 + d5 * g7) + (d6 * g6 + d7 * g5) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 4] &+ c1 &* h3 &+ c2 &* h2 &+ c3 &* h1 &+ older4
            out.store(i + 4, x4)
            h4 = x4; g4 = Double(x4)
            t = (rest &+ c0 &* t) &>> q
            let x5 = v[i + 5] &+ t
            guard UInt64(bitPattern: x5 &+ bound) <= span else { return false }
            let older5 = Int64(bitPattern: ((d4 * g1 + d5 * g0) + (d6 * g7 + d7 * g6) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 5] &+ c1 &* h4 &+ c2 &* h3 &+ c3 &* h2 &+ older5
            out.store(i + 5, x5)
            h5 = x5; g5 = Double(x5)
            t = (rest &+ c0 &* t) &>> q
            let x6 = v[i + 6] &+ t
            guard UInt64(bitPattern: x6 &+ bound) <= span else { return false }
            let older6 = Int64(bitPattern: ((d4 * g2 + d5 * g1) + (d6 * g0 + d7 * g7) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 6] &+ c1 &* h5 &+ c2 &* h4 &+ c3 &* h3 &+ older6
            out.store(i + 6, x6)
            h6 = x6; g6 = Double(x6)
            t = (rest &+ c0 &* t) &>> q
            let x7 = v[i + 7] &+ t
            guard UInt64(bitPattern: x7 &+ bound) <= span else { return false }
            let older7 = Int64(bitPattern: ((d4 * g3 + d5 * g2) + (d6 * g1 + d7 * g0) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 7] &+ c1 &* h6 &+ c2 &* h5 &+ c3 &* h4 &+ older7
            out.store(i + 7, x7)
            h7 = x7; g7 = Double(x7)
            i += 8
        }
        if i < n {
            if i + 0 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x0 = v[i + 0] &+ t
            guard UInt64(bitPattern: x0 &+ bound) <= span else { return false }
            let older0 = Int64(bitPattern: ((d4 * g4 + d5 * g3) + (d6 * g2 + d7 * g1) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 0] &+ c1 &* h7 &+ c2 &* h6 &+ c3 &* h5 &+ older0
            out.store(i + 0, x0)
            h0 = x0; g0 = Double(x0)
            if i + 1 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x1 = v[i + 1] &+ t
            guard UInt64(bitPattern: x1 &+ bound) <= span else { return false }
            let older1 = Int64(bitPattern: ((d4 * g5 + d5 * g4) + (d6 * g3 + d7 * g2) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 1] &+ c1 &* h0 &+ c2 &* h7 &+ c3 &* h6 &+ older1
            out.store(i + 1, x1)
            h1 = x1; g1 = Double(x1)
            if i + 2 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x2 = v[i + 2] &+ t
            guard UInt64(bitPattern: x2 &+ bound) <= span else { return false }
            let older2 = Int64(bitPattern: ((d4 * g6 + d5 * g5) + (d6 * g4 + d7 * g3) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 2] &+ c1 &* h1 &+ c2 &* h0 &+ c3 &* h7 &+ older2
            out.store(i + 2, x2)
            h2 = x2; g2 = Double(x2)
            if i + 3 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x3 = v[i + 3] &+ t
            guard UInt64(bitPattern: x3 &+ bound) <= span else { return false }
            let older3 = Int64(bitPattern: ((d4 * g7 + d5 * g6) + (d6 * g5 + d7 * g4) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 3] &+ c1 &* h2 &+ c2 &* h1 &+ c3 &* h0 &+ older3
            out.store(i + 3, x3)
            h3 = x3; g3 = Double(x3)
            if i + 4 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x4 = v[i + 4] &+ t
            guard UInt64(bitPattern: x4 &+ bound) <= span else { return false }
            let older4 = Int64(bitPattern: ((d4 * g0 + d5 * g7) + (d6 * g6 + d7 * g5) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 4] &+ c1 &* h3 &+ c2 &* h2 &+ c3 &* h1 &+ older4
            out.store(i + 4, x4)
            h4 = x4; g4 = Double(x4)
            if i + 5 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x5 = v[i + 5] &+ t
            guard UInt64(bitPattern: x5 &+ bound) <= span else { return false }
            let older5 = Int64(bitPattern: ((d4 * g1 + d5 * g0) + (d6 * g7 + d7 * g6) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 5] &+ c1 &* h4 &+ c2 &* h3 &+ c3 &* h2 &+ older5
            out.store(i + 5, x5)
            h5 = x5; g5 = Double(x5)
            if i + 6 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x6 = v[i + 6] &+ t
            guard UInt64(bitPattern: x6 &+ bound) <= span else { return false }
            let older6 = Int64(bitPattern: ((d4 * g2 + d5 * g1) + (d6 * g0 + d7 * g7) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 6] &+ c1 &* h5 &+ c2 &* h4 &+ c3 &* h3 &+ older6
            out.store(i + 6, x6)
            h6 = x6; g6 = Double(x6)
            if i + 7 == n { return true }
            t = (rest &+ c0 &* t) &>> q
            let x7 = v[i + 7] &+ t
            guard UInt64(bitPattern: x7 &+ bound) <= span else { return false }
            let older7 = Int64(bitPattern: ((d4 * g3 + d5 * g2) + (d6 * g1 + d7 * g0) + magic).bitPattern) &- magicBits
            rest = half &+ c0 &* v[i + 7] &+ c1 &* h6 &+ c2 &* h5 &+ c3 &* h4 &+ older7
            out.store(i + 7, x7)
            h7 = x7; g7 = Double(x7)
        }
        return true
    }

    /// Least-squares linear predictors of orders 2, 4 and 8 fitted on `x`, as fixed-point
    /// coefficients: candidate k (0 … 2) at `out + 8k`; returns which candidates are usable (bit k).
    static func fitLinear(_ x: UnsafePointer<Int64>, count m: Int, into out: UnsafeMutablePointer<Int64>) -> Int {
        let maxOrder = 8
        guard m > 4 * maxOrder else { return 0 }
        var mean = 0.0
        for i in 0..<m { mean += Double(x[i]) }
        mean /= Double(m)
        // P(a, b) = Σ_{i=8}^{m−1} y[i−a]·y[i−b] (y = x − mean, a, b ≤ 8): the normal equations are
        // b[j] = P(0, j+1) and r[j][k] = P(j+1, k+1). The first row takes one pass (nine products
        // per sample); the rest follows from P(a+1, b+1) = P(a, b) + y[7−a]·y[7−b] − y[m−1−a]·y[m−1−b].
        @inline(__always) func y(_ i: Int) -> Double { Double(x[i]) - mean }
        var p0 = 0.0, p1 = 0.0, p2 = 0.0, p3 = 0.0, p4 = 0.0, p5 = 0.0, p6 = 0.0, p7 = 0.0, p8 = 0.0
        var y1 = y(7), y2 = y(6), y3 = y(5), y4 = y(4), y5 = y(3), y6 = y(2), y7 = y(1), y8 = y(0)
        for i in maxOrder..<m {
            let y0 = y(i)
            p0 += y0 * y0; p1 += y0 * y1; p2 += y0 * y2; p3 += y0 * y3; p4 += y0 * y4
            p5 += y0 * y5; p6 += y0 * y6; p7 += y0 * y7; p8 += y0 * y8
            (y8, y7, y6, y5, y4, y3, y2, y1) = (y7, y6, y5, y4, y3, y2, y1, y0)
        }
        var full = InlineArray<81, Double>(repeating: 0)  // P(a, b) at 9a + b, a ≤ b
        let row: InlineArray<9, Double> = [p0, p1, p2, p3, p4, p5, p6, p7, p8]
        for d in 0...maxOrder { full[d] = row[d] }
        for a in 1...maxOrder {
            for c in a...maxOrder {
                full[9 * a + c] = full[9 * (a - 1) + c - 1] + y(8 - a) * y(8 - c) - y(m - a) * y(m - c)
            }
        }
        var r = InlineArray<64, Double>(repeating: 0)
        var b = InlineArray<8, Double>(repeating: 0)
        for j in 0..<maxOrder {
            b[j] = full[j + 1]
            for k in j..<maxOrder { r[8 * j + k] = full[9 * (j + 1) + k + 1] }
        }
        for j in 0..<maxOrder { for k in 0..<j { r[8 * j + k] = r[8 * k + j] } }
        var usable = 0
        for candidate in 0..<3 {
            let order = 2 << candidate
            // Augmented matrix `order` × (`order` + 1), row stride 9.
            var a = InlineArray<72, Double>(repeating: 0)
            var trace = 0.0
            for j in 0..<order {
                for k in 0..<order { a[9 * j + k] = r[8 * j + k] }
                a[9 * j + order] = b[j]
                trace += r[8 * j + j]
            }
            let ridge = 1e-9 * trace / Double(order) + 1e-300
            for j in 0..<order { a[9 * j + j] += ridge }
            // Gaussian elimination with partial pivoting.
            var ok = true
            for col in 0..<order {
                var pivot = col
                for row in col..<order where abs(a[9 * row + col]) > abs(a[9 * pivot + col]) { pivot = row }
                guard abs(a[9 * pivot + col]) > 0 else { ok = false; break }
                if pivot != col { for k in 0...order { let t = a[9 * col + k]; a[9 * col + k] = a[9 * pivot + k]; a[9 * pivot + k] = t } }
                for row in (col + 1)..<order {
                    let f = a[9 * row + col] / a[9 * col + col]
                    for k in col...order { a[9 * row + k] -= f * a[9 * col + k] }
                }
            }
            guard ok else { continue }
            var coefficients = InlineArray<8, Double>(repeating: 0)
            var finite = true
            for row in stride(from: order - 1, through: 0, by: -1) {
                var v = a[9 * row + order]
                for k in (row + 1)..<order { v -= a[9 * row + k] * coefficients[k] }
                coefficients[row] = v / a[9 * row + row]
                finite = finite && coefficients[row].isFinite && abs(coefficients[row]) < 1024
            }
            guard finite else { continue }
            for j in 0..<order { out[8 * candidate + j] = Int64((coefficients[j] * Double(1 << linearShift)).rounded()) }
            usable |= 1 << candidate
        }
        return usable
    }

    /// The predictor whose residuals cost least on runs sampled over the segment: an order of
    /// differences (0 … 2), or linear (`linear`, its order, coefficients left in `chosen`).
    private func choosePredictor(_ v: UnsafePointer<Int64>, count n: Int) -> (order: Int, linear: Bool) {
        guard n >= 16 else { return (0, false) }
        let run = min(n, 1024), runs = min(2, n / run)
        var best = (order: 0, linear: false), bestBits = Double.infinity
        let sample = predictorSample.base
        let usable = Self.fitLinear(v, count: min(n, 2048), into: fitted.base)
        for candidate in 0..<6 {
            let linear = candidate >= 3
            if linear && usable & (1 << (candidate - 3)) == 0 { continue }
            let order = linear ? 2 << (candidate - 3) : candidate
            for j in 0..<runs {
                let start = (n - run) / max(1, runs - 1) * j
                for i in 0..<run { sample[j * run + i] = v[start + i] }
                if linear {
                    Self.predictLinear(sample + j * run, count: run, coefficients: fitted.base + 8 * (candidate - 3), order: order)
                } else {
                    Self.predict(sample + j * run, count: run, order: order)
                }
                // The first residuals of a run lack history: not representative.
                for i in 0..<order { sample[j * run + i] = sample[j * run + order] }
            }
            let bits = LatentCoder.plan(sample, count: run * runs, histogram: histogram.base, robust: false,
                                        fineBits: 10).bits
                + Double(linear ? order * 64 : 0) * Double(run * runs) / Double(n)
            if bits < bestBits * 0.995 {
                best = (order, linear)
                bestBits = bits
                if linear { for j in 0..<order { chosen.base[j] = fitted.base[8 * (candidate - 3) + j] } }
            }
        }
        return best
    }

    // MARK: Grids

    /// Writes the counts `k` to `latents` and the bit differences from the grid to `adjustments`;
    /// returns whether any difference is not zero.
    private func toGrid(_ values: UnsafeRawPointer, count n: Int, float32: Bool, offset: Double, gain: Double) -> Bool {
        let v = latents.base, adj = adjustments.base
        let inverse = 1 / gain
        var any: Int64 = 0
        if float32 {
            let x = values.assumingMemoryBound(to: UInt32.self)
            for i in 0..<n {
                let bits = UInt32(littleEndian: x[i])
                let k = Self.count(Double(Float(bitPattern: bits)), offset: offset, inverse: inverse)
                let y = Float(offset + gain * Double(k))
                let d = Int64(Int32(bitPattern: bits &- y.bitPattern))
                v[i] = k
                adj[i] = d
                any |= d
            }
        } else {
            // The C kernel computes `toGridReference64` (eight samples at a time with AVX-512).
            return tributary_to_grid64(values.assumingMemoryBound(to: UInt64.self), v, adj, n, offset, gain, inverse) != 0
        }
        return any != 0
    }

    /// The binary64 branch of `toGrid` in Swift (the kernel's reference in the tests): latents to
    /// `k`, bit differences to `adj`; returns their OR.
    static func toGridReference64(_ x: UnsafePointer<UInt64>, k: UnsafeMutablePointer<Int64>, adj: UnsafeMutablePointer<Int64>,
                                  count n: Int, offset: Double, gain: Double) -> Int64 {
        let inverse = 1 / gain
        var any: Int64 = 0
        for i in 0..<n {
            let bits = UInt64(littleEndian: x[i])
            let count = Self.count(Double(bitPattern: bits), offset: offset, inverse: inverse)
            let y = offset + gain * Double(count)
            let d = Int64(bitPattern: bits &- y.bitPattern)
            k[i] = count
            adj[i] = d
            any |= d
        }
        return any
    }

    @inline(__always) static func count(_ x: Double, offset: Double, inverse: Double) -> Int64 {
        let q = (x - offset) * inverse
        // Round to nearest by the 1.5 × 2^52 trick (no libm call); NaN and far values give 0.
        return abs(q) <= 0x1p50 ? Int64((q + 0x1.8p52) - 0x1.8p52) : 0
    }

    @inline(__always) private static func reproduces(_ x: Double, offset: Double, gain: Double, float32: Bool) -> Bool {
        let k = count(x, offset: offset, inverse: 1 / gain)
        let y = offset + gain * Double(k)
        return float32 ? Float(y).bitPattern == Float(x).bitPattern : y.bitPattern == x.bitPattern
    }

    /// An affine grid `offset + gain × k` that reproduces the segment's samples (most of them bit
    /// for bit), or nil when the samples show no grid.
    private func findGrid(_ values: UnsafeRawPointer, count n: Int, float32: Bool) -> (offset: Double, gain: Double)? {
        guard n >= 2 else { return nil }
        @inline(__always) func value(_ i: Int) -> Double {
            float32 ? Double(values.load(fromByteOffset: 4 * i, as: Float.self)) : values.load(fromByteOffset: 8 * i, as: Double.self)
        }
        // Test values spread over the segment.
        let tests = gridTests.base
        var testCount = 0
        for j in Swift.stride(from: 0, to: n, by: max(1, n / 64)) where testCount < 128 {
            let x = value(j)
            if x.isFinite { tests[testCount] = x; testCount += 1 }
        }
        guard testCount >= 2 else { return nil }
        func score(_ offset: Double, _ gain: Double, limit: Int) -> Int {
            var s = 0
            for t in 0..<min(limit, testCount) where Self.reproduces(tests[t], offset: offset, gain: gain, float32: float32) { s += 1 }
            return s
        }
        // A grid from an earlier segment that fits about as well as it did.
        for known in knownGrids where Double(score(known.offset, known.gain, limit: testCount)) >= (known.fit - 0.1) * Double(testCount) {
            return (known.offset, known.gain)
        }
        let m = min(n, 2048), stride = n / m
        let sample = gridSample.base
        var count = 0
        for j in 0..<m {
            let x = value(j * stride)
            if x.isFinite { sample[count] = x; count += 1 }
        }
        guard count >= 2 else { return nil }
        // Sorted distinct values.
        RadixSort.sort(sample, count: count, scratch: gridKeys.base, counts: gridCounts.base)
        var distinct = 1
        for i in 1..<count where sample[i] != sample[distinct - 1] { sample[distinct] = sample[i]; distinct += 1 }
        guard distinct >= 2 else { return nil }
        let lowest = sample[0], highest = sample[distinct - 1]
        let maxAbs = max(abs(lowest), abs(highest))
        // float32 values beyond the grid's precision are rounded off it: the gain is sought among
        // the small values (|x| ≤ max/16), which float32 holds exactly, when there are enough.
        var first = 0, last = distinct - 1
        if float32 {
            let limit = maxAbs / 16
            var a = 0, b = distinct - 1
            while a < distinct && sample[a] < -limit { a += 1 }
            while b >= 0 && sample[b] > limit { b -= 1 }
            if b - a >= 16 { first = a; last = b }
        }
        let ulp = maxAbs.ulp
        let floor = 64 * ulp
        var g = Double.infinity
        for i in (first + 1)...last { g = min(g, sample[i] - sample[i - 1]) }
        guard g > floor else { return nil }
        // Tolerant Euclid over up to 256 differences: the GCD of values that are multiples of the
        // gain give or take a few ulps.
        for i in Swift.stride(from: first + 1, to: last + 1, by: max(1, (last - first) / 256)) {
            let d = sample[i] - sample[i - 1]
            var a = max(d, g), b = min(d, g)
            var found = false
            for _ in 0..<40 {
                let q = (a / b).rounded()
                let r = abs(a - q * b)
                if r <= 8 * ulp * (1 + q) { found = true; break }
                (a, b) = (b, r)
                if b <= floor { break }
            }
            guard found, b > floor else { return nil }
            g = b
        }
        // Refine the gain over the whole span of (exact) values.
        let span = sample[last] - sample[first]
        let steps = (span / g).rounded()
        guard steps >= 1, steps < 0x1p40 else { return nil }
        let gain = span / steps
        // Most values must sit on the grid (float32: within their own rounding of it).
        var near = 0
        for i in 0..<distinct {
            let q = (sample[i] - sample[first]) / gain
            let tolerance = float32 ? max(0.01, 0.01 + 0.5 * Double(Float(sample[i]).ulp) / gain) : 0.01
            if abs(q - q.rounded()) < tolerance { near += 1 }
        }
        guard near * 10 >= distinct * 9 else { return nil }
        /// The offset for an origin: taken at the sampled value nearest to it, where `gain × k` is
        /// smallest, so that it is exact to about that value's ulp.
        func offset(_ approximate: Double, _ g: Double) -> Double {
            var lo = 0, hi = distinct - 1
            while lo < hi {
                let mid = (lo + hi) / 2
                if sample[mid] < approximate { lo = mid + 1 } else { hi = mid }
            }
            let nearest = lo > 0 && abs(sample[lo - 1] - approximate) < abs(sample[lo] - approximate) ? sample[lo - 1] : sample[lo]
            return nearest - g * ((nearest - approximate) / g).rounded()
        }
        // The exact gain (a few ulps around the estimate) and the origin of k: candidates in order
        // of the smallest offset, kept when every probe (the first 16 tests) is reproduced bit for bit.
        let c0 = (lowest / gain).rounded()
        var best: (offset: Double, gain: Double, score: Int) = (lowest - gain * c0, gain, -1)
        search: for j in 0..<2049 {
            let c = c0 + Double(j % 2 == 0 ? j / 2 : -(j + 1) / 2)
            var g = gain
            for u in 0..<10 {
                if u < 7 {
                    // gain, +1 ulp, −1 ulp, +2 ulps, …
                    g = gain
                    for _ in 0..<((u + 1) / 2) { g = u % 2 == 1 ? g.nextUp : g.nextDown }
                } else {
                    // A gain of 24 significant bits (range / 2^bits and most written constants are):
                    // the span of float32 values cannot pin the last bits of a binary64 gain.
                    let rounded = Float(gain)
                    g = Double(u == 7 ? rounded : (u == 8 ? rounded.nextUp : rounded.nextDown))
                }
                let o = offset(lowest - g * c, g)
                var hits = 0, misses = 0
                for t in 0..<min(16, testCount) {
                    if Self.reproduces(tests[t], offset: o, gain: g, float32: float32) { hits += 1 } else { misses += 1; if misses > 3 { break } }
                }
                if hits > best.score { best = (o, g, hits) }
                if misses == 0 { break search }
            }
        }
        // Settle the offset's last bits: the candidates `x − gain × k` of the tested values, and
        // the ulps around the best so far.
        var chosen = (offset: best.offset, gain: best.gain), chosenScore = score(best.offset, best.gain, limit: testCount)
        for t in 0..<testCount where chosenScore < testCount {
            let k = Double(Self.count(tests[t], offset: best.offset, inverse: 1 / best.gain))
            let candidate = tests[t] - best.gain * k
            let s = score(candidate, best.gain, limit: testCount)
            if s > chosenScore { chosen = (candidate, best.gain); chosenScore = s }
        }
        var above = chosen.offset, below = chosen.offset
        for _ in 0..<16 where chosenScore < testCount {
            above = above.nextUp
            below = below.nextDown
            for candidate in [above, below] {
                let s = score(candidate, best.gain, limit: testCount)
                if s > chosenScore { chosen = (candidate, best.gain); chosenScore = s }
            }
        }
        // Remembered with how well it fitted (a float32 or rounded grid fits only most values).
        if chosenScore * 2 >= testCount {
            knownGrids.insert((chosen.offset, chosen.gain, Double(chosenScore) / Double(testCount)), at: 0)
            if knownGrids.count > 16 { knownGrids.removeLast() }
        }
        return chosen
    }

    // MARK: Decoding

    /// The element count a coded stream declares (nil when its header is malformed).
    static func elementCount(of stored: UnsafeRawBufferPointer, elementType: ChunkElementType) -> Int? {
        guard stored.count >= streamHeaderSize, readableVersions.contains(stored[0]), stored[1] == elementType.rawValue,
              stored[2] == 0, stored[3] == 0 else { return nil }
        let n = UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        guard n <= UInt64(Int.max / 8) else { return nil }
        return Int(n)
    }

    /// Decodes a coded stream into `destination`, whose size must be the stream's element count × size.
    /// - Parameter placement: where to write the segment of `count` elements that starts at element
    ///   `first` of the stream instead (nil: its place in `destination`); it must have room for them.
    func decode(_ stored: UnsafeRawBufferPointer, elementType: ChunkElementType,
                into destination: UnsafeMutableRawBufferPointer,
                placement: ((_ first: Int, _ count: Int) -> UnsafeMutableRawPointer?)? = nil) throws(NumericTransform.Failure) {
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
                ? try LatentCoder.decodeV3(block, count: count, version: version, tables: tables,
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
                    coefficients.base[j] = Int64(bitPattern: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: p + 2 + 8 * j, as: UInt64.self)))
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
            let segment = SegmentOutput(count: count, out: placement?(done, count) ?? destination.baseAddress! + done * size,
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
                write(segment, elementType: elementType, stored: stored, adjustments: adj,
                      from: Residuals(v: v, predictor: predictor, order: order, shift: shift, coefficients: coefficients.base))
            }
            done += count
        }
        guard done == n, p == stored.count else { throw .storedSize }
        if !waiting.isEmpty { finishLanes(stride: stride, elementType: elementType, stored: stored) }
    }

    /// Where and how one segment's latents are written (`decode`).
    private struct SegmentOutput {
        var count: Int
        var out: UnsafeMutableRawPointer
        var mode: UInt8, flags: UInt8
        var offset: Double, gain: Double
        /// The segment's exception list in the stored stream (none when `listCount` is 0).
        var listStart: Int, listCount: Int
    }

    /// How many segments `finishLanes` undoes at once on this processor: 8 with AVX-512F (one
    /// 512-bit vector), 4 with AVX2, 0 without either (every segment then by the one-channel loop).
    static let lanes = tributary_linear8_x8_available() ? 8 : (tributary_linear8_x4_available() ? 4 : 0)

    /// Undoes the linear predictors of the waiting segments (1 … `lanes`, of equal length; their
    /// residuals in latent slots 0 … `lanes` − 1, their coefficients padded to eight, orders and shifts
    /// in the lanes of the same numbers) with the order-8 kernel of four lanes (up to four segments)
    /// or eight, then writes each. A lane with no segment repeats lane 0 into its own slot. A segment
    /// alone, or every segment where a latent leaves the kernels' range, is undone by the one-channel
    /// loop of its own order instead.
    private func finishLanes(stride: Int, elementType: ChunkElementType, stored: UnsafeRawBufferPointer) {
        let count = waiting[0].count
        func residuals(_ k: Int) -> UnsafeMutablePointer<Int64> { latents.base + k * stride }
        func undone(_ k: Int) -> UnsafeMutablePointer<Int64> { laneLatents.base + k * stride }
        var complete = false
        if waiting.count > 1 {
            let width = waiting.count > 4 ? 8 : 4
            for k in waiting.count..<width {
                for j in 0..<8 { laneCoefficients.base[8 * k + j] = laneCoefficients.base[j] }
                laneShifts.base[k] = laneShifts.base[0]
            }
            func lane(_ k: Int) -> Int { k < waiting.count ? k : 0 }
            if width == 4, let kind = sampleKind(elementType),
               finishSampleLanes(kind: kind, count: count, residuals: residuals, lane: lane, scratch: undone) {
                laneSegments += waiting.count
                for segment in waiting { applyExceptions(segment, elementType: elementType, stored: stored) }
                waiting.removeAll(keepingCapacity: true)
                return
            }
            let finished: Int
            if width == 8 {
                // The lanes' pointers on the stack (no allocation per call).
                finished = withUnsafeTemporaryAllocation(of: UnsafePointer<Int64>?.self, capacity: 8) { v in
                    withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<Int64>?.self, capacity: 8) { x in
                        for k in 0..<8 {
                            v.initializeElement(at: k, to: UnsafePointer(residuals(lane(k))))
                            x.initializeElement(at: k, to: undone(k))
                        }
                        return tributary_linear8_x8(v.baseAddress, x.baseAddress, count, laneCoefficients.base, laneShifts.base)
                    }
                }
            } else {
                finished = tributary_linear8_x4(residuals(lane(0)), residuals(lane(1)), residuals(lane(2)), residuals(lane(3)),
                                                undone(0), undone(1), undone(2), undone(3), count,
                                                laneCoefficients.base, laneShifts.base)
            }
            complete = finished == count
        }
        if complete { laneSegments += waiting.count }
        for (k, segment) in waiting.enumerated() {
            if complete {
                write(segment, elementType: elementType, stored: stored, adjustments: adjustments.base + k * stride, from: Undone(x: undone(k)))
            } else {
                write(segment, elementType: elementType, stored: stored, adjustments: adjustments.base + k * stride,
                      from: Residuals(v: residuals(k), predictor: 3, order: laneOrders.base[k], shift: Int(laneShifts.base[k]),
                                      coefficients: laneCoefficients.base + 8 * k))
            }
        }
        waiting.removeAll(keepingCapacity: true)
    }

    /// The kind of samples `tributary_linear8_samples_x4` makes of the waiting segments' latents as
    /// `write` converts them (integers; binary64 and binary32 grids without adjustments), or nil
    /// for the conversions it does not make.
    private func sampleKind(_ elementType: ChunkElementType) -> Int32? {
        let grid = waiting.allSatisfy { $0.mode == 1 && $0.flags != 1 }
        switch elementType {
        case .int16: return Int32(TRIBUTARY_SAMPLES_INT16)
        case .int32: return Int32(TRIBUTARY_SAMPLES_INT32)
        case .float64 where grid: return Int32(TRIBUTARY_SAMPLES_GRID64)
        case .float32 where grid: return Int32(TRIBUTARY_SAMPLES_GRID32)
        default: return nil
        }
    }

    /// Four waiting segments undone and converted to samples of `kind` in one pass by
    /// `tributary_linear8_samples_x4`, straight into their outputs (a lane with no segment into its
    /// scratch slot): whether it could (false leaves the outputs to be rewritten).
    private func finishSampleLanes(kind: Int32, count: Int, residuals: (Int) -> UnsafeMutablePointer<Int64>, lane: (Int) -> Int,
                                   scratch: (Int) -> UnsafeMutablePointer<Int64>) -> Bool {
        withUnsafeTemporaryAllocation(of: UnsafePointer<Int64>?.self, capacity: 4) { v in
            withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: 4) { out in
                withUnsafeTemporaryAllocation(of: Double.self, capacity: 8) { grid in
                    for k in 0..<4 {
                        v.initializeElement(at: k, to: UnsafePointer(residuals(lane(k))))
                        let segment = waiting[lane(k)]
                        out.initializeElement(at: k, to: k < waiting.count ? segment.out : UnsafeMutableRawPointer(scratch(k)))
                        grid.initializeElement(at: k, to: segment.offset)
                        grid.initializeElement(at: 4 + k, to: segment.gain)
                    }
                    let base = grid.baseAddress!
                    return tributary_linear8_samples_x4(v.baseAddress, out.baseAddress, count, laneCoefficients.base, laneShifts.base,
                                                        kind, base, base + 4) == count
                }
            }
        }
    }

    /// Writes a segment's latents, converted to the element type, at its output, then applies its exception list.
    private func write<Source: LatentSource>(_ s: SegmentOutput, elementType: ChunkElementType, stored: UnsafeRawBufferPointer,
                                             adjustments adj: UnsafePointer<Int64>, from source: Source) {
        let out = s.out
        switch (elementType, s.mode) {
        case (.int16, _):
            if let x = source.undoneInPlace(count: s.count) {
                tributary_narrow16(x, out.assumingMemoryBound(to: Int16.self), s.count)
            } else {
                source.emit(count: s.count, into: Int16Output(out))
            }
        case (.int32, _):
            if let x = source.undoneInPlace(count: s.count) {
                tributary_narrow32(x, out.assumingMemoryBound(to: Int32.self), s.count)
            } else {
                source.emit(count: s.count, into: Int32Output(out))
            }
        case (.float64, 1) where s.flags != 1:
            // The latents as they are, eight at a time (codec_kernels.h), or with an order-8 predictor
            // still to undo, in one pass with the conversion.
            if let x = source.undoneInPlace(count: s.count) {
                tributary_grid64(x, out.assumingMemoryBound(to: UInt64.self), s.count, s.offset, s.gain)
            } else {
                source.emit(count: s.count, into: Grid64Output(out, offset: s.offset, gain: s.gain))
            }
        case (.float32, 1) where s.flags != 1:
            if let x = source.undoneInPlace(count: s.count) {
                tributary_grid32(x, out.assumingMemoryBound(to: UInt32.self), s.count, s.offset, s.gain)
            } else {
                source.emit(count: s.count, into: Grid32Output(out, offset: s.offset, gain: s.gain))
            }
        case (.float64, 1):
            if let x = source.undoneInPlace(count: s.count) {
                tributary_grid64_adjusted(x, adj, out.assumingMemoryBound(to: UInt64.self), s.count, s.offset, s.gain)
            } else {
                source.emit(count: s.count, into: Grid64AdjustedOutput(out, offset: s.offset, gain: s.gain, adjustments: adj))
            }
        case (.float32, 1):
            if let x = source.undoneInPlace(count: s.count) {
                tributary_grid32_adjusted(x, adj, out.assumingMemoryBound(to: UInt32.self), s.count, s.offset, s.gain)
            } else {
                source.emit(count: s.count, into: Grid32AdjustedOutput(out, offset: s.offset, gain: s.gain, adjustments: adj))
            }
        case (.float64, _):
            source.emit(count: s.count, into: Bits64Output(out))
        default:
            source.emit(count: s.count, into: Bits32Output(out))
        }
        applyExceptions(s, elementType: elementType, stored: stored)
    }

    /// Adds a segment's exception list to the samples at its output (docs/CAPTURE.md §5.1).
    private func applyExceptions(_ s: SegmentOutput, elementType: ChunkElementType, stored: UnsafeRawBufferPointer) {
        let out = s.out
        for e in 0..<s.listCount {
            let index = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: s.listStart + 12 * e, as: UInt32.self)))
            let a = UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: s.listStart + 12 * e + 4, as: UInt64.self))
            if elementType == .float64 {
                let d = out.assumingMemoryBound(to: UInt64.self)
                d[index] = (UInt64(littleEndian: d[index]) &+ a).littleEndian
            } else {
                let d = out.assumingMemoryBound(to: UInt32.self)
                d[index] = (UInt32(littleEndian: d[index]) &+ UInt32(truncatingIfNeeded: a)).littleEndian
            }
        }
    }
}

/// Where a segment's latents come from when `NumericCodec.write` converts them.
private protocol LatentSource {
    func emit<Out: LatentOutput>(count: Int, into out: Out)
    /// The latents themselves, with no predictor left to undo — a delta is undone in place (the
    /// residuals are scratch) — or nil when the order-8 predictor is still to undo.
    func undoneInPlace(count: Int) -> UnsafeMutablePointer<Int64>?
}

/// The residuals, with the segment's predictor still to undo (in one pass with the conversion).
private struct Residuals: LatentSource {
    let v: UnsafeMutablePointer<Int64>
    let predictor: Int, order: Int, shift: Int
    let coefficients: UnsafePointer<Int64>
    func emit<Out: LatentOutput>(count: Int, into out: Out) {
        if predictor == 3 {
            NumericCodec.integrateLinear(v, count: count, coefficients: coefficients, order: order, shift: shift, into: out)
        } else {
            NumericCodec.integrate(v, count: count, order: predictor, into: out)
        }
    }
    func undoneInPlace(count n: Int) -> UnsafeMutablePointer<Int64>? {
        switch predictor {
        case 0: return v
        case 1:
            var s: Int64 = 0
            for i in 0..<n { s = s &+ v[i]; v[i] = s }
            return v
        case 2:
            var s: Int64 = 0, d: Int64 = 0
            for i in 0..<n { d = d &+ v[i]; s = s &+ d; v[i] = s }
            return v
        default: return nil
        }
    }
}

/// The latents, the predictor already undone (by a lane kernel).
private struct Undone: LatentSource {
    let x: UnsafeMutablePointer<Int64>
    func emit<Out: LatentOutput>(count: Int, into out: Out) { NumericCodec.integrate(x, count: count, order: 0, into: out) }
    func undoneInPlace(count: Int) -> UnsafeMutablePointer<Int64>? { x }
}

/// Where `NumericCodec.integrate` and `integrateLinear` put each latent: converted to the element
/// type (docs/CAPTURE.md §5.1, "samples from latents") at the segment's output.
protocol LatentOutput {
    func store(_ i: Int, _ latent: Int64)
}

/// Integers: the latent's low 16 bits.
struct Int16Output: LatentOutput {
    let d: UnsafeMutablePointer<Int16>
    init(_ out: UnsafeMutableRawPointer) { d = out.assumingMemoryBound(to: Int16.self) }
    @inline(__always) func store(_ i: Int, _ latent: Int64) { d[i] = Int16(truncatingIfNeeded: latent).littleEndian }
}

/// Integers: the latent's low 32 bits.
struct Int32Output: LatentOutput {
    let d: UnsafeMutablePointer<Int32>
    init(_ out: UnsafeMutableRawPointer) { d = out.assumingMemoryBound(to: Int32.self) }
    @inline(__always) func store(_ i: Int, _ latent: Int64) { d[i] = Int32(truncatingIfNeeded: latent).littleEndian }
}

/// float64 on a grid without an adjustment block: offset + gain × k.
struct Grid64Output: LatentOutput {
    let d: UnsafeMutablePointer<UInt64>
    let offset: Double, gain: Double
    init(_ out: UnsafeMutableRawPointer, offset: Double, gain: Double) {
        d = out.assumingMemoryBound(to: UInt64.self)
        (self.offset, self.gain) = (offset, gain)
    }
    @inline(__always) func store(_ i: Int, _ latent: Int64) { d[i] = (offset + gain * Double(latent)).bitPattern.littleEndian }
}

/// float64 on a grid with an adjustment block: the grid value's bits + the adjustment (wrapping).
struct Grid64AdjustedOutput: LatentOutput {
    let d: UnsafeMutablePointer<UInt64>
    let adjustments: UnsafePointer<Int64>
    let offset: Double, gain: Double
    init(_ out: UnsafeMutableRawPointer, offset: Double, gain: Double, adjustments: UnsafePointer<Int64>) {
        d = out.assumingMemoryBound(to: UInt64.self)
        (self.offset, self.gain, self.adjustments) = (offset, gain, adjustments)
    }
    @inline(__always) func store(_ i: Int, _ latent: Int64) {
        d[i] = ((offset + gain * Double(latent)).bitPattern &+ UInt64(bitPattern: adjustments[i])).littleEndian
    }
}

/// float32 on a grid without an adjustment block: offset + gain × k in binary64, rounded to binary32.
struct Grid32Output: LatentOutput {
    let d: UnsafeMutablePointer<UInt32>
    let offset: Double, gain: Double
    init(_ out: UnsafeMutableRawPointer, offset: Double, gain: Double) {
        d = out.assumingMemoryBound(to: UInt32.self)
        (self.offset, self.gain) = (offset, gain)
    }
    @inline(__always) func store(_ i: Int, _ latent: Int64) { d[i] = Float(offset + gain * Double(latent)).bitPattern.littleEndian }
}

/// float32 on a grid with an adjustment block: the grid value's bits + the adjustment's low 32 bits (wrapping).
struct Grid32AdjustedOutput: LatentOutput {
    let d: UnsafeMutablePointer<UInt32>
    let adjustments: UnsafePointer<Int64>
    let offset: Double, gain: Double
    init(_ out: UnsafeMutableRawPointer, offset: Double, gain: Double, adjustments: UnsafePointer<Int64>) {
        d = out.assumingMemoryBound(to: UInt32.self)
        (self.offset, self.gain, self.adjustments) = (offset, gain, adjustments)
    }
    @inline(__always) func store(_ i: Int, _ latent: Int64) {
        d[i] = (Float(offset + gain * Double(latent)).bitPattern &+ UInt32(truncatingIfNeeded: adjustments[i])).littleEndian
    }
}

/// float64 bit patterns, order-preserving map undone.
struct Bits64Output: LatentOutput {
    let d: UnsafeMutablePointer<UInt64>
    init(_ out: UnsafeMutableRawPointer) { d = out.assumingMemoryBound(to: UInt64.self) }
    @inline(__always) func store(_ i: Int, _ latent: Int64) { d[i] = UInt64(bitPattern: NumericCodec.ordered(latent)).littleEndian }
}

/// float32 bit patterns (the latent's low 32 bits), order-preserving map undone.
struct Bits32Output: LatentOutput {
    let d: UnsafeMutablePointer<UInt32>
    init(_ out: UnsafeMutableRawPointer) { d = out.assumingMemoryBound(to: UInt32.self) }
    @inline(__always) func store(_ i: Int, _ latent: Int64) { d[i] = UInt32(truncatingIfNeeded: NumericCodec.ordered32(latent)).littleEndian }
}

/// A growable scratch array of trivial elements (no initialisation; contents are the caller's).
final class Scratch<T> {
    private(set) var base: UnsafeMutablePointer<T> = .allocate(capacity: 1)
    private var capacity = 1

    deinit { base.deallocate() }

    func reserve(_ count: Int) {
        guard count > capacity else { return }
        base.deallocate()
        capacity = max(count, capacity * 3 / 2)
        base = .allocate(capacity: capacity)
    }
}
