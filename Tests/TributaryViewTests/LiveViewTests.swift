import Foundation
import Testing

@testable import TributaryDSP
@testable import TributaryTransport
@testable import TributaryView

@Suite struct ChannelMonitorTests {
    /// At 1 MS/s a one-sample spike lands in one column's maximum: the trace stays truthful.
    @Test func minMaxColumnsKeepASingleSampleSpike() throws {
        let m = try ChannelMonitor(sampleRate: 1e6, windowSeconds: 0.1)
        #expect(m.samplesPerColumn == 167)  // ceil(100000 / 600)
        #expect(m.columns == 599)  // ceil(100000 / 167)
        var x = [Double](repeating: 0, count: 100_000)
        x[50_000] = 5
        x[70_001] = -3
        x.withUnsafeBufferPointer { m.add($0) }
        let (mins, maxs) = m.trace()
        #expect(mins.count == 100_000 / 167)
        #expect(maxs.max() == 5 && maxs.firstIndex(of: 5) == 50_000 / 167)
        #expect(mins.min() == -3 && mins.firstIndex(of: -3) == 70_001 / 167)
        #expect(maxs.filter { $0 != 0 }.count == 1)
    }

    /// The columns span the whole window (at most one column more), never less: the page's plot is
    /// filled from its left edge whatever the rate (round(N / 600)-sample columns left 10 % of it
    /// empty at 20 kS/s).
    @Test func columnsSpanTheWindow() throws {
        for rate in [3.0, 100, 1000, 20_000, 25_600, 44_100, 48_000, 51_200, 1e6] {
            for window in LiveModel.windows {
                let m = try ChannelMonitor(sampleRate: rate, windowSeconds: window)
                let n = max(2, Int((rate * window).rounded()))
                #expect(m.columns <= ChannelMonitor.maxColumns, "\(rate) S/s, \(window) s")
                #expect(m.columns * m.samplesPerColumn >= n, "\(rate) S/s, \(window) s")
                #expect((m.columns - 1) * m.samplesPerColumn < n, "\(rate) S/s, \(window) s")
            }
        }
    }

    /// Memory is bounded: a long stream keeps `columns` columns and `recentCapacity` samples.
    @Test func boundedWhateverTheLength() throws {
        let m = try ChannelMonitor(sampleRate: 1000, windowSeconds: 1)
        #expect(m.columns == 500 && m.samplesPerColumn == 2)  // 1000 samples in the window
        let block = (0..<10_000).map { Double($0) }
        for _ in 0..<5 { block.withUnsafeBufferPointer { m.add($0) } }
        #expect(m.trace().min.count == 500)
        #expect(m.recentCount == ChannelMonitor.recentCapacity)
        #expect(m.recentSamples(3) == [9_997, 9_998, 9_999])
    }

    /// The spectrum's peak and the readings find a simulated tone.
    @Test func spectrumAndReadingsFindTheTone() throws {
        let rate = 20_000.0
        let m = try ChannelMonitor(sampleRate: rate, windowSeconds: 0.1)
        let x = (0..<65_536).map { 0.5 * sin(2 * Double.pi * 1_234.5 * Double($0) / rate) + 0.1 }
        x.withUnsafeBufferPointer { m.add($0) }
        m.refreshSpectrum()
        let analyzer = try ChannelAnalyzer(request: ChannelReadings.request, sampleRate: rate)
        let r = ChannelReadings.measure(m.recentSamples(ChannelMonitor.recentCapacity), analyzer: analyzer)
        #expect(abs(r.toneFrequency - 1_234.5) < 0.05)  // tolerance: 0.05 Hz (no noise; the tone is between bins)
        #expect(abs(r.toneAmplitude - 0.5) < 2e-3)
        #expect(abs(r.mean - 0.1) < 1e-3)
        #expect(abs(r.rms - (0.01 + 0.125).squareRoot()) < 1e-3)
        let snapshot = ChannelSnapshot(
            key: ChannelKey(source: 1, channel: 0), sampleRate: rate, windowSeconds: 0.1,
            traceMin: m.trace().min, traceMax: m.trace().max, spectrum: m.spectrum, readings: r)
        let update = UpdateEncoding.encode(sequence: 1, serverTime: 0, dataTime: 0, health: LinkHealth(), channels: [snapshot])
        let peak = update.withUnsafeBytes {
            Double(bitPattern: UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 120 + 56, as: UInt64.self)))
        }
        #expect(abs(peak - 1_234.5) < rate / 8_192 / 2)  // within half a Welch bin
    }
}

@Suite struct UpdateEncodingTests {
    func u32(_ b: [UInt8], _ at: Int) -> UInt32 {
        b.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
    }
    func f64(_ b: [UInt8], _ at: Int) -> Double {
        b.withUnsafeBytes { Double(bitPattern: UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt64.self))) }
    }
    func i16(_ b: [UInt8], _ at: Int) -> Int16 {
        b.withUnsafeBytes { Int16(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: Int16.self)) }
    }

    /// The layout of docs/VIEW.md §3, field by field.
    @Test func layoutOfDocsView() {
        var health = LinkHealth()
        health.framesPerSecond = 20
        health.framesReceived = 7
        health.framesLost = 3
        health.reconnections = 1
        health.connected = false
        var readings = ChannelReadings()
        readings.rms = 0.7
        readings.enob = 9.5
        let psd = PowerSpectralDensity(frequencies: [0, 10, 20, 30], values: [1e-6, 1e-2, 1, 1e-2], segments: 5)
        let channel = ChannelSnapshot(
            key: ChannelKey(source: 2, channel: 3), sampleRate: 40, windowSeconds: 0.5,
            traceMin: [-1, 0], traceMax: [0.5, 2], spectrum: psd, readings: readings)
        let b = UpdateEncoding.encode(sequence: 9, serverTime: 100, dataTime: 99.5, health: health, channels: [channel])
        #expect(Array(b[0..<4]) == Array("TVU1".utf8))
        #expect(u32(b, 4) == 9 && f64(b, 8) == 100 && f64(b, 16) == 99.5 && f64(b, 24) == 20)
        #expect(f64(b, 40) == 7 && f64(b, 56) == 3 && f64(b, 72) == 1 && f64(b, 104) == 0)
        #expect(u32(b, 112) == 1)
        let c = 120
        #expect(u32(b, c) == 2 && u32(b, c + 4) == 3 && f64(b, c + 8) == 40 && f64(b, c + 16) == 0.5)
        #expect(f64(b, c + 24) == -1 && f64(b, c + 32) == 2)
        #expect(u32(b, c + 40) == 2 && u32(b, c + 44) == 4 && f64(b, c + 48) == 10)
        #expect(abs(f64(b, c + 56) - 20) < 1e-9 && abs(f64(b, c + 64) - 0) < 1e-9)  // symmetric neighbours: the bin itself
        #expect(f64(b, c + 72) == 5 && f64(b, c + 80) == 0.7 && f64(b, c + 80 + 56) == 9.5 && f64(b, c + 88).isNaN)
        // Trace (min, max) pairs: lo → -32768, hi → 32767.
        #expect(i16(b, c + 144) == -32_768 && i16(b, c + 146) == Int16((1.5 / 3 * 65_535).rounded() - 32_768))
        #expect(i16(b, c + 150) == 32_767)
        // Spectrum centi-dB.
        #expect(i16(b, c + 152) == -6_000 && i16(b, c + 154) == -2_000 && i16(b, c + 156) == 0 && i16(b, c + 158) == -2_000)
        // Flags bit 0: a spectrogram column follows the spectrum; none completed here, so every point has no value.
        #expect(u32(b, 116) == 1)
        #expect((0..<4).allSatisfy { i16(b, c + 160 + 2 * $0) == -32_768 })
        #expect(b.count == c + 168)  // 144 + 8 + 8 + 8, already a multiple of 8
        // With a column: coded as the spectrum, grouped the same way.
        var withColumn = channel
        withColumn.spectrogramColumn = PowerSpectralDensity(frequencies: [0, 10, 20, 30], values: [1, 1e-3, 10, 1e-30], segments: 1)
        let d = UpdateEncoding.encode(sequence: 10, serverTime: 100, dataTime: 99.5, health: health, channels: [withColumn])
        #expect(i16(d, c + 160) == 0 && i16(d, c + 162) == -3_000 && i16(d, c + 164) == 1_000 && i16(d, c + 166) == -30_000)
    }

    /// With a clock estimate: flags bit 1 and the clock block after the last channel block, the rest unchanged.
    @Test func clockBlockFollowsTheChannels() {
        var health = LinkHealth()
        health.framesReceived = 7
        let channel = ChannelSnapshot(
            key: ChannelKey(source: 2, channel: 3), sampleRate: 40, windowSeconds: 0.5,
            traceMin: [-1, 0], traceMax: [0.5, 2],
            spectrum: PowerSpectralDensity(frequencies: [0, 10, 20, 30], values: [1e-6, 1e-2, 1, 1e-2], segments: 5),
            readings: ChannelReadings())
        let without = UpdateEncoding.encode(sequence: 1, serverTime: 100, dataTime: 99.5, health: health, channels: [channel])
        health.clock = ClockEstimate(
            offsetNs: -1_500_012_345, rttNs: 210_000, measuredAtNs: 1_800_000_000_250_000_000, samples: 8, serial: 3)
        let b = UpdateEncoding.encode(sequence: 1, serverTime: 100, dataTime: 99.5, health: health, channels: [channel])
        #expect(u32(b, 116) == UpdateEncoding.spectrogramFlag | UpdateEncoding.clockFlag)
        #expect(b.count == without.count + UpdateEncoding.clockBlockSize)
        #expect(Array(b[0..<116]) == Array(without[0..<116]) && Array(b[120..<without.count]) == Array(without[120...]))
        let k = without.count
        #expect(f64(b, k) == -1.500_012_345 && f64(b, k + 8) == 210e-6)
        #expect(abs(f64(b, k + 16) - 1_800_000_000.25) < 1e-6 && f64(b, k + 24) == 3)
        // No channels: the block follows the header.
        let bare = UpdateEncoding.encode(sequence: 2, serverTime: 100, dataTime: .nan, health: health, channels: [])
        #expect(bare.count == UpdateEncoding.headerSize + UpdateEncoding.clockBlockSize && f64(bare, 120) == -1.500_012_345)
    }
}

@Suite struct JSONTextTests {
    /// The view's strings are the tool's JSON strings with `<` escaped: a name cannot close the page's
    /// script element, and control, bidi and separator characters are escaped as in `analyze --json`.
    @Test func stringsNeverCloseAScriptElement() throws {
        #expect(jsonString("Sim") == "\"Sim\"")
        #expect(jsonString("</script><b>") == "\"\\u003c/script>\\u003cb>\"")
        #expect(jsonString("a\"b\\c\nd\u{1}\u{7F}\u{2028}\u{202E}é") == "\"a\\\"b\\\\c\\nd\\u0001\\u007f\\u2028\\u202eé\"")
        // Read back by a JSON parser, the same text.
        let text = "x < y </script>\u{2029}\t\u{0}"
        let decoded = try JSONDecoder().decode([String].self, from: Data("[\(jsonString(text))]".utf8))
        #expect(decoded == [text])
    }

    /// The plain-text check runs over blocks of 64 bytes: a character to escape is found at every
    /// position of a long string, in the first block, across a block's end and in the last one.
    @Test func aCharacterToEscapeIsFoundAnywhereInALongString() throws {
        let plain = String(repeating: "QUJD", count: 50)  // 200 bytes of base64-like text
        #expect(jsonString(plain) == "\"" + plain + "\"")
        for special in ["\"", "\\", "\n", "\u{1F}", "\u{7F}", "é", "<"] {
            for position in [0, 1, 62, 63, 64, 65, 127, 128, 199] {
                var characters = Array(plain)
                characters[position] = Character(special)
                let text = String(characters)
                let quoted = jsonString(text)
                #expect(quoted != "\"" + text + "\"" || special == "é", "\(special.debugDescription) at \(position) went in unescaped")
                let decoded = try JSONDecoder().decode([String].self, from: Data("[\(quoted)]".utf8))
                #expect(decoded == [text], "\(special.debugDescription) at \(position)")
            }
        }
    }
}

@Suite struct HTTPServerTests {
    @Test func refusesWhatItCannotBind() {
        #expect(throws: HTTPServerError.self) {
            try HTTPServer(settings: .init(host: "localhost", port: 0, token: nil), page: [], onConnect: { _ in }, onMessage: { _, _ in })
        }
        #expect(throws: HTTPServerError.self) {
            try HTTPServer(
                settings: .init(host: "127.0.0.1", port: 70_000, token: nil), page: [], onConnect: { _ in }, onMessage: { _, _ in })
        }
    }

    @Test func constantTimeComparison() {
        #expect(constantTimeEqual(Array("abc".utf8), Array("abc".utf8)))
        #expect(!constantTimeEqual(Array("abc".utf8), Array("abd".utf8)))
        #expect(!constantTimeEqual(Array("abc".utf8), Array("abcd".utf8)))
    }
}
