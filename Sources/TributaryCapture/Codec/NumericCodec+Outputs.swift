import CKernels

/// How a segment's latents become samples at its output: converted to the element type, the
/// predictor undone in the same pass where it is still to undo, the exception list applied.
extension NumericCodec {
    /// Writes a segment's latents, converted to the element type, at its output, then applies its exception list.
    func write<Source: LatentSource>(
        _ s: SegmentOutput, elementType: ChunkElementType, stored: UnsafeRawBufferPointer,
        adjustments adj: UnsafePointer<Int64>, from source: Source
    ) {
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
    func applyExceptions(_ s: SegmentOutput, elementType: ChunkElementType, stored: UnsafeRawBufferPointer) {
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
protocol LatentSource {
    func emit<Out: LatentOutput>(count: Int, into out: Out)
    /// The latents themselves, with no predictor left to undo — a delta is undone in place (the
    /// residuals are scratch) — or nil when the order-8 predictor is still to undo.
    func undoneInPlace(count: Int) -> UnsafeMutablePointer<Int64>?
}

/// The residuals, with the segment's predictor still to undo (in one pass with the conversion).
struct Residuals: LatentSource {
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
struct Undone: LatentSource {
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
    @inline(__always) func store(_ i: Int, _ latent: Int64) {
        d[i] = UInt32(truncatingIfNeeded: NumericCodec.ordered32(latent)).littleEndian
    }
}
