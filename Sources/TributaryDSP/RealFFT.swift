import CFFTW

/// A real-input FFT of one length, for one thread: output is the N/2+1 complex bins, interleaved
/// (re, im) in an array of N+2 values (`T` = Double uses fftw, Float uses fftwf).
///
/// The plan comes from `FFTPlanCache.shared`; the instance owns aligned scratch buffers so that
/// inputs or outputs of any alignment can be transformed without allocating.
public final class RealFFT<T: FFTScalar> {
    /// Transform length N.
    public let count: Int
    /// Number of complex output bins, N/2 + 1.
    public var binCount: Int { count / 2 + 1 }
    let plan: RealPlan
    let alignedInput: UnsafeMutablePointer<T>
    let alignedOutput: UnsafeMutablePointer<T>

    /// Creates a transform of length `count`.
    /// - Parameters:
    ///   - count: the transform length (any positive integer; powers of small primes are fastest).
    ///   - rigor: how hard FFTW plans (paid once per length and process, or never with saved wisdom).
    /// - Throws: `FFTError` when FFTW cannot plan the length.
    public init(count: Int, rigor: FFTRigor = .estimate) throws {
        self.count = count
        plan = try FFTPlanCache.shared.realPlan(count: count, rigor: rigor, of: T.self)
        if T.self == Double.self {
            alignedInput = UnsafeMutableRawPointer(fftw_alloc_real(count)!).bindMemory(to: T.self, capacity: count)
            alignedOutput = UnsafeMutableRawPointer(fftw_alloc_real(count + 2)!).bindMemory(to: T.self, capacity: count + 2)
        } else {
            alignedInput = UnsafeMutableRawPointer(fftwf_alloc_real(count)!).bindMemory(to: T.self, capacity: count)
            alignedOutput = UnsafeMutableRawPointer(fftwf_alloc_real(count + 2)!).bindMemory(to: T.self, capacity: count + 2)
        }
    }

    deinit {
        if T.self == Double.self {
            fftw_free(alignedInput)
            fftw_free(alignedOutput)
        } else {
            fftwf_free(alignedInput)
            fftwf_free(alignedOutput)
        }
    }

    /// Whether a pointer has the SIMD alignment FFTW planned with.
    @inline(__always)
    static func isAligned(_ pointer: UnsafeRawPointer) -> Bool {
        // fftw_alignment_of is the address modulo 16 on this build (SSE2/AVX codelets need 16-byte
        // alignment; checked in FFTTests against fftw_alignment_of); inlined to keep the per-transform overhead nil.
        Int(bitPattern: pointer) & 15 == 0
    }

    /// Scratch input buffer of FFTW's alignment (length N) for callers that prepare data in place.
    public var scratchInput: UnsafeMutableBufferPointer<T> { UnsafeMutableBufferPointer(start: alignedInput, count: count) }

    /// Transforms `input` (N values) into `output` (N+2 values: N/2+1 interleaved complex bins).
    /// Allocates nothing; safe to call from any thread on distinct instances.
    @inline(__always)
    public func forward(_ input: UnsafePointer<T>, _ output: UnsafeMutablePointer<T>) {
        let inputAligned = Self.isAligned(input), outputAligned = Self.isAligned(output)
        let source = inputAligned ? UnsafeMutablePointer(mutating: input) : alignedInput
        if !inputAligned && source != input { source.update(from: input, count: count) }
        let destination = outputAligned ? output : alignedOutput
        execute(source, destination)
        if !outputAligned { output.update(from: alignedOutput, count: count + 2) }
    }

    @inline(__always)
    func execute(_ input: UnsafeMutablePointer<T>, _ output: UnsafeMutablePointer<T>) {
        if T.self == Double.self {
            let i = UnsafeMutableRawPointer(input).assumingMemoryBound(to: Double.self)
            let o = UnsafeMutableRawPointer(output).assumingMemoryBound(to: fftw_complex.self)
            fftw_execute_dft_r2c(plan.plan, i, o)
        } else {
            let i = UnsafeMutableRawPointer(input).assumingMemoryBound(to: Float.self)
            let o = UnsafeMutableRawPointer(output).assumingMemoryBound(to: fftwf_complex.self)
            fftwf_execute_dft_r2c(plan.plan, i, o)
        }
    }

    /// Transforms a buffer of N values into N+2 interleaved complex values.
    public func forward(_ input: UnsafeBufferPointer<T>, into output: UnsafeMutableBufferPointer<T>) {
        precondition(input.count >= count && output.count >= count + 2, "RealFFT.forward: buffers too short")
        forward(input.baseAddress!, output.baseAddress!)
    }

    /// Transforms `channels` consecutive rows of N values (channel-major) into rows of N+2 values.
    /// - Parameters:
    ///   - input: channels x N values.
    ///   - output: channels x (N+2) values.
    ///   - channels: the number of rows.
    public func forward(batch input: UnsafeBufferPointer<T>, into output: UnsafeMutableBufferPointer<T>, channels: Int) {
        precondition(
            input.count >= channels * count && output.count >= channels * (count + 2), "RealFFT.forward(batch:): buffers too short")
        let i = input.baseAddress!, o = output.baseAddress!
        for c in 0..<channels { forward(i + c * count, o + c * (count + 2)) }
    }

    /// Convenience: the interleaved spectrum of an array (allocates the result).
    public func forward(_ input: [T]) -> [T] {
        precondition(input.count == count, "RealFFT.forward: input length \(input.count) is not \(count)")
        var out = [T](repeating: 0, count: count + 2)
        input.withUnsafeBufferPointer { i in out.withUnsafeMutableBufferPointer { forward(i, into: $0) } }
        return out
    }
}
