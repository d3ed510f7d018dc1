import Testing

@testable import TributaryDSP

@Suite struct WindowTests {
    /// The shared windows are the windows: every kind, both symmetries, lengths 1 … 5000, and
    /// still after the cache has started over more than once.
    @Test func sharedWindowsEqualFreshOnes() {
        for round in 0..<3 {
            for kind in WindowKind.allCases {
                for count in [1, 2, 7, 64, 4096, 5000 - round] {
                    for periodic in [true, false] where count > 1 || periodic {
                        #expect(
                            Window.shared(kind, count: count, periodic: periodic) == Window(kind, count: count, periodic: periodic),
                            "\(kind) \(count) periodic \(periodic)")
                    }
                }
            }
        }
    }

    @Test func normalisationConstants() {
        // tolerance: 1e-12 absolute (large N makes periodic windows' constants exact)
        let hann = Window(.hann, count: 4096)
        #expect(abs(hann.coherentGain - 0.5) < 1e-12)
        #expect(abs(hann.equivalentNoiseBandwidth - 1.5) < 1e-12)
        #expect(abs(Window(.rectangular, count: 100).equivalentNoiseBandwidth - 1) < 1e-12)
        #expect(abs(Window(.hamming, count: 4096).coherentGain - 0.54) < 1e-12)
        #expect(abs(Window(.blackmanHarris, count: 4096).equivalentNoiseBandwidth - 2.0044) < 1e-3)  // published 2.00
    }

    @Test func symmetricAndPeriodic() {
        let s = Window(.hann, count: 5, periodic: false).values
        #expect(abs(s[0]) < 1e-15 && abs(s[4]) < 1e-15 && abs(s[2] - 1) < 1e-15)
        let p = Window(.hann, count: 4, periodic: true).values
        #expect(abs(p[2] - 1) < 1e-15 && abs(p[1] - 0.5) < 1e-15)
    }

    @Test func namesParse() {
        for kind in WindowKind.allCases { #expect(WindowKind(name: kind.rawValue) == kind) }
        #expect(WindowKind(name: "hanning") == .hann)
        #expect(WindowKind(name: "blackmanharris") == .blackmanHarris)
        #expect(WindowKind(name: "nope") == nil)
    }
}
