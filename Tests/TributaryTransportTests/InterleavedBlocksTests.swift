import Dispatch
import Foundation
import Testing
import TributaryWire

@testable import TributarySources
@testable import TributaryTransport

/// The part of the pipe's and the sound card's sources that turns interleaved blocks into frames:
/// the sample formats, the sample clock, and the gap an overrun declares (which the file PCM of the
/// interop tests cannot provoke).
@Suite struct InterleavedBlocksTests {
    final class IdleWaker: HandOffWaker {
        func wake() {}
    }

    /// A sink whose publisher's hand-off queue nothing drains but the test.
    func sink(id: UInt32) -> (SourceSink, PublisherCore) {
        let configuration = PublisherConfiguration(endpoint: "tcp://127.0.0.1:0", apiKey: "k", handOffCapacity: 64)
        let core = PublisherCore(configuration: configuration, sources: [], inbox: DispatchQueue(label: "blocks-test"), onPackage: nil)
        core.handOff.setWaker(IdleWaker())
        return (SourceSink(publisher: core, sourceID: id, delivery: .live), core)
    }

    func drain(_ core: PublisherCore) -> [(header: FrameHeader, data: AnalogData)] {
        var items: [HandOffItem] = []
        core.handOff.drain(into: &items)
        return items.compactMap { item in
            guard case .analog(let view)? = try? item.frame.payload() else { return nil }
            return (item.frame.header, view.materialize())
        }
    }

    @Test func theClockPlacesBlocksContiguously() {
        var clock = SampleClock(rate: 1000)
        let t0: Int64 = 1_800_000_000_000_000_000
        let a = clock.place(rows: 100) { t0 }
        let b = clock.place(rows: 50) {
            Issue.record("the start is asked once"); return 0
        }
        let c = clock.place(rows: 10) { 0 }
        #expect(a.first == 0 && a.timeNs == t0)
        #expect(b.first == 100 && b.timeNs == t0 + 100_000_000)
        #expect(c.first == 150 && c.timeNs == t0 + 150_000_000)
        #expect(clock.nextSample == 160)
    }

    @Test func aRestartDeclaresTheSamplesLostSinceTheLastOne() {
        var clock = SampleClock(rate: 48_000)
        let t0: Int64 = 1_800_000_000_000_000_000
        _ = clock.place(rows: 4800) { t0 }  // samples 0..<4800, the next due at t0 + 100 ms
        // The capture restarted 25 ms late: 1200 samples lost.
        let lost = clock.restart(atNs: t0 + 125_000_000)
        #expect(lost == 1200)
        let next = clock.place(rows: 4800) { 0 }
        #expect(next.first == 6000 && next.timeNs == t0 + 125_000_000)
        let after = clock.place(rows: 10) { 0 }
        #expect(after.first == 10_800 && after.timeNs == t0 + 225_000_000)
    }

    @Test func aRestartAlwaysDeclaresAtLeastOneSample() {
        var clock = SampleClock(rate: 1000)
        let t0: Int64 = 1_800_000_000_000_000_000
        _ = clock.place(rows: 100) { t0 }
        // Clocks that disagree (the restart stamped before the next sample was due): still a gap.
        let lost = clock.restart(atNs: t0 + 50_000_000)
        #expect(lost == 1)
        let next = clock.place(rows: 1) { 0 }
        #expect(next.first == 101 && next.timeNs == t0 + 50_000_000)
        // A restart before anything was read loses nothing and anchors the clock.
        var fresh = SampleClock(rate: 1000)
        let none = fresh.restart(atNs: t0)
        #expect(none == 0)
        let first = fresh.place(rows: 1) { 0 }
        #expect(first.first == 0 && first.timeNs == t0)
    }

    @Test func anOverrunIsCountedAndJumpsTheFramesFirstSample() {
        let (sink, core) = sink(id: 7)
        let progress = ProgressRecord()
        var blocks = InterleavedBlocks(sourceID: 7, channels: 2, rate: 1000, encoding: .int16, scale: 0.5, offset: 1, progress: progress)
        let t0: Int64 = 1_800_000_000_000_000_000
        let bytes = [Int16](0..<200).withUnsafeBytes { Array($0) }  // 100 rows of 2 channels
        let published = bytes.withUnsafeBytes { raw in
            let a = blocks.publish(rows: 100, of: raw, to: sink, startNs: { t0 })
            let b = blocks.publish(rows: 40, of: raw, to: sink, startNs: { 0 })
            blocks.declareLoss(restartedAtNs: t0 + 200_000_000)  // 60 samples late
            let c = blocks.publish(rows: 100, of: raw, to: sink, startNs: { 0 })
            return [a, b, c]
        }
        #expect(published == [true, true, true])
        let frames = drain(core)
        #expect(frames.map(\.data.firstSample) == [0, 100, 200])
        #expect(frames.map(\.header.timestampNs) == [t0, t0 + 100_000_000, t0 + 200_000_000])
        #expect(frames.map(\.data.sampleCount) == [100, 40, 100])
        let state = progress.current
        #expect(state.overruns == 1 && state.samplesLost == 60 && state.samplesRead == 240 && state.framesPublished == 3)
        if case .int16(let counts, let scale, let offset) = frames[0].data.samples {
            #expect(scale == [0.5, 0.5] && offset == [1, 1])
            #expect(Array(counts[0..<3]) == [0, 2, 4] && Array(counts[100..<103]) == [1, 3, 5])
        } else {
            Issue.record("S16 is sent as int16 counts")
        }
    }

    @Test func countsOf24And32BitsBecomeInt32CountsWithTheirScale() {
        let (sink, core) = sink(id: 1)
        let words: [UInt32] = [0xA5_7F_FF_FF, 0x00_80_00_00, 0xFF_FF_FF_FF, 0x12_00_00_01]  // two rows of two channels
        for (encoding, expected) in [
            // 24-bit: the low three bytes, sign-extended (the high byte ignored).
            (InterleavedEncoding.int24In32, [[Int32(8_388_607), -1], [-8_388_608, 1]]),
            (.int32, [[Int32(bitPattern: 0xA5_7F_FF_FF), -1], [8_388_608, 0x12_00_00_01]]),
        ] {
            var blocks = InterleavedBlocks(
                sourceID: 1, channels: 2, rate: 10, encoding: encoding, scale: 0.25, offset: -2, progress: ProgressRecord())
            let published = words.withUnsafeBytes { blocks.publish(rows: 2, of: $0, to: sink, startNs: { 0 }) }
            #expect(published)
            let frame = drain(core)[0].data
            #expect(frame.samples == .int32(counts: expected.flatMap { $0 }, scale: [0.25, 0.25], offset: [-2, -2]))
        }
        var floats = InterleavedBlocks(
            sourceID: 1, channels: 2, rate: 10, encoding: .float32, scale: 1, offset: 0, progress: ProgressRecord())
        let values: [Float] = [1.5, -.infinity, -0.0, 3]
        let published = values.withUnsafeBytes { floats.publish(rows: 2, of: $0, to: sink, startNs: { 0 }) }
        #expect(published)
        if case .float32(let got) = drain(core)[0].data.samples {
            #expect(got.map(\.bitPattern) == [1.5, -0.0, -Float.infinity, 3].map(\.bitPattern))
        } else {
            Issue.record("FLOAT_LE is sent as float32")
        }
    }
}
