import Dispatch
import Foundation
import Testing
import TributaryWire

@testable import TributaryTransport

/// A lossless source of `count` ramp frames (4 channels × 16 float64), started by `go`.
final class LosslessRampSource: Source {
    let info = SourceInfo(id: 1, description: "lossless ramp")
    let configuration = Configuration(
        deviceName: "ramp", deviceType: "test",
        channels: (0..<4).map { ChannelConfiguration(index: UInt32($0), description: "ch\($0)", samplingRate: 1_000) })
    let delivery = SourceDelivery.lossless
    let count: Int
    let go = DispatchSemaphore(value: 0)
    init(count: Int) { self.count = count }

    func run(_ sink: SourceSink) {
        go.wait()
        for index in 0..<count where !sink.isCancelled {
            sink.publish(rampFrame(channels: 4, samples: 16, first: index * 16, sourceID: 1))
        }
    }
}

/// Lossless frames are never dropped for a full libzmq queue: a subscriber may grant more credit than
/// the publisher's per-subscriber queue (`subscriberQueueFrames`, libzmq's send high-water mark) holds.
/// The publisher then keeps the frame (and, for a filtered subscriber, the filter outputs not yet
/// queued) and sends it when the queue has room (docs/PROTOCOL.md §4.5).
@Suite struct LosslessQueueTests {
    @Test(arguments: [false, true])
    func creditBeyondThePublishersQueueLosesNothing(filtered: Bool) throws {
        let count = 3_000
        let source = LosslessRampSource(count: count)
        // A queue of 16 frames per subscriber against the Subject's window of 256 (1 KiB frames).
        let publisher = try makePublisher(sources: [source]) { $0.subscriberQueueFrames = 16 }
        defer { publisher.stop() }
        let (subject, recorder) = try recordingSubject()
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "big window")
        var local = SubscriberFilters()
        if filtered {
            // Two filters: every frame becomes two frames, the second of which may meet a full queue.
            let first = try AnalogFilterRequest(query: "1-2"), second = try AnalogFilterRequest(query: "3,0")
            #expect(try subject.sendFilter(first) == 1)
            #expect(try subject.sendFilter(second) == 2)
            try local.add(first, id: 1)
            try local.add(second, id: 2)
        }
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        source.go.signal()
        let expected = filtered ? 2 * count : count
        #expect(waitUntil(.seconds(30)) { recorder.analog.count == expected || !recorder.of("gap").isEmpty })
        #expect(recorder.of("gap").isEmpty)
        #expect(subject.statistics().framesMissing == 0 && subject.statistics().unaccountedLoss == 0)
        #expect(publisher.subscribers().first?.framesDropped == 0)
        let received = recorder.analog
        #expect(received.count == expected)
        var reference: [(UInt32, Package)] = []
        for index in 0..<count {
            try local.outputs(for: rampFrame(channels: 4, samples: 16, first: index * 16, sourceID: 1)) { out in
                reference.append((out.header.filterID, try out.payload().materialize()))
            }
        }
        // Compared as one Bool each: a mismatch of thousands of frames would print them all.
        let sameFilters = received.map(\.0.filterID) == reference.map(\.0)
        let sameData = received.map { Package.analog($0.1) } == reference.map(\.1)
        #expect(sameFilters && sameData, "the frames received differ from the source's (in order, through the filters)")
        #expect(waitUntil { publisher.losslessFramesPending == 0 })
        subject.close()
    }

    /// A subscriber whose window is larger than the publisher's queue, and which therefore sees a
    /// gap when a publisher that drops (an older one, or any loss) does: credit the gap announced as
    /// used, so that the replay does not stall waiting for frames that will never come.
    @Test func announcedLossCountsAsCreditUsed() {
        var window = CreditWindow(frames: 256, bytes: 8 << 20)
        window.granted(window.opened())
        for _ in 0..<10 { _ = window.received(size: 1_064) }
        #expect(window.outstanding == 246 && window.due == nil)
        // 200 frames announced missing: 46 outstanding, below half the window: a grant is due.
        #expect(window.missed(200) == 210)
        window.granted(210)
        #expect(window.outstanding == 256)
        // More than is outstanding: nothing below zero.
        #expect(window.missed(1_000) == 256)
    }
}
