import Foundation
import Testing
import TributaryDSP
import TributarySources
import TributaryTransport
import TributaryWire

/// The publisher's signal filter (DSPSignalFilters, docs/PROTOCOL.md §6.2) against `SignalChain`, the
/// stages of `tributary process`: any split of a stream into frames gives, joined, exactly the
/// chain's output of the whole stream; a gap restarts it at rest with first_sample ⌈f / q⌉.
@Suite struct SignalFilterTransformTests {
    static let rate = 1_000.0
    static let configuration = Configuration(
        deviceName: "dev", deviceType: "t",
        channels: (0..<2).map { ChannelConfiguration(index: UInt32($0), description: "c\($0)", samplingRate: rate) })

    static func frame(_ x: [[Double]], from start: Int, count: Int, firstSample: UInt64) -> Frame {
        let samples = x.flatMap { $0[start..<(start + count)] }
        let data = AnalogData(channelIndexes: [0, 1], sampleCount: count, firstSample: firstSample, samples: .float64(samples))
        return Frame(encoding: .analog(data), timestampNs: 1_000_000_000 + Int64(firstSample) * 1_000_000, sourceID: 1)
    }

    /// Runs `x` through a transform in frames of the given sizes, numbered from `firstSample`.
    static func run(
        _ transform: any SignalFrameTransform, _ x: [[Double]], sizes: [Int], firstSample: UInt64
    ) throws -> (values: [[Double]], frames: [AnalogView]) {
        var values: [[Double]] = [[], []]
        var frames: [AnalogView] = []
        var at = 0
        for size in sizes {
            let input = frame(x, from: at, count: size, firstSample: firstSample + UInt64(at))
            try transform.process(input, input.analog()) { out in
                let view = try! out.analog()
                frames.append(view)
                for c in 0..<2 { values[c] += view.values(channel: c) }
            }
            at += size
        }
        return (values, frames)
    }

    @Test func anySplitEqualsTheChainOfProcessOnTheWholeStream() throws {
        var generator = SystemRandomNumberGenerator()
        let n = 1_003
        var x: [[Double]] = [[], []]
        for c in 0..<2 {
            for i in 0..<n {
                let tone: Double = sin(Double(i) * 0.05 * Double(c + 1))
                x[c].append(tone + Double.random(in: -0.3...0.3, using: &generator))
            }
        }
        let request = SignalFilterRequest(sourceID: 1, decimate: 7, lowpassOrder: 4, lowpassCutoff: 100)
        let sections = try FilterDesign.iirSOS(order: 4, frequencies: [100], band: .lowpass, family: .butterworth, fs: Self.rate)
        var chain = try SignalChain(filter: sections, notch: nil, decimate: 7, channels: 2)
        let whole = (0..<2).map { chain.process(x[$0], channel: $0) }
        for _ in 0..<5 {
            var sizes: [Int] = []
            var left = n
            while left > 0 {
                let size = min(left, Int.random(in: 1...97, using: &generator))
                sizes.append(size)
                left -= size
            }
            let transform = try DSPSignalFilters().makeTransform(request, configuration: Self.configuration)
            let (values, frames) = try Self.run(transform, x, sizes: sizes, firstSample: 0)
            #expect(values == whole)
            // Numbered at the output rate from 0, contiguous.
            var next: UInt64 = 0
            for view in frames {
                #expect(view.firstSample == next)
                next += UInt64(view.sampleCount)
            }
        }
        let transform = try DSPSignalFilters().makeTransform(request, configuration: Self.configuration)
        #expect(transform.announced(Self.configuration).channels.allSatisfy { $0.samplingRate == 1_000.0 / 7 })
        // 5 × 2 sections of the low-pass, 5 × 4 of decimate's order-8 filter, per sample of 2 channels at 1 kS/s.
        #expect(transform.cost(Self.configuration) == 30 * 2 * Self.rate)
    }

    @Test func aGapRestartsTheFiltersAtRestAndNumbersFromTheNewStart() throws {
        let x = (0..<2).map { c in (0..<400).map { i in Double((i * (c + 3)) % 17) - 8 } }
        let request = SignalFilterRequest(sourceID: 1, decimate: 10)
        let transform = try DSPSignalFilters().makeTransform(request, configuration: Self.configuration)
        let first = try Self.run(transform, x, sizes: [150, 50], firstSample: 0)
        // The next frame starts at sample 1 005 instead of 200: a new segment.
        let second = try Self.run(transform, [Array(x[0][200...]), Array(x[1][200...])], sizes: [120, 80], firstSample: 1_005)
        var fresh = try DecimatorStream(q: 10, channels: 2)
        for c in 0..<2 { #expect(second.values[c] == fresh.process(Array(x[c][200...]), channel: c)) }
        #expect(first.frames.last.map { $0.firstSample + UInt64($0.sampleCount) } == 20)
        #expect(second.frames.first?.firstSample == 101)  // ⌈1005 / 10⌉
    }

    @Test func requestsTheSourceCannotTakeAreRefused() throws {
        #expect(throws: SignalFilterRefusal.self) {
            _ = try DSPSignalFilters().makeTransform(
                SignalFilterRequest(sourceID: 1, lowpassOrder: 2, lowpassCutoff: 500), configuration: Self.configuration)
        }
        var mixed = Self.configuration
        mixed.channels[1].samplingRate = 2_000
        #expect(throws: SignalFilterRefusal.self) {
            _ = try DSPSignalFilters().makeTransform(SignalFilterRequest(sourceID: 1, decimate: 4), configuration: mixed)
        }
    }
}
