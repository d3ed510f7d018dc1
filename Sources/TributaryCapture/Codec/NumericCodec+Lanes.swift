import CKernels
import CLinearPredictor
import Foundation

/// Segments of linear prediction undone four or eight at a time by the C lane kernels.
extension NumericCodec {
    /// How many segments `finishLanes` undoes at once on this processor: 8 with AVX-512F (one
    /// 512-bit vector), 4 with AVX2, 0 without either (every segment then by the one-channel loop).
    static let lanes = tributary_linear8_x8_available() ? 8 : (tributary_linear8_x4_available() ? 4 : 0)

    /// Undoes the linear predictors of the waiting segments (1 … `lanes`, of equal length; their
    /// residuals in latent slots 0 … `lanes` − 1, their coefficients padded to eight, orders and shifts
    /// in the lanes of the same numbers) with the order-8 kernel of four lanes (up to four segments)
    /// or eight, then writes each. A lane with no segment repeats lane 0 into its own slot. A segment
    /// alone, or every segment where a latent leaves the kernels' range, is undone by the one-channel
    /// loop of its own order instead.
    func finishLanes(stride: Int, elementType: ChunkElementType, stored: UnsafeRawBufferPointer) {
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
                finishSampleLanes(kind: kind, count: count, residuals: residuals, lane: lane, scratch: undone)
            {
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
                finished = tributary_linear8_x4(
                    residuals(lane(0)), residuals(lane(1)), residuals(lane(2)), residuals(lane(3)),
                    undone(0), undone(1), undone(2), undone(3), count,
                    laneCoefficients.base, laneShifts.base)
            }
            complete = finished == count
        }
        if complete { laneSegments += waiting.count }
        for (k, segment) in waiting.enumerated() {
            if complete {
                write(
                    segment, elementType: elementType, stored: stored, adjustments: adjustments.base + k * stride,
                    from: Undone(x: undone(k)))
            } else {
                write(
                    segment, elementType: elementType, stored: stored, adjustments: adjustments.base + k * stride,
                    from: Residuals(
                        v: residuals(k), predictor: 3, order: laneOrders.base[k], shift: Int(laneShifts.base[k]),
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
    private func finishSampleLanes(
        kind: Int32, count: Int, residuals: (Int) -> UnsafeMutablePointer<Int64>, lane: (Int) -> Int,
        scratch: (Int) -> UnsafeMutablePointer<Int64>
    ) -> Bool {
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
                    return tributary_linear8_samples_x4(
                        v.baseAddress, out.baseAddress, count, laneCoefficients.base, laneShifts.base,
                        kind, base, base + 4) == count
                }
            }
        }
    }
}
