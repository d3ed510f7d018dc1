import Foundation
import Synchronization
import Testing
import TributaryDSP
import TributarySources
import TributaryWire

@testable import TributaryTransport

/// `serve --simulate`'s device, paced: each block is made ahead of its time and still goes out when its
/// last sample is acquired, in order and without a hole.
@Suite struct SimulatedDeviceSourceTests {
    /// Each analog block's first sample, sample count and timestamp, and when it arrived (wall clock).
    final class Arrivals: Observer, @unchecked Sendable {
        struct Block {
            var firstSample: UInt64
            var samples: Int
            var timestampNs: Int64
            var arrivedNs: Int64
        }
        private let blocks = Mutex<[Block]>([])
        var all: [Block] { blocks.withLock { $0 } }

        func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) {
            let block = Block(
                firstSample: data.firstSample, samples: data.sampleCount, timestampNs: header.timestampNs,
                arrivedNs: wallClockNanoseconds())
            blocks.withLock { $0.append(block) }
        }
    }

    @Test func pacedBlocksMadeAheadGoOutWhenTheirLastSampleIsAcquiredInOrder() throws {
        // 1 ms blocks, made half a block ahead and handed to the publisher with their due time.
        let spec = try SimulationSpec(parsing: "id=3,name=sim,rate=16000,channels=2,block=16,noise=0")
        let source = SimulatedDeviceSource(spec: spec)
        let publisher = try makePublisher(sources: [source])
        defer { publisher.stop() }
        let subject = try Subject()
        let arrivals = Arrivals()
        subject.register(arrivals)
        try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "paced")
        try subject.start()
        #expect(waitUntil { arrivals.all.count >= 120 })
        subject.close()
        let blocks = arrivals.all
        // No hole and no repeat: each block starts where the last one ended.
        for (previous, next) in zip(blocks, blocks.dropFirst()) {
            #expect(next.firstSample == previous.firstSample + UInt64(previous.samples))
            #expect(abs(next.timestampNs - previous.timestampNs - 1_000_000) <= 1)
        }
        // None arrives before its last sample's time (first sample + 1 ms; a clock-reading's slack).
        let early = blocks.filter { $0.arrivedNs < $0.timestampNs + 1_000_000 - 50_000 }
        #expect(early.isEmpty, "\(early.count) of \(blocks.count) blocks arrived before their time")
        let first = try #require(blocks.first), last = try #require(blocks.last)
        #expect(last.timestampNs - first.timestampNs >= 119_000_000)
    }
}
