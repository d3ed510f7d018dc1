import Foundation
import Testing
import TributaryDSP
import TributaryWire

/// The streaming pipeline over frames gives what the whole-record analysis gives, whatever the
/// frame sizes, and applies filters first.
@Suite struct FrameAnalysisTests {
    static func signal(_ n: Int, channel: Int) -> [Double] {
        let f = 50 * Double(channel + 1)
        return (0..<n).map { i -> Double in
            let phase: Double = 2 * Double.pi * f * Double(i) / 1000
            return sin(phase) + 0.001 * Double((i * 7919 + channel) % 13)
        }
    }

    static func frames(channels: Int, samples n: Int, pieces: [Int], format: SampleFormat = .float64) -> [Frame] {
        let data = (0..<channels).map { signal(n, channel: $0) }
        var frames = [
            Frame(
                encoding: .configuration(
                    Configuration(
                        deviceName: "sim", deviceType: "test",
                        channels: (0..<channels).map { ChannelConfiguration(index: UInt32($0), description: "ai\($0)", samplingRate: 1000) }
                    )),
                sourceID: 3)
        ]
        var start = 0, i = 0
        while start < n {
            let count = min(pieces[i % pieces.count], n - start)
            let rows = data.map { Array($0[start..<(start + count)]) }
            frames.append(Frame(encoding: .analog(AnalogData(channels: rows, firstSample: UInt64(start))), sourceID: 3))
            start += count
            i += 1
        }
        return frames
    }

    @Test func streamingEqualsTheWholeRecord() throws {
        let request = AnalysisRequest(statistics: true, welch: WelchConfiguration(segmentLength: 256), measurements: [.tone])
        let analysis = FrameAnalysis(request: request)
        for frame in Self.frames(channels: 3, samples: 5000, pieces: [1, 999, 37, 2048]) { try analysis.add(frame) }
        let sources = try analysis.finish()
        #expect(sources.count == 1 && sources[0].id == 3 && sources[0].name == "sim" && sources[0].sampleRate == 1000)
        #expect(sources[0].discontinuities == 0)
        let batch = try ChannelAnalyzer(request: request, sampleRate: 1000)
        for (c, report) in sources[0].channels.enumerated() {
            let whole = Self.signal(5000, channel: c)
            let expected = try whole.withUnsafeBufferPointer { try batch.analyze(.float64($0), index: c) }
            #expect(report.index == c && report.samples == 5000)
            let s = try #require(report.statistics), e = try #require(expected.statistics)
            #expect(s.min == e.min && s.max == e.max && s.count == e.count)
            #expect(abs(s.mean - e.mean) <= 1e-12 * max(1, abs(e.mean)))
            #expect(abs(s.variance - e.variance) <= 1e-12 * e.variance)
            let w = try #require(report.welch), ew = try #require(expected.welch)
            #expect(w.frequencies == ew.frequencies && w.segments == ew.segments)
            for k in w.values.indices { #expect(abs(w.values[k] - ew.values[k]) <= 1e-9 * max(ew.values[k], 1e-20)) }
            #expect(abs(try #require(report.tone).frequency - 50 * Double(c + 1)) < 0.01)
        }
    }

    @Test func filtersApplyBeforeAnalysis() throws {
        var filters = SubscriberFilters()
        try filters.add(AnalogFilterRequest(channels: .list([2, 0])), id: 1)
        let analysis = FrameAnalysis(request: AnalysisRequest(statistics: true), filters: filters)
        for frame in Self.frames(channels: 4, samples: 300, pieces: [100]) { try analysis.add(frame) }
        #expect(try analysis.finish()[0].channels.map(\.index) == [2, 0])
    }

    @Test func gapsInTheSampleStreamAreCounted() throws {
        var frames = Self.frames(channels: 1, samples: 400, pieces: [100])
        frames.remove(at: 2)  // drop samples 100..<200
        let analysis = FrameAnalysis(request: AnalysisRequest(statistics: true))
        for frame in frames { try analysis.add(frame) }
        let source = try analysis.finish()[0]
        #expect(source.discontinuities == 1 && source.channels[0].samples == 300)
    }

    @Test func measurementsUseTheFirstSamplesOnly() throws {
        // 50 Hz for the first 2000 samples, 120 Hz afterwards: a 2000-sample measurement sees only 50 Hz.
        let first = (0..<2000).map { sin(2 * Double.pi * 50 * Double($0) / 1000) }
        let then = (2000..<6000).map { sin(2 * Double.pi * 120 * Double($0) / 1000) }
        let analysis = FrameAnalysis(
            request: AnalysisRequest(measurements: [.tone]), sampleRate: 1000,
            measurementLength: 2000)
        try analysis.add(Frame(encoding: .analog(AnalogData(channels: [first])), sourceID: 1))
        try analysis.add(Frame(encoding: .analog(AnalogData(channels: [then], firstSample: 2000)), sourceID: 1))
        let channel = try analysis.finish()[0].channels[0]
        #expect(channel.samples == 6000)
        #expect(abs(try #require(channel.tone).frequency - 50) < 0.01)
    }

    @Test func spectrogramAndTransferStreamedEqualTheWholeRecord() throws {
        var request = AnalysisRequest()
        request.spectrogram = WelchConfiguration(segmentLength: 128)
        request.crossChannel = CrossChannelRequest(reference: 1, transfer: true, configuration: WelchConfiguration(segmentLength: 200))
        let analysis = FrameAnalysis(request: request)
        for frame in Self.frames(channels: 3, samples: 3000, pieces: [1, 777, 64]) { try analysis.add(frame) }
        let channels = try analysis.finish()[0].channels
        let reference = Self.signal(3000, channel: 1)
        for (c, report) in channels.enumerated() {
            let whole = Self.signal(3000, channel: c)
            let expected = try Spectrogram(whole, sampleRate: 1000, configuration: WelchConfiguration(segmentLength: 128, overlap: 16))
            let s = try #require(report.spectrogram)
            #expect(s.values == expected.values && s.times == expected.times)
            if c == 1 {
                #expect(report.crossChannel == nil)
                continue
            }
            let x = try #require(report.crossChannel)
            let h = try TransferEstimate(
                reference: reference, response: whole, sampleRate: 1000,
                configuration: .scipyDefaults(segmentLength: 200), estimator: .h2)
            #expect(x.reference == 1 && x.segmentLength == 200)
            #expect(x.h2 == h)
        }
        // A reference the source does not have, and a record past the limit, are errors that say so.
        request.crossChannel!.reference = 5
        let missing = FrameAnalysis(request: request)
        for frame in Self.frames(channels: 2, samples: 300, pieces: [100]) { try missing.add(frame) }
        #expect(throws: SpectralParameterError.self) { try missing.finish() }
        let limited = FrameAnalysis(request: request, measurementLength: 100, recordLimit: 200)
        #expect(throws: SpectralParameterError.self) {
            for frame in Self.frames(channels: 2, samples: 300, pieces: [100]) { try limited.add(frame) }
        }
    }

    @Test func missingRateIsAnError() throws {
        let analysis = FrameAnalysis(request: AnalysisRequest(statistics: true))
        #expect(throws: SpectralParameterError.self) {
            try analysis.add(Frame(encoding: .analog(AnalogData(channels: [[1, 2, 3]])), sourceID: 1))
        }
        let withRate = FrameAnalysis(request: AnalysisRequest(statistics: true), sampleRate: 10)
        try withRate.add(Frame(encoding: .analog(AnalogData(channels: [[1, 2, 3]])), sourceID: 1))
        #expect(try withRate.finish()[0].sampleRate == 10)
    }
}
