import Foundation

/// The estimator of a transfer function from a reference (input) x to a response (output) y.
public enum TransferEstimator: String, Sendable, CaseIterable {
    /// H1 = Pxy / Pxx: unbiased by noise on the output.
    case h1 = "H1"
    /// H2 = Pyy / Pyx: unbiased by noise on the input.
    case h2 = "H2"
}

/// A transfer-function estimate with its magnitude-squared coherence, per frequency.
public struct TransferEstimate: Sendable, Equatable {
    /// Bin frequencies in Hz.
    public var frequencies: [Double]
    /// H, real and imaginary parts.
    public var real: [Double]
    public var imaginary: [Double]
    /// |Pxy|^2 / (Pxx Pyy), `scipy.signal.coherence`.
    public var coherence: [Double]
    /// Segments averaged.
    public var segments: Int

    /// |H|.
    public var magnitude: [Double] { zip(real, imaginary).map { hypot($0, $1) } }
    /// |H| in dB (20 log10).
    public var magnitudeDB: [Double] { magnitude.map { 20 * log10($0) } }
    /// arg H in radians, (-pi, pi].
    public var phase: [Double] { zip(real, imaginary).map { atan2($1, $0) } }

    /// The estimate from the cross-spectra of x (reference) and y (response), which must hold Pxx, Pyy and Pxy.
    public init(spectra c: CrossSpectra, estimator: TransferEstimator) {
        frequencies = c.frequencies
        segments = c.segments
        let n = c.frequencies.count
        var re = [Double](repeating: 0, count: n), im = re, coh = re
        for k in 0..<n {
            let pr = c.pxyReal[k], pi = c.pxyImaginary[k]
            let cross = pr * pr + pi * pi
            switch estimator {
            case .h1:
                re[k] = pr / c.pxx[k]
                im[k] = pi / c.pxx[k]
            case .h2:
                // Pyy / conj(Pxy) = Pyy Pxy / |Pxy|^2.
                re[k] = c.pyy[k] * pr / cross
                im[k] = c.pyy[k] * pi / cross
            }
            coh[k] = cross / c.pxx[k] / c.pyy[k]
        }
        real = re
        imaginary = im
        coherence = coh
    }

    /// Estimates the transfer function from `reference` to `response` (equal lengths).
    /// - Throws: `SpectralParameterError` for bad parameters or signals.
    public init(
        reference: [Double], response: [Double], sampleRate: Double, configuration: CrossSpectralConfiguration,
        estimator: TransferEstimator = .h1
    ) throws {
        let spectra = try CrossSpectralEstimator(configuration: configuration, sampleRate: sampleRate).estimate(reference, response)
        self.init(spectra: spectra, estimator: estimator)
    }
}
