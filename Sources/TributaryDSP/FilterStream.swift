import Foundation

/// A cascade of second-order sections filtering a stream block by block: the state of every
/// channel carries from one block to the next, so a stream filtered in blocks of any sizes equals
/// the stream filtered whole (sosfilt), to the last bit.
public struct SOSStream: Sendable {
    public let sections: SecondOrderSections
    public let channels: Int
    /// channels × sections × 2, the state scipy's sosfilt calls zi for each channel.
    public private(set) var state: [Double]

    /// A stream starting at rest (zero state), or from `initial` (channels × sections × 2).
    public init(sections: SecondOrderSections, channels: Int = 1, initial: [Double]? = nil) throws(FilterError) {
        try sections.validate()
        guard channels >= 1 else { throw FilterError("channels must be at least 1, not \(channels)") }
        let count = channels * sections.count * 2
        if let initial, initial.count != count {
            throw FilterError("the initial state must have channels × sections × 2 = \(count) values, not \(initial.count)")
        }
        self.sections = sections
        self.channels = channels
        self.state = initial ?? [Double](repeating: 0, count: count)
    }

    /// A stream starting in the steady state of a step to `levels[c]` on each channel (sosfilt_zi
    /// scaled), so a signal starting at that level passes without a transient.
    public static func steady(sections: SecondOrderSections, levels: [Double]) throws(FilterError) -> SOSStream {
        let zi = try InitialState.sos(sections)
        return try SOSStream(sections: sections, channels: levels.count, initial: levels.flatMap { level in zi.map { $0 * level } })
    }

    /// Filters one block of channel `channel` (`input` and `output` may be the same memory).
    public mutating func filter(_ input: UnsafeBufferPointer<Double>, channel: Int, into output: UnsafeMutableBufferPointer<Double>) {
        precondition(channel >= 0 && channel < channels && output.count >= input.count)
        guard let x = input.baseAddress, let y = output.baseAddress else { return }
        let width = sections.count * 2
        sections.coefficients.withUnsafeBufferPointer { c in
            state.withUnsafeMutableBufferPointer { z in
                IIRKernel.sos(
                    c.baseAddress!, sections: sections.count, x: x, xStride: 1, y: y, yStride: 1, count: input.count,
                    state: z.baseAddress! + channel * width)
            }
        }
    }

    /// Filters one block of channel `channel`, returning the output.
    public mutating func filter(_ input: [Double], channel: Int = 0) -> [Double] {
        var output = [Double](repeating: 0, count: input.count)
        input.withUnsafeBufferPointer { x in output.withUnsafeMutableBufferPointer { filter(x, channel: channel, into: $0) } }
        return output
    }
}

/// A transfer function b/a filtering a stream block by block (lfilter with its state carried).
public struct TransferStream: Sendable {
    public let function: TransferFunction
    public let channels: Int
    /// channels × (K - 1), the state scipy's lfilter calls zi for each channel.
    public private(set) var state: [Double]
    private let b: [Double], a: [Double]

    public init(function: TransferFunction, channels: Int = 1, initial: [Double]? = nil) throws(FilterError) {
        (b, a) = try function.normalized()
        guard channels >= 1 else { throw FilterError("channels must be at least 1, not \(channels)") }
        let count = channels * function.stateCount
        if let initial, initial.count != count {
            throw FilterError("the initial state must have channels × (K - 1) = \(count) values, not \(initial.count)")
        }
        self.function = function
        self.channels = channels
        self.state = initial ?? [Double](repeating: 0, count: count)
    }

    public mutating func filter(_ input: UnsafeBufferPointer<Double>, channel: Int, into output: UnsafeMutableBufferPointer<Double>) {
        precondition(channel >= 0 && channel < channels && output.count >= input.count)
        guard let x = input.baseAddress, let y = output.baseAddress else { return }
        let width = function.stateCount, taps = b.count, fir = function.a.count == 1
        b.withUnsafeBufferPointer { bp in
            a.withUnsafeBufferPointer { ap in
                if width == 0 {
                    var none = 0.0
                    IIRKernel.transfer(
                        b: bp.baseAddress!, a: ap.baseAddress!, taps: taps, fir: fir, x: x, xStride: 1, y: y, yStride: 1,
                        count: input.count, state: &none)
                    return
                }
                state.withUnsafeMutableBufferPointer { z in
                    IIRKernel.transfer(
                        b: bp.baseAddress!, a: ap.baseAddress!, taps: taps, fir: fir, x: x, xStride: 1, y: y, yStride: 1,
                        count: input.count, state: z.baseAddress! + channel * width)
                }
            }
        }
    }

    public mutating func filter(_ input: [Double], channel: Int = 0) -> [Double] {
        var output = [Double](repeating: 0, count: input.count)
        input.withUnsafeBufferPointer { x in output.withUnsafeMutableBufferPointer { filter(x, channel: channel, into: $0) } }
        return output
    }
}
