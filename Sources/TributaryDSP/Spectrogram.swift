/// A short-time Fourier transform's power: one one-sided PSD (or power spectrum) per segment,
/// equal to `scipy.signal.spectrogram(..., mode='psd')` with the same window and segments.
public struct Spectrogram: Sendable {
    /// Bin frequencies in Hz.
    public var frequencies: [Double]
    /// Segment centres in seconds.
    public var times: [Double]
    /// values[segment][bin].
    public var values: [[Double]]

    /// Computes a spectrogram.
    /// - Parameters:
    ///   - x: the signal.
    ///   - sampleRate: Hz.
    ///   - configuration: segment length, overlap, window, detrend, scaling (average is ignored).
    /// - Throws: `SpectralParameterError` for bad parameters.
    public init(_ x: [Double], sampleRate: Double, configuration: WelchConfiguration) throws {
        guard sampleRate > 0, sampleRate.isFinite else { throw SpectralParameterError("sample rate", "must be positive and finite") }
        let g = try WelchGeometry(configuration: configuration, signalLength: x.count)
        let core = try SegmentPeriodogram<Double>(
            segmentLength: g.segmentLength, fftLength: g.fftLength,
            window: configuration.window, detrend: configuration.detrend, rigor: configuration.rigor)
        let bins = core.binCount
        let scales = (0..<bins).map { core.scale(bin: $0, sampleRate: sampleRate, scaling: configuration.scaling) }
        var rows: [[Double]] = []
        rows.reserveCapacity(g.segments)
        var row = [Double](repeating: 0, count: bins)
        x.withUnsafeBufferPointer { xb in
            for segment in 0..<g.segments {
                core.transform(xb.baseAddress! + segment * g.step)
                row.withUnsafeMutableBufferPointer { core.storePower(into: $0.baseAddress!) }
                rows.append((0..<bins).map { row[$0] * scales[$0] })
            }
        }
        values = rows
        frequencies = (0..<bins).map { Double($0) * sampleRate / Double(g.fftLength) }
        times = (0..<g.segments).map { (Double($0 * g.step) + Double(g.segmentLength) / 2) / sampleRate }
    }
}
