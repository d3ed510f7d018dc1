import CKernels
import CLinearPredictor
import Foundation

/// One segment of `NumericCodec.encode`: its mode chosen by measurement (integers, a grid, a
/// fixed-point grid or bit patterns), its latents, predictor and latent blocks written.
extension NumericCodec {
    /// How a float segment becomes latents.
    private enum FloatChoice { case detect, fixedPoint, bits }

    func encodeSegment(
        _ values: UnsafeRawPointer, count n: Int, elementType: ChunkElementType,
        into out: UnsafeMutableRawPointer
    ) -> Int {
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
            bits +=
                Self.asExceptionList(exceptions, of: n)
                ? Double(exceptions) * 96
                : LatentCoder.plan(adj, count: n, histogram: histogram.base, maxShift: LatentCoder.maxShiftV3, huffmanBound: true).bits
        }
        return bits + Double(predictor.linear ? predictor.order * 64 : 0)
    }

    /// The adjustments of the first `n` samples that are not 0.
    private func adjustmentCount(_ n: Int) -> Int {
        let adj = adjustments.base
        return tributary_count_nonzero64(adj, n)  // a C kernel (VPTESTMQ and a popcount where the processor has them)
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
        -> (mode: UInt8, grid: (offset: Double, gain: Double)?, hasAdjustments: Bool)?
    {
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
                    let x =
                        float32
                        ? Double(values.load(fromByteOffset: 4 * i, as: Float.self)) : values.load(fromByteOffset: 8 * i, as: Double.self)
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
    private func encodeSegment(
        _ values: UnsafeRawPointer, count n: Int, elementType: ChunkElementType, choice: FloatChoice,
        into out: UnsafeMutableRawPointer
    ) -> Int {
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
        let plan = LatentCoder.plan(
            r, count: n, histogram: histogram.base, maxShift: LatentCoder.maxShiftV3,
            huffmanBound: true, multiSymbol: true)
        if measureEntropy { entropyBits += Self.entropy(r, count: n) }
        return LatentCoder.encodeV4(
            r, count: n, plan: plan, symbols: symbols.base, packed: packedSymbols.base,
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
}
