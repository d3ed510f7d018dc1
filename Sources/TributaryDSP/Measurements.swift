import Foundation
import TributaryWire

/// A sinusoid found in a spectrum: x(t) = amplitude * cos(2 pi frequency t + phase).
public struct ToneMeasurement: Sendable, Equatable {
    /// Frequency in Hz, interpolated between bins.
    public var frequency: Double
    /// Peak amplitude (RMS * sqrt 2), from the power in the window's main lobe.
    public var amplitude: Double
    /// Phase of the cosine at the first sample, degrees in (-180, 180].
    public var phaseDegrees: Double
}

/// One harmonic of a distortion measurement.
public struct HarmonicComponent: Sendable, Equatable {
    /// Harmonic number (2 = second harmonic).
    public var order: Int
    /// Where it was measured, Hz (after folding when aliases are folded).
    public var frequency: Double
    /// Peak amplitude.
    public var amplitude: Double
}

/// THD, THD+N, SINAD, SNR, ENOB and SFDR of a signal dominated by one tone (IEEE 1241 / NI definitions;
/// see docs/ANALYSIS.md).
public struct DistortionMeasurement: Sendable, Equatable {
    /// The fundamental.
    public var fundamental: ToneMeasurement
    /// Harmonics 2...H that lie below Nyquist (or folded into the band).
    public var harmonics: [HarmonicComponent]
    /// Total harmonic distortion as a ratio: RMS of harmonics 2..H over the fundamental's RMS.
    public var thd: Double
    /// THD + noise as a ratio: RMS of everything but DC and the fundamental, over the fundamental's RMS.
    public var thdPlusNoise: Double
    /// SINAD in dB: fundamental power over noise-and-distortion power.
    public var sinadDB: Double
    /// SNR in dB: fundamental power over noise power (excluding harmonics 2..H and DC).
    public var snrDB: Double
    /// Effective number of bits: (SINAD - 1.76) / 6.02.
    public var enob: Double
    /// Spurious-free dynamic range in dB: fundamental over the largest other component.
    public var sfdrDB: Double
    /// Frequency of the largest spur, Hz.
    public var spurFrequency: Double

    /// THD in dB (20 log10 thd).
    public var thdDB: Double { 20 * log10(thd) }
    /// THD+N in dB (20 log10 thdPlusNoise = -SINAD).
    public var thdPlusNoiseDB: Double { 20 * log10(thdPlusNoise) }
    /// THD in percent of the fundamental (100 × thd).
    public var thdPercent: Double { 100 * thd }

    /// The readings referred to full scale (IEEE 1241 ENOB, dBFS), as instruments report them next
    /// to the signal-relative ones: a clean 1 V sine on a ±10 V 16-bit converter has an ENOB of about
    /// 12.7 relative to its own level and about 16 referred to full scale.
    /// - Parameter fullScale: the peak amplitude of a full-scale sine (half the converter's range).
    public func referred(toFullScale fullScale: Double) -> FullScaleReadings {
        // Noise and distortion relative to a full-scale sine instead of to the fundamental.
        let gain = 20 * log10(fullScale / fundamental.amplitude)
        let sinad = sinadDB + gain
        return FullScaleReadings(
            fullScale: fullScale, signalDBFS: -gain, sinadDBFS: sinad, snrDBFS: snrDB + gain,
            sfdrDBFS: sfdrDB + gain, enobFullScale: (sinad - 1.76) / 6.02)
    }
}

/// Distortion readings referred to a converter's full scale (`DistortionMeasurement.referred(toFullScale:)`).
public struct FullScaleReadings: Sendable, Equatable {
    /// Peak amplitude of a full-scale sine (10 for a ±10 V range).
    public var fullScale: Double
    /// The fundamental's level, dB relative to full scale (≤ 0 for a signal inside the range).
    public var signalDBFS: Double
    /// SINAD, SNR and SFDR with full scale as the reference, in dBFS.
    public var sinadDBFS: Double
    public var snrDBFS: Double
    public var sfdrDBFS: Double
    /// ENOB referred to full scale: (SINAD_dBFS − 1.76) / 6.02.
    public var enobFullScale: Double
}

/// Parameters of the spectral measurements.
public struct MeasurementConfiguration: Sendable, Equatable {
    /// The window: 7-term Blackman-Harris by default, whose -180 dB sidelobes keep a non-coherent
    /// fundamental's leakage far below a 16-bit noise floor.
    public var window: WindowKind
    /// The highest harmonic H of THD (harmonics 2...H).
    public var harmonics: Int
    /// Fold harmonics above Nyquist back into the band (where a sampled system sees them) instead of ignoring them.
    public var foldAliases: Bool
    /// Restrict the fundamental's search to this band (Hz); nil searches everything above DC.
    public var searchBand: ClosedRange<Double>?

    public init(
        window: WindowKind = .blackmanHarris7, harmonics: Int = 5, foldAliases: Bool = false, searchBand: ClosedRange<Double>? = nil
    ) {
        self.window = window
        self.harmonics = harmonics
        self.foldAliases = foldAliases
        self.searchBand = searchBand
    }
}

/// The measurement error for a signal without any tone, too short, or with bad parameters.
public struct MeasurementError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Tone and distortion measurements on one windowed spectrum of a whole record.
///
/// Every power is the sum of the one-sided power-spectrum bins of a component's main lobe divided
/// by the window's ENBW (in bins), so tones and noise are measured on the same mean-square scale
/// whatever the window, and a tone between bins loses nothing.
public struct SpectralMeasurements: Sendable {
    /// The spectrum measured.
    public let spectrum: Spectrum
    /// The parameters.
    public let configuration: MeasurementConfiguration
    /// One-sided power per bin (unit^2), before the ENBW correction.
    let power: [Double]
    let enbw: Double
    let lobe: Int

    /// Analyses a record.
    /// - Parameters:
    ///   - x: the samples (at least 16).
    ///   - sampleRate: Hz.
    ///   - configuration: window, harmonics, folding.
    /// - Throws: `MeasurementError`, `SpectralParameterError`.
    public init(_ x: UnsafeBufferPointer<Double>, sampleRate: Double, configuration: MeasurementConfiguration = MeasurementConfiguration())
        throws
    {
        guard x.count >= 16 else { throw MeasurementError("a measurement needs at least 16 samples, got \(x.count)") }
        let analyzer = try SpectrumAnalyzer(count: x.count, sampleRate: sampleRate, window: configuration.window)
        spectrum = analyzer.spectrum(x)
        self.configuration = configuration
        power = spectrum.power()
        enbw = analyzer.window.equivalentNoiseBandwidth
        lobe = configuration.window.mainLobeHalfWidth
    }

    /// Analyses an array.
    public init(_ x: [Double], sampleRate: Double, configuration: MeasurementConfiguration = MeasurementConfiguration()) throws {
        self = try x.withUnsafeBufferPointer { try SpectralMeasurements($0, sampleRate: sampleRate, configuration: configuration) }
    }

    var bins: Int { power.count }
    var binWidth: Double { spectrum.binWidth }

    /// Mean-square power of bins lo...hi (clamped), ENBW-corrected.
    func lobePower(_ centre: Int, excluding excluded: [ClosedRange<Int>] = []) -> Double {
        let lo = Swift.max(0, centre - lobe), hi = Swift.min(bins - 1, centre + lobe)
        guard lo <= hi else { return 0 }
        var sum = 0.0
        for k in lo...hi where !excluded.contains(where: { $0.contains(k) }) { sum += power[k] }
        return sum / enbw
    }

    func lobeRange(_ centre: Int) -> ClosedRange<Int> {
        Swift.max(0, centre - lobe)...Swift.min(bins - 1, centre + lobe)
    }

    /// The tone whose main lobe is centred on bin `peak`: power-weighted centroid frequency,
    /// lobe power, and the peak bin's phase corrected for the offset from the bin.
    func tone(at peak: Int) -> ToneMeasurement {
        let range = lobeRange(peak)
        var sum = 0.0, moment = 0.0
        for k in range {
            sum += power[k]
            moment += Double(k) * power[k]
        }
        let position = sum > 0 ? moment / sum : Double(peak)
        let amplitude = (2 * sum / enbw).squareRoot()
        // A DFT-even window is symmetric about N/2, so a tone delta bins off bin k has phase
        // phi + pi * delta in bin k (see docs/ANALYSIS.md).
        let delta = position - Double(peak)
        var phase = atan2(spectrum.imaginary[peak], spectrum.real[peak]) - Double.pi * delta
        phase = remainder(phase, 2 * Double.pi)
        var degrees = phase * 180 / Double.pi
        if degrees <= -180 { degrees += 360 }
        return ToneMeasurement(frequency: position * binWidth, amplitude: amplitude, phaseDegrees: degrees)
    }

    /// The bin of the largest power outside the DC lobe (and inside the search band).
    func fundamentalBin() throws -> Int {
        var best = -1
        var bestPower = 0.0
        let firstBin = lobe + 1
        guard firstBin < bins else { throw MeasurementError("the record is too short for the window's main lobe") }
        for k in firstBin..<bins {
            if let band = configuration.searchBand, !band.contains(Double(k) * binWidth) { continue }
            if power[k] > bestPower { bestPower = power[k]; best = k }
        }
        // A peak at the level of FFT rounding (e.g. of a constant signal) is not a tone.
        let total = power.reduce(0, +)
        guard best >= 0, bestPower > 1e-24 * total else { throw MeasurementError("no tone found (nothing above rounding outside DC)") }
        return best
    }

    /// The strongest tone (the fundamental).
    /// - Throws: `MeasurementError` when there is no tone.
    public func singleTone() throws -> ToneMeasurement {
        tone(at: try fundamentalBin())
    }

    /// The K strongest tones whose peak amplitude is at least `threshold`, strongest first.
    public func strongestTones(_ k: Int, threshold: Double = 0) -> [ToneMeasurement] {
        var peaks: [Int] = []
        if bins >= 3 {
            for i in (lobe + 1)..<bins where power[i] > power[i - 1] && (i == bins - 1 || power[i] >= power[i + 1]) {
                peaks.append(i)
            }
        }
        peaks.sort { power[$0] > power[$1] }
        var chosen: [Int] = []
        for p in peaks where chosen.count < k {
            // A local maximum inside a stronger tone's main lobe is part of that tone, and one whose
            // own lobe would reach into it would be measured with that tone's power.
            if chosen.contains(where: { abs($0 - p) <= 2 * lobe }) { continue }
            let t = tone(at: p)
            if t.amplitude >= threshold { chosen.append(p) }
        }
        return chosen.map { tone(at: $0) }
    }

    /// Why a tone measurement of this record may be biased by the setup rather than by the signal:
    /// samples that repeat exactly with the tone's period (a tone that divides the sample rate into
    /// a short pattern, quantised without dither: the quantisation error is then periodic, not
    /// noise-like, and SINAD/ENOB read too high), a tone too close to DC or Nyquist for the window's
    /// main lobe, and too few cycles in the record. Empty when none applies.
    /// - Parameter samples: the record the measurement was made on.
    public func setupWarnings(for tone: ToneMeasurement, samples: [Double]) -> [String] {
        var warnings: [String] = []
        let rate = spectrum.sampleRate, f = tone.frequency
        guard f > 0, rate > 0, binWidth > 0 else { return warnings }
        let length = Int((rate / binWidth).rounded())
        // rate / f ≈ p / q with a small q: do the samples repeat exactly every p samples?
        let ratio = rate / f
        for q in 1...16 {
            // Checked in Double first: a tone near 0 Hz makes the ratio overflow any integer.
            let period = (ratio * Double(q)).rounded()
            guard period >= 2, period < Double(samples.count / 4) else { continue }
            let p = Int(period)
            let compared = Swift.min(samples.count - p, 8_192)
            var equal = 0
            for i in 0..<compared where samples[i] == samples[i + p] { equal += 1 }
            if equal * 10 >= compared * 9 {
                warnings.append(
                    "the tone (\(Self.format(f)) Hz) repeats its sample pattern every \(p) samples at "
                        + "\(Self.format(rate)) S/s: the quantisation error is periodic, not noise, and SINAD/ENOB read too high; "
                        + "a frequency such as \(Self.format(f * 1.0061)) Hz, or dither, avoids it")
                break
            }
        }
        let bin = Int(saturating: (f / binWidth).rounded()) ?? 0
        if bin <= 2 * lobe + 1 {
            warnings.append(
                "the tone (\(Self.format(f)) Hz) is within \(bin) bins of DC: the window's main lobe reaches DC and the reading is biased")
        } else if bin >= bins - 2 * lobe - 1 {
            warnings.append(
                "the tone (\(Self.format(f)) Hz) is within \(Swift.max(0, bins - 1 - bin)) bins of Nyquist (\(Self.format(rate / 2)) Hz): the window's main lobe reaches it and the reading is biased"
            )
        }
        let cycles = f * Double(length) / rate
        if cycles < 10 {
            warnings.append("only \(Self.format(cycles)) cycles of the tone in \(length) samples: use a record of at least 10 cycles")
        }
        return warnings
    }

    private static func format(_ value: Double) -> String { String(format: "%.6g", value) }

    /// THD, THD+N, SINAD, SNR, ENOB and SFDR.
    /// - Throws: `MeasurementError` when there is no tone.
    public func distortion() throws -> DistortionMeasurement {
        let peak = try fundamentalBin()
        let fundamental = tone(at: peak)
        let fundamentalPower = lobePower(peak)
        let dcRange = 0...Swift.min(lobe, bins - 1)
        let fundamentalRange = lobeRange(peak)
        let nyquist = spectrum.sampleRate / 2
        var harmonics: [HarmonicComponent] = []
        var harmonicRanges: [ClosedRange<Int>] = []
        var harmonicPower = 0.0
        if configuration.harmonics >= 2 {
            for order in 2...configuration.harmonics {
                var f = Double(order) * fundamental.frequency
                if configuration.foldAliases {
                    f = f.truncatingRemainder(dividingBy: spectrum.sampleRate)
                    if f > nyquist { f = spectrum.sampleRate - f }
                } else if f > nyquist {
                    continue
                }
                let centre = Int((f / binWidth).rounded())
                guard centre < bins else { continue }
                let range = lobeRange(centre)
                // A harmonic folded onto DC, the fundamental or an earlier harmonic is not counted twice.
                if range.overlaps(dcRange) || range.overlaps(fundamentalRange) || harmonicRanges.contains(where: { $0.overlaps(range) }) {
                    continue
                }
                let p = lobePower(centre)
                harmonicRanges.append(range)
                harmonicPower += p
                harmonics.append(HarmonicComponent(order: order, frequency: f, amplitude: (2 * p).squareRoot()))
            }
        }
        var total = 0.0
        for k in (dcRange.upperBound + 1)..<bins { total += power[k] }
        total /= enbw
        let nad = Swift.max(total - fundamentalPower, .leastNonzeroMagnitude)
        let noise = Swift.max(nad - harmonicPower, .leastNonzeroMagnitude)
        // Largest spur: the strongest bin outside DC and the fundamental, measured over its lobe.
        var spurBin = -1
        var spurPeak = -1.0
        for k in (dcRange.upperBound + 1)..<bins where !fundamentalRange.contains(k) {
            if power[k] > spurPeak { spurPeak = power[k]; spurBin = k }
        }
        let spurPower =
            spurBin >= 0
            ? Swift.max(lobePower(spurBin, excluding: [dcRange, fundamentalRange]), .leastNonzeroMagnitude) : .leastNonzeroMagnitude
        let sinad = 10 * log10(fundamentalPower / nad)
        return DistortionMeasurement(
            fundamental: fundamental,
            harmonics: harmonics,
            thd: (harmonicPower / fundamentalPower).squareRoot(),
            thdPlusNoise: (nad / fundamentalPower).squareRoot(),
            sinadDB: sinad,
            snrDB: 10 * log10(fundamentalPower / noise),
            enob: (sinad - 1.76) / 6.02,
            sfdrDB: 10 * log10(fundamentalPower / spurPower),
            spurFrequency: Double(Swift.max(spurBin, 0)) * binWidth)
    }
}
