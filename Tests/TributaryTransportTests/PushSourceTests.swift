import Dispatch
import Foundation
import Testing
import TributarySources
import TributaryWire

@testable import TributaryTransport

/// `PushSource` (the C and Python publishing API's source) against a hand-off queue that nothing
/// drains: what goes in, with which sample index and time, and what a full queue does to the stream.
@Suite struct PushSourceTests {
    /// A waker that does not wake: the test drains the queue itself.
    final class IdleWaker: HandOffWaker {
        func wake() {}
    }

    /// A publisher core whose hand-off queue holds `capacity` frames, a sink of `delivery`, and the
    /// source running on its thread.
    func running(_ spec: PushSourceSpec, capacity: Int) throws -> (PushSource, PublisherCore) {
        let configuration = PublisherConfiguration(endpoint: "tcp://127.0.0.1:0", apiKey: "k", handOffCapacity: capacity)
        let core = PublisherCore(configuration: configuration, sources: [], inbox: DispatchQueue(label: "push-test"), onPackage: nil)
        core.handOff.setWaker(IdleWaker())
        let source = try PushSource(spec: spec)
        let sink = SourceSink(publisher: core, sourceID: spec.id, delivery: spec.delivery)
        Thread { source.run(sink) }.start()
        return (source, core)
    }

    func spec(_ delivery: SourceDelivery, type: PushSourceSpec.SampleType = .float64) -> PushSourceSpec {
        PushSourceSpec(
            id: 3, name: "daq", rate: 1000, channelNames: ["a", "b"], unit: "V", sampleType: type,
            scale: type == .int16 ? 0.5 : 1, offset: type == .int16 ? -1 : 0, range: -10...10, delivery: delivery)
    }

    func drain(_ core: PublisherCore) -> [AnalogData] {
        var items: [HandOffItem] = []
        core.handOff.drain(into: &items)
        var frames: [AnalogData] = []
        for item in items {
            #expect(item.frame.header.sourceID == 3)
            if case .analog(let view)? = try? item.frame.payload() { frames.append(view.materialize()) } else { Issue.record("not analog") }
        }
        return frames
    }

    func times(_ core: PublisherCore) -> [Int64] {
        var items: [HandOffItem] = []
        core.handOff.drain(into: &items)
        return items.map(\.frame.header.timestampNs)
    }

    @Test func channelMajorAndInterleavedBlocksBecomeTheSameFrame() throws {
        let (source, core) = try running(spec(.live), capacity: 8)
        let channelMajor: [Double] = [1, 2, 3, 10, 20, 30]
        let interleaved: [Double] = [1, 10, 2, 20, 3, 30]
        for (values, layout) in [(channelMajor, PushSource.Layout.channelMajor), (interleaved, .interleaved)] {
            let outcome = try values.withUnsafeBytes {
                try source.push(
                    $0.baseAddress!, type: .float64, channels: 2, samplesPerChannel: 3, layout: layout,
                    firstSampleTimeNs: nil, timeoutNs: 0)
            }
            #expect(outcome == .sent)
        }
        let frames = drain(core)
        #expect(frames.count == 2)
        for (k, frame) in frames.enumerated() {
            #expect(frame.samples == .float64(channelMajor))
            #expect(frame.firstSample == UInt64(3 * k))
            #expect(frame.channelIndexes == [0, 1])
        }
        let counts: [Int16] = [-4, 0, 7, 100, -100, 32767]
        let (int16Source, int16Core) = try running(spec(.live, type: .int16), capacity: 8)
        _ = try counts.withUnsafeBytes {
            try int16Source.push(
                $0.baseAddress!, type: .int16, channels: 2, samplesPerChannel: 3, layout: .channelMajor,
                firstSampleTimeNs: nil, timeoutNs: 0)
        }
        #expect(drain(int16Core).first?.samples == .int16(counts: counts, scale: [0.5, 0.5], offset: [-1, -1]))
        source.close()
        int16Source.close()
    }

    /// Pushes write into buffers of the source's pool once the publisher let go of them: blocks of
    /// changing sizes, each taken (and its frame dropped) before the next, come out exact, in a
    /// couple of buffers rather than one each, and the bytes equal a new buffer's encoding.
    @Test func pushesReuseTheBuffersTheirFramesLetGo() throws {
        let (source, core) = try running(spec(.live, type: .int16), capacity: 8)
        // Weak references: they keep no buffer alive (or from the pool), so a buffer seen again is one
        // the pool kept, not a new one at a freed one's address.
        final class Seen { weak var buffer: FrameBuffer? }
        var seen: [Seen] = []
        var reused = 0
        var first: UInt64 = 0
        for k in 0..<200 {
            let samples = [7, 1, 64, 3, 5][k % 5]
            let counts = (0..<(2 * samples)).map { Int16(truncatingIfNeeded: k * 31 + $0 * 7) }
            let outcome = try counts.withUnsafeBytes {
                try source.push(
                    $0.baseAddress!, type: .int16, channels: 2, samplesPerChannel: samples, layout: .channelMajor,
                    firstSampleTimeNs: 1_000 + Int64(k), timeoutNs: 0)
            }
            #expect(outcome == .sent)
            var items: [HandOffItem] = []
            core.handOff.drain(into: &items)
            #expect(items.count == 1)
            guard let frame = items.first?.frame else { continue }
            if seen.contains(where: { $0.buffer === frame.buffer }) {
                reused += 1
            } else {
                let entry = Seen()
                entry.buffer = frame.buffer
                seen.append(entry)
            }
            let expected = AnalogData(
                channelIndexes: [0, 1], sampleCount: samples, firstSample: first,
                samples: .int16(counts: counts, scale: [0.5, 0.5], offset: [-1, -1]))
            #expect(frame.encodedBytes == Frame(encoding: .analog(expected), header: frame.header).encodedBytes)
            first += UInt64(samples)
        }
        // A 64-sample block needs a larger buffer than the first: a few buffers serve all 200 pushes.
        #expect(seen.count <= 3)
        #expect(reused >= 197)
        source.close()
    }

    /// Live: a full queue drops the block (counted) and the stream goes on after its samples, so the
    /// next block's index and time show the gap.
    @Test func aLiveDropIsAGapInTheStream() throws {
        let (source, core) = try running(spec(.live), capacity: 2)
        let block = [Double](repeating: 1, count: 2 * 100)
        func push(_ time: Int64?) throws -> PushOutcome {
            try block.withUnsafeBytes {
                try source.push(
                    $0.baseAddress!, type: .float64, channels: 2, samplesPerChannel: 100, layout: .channelMajor,
                    firstSampleTimeNs: time, timeoutNs: 0)
            }
        }
        let start: Int64 = 1_700_000_000_000_000_000
        #expect(try push(start) == .sent)
        #expect(try push(nil) == .sent)
        #expect(try push(nil) == .dropped)
        #expect(source.counts == (pushed: 2, dropped: 1))
        #expect(times(core) == [start, start + 100_000_000])
        #expect(try push(nil) == .sent)
        var items: [HandOffItem] = []
        core.handOff.drain(into: &items)
        guard case .analog(let view)? = try items.first?.frame.payload() else { Issue.record("no frame"); return }
        #expect(view.firstSample == 300)
        #expect(items.first?.frame.header.timestampNs == start + 300_000_000)
        // A time given later re-anchors the stream.
        #expect(try push(5_000) == .sent)
        #expect(try push(nil) == .sent)
        #expect(times(core) == [5_000, 5_000 + 100_000_000])
        source.close()
    }

    /// Lossless: no room within the timeout leaves the stream where it was (the block can be pushed again).
    @Test func aLosslessTimeoutSendsNothingAndKeepsThePlace() throws {
        let (source, core) = try running(spec(.lossless), capacity: 1)
        let block = [Double](repeating: 2, count: 2 * 10)
        func push(timeoutNs: UInt64) throws -> PushOutcome {
            try block.withUnsafeBytes {
                try source.push(
                    $0.baseAddress!, type: .float64, channels: 2, samplesPerChannel: 10, layout: .channelMajor,
                    firstSampleTimeNs: 0, timeoutNs: timeoutNs)
            }
        }
        #expect(try push(timeoutNs: 0) == .sent)
        let started = monotonicNanoseconds()
        #expect(try push(timeoutNs: 50_000_000) == .timedOut)
        #expect(monotonicNanoseconds() - started >= 50_000_000)
        #expect(source.counts == (pushed: 1, dropped: 0))
        #expect(drain(core).map(\.firstSample) == [0])
        #expect(try push(timeoutNs: 0) == .sent)
        #expect(drain(core).map(\.firstSample) == [10])
        source.close()
    }

    @Test func misuseIsAnErrorOfItsKind() throws {
        let (source, _) = try running(spec(.live), capacity: 4)
        let block = [Double](repeating: 0, count: 8)
        func push(type: PushSourceSpec.SampleType = .float64, channels: Int = 2, samples: Int = 4) -> PushSourceError.Kind? {
            do {
                _ = try block.withUnsafeBytes {
                    try source.push(
                        $0.baseAddress!, type: type, channels: channels, samplesPerChannel: samples, layout: .channelMajor,
                        firstSampleTimeNs: nil, timeoutNs: 0)
                }
                return nil
            } catch let error as PushSourceError {
                return error.kind
            } catch {
                Issue.record("unexpected \(error)")
                return nil
            }
        }
        #expect(push(type: .float32) == .type)
        #expect(push(channels: 3) == .channels)
        #expect(push(samples: 0) == .argument)
        #expect(push(samples: Int.max / 2) == .argument)
        #expect(push() == nil)
        source.close()
        #expect(push() == .closed)
        var bad = spec(.live)
        bad.rate = 0
        #expect(throws: PushSourceError.self) { try PushSource(spec: bad) }
        bad = spec(.live)
        bad.scale = 2
        #expect(throws: PushSourceError.self) { try PushSource(spec: bad) }
        bad = spec(.live, type: .int16)
        bad.scale = .nan
        #expect(throws: PushSourceError.self) { try PushSource(spec: bad) }
    }

    /// `Publisher.addSource`: a duplicate id is refused, as is any source once the publisher stopped.
    @Test func addSourceRefusesDuplicatesAndLateSources() throws {
        let publisher = try makePublisher()
        try publisher.addSource(PushSource(spec: spec(.live)))
        #expect(throws: PublisherError.self) { try publisher.addSource(PushSource(spec: spec(.lossless))) }
        publisher.stop(drain: .milliseconds(10))
        var other = spec(.live)
        other.id = 4
        do {
            try publisher.addSource(PushSource(spec: other))
            Issue.record("a source was added to a stopped publisher")
        } catch let error as PublisherError {
            #expect("\(error)".contains("stopped"))
        }
    }
}
