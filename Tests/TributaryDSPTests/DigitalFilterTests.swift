import Foundation
import Testing

@testable import TributaryDSP

@Suite struct DigitalFilterTests {
    static func close(_ a: [Double], _ b: [Double], _ tolerance: Double = 1e-13) -> Bool {
        guard a.count == b.count else { return false }
        let scale = b.map(abs).max() ?? 1
        return zip(a, b).allSatisfy { abs($0 - $1) <= tolerance * scale }
    }

    /// The half-band Butterworth of order 2 in closed form: b = k·[1, 2, 1] with k = 1/(2 + √2),
    /// a = [1, 0, (2 - √2)/(2 + √2)].
    @Test func butterworthOrderTwoKnownCoefficients() throws {
        let f = try FilterDesign.iirBA(order: 2, frequencies: [0.5], band: .lowpass, family: .butterworth)
        let k = 1 / (2 + 2.0.squareRoot())
        #expect(Self.close(f.b, [k, 2 * k, k], 1e-15))
        #expect(abs(f.a[0] - 1) == 0 && abs(f.a[1]) < 1e-15 && abs(f.a[2] - (2 - 2.0.squareRoot()) / (2 + 2.0.squareRoot())) < 1e-15)
        let sos = try FilterDesign.iirSOS(order: 2, frequencies: [0.5], band: .lowpass, family: .butterworth)
        #expect(sos.count == 1 && Self.close(sos.coefficients, [k, 2 * k, k, 1, 0, f.a[2]], 1e-15))
    }

    /// A design and its sections as scipy 1.17 gives them (values printed by scipy.signal.butter,
    /// cheby1, ellip and bessel with output='sos').
    struct ScipySections: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let order: Int, frequencies: [Double], band: FilterBand, family: FilterFamily
        let sections: [Double], tolerance: Double
    }

    static let scipySections = [
        ScipySections(
            testDescription: "butter(4, 0.2)", order: 4, frequencies: [0.2], band: .lowpass, family: .butterworth,
            sections: [
                0.004824343357716228, 0.009648686715432456, 0.004824343357716228, 1, -1.0485995763626117,
                0.2961403575616696, 1, 2, 1, 1, -1.3209134308194264, 0.6327387928852766,
            ], tolerance: 1e-14),
        ScipySections(
            testDescription: "cheby1(3, 1, [0.2, 0.4], 'bandpass')", order: 3, frequencies: [0.2, 0.4], band: .bandpass,
            family: .chebyshev1(ripple: 1),
            sections: [
                0.01147465688202088, 0.02294931376404176, 0.01147465688202088, 1, -1.0650563863521076,
                0.7232974330528497, 1, 0, -1, 1, -0.5858575923436214, 0.8351601721752616,
                1, -2, 1, 1, -1.5244148194690865, 0.8935372778531978,
            ], tolerance: 1e-14),
        ScipySections(
            testDescription: "ellip(3, 1, 40, 0.3)", order: 3, frequencies: [0.3], band: .lowpass,
            family: .elliptic(ripple: 1, attenuation: 40),
            sections: [
                0.055480858912020606, 0.03637259582179773, 0.05548085891202059, 1.0, -0.5787198745704312, 0.0,
                1.0, 1.0, 0.0, 1.0, -0.9902215193819808, 0.6896815923944724,
            ], tolerance: 1e-13),
        ScipySections(
            testDescription: "bessel(4, 0.2)", order: 4, frequencies: [0.2], band: .lowpass, family: .bessel(norm: .phase),
            sections: [
                0.0042874202929168515, 0.008574840585833703, 0.0042874202929168515, 1.0, -1.0770123857826925,
                0.30094304188139637, 1.0, 2.0, 1.0, 1.0, -1.1409612555521211, 0.44730039589935744,
            ], tolerance: 1e-13),
    ]

    @Test(arguments: scipySections)
    func sectionsEqualScipys(_ design: ScipySections) throws {
        let sos = try FilterDesign.iirSOS(order: design.order, frequencies: design.frequencies, band: design.band, family: design.family)
        #expect(Self.close(sos.coefficients, design.sections, design.tolerance))
    }

    /// The elliptic integral and Jacobi functions the elliptic design rests on.
    @Test func ellipticFunctionsMeetTheirIdentities() {
        // K(1/2) = Γ(1/4)² / (4√π); sn² + cn² = 1 and dn² + m·sn² = 1.
        #expect(abs(Elliptic.complete(0.5) - 1.8540746773013719) < 1e-15)
        let (sn, cn, dn) = Elliptic.jacobi(0.7, 0.3)
        #expect(abs(sn * sn + cn * cn - 1) < 1e-15 && abs(dn * dn + 0.3 * sn * sn - 1) < 1e-15)
    }

    @Test func badDesignsAreErrors() {
        #expect(throws: FilterDesignError.self) {
            try FilterDesign.iirSOS(order: -1, frequencies: [0.2], band: .lowpass, family: .butterworth)
        }
        #expect(throws: FilterDesignError.self) {
            try FilterDesign.iirSOS(order: 4, frequencies: [1.0], band: .lowpass, family: .butterworth)
        }
        #expect(throws: FilterDesignError.self) {
            try FilterDesign.iirSOS(order: 4, frequencies: [0.2], band: .bandpass, family: .butterworth)
        }
        #expect(throws: FilterDesignError.self) {
            try FilterDesign.iirSOS(order: 4, frequencies: [600], band: .lowpass, family: .butterworth, fs: 1000)
        }
        #expect(throws: FilterDesignError.self) {
            try FilterDesign.iirSOS(order: 4, frequencies: [0.2], band: .lowpass, family: .chebyshev1(ripple: -1))
        }
        #expect(FilterBand(name: "sideways") == nil && FilterBand(name: "bp") == .bandpass)
    }

    /// A stream filtered in blocks of any sizes equals the stream filtered whole, bit for bit.
    @Test func streamingAnySplitEqualsWhole() throws {
        let sos = try FilterDesign.iirSOS(order: 8, frequencies: [0.1, 0.3], band: .bandpass, family: .chebyshev1(ripple: 0.5))
        var generator = SystemRandomNumberGenerator()
        let x = (0..<1000).map { _ in Double.random(in: -1...1, using: &generator) }
        var whole = [Double](repeating: 0, count: x.count)
        try x.withUnsafeBufferPointer { xp in
            try whole.withUnsafeMutableBufferPointer { yp in
                try IIRFilter.sosfilt(
                    sos, x: xp.baseAddress!, y: yp.baseAddress!, layout: FilterLayout(length: x.count), initial: nil, final: nil)
            }
        }
        for split in [[1000], Array(repeating: 1, count: 1000), [0, 3, 997], [500, 0, 499, 1], [7, 13, 333, 647]] {
            var stream = try SOSStream(sections: sos)
            var out: [Double] = []
            var start = 0
            for size in split {
                out += stream.filter(Array(x[start..<(start + size)]))
                start += size
            }
            #expect(out == whole, "split \(split)")
        }
        let ba = try FilterDesign.iirBA(order: 4, frequencies: [0.3], band: .highpass, family: .chebyshev2(attenuation: 40))
        var wholeStream = try TransferStream(function: ba)
        let reference = wholeStream.filter(x)
        var blocks = try TransferStream(function: ba)
        let pieces = blocks.filter(Array(x[0..<123])) + blocks.filter(Array(x[123..<124])) + blocks.filter(Array(x[124...]))
        #expect(pieces == reference)
    }

    /// Started in its steady state (sosfilt_zi / lfilter_zi times the level), a low-pass passes a
    /// constant without a transient; sosfiltfilt of a constant is that constant.
    @Test func steadyStatesPassConstants() throws {
        let sos = try FilterDesign.iirSOS(order: 6, frequencies: [0.05], band: .lowpass, family: .butterworth)
        var stream = try SOSStream.steady(sections: sos, levels: [2.5])
        #expect(stream.filter([Double](repeating: 2.5, count: 200)).allSatisfy { abs($0 - 2.5) < 1e-12 })
        let ba = try FilterDesign.iirBA(order: 3, frequencies: [0.2], band: .lowpass, family: .chebyshev1(ripple: 1))
        let zi = try InitialState.lfilter(ba)
        // The DC gain of an odd-order Chebyshev I is 1.
        var transfer = try TransferStream(function: ba, initial: zi.map { $0 * -4 })
        #expect(transfer.filter([Double](repeating: -4, count: 100)).allSatisfy { abs($0 + 4) < 1e-12 })
        let x = [Double](repeating: 7, count: 100)
        var y = [Double](repeating: 0, count: 100)
        try x.withUnsafeBufferPointer { xp in
            try y.withUnsafeMutableBufferPointer { yp in
                try IIRFilter.sosfiltfilt(sos, x: xp.baseAddress!, y: yp.baseAddress!, layout: FilterLayout(length: 100))
            }
        }
        #expect(y.allSatisfy { abs($0 - 7) < 1e-11 })
    }

    /// Filtering along the middle axis of a (2, 50, 3) array equals filtering each line alone.
    @Test func stridedLinesEqualSeparateOnes() throws {
        let sos = try FilterDesign.iirSOS(order: 4, frequencies: [0.25], band: .lowpass, family: .butterworth)
        let layout = FilterLayout(outer: 2, length: 50, inner: 3)
        let x = (0..<layout.count).map { sin(Double($0) * 0.37) }
        var y = [Double](repeating: 0, count: x.count)
        try x.withUnsafeBufferPointer { xp in
            try y.withUnsafeMutableBufferPointer { yp in
                try IIRFilter.sosfilt(sos, x: xp.baseAddress!, y: yp.baseAddress!, layout: layout, initial: nil, final: nil)
            }
        }
        for o in 0..<2 {
            for i in 0..<3 {
                let line = (0..<50).map { x[(o * 50 + $0) * 3 + i] }
                var stream = try SOSStream(sections: sos)
                #expect(stream.filter(line) == (0..<50).map { y[(o * 50 + $0) * 3 + i] })
            }
        }
    }

    @Test func firwinIsSymmetricWithUnitDCGain() throws {
        let h = try FIRDesign.firwin(taps: 31, cutoff: [0.3])
        #expect(zip(h, h.reversed()).allSatisfy { abs($0 - $1) < 1e-16 })
        #expect(abs(h.reduce(0, +) - 1) < 1e-14)
        #expect(throws: FilterDesignError.self) { try FIRDesign.firwin(taps: 30, cutoff: [0.3], passZero: false) }
    }
}
