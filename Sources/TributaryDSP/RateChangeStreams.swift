import Foundation

// The streaming forms of decimate and resample_poly (RateChange.swift): state carried from block to block.

/// decimate (zero_phase=False) of a stream, block by block: the filter's state and the position of
/// the next kept sample carry from one block to the next, so the blocks' outputs joined equal
/// `RateChange.decimate(…, zeroPhase: false)` of the whole stream, for any split, to the last bit.
/// Channels are independent; nothing is allocated per block or sample.
public struct DecimatorStream: Sendable {
    public let q: Int
    public let channels: Int
    public let filter: DecimationFilter
    /// IIR: the sections' coefficients (six each); FIR: the taps reversed (oldest sample first).
    private let coefficients: [Double]
    private let sections: Int
    /// Per channel: IIR, the sections' state (sections × 2); FIR, the last taps - 1 samples.
    private var state: [Double]
    private let width: Int
    /// Samples of each channel still to pass before the next kept one (0: the next is kept).
    private var skip: [Int]

    /// A decimator by `q` with decimate's filter (`order` is scipy's n), at rest.
    public init(q: Int, order: Int? = nil, filter: DecimationFilter = .iir, channels: Int = 1) throws(FilterError) {
        guard channels >= 1, channels <= 1 << 20 else { throw FilterError("channels must be from 1 to \(1 << 20), not \(channels)") }
        self.q = q
        self.channels = channels
        self.filter = filter
        self.skip = [Int](repeating: 0, count: channels)
        switch filter {
        case .iir:
            let sos = try RateChange.decimationSections(q: q, order: order)
            coefficients = sos.coefficients
            sections = sos.count
            width = sos.count * 2
        case .fir:
            let b = try RateChange.decimationTaps(q: q, order: order)
            coefficients = b.reversed()
            sections = 0
            width = b.count - 1
        }
        state = [Double](repeating: 0, count: max(channels * width, 1))
    }

    /// The outputs a block of `count` samples gives on `channel` (at most ⌈count / q⌉).
    public func outputCount(_ count: Int, channel: Int = 0) -> Int {
        let s = skip[channel]
        return count > s ? (count - s - 1) / q + 1 : 0
    }

    /// Decimates the next block of `channel` into `output` (room for `outputCount(input.count)`
    /// values); returns the number written.
    @discardableResult
    public mutating func process(_ input: UnsafeBufferPointer<Double>, channel: Int, into output: UnsafeMutableBufferPointer<Double>) -> Int
    {
        precondition(channel >= 0 && channel < channels)
        let produced = outputCount(input.count, channel: channel)
        precondition(output.count >= produced)
        guard let x = input.baseAddress, input.count > 0 else { return 0 }
        let n = input.count, first = skip[channel], q = self.q, sections = self.sections, width = self.width
        let isIIR = filter == .iir
        coefficients.withUnsafeBufferPointer { cp in
            state.withUnsafeMutableBufferPointer { sp in
                let c = cp.baseAddress!, z = sp.baseAddress! + channel * width
                if isIIR {
                    var dummy = 0.0
                    var done = 0
                    for k in 0..<produced {
                        // The samples before the kept one update the state only.
                        let kept = first + k * q
                        IIRKernel.sos(c, sections: sections, x: x + done, xStride: 1, y: &dummy, yStride: 0, count: kept - done, state: z)
                        IIRKernel.sos(
                            c, sections: sections, x: x + kept, xStride: 1, y: output.baseAddress! + k, yStride: 1, count: 1, state: z)
                        done = kept + 1
                    }
                    IIRKernel.sos(c, sections: sections, x: x + done, xStride: 1, y: &dummy, yStride: 0, count: n - done, state: z)
                } else {
                    let m = width
                    for k in 0..<produced {
                        // Output at block index p: Σ value(p - m + j)·h[j], oldest first, from zero
                        // (at the start of the stream the history is zeros: adding 0 changes nothing).
                        let p = first + k * q
                        var sum = 0.0, j = 0, i = p - m
                        while i < 0 {
                            sum += z[m + i] * c[j]
                            i += 1
                            j += 1
                        }
                        while j <= m {
                            sum += x[i] * c[j]
                            i += 1
                            j += 1
                        }
                        output[k] = sum
                    }
                    if m > 0 {
                        if n >= m {
                            for i in 0..<m { z[i] = x[n - m + i] }
                        } else {
                            for i in 0..<(m - n) { z[i] = z[i + n] }
                            for i in 0..<n { z[m - n + i] = x[i] }
                        }
                    }
                }
            }
        }
        skip[channel] = first + produced * q - n
        return produced
    }

    /// Decimates the next block of `channel`, returning the kept outputs.
    public mutating func process(_ input: [Double], channel: Int = 0) -> [Double] {
        var output = [Double](repeating: 0, count: outputCount(input.count, channel: channel))
        input.withUnsafeBufferPointer { x in
            output.withUnsafeMutableBufferPointer { _ = process(x, channel: channel, into: $0) }
        }
        return output
    }

    /// Starts every channel again at rest.
    public mutating func reset() {
        for i in state.indices { state[i] = 0 }
        for i in skip.indices { skip[i] = 0 }
    }
}

/// resample_poly (padtype 'constant', cval 0) of a stream, block by block: the polyphase filter's
/// history (its last taps-per-phase − 1 samples) and the position of the next output carry from one
/// block to the next, and `finish` gives the outputs that need the zeros after the end, so the
/// outputs of any split, joined, equal `RateChange.resamplePoly` of the whole stream (the same sums
/// in the same order; the zeros before the start add nothing). The filter's delay is removed as
/// resample_poly removes it: the outputs trail the input by about half the filter.
public struct ResamplerStream: Sendable {
    public let up: Int, down: Int
    public let channels: Int
    /// The flipped polyphase filter (scipy's layout), `perPhase` taps per phase.
    private let hf: [Double]
    private let perPhase: Int
    /// The leading upfirdn outputs resample_poly drops (the filter's delay).
    private let preRemove: Int
    /// Per channel: the last perPhase − 1 input samples, oldest first (zeros at the start).
    private var history: [[Double]]
    /// Per channel: input samples taken, and the next upfirdn output index.
    private var taken: [Int], next: [Int]

    /// A resampler by `up` / `down` (reduced by their gcd) with resample_poly's default filter
    /// (firwin of 20·max + 1 taps, Kaiser beta 5), at rest.
    public init(up: Int, down: Int, window: ResampleWindow = .design(.kaiser(beta: 5)), channels: Int = 1) throws(FilterError) {
        guard channels >= 1, channels <= 1 << 20 else { throw FilterError("channels must be from 1 to \(1 << 20), not \(channels)") }
        let (u, d) = try RateChange.reduced(up: up, down: down)
        (self.up, self.down, self.channels) = (u, d, channels)
        if u == 1 && d == 1 {
            (hf, perPhase, preRemove) = ([1], 1, 0)
        } else {
            let (h, half) = try RateChange.resampleFilter(up: u, down: d, window: window)
            let prePad = d - half % d
            preRemove = (half + prePad) / d
            // The zeros scipy appends behind the filter add nothing to a sum: only the front ones matter.
            let padded = [Double](repeating: 0, count: prePad) + h
            hf = RateChange.polyphase(padded, up: u)
            perPhase = hf.count / u
        }
        history = [[Double]](repeating: [Double](repeating: 0, count: perPhase - 1), count: channels)
        taken = [Int](repeating: 0, count: channels)
        next = [Int](repeating: 0, count: channels)
    }

    /// Outputs of `channel` given so far (after the delay removed).
    public func produced(channel: Int = 0) -> Int { max(next[channel] - preRemove, 0) }

    /// Resamples the next block of `channel`, returning the outputs it completes.
    public mutating func process(_ input: [Double], channel: Int = 0) -> [Double] {
        run(input, channel: channel, limit: Int.max)
    }

    /// The outputs of `channel` that need the zeros after its last sample: with those `process`
    /// gave, ⌈samples·up / down⌉ in all. The channel starts again at rest.
    public mutating func finish(channel: Int = 0) -> [Double] {
        let total = taken[channel]
        let total64 = total.multipliedReportingOverflow(by: up)
        let count = total64.overflow ? Int.max / down : total64.partialValue / down + (total64.partialValue % down != 0 ? 1 : 0)
        let last = preRemove + count  // upfirdn outputs wanted: 0 ..< last
        var out: [Double] = []
        if next[channel] < last {
            let needed = ((last - 1) * down) / up + 1 - total  // zeros up to the last output's newest sample
            out = run([Double](repeating: 0, count: max(needed, 0)), channel: channel, limit: last)
        }
        history[channel] = [Double](repeating: 0, count: perPhase - 1)
        taken[channel] = 0
        next[channel] = 0
        return out
    }

    private mutating func run(_ input: [Double], channel c: Int, limit: Int) -> [Double] {
        precondition(c >= 0 && c < channels)
        let m = perPhase - 1, base = taken[c] - m  // window[0] is input sample `base`
        let window = history[c] + input
        let end = taken[c] + input.count  // samples available: 0 ..< end
        var out: [Double] = []
        var k = next[c]
        hf.withUnsafeBufferPointer { h in
            window.withUnsafeBufferPointer { w in
                while k < limit {
                    let position = k * down
                    let newest = position / up, t = position % up
                    if newest >= end { break }
                    var sum = 0.0
                    var hIndex = t * perPhase
                    for i in (newest - m)...newest {
                        sum += w[i - base] * h[hIndex]
                        hIndex += 1
                    }
                    if k >= preRemove { out.append(sum) }
                    k += 1
                }
            }
        }
        next[c] = k
        taken[c] = end
        history[c] = Array(window.suffix(m))
        return out
    }
}
