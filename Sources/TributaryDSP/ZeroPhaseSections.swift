import CKernels
import Foundation

/// sosfiltfilt of an array's lines, four lines at a time through the C kernel (`tributary_sos4`)
/// and groups of four on the cores, without a padded copy of each line: the forward pass runs over
/// the left padding, the line itself (into its place in the output, or into a scratch line when
/// only every q-th output is kept, as decimate keeps them) and the right padding, with the state
/// carried from piece to piece; the backward pass over the right padding and the line, in place.
/// The values are those of filtering scipy's padded line whole, bit for bit (the same operations in
/// the same order), and the backward pass's outputs over the left padding, which scipy discards, are
/// not computed.
struct ZeroPhaseSections {
    let sos: SecondOrderSections
    let layout: FilterLayout
    let padding: FilterPadding
    let edge: Int
    let zi: [Double]

    init(_ sos: SecondOrderSections, layout: FilterLayout, padding: FilterPadding, padlen: Int?) throws(FilterError) {
        try sos.validate()
        try IIRFilter.checkLayout(layout)
        edge = try IIRFilter.edge(padding: padding, padlen: padlen, taps: sos.paddingTaps, length: layout.length)
        zi = try InitialState.sos(sos)
        self.sos = sos
        self.layout = layout
        self.padding = padding
    }

    /// Writes every `every`-th output of each line, from the first (outer × ⌈length / every⌉ × inner
    /// values in y, C order); `every` 1 is sosfiltfilt itself.
    func run(x: UnsafePointer<Double>, y: UnsafeMutablePointer<Double>, every q: Int) throws(FilterError) {
        let lines = layout.lines, n = layout.length
        let kept = n / q + (n % q != 0 ? 1 : 0)
        let (scratchCount, overflow) = n.multipliedReportingOverflow(by: q > 1 ? 4 : 0)
        guard !overflow, scratchCount <= IIRFilter.maxSamples else { throw FilterError("the signal is too long (\(n) samples)") }
        sos.coefficients.withUnsafeBufferPointer { c in
            ParallelWork.run(pieces: (lines + 3) / 4, samples: layout.count) { group in
                guard q > 1 else {
                    filterGroup(c.baseAddress!, group: group, x: x, y: y, scratch: nil, every: 1, kept: kept)
                    return
                }
                // (An empty array's buffer may have a base address: the scratch is asked for only when used.)
                var scratch = [Double](repeating: 0, count: scratchCount)
                scratch.withUnsafeMutableBufferPointer { s in
                    filterGroup(c.baseAddress!, group: group, x: x, y: y, scratch: s.baseAddress, every: q, kept: kept)
                }
            }
        }
    }

    /// Lines 4·group ..< 4·group + 4 (fewer at the end).
    private func filterGroup(
        _ c: UnsafePointer<Double>, group: Int, x: UnsafePointer<Double>, y: UnsafeMutablePointer<Double>,
        scratch: UnsafeMutablePointer<Double>?, every q: Int, kept: Int
    ) {
        let first = 4 * group, lanes = min(4, layout.lines - first), sections = sos.count
        let n = layout.length, inner = layout.inner, e = max(edge, 1)
        // Per lane: the left and right padding (edge values each), and where the line is filtered.
        var pads = [Double](repeating: 0, count: 8 * e)
        var state = [Double](repeating: 0, count: sections * 8)
        pads.withUnsafeMutableBufferPointer { pb in
            let p = pb.baseAddress!
            func lane(_ l: Int) -> Int { min(l, lanes - 1) }
            let left = (0..<4).map { p + 2 * lane($0) * e }, right = (0..<4).map { p + (2 * lane($0) + 1) * e }
            let source = (0..<4).map { x + layout.start(first + lane($0)) }
            // Filtered where the output lies (every sample kept), else in a scratch line.
            let lineStride = scratch == nil ? inner : 1
            let lines = (0..<4).map { l -> UnsafeMutablePointer<Double> in
                scratch.map { $0 + lane(l) * n } ?? (y + layout.start(first + lane(l)))
            }
            for l in 0..<lanes { pad(source[l], left: left[l], right: right[l]) }
            // Forward: left padding, the line, right padding, from zi × the first padded value.
            for l in 0..<lanes {
                let x0 = edge > 0 ? left[l][0] : source[l][0]
                for j in 0..<(2 * sections) { state[j * 4 + l] = zi[j] * x0 }
            }
            pass(c, x: left, 1, y: left, 1, count: edge, lanes: lanes, state: &state)
            pass(c, x: source, inner, y: lines, lineStride, count: n, lanes: lanes, state: &state)
            pass(c, x: right, 1, y: right, 1, count: edge, lanes: lanes, state: &state)
            // Backward: right padding, then the line, from zi × the last forward value.
            for l in 0..<lanes {
                let y0 = edge > 0 ? right[l][edge - 1] : lines[l][(n - 1) * lineStride]
                for j in 0..<(2 * sections) { state[j * 4 + l] = zi[j] * y0 }
            }
            let rightEnds = right.map { $0 + (edge - 1) }, lineEnds = lines.map { $0 + (n - 1) * lineStride }
            pass(c, x: rightEnds, -1, y: rightEnds, -1, count: edge, lanes: lanes, state: &state)
            pass(c, x: lineEnds, -lineStride, y: lineEnds, -lineStride, count: n, lanes: lanes, state: &state)
            guard scratch != nil else { return }
            let out = FilterLayout(outer: layout.outer, length: kept, inner: inner)
            for l in 0..<lanes {
                let to = y + out.start(first + l), from = lines[l]
                for k in 0..<kept { to[k * inner] = from[k * q] }
            }
        }
    }

    /// The C kernel over `count` samples of four lanes (nothing for none).
    private func pass(
        _ c: UnsafePointer<Double>, x: [UnsafeMutablePointer<Double>], _ xs: Int, y: [UnsafeMutablePointer<Double>], _ ys: Int,
        count: Int, lanes: Int, state: inout [Double]
    ) {
        pass(c, x: x.map { UnsafePointer($0) }, xs, y: y, ys, count: count, lanes: lanes, state: &state)
    }

    private func pass(
        _ c: UnsafePointer<Double>, x: [UnsafePointer<Double>], _ xs: Int, y: [UnsafeMutablePointer<Double>], _ ys: Int,
        count: Int, lanes: Int, state: inout [Double]
    ) {
        guard count > 0 else { return }
        let x4: [UnsafePointer<Double>?] = x, y4: [UnsafeMutablePointer<Double>?] = y
        tributary_sos4(c, sos.count, x4, xs, y4, ys, count, lanes, &state)
    }

    /// scipy's padding of one line (odd_ext, even_ext, const_ext): the `edge` values before it into
    /// `left` (in order), those after it into `right`.
    private func pad(_ x: UnsafePointer<Double>, left: UnsafeMutablePointer<Double>, right: UnsafeMutablePointer<Double>) {
        padding.pad(x, stride: layout.inner, length: layout.length, edge: edge, left: left, right: right)
    }
}
