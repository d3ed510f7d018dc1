import Dispatch
import Foundation
import Synchronization
import Testing
import TributaryWire

@testable import TributaryTransport

/// The callback queue's bounds: items and bytes of frames, reading stopped when either is reached and
/// resumed when both have drained to half.
@Suite struct CallbackQueueTests {
    /// Holds every delivery until `release()`, counting what it was given.
    final class GateTarget: CallbackTarget, @unchecked Sendable {
        private let gate = DispatchSemaphore(value: 0)
        private let count = Mutex(0)
        var delivered: Int { count.withLock { $0 } }
        func deliver(_ event: SubjectEvent) {
            gate.wait()
            count.withLock { $0 += 1 }
        }
        func release(_ n: Int) { for _ in 0..<n { gate.signal() } }
    }

    private func package(payloadBytes: Int) -> SubjectEvent {
        var header = FrameHeader(kind: .analog)
        header.payloadLength = payloadBytes
        return .package(ReceivedPackage(header: header, content: .error(ErrorReport(.malformedFrame, "test"))))
    }

    @Test func bytesStopReadingBeforeItemsDoAndHalfResumes() throws {
        let queue = CallbackQueue(capacity: 100, byteCapacity: 1_000)
        let core = queue.core
        let target = GateTarget()
        let frame = FrameHeader(kind: .analog).headerLength + 260  // 300 bytes a package
        #expect(core.hasRoom)
        for _ in 0..<3 { core.enqueue(target, package(payloadBytes: 260)) }
        #expect(core.hasRoom)  // 900 bytes < 1 000
        core.enqueue(target, package(payloadBytes: 260))
        #expect(!core.hasRoom)  // 1 200 bytes: full by bytes with 4 of 100 items
        #expect(queue.statistics.queuedBytes == 4 * frame)
        let resumed = Mutex(false)
        core.whenDrained { resumed.withLock { $0 = true } }
        #expect(!resumed.withLock { $0 })
        // Events other than packages weigh nothing.
        core.enqueue(target, .ended)
        #expect(queue.statistics.queuedBytes == 4 * frame && queue.statistics.depth == 5)
        // Two delivered: 600 bytes left, above half (500): still waiting.
        target.release(2)
        #expect(waitUntil { target.delivered == 2 })
        #expect(waitUntil { queue.statistics.queuedBytes == 2 * frame })
        #expect(!resumed.withLock { $0 })
        #expect(!core.hasRoom || queue.statistics.queuedBytes < 1_000)
        // A third: 300 bytes, at most half of both bounds: resumed.
        target.release(1)
        #expect(waitUntil { resumed.withLock { $0 } })
        #expect(core.hasRoom)
        target.release(2)
        #expect(waitUntil { queue.statistics.depth == 0 })
        let statistics = queue.statistics
        #expect(statistics.queuedBytes == 0)
        #expect(statistics.maxQueuedBytes == 4 * frame)
        #expect(statistics.maxDepth == 5)
        #expect(statistics.fullEvents == 1)
    }

    @Test func aFrameLargerThanTheByteBoundStillPassesOneAtATime() throws {
        let queue = CallbackQueue(capacity: 8, byteCapacity: 100)
        let core = queue.core
        let target = GateTarget()
        #expect(core.hasRoom)
        core.enqueue(target, package(payloadBytes: 10_000))
        #expect(!core.hasRoom)
        let resumed = Mutex(false)
        core.whenDrained { resumed.withLock { $0 = true } }
        target.release(1)
        #expect(waitUntil { resumed.withLock { $0 } })
        #expect(core.hasRoom)
        #expect(queue.byteCapacity == 100 && queue.capacity == 8)
        // Bounds below their minimum are raised to it: 2 items, 1 byte.
        let tiny = CallbackQueue(capacity: 0, byteCapacity: 0)
        #expect(tiny.capacity == 2 && tiny.byteCapacity == 1)
    }

    /// A slow observer (10 ms a frame), 64 KiB frames: the queue never holds more than its byte bound and a frame, the
    /// Subject stops reading (full events), and every frame is delivered intact or announced missing.
    @Test func aSubjectHoldsNoMoreBytesThanItsQueueAllows() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        let byteCapacity = 512 << 10
        let subject = try Subject(callbackQueue: CallbackQueue(capacity: 1_024, byteCapacity: byteCapacity))
        final class SlowRecorder: Observer, @unchecked Sendable {
            let received = Mutex<[AnalogData]>([])
            func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) {
                usleep(10_000)
                let copy = data.materialize()
                received.withLock { $0.append(copy) }
            }
        }
        let recorder = SlowRecorder()
        subject.register(recorder)
        _ = try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "bytes", timeout: 5)
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        let frames = 80, samples = 4_096
        for index in 0..<frames {
            while !publisher.publish(rampFrame(channels: 2, samples: samples, first: index * samples)) { usleep(500) }
        }
        #expect(
            waitUntil(.seconds(20)) {
                recorder.received.withLock { $0.count } + Int(subject.statistics().framesMissing) == frames
            })
        let statistics = subject.statistics()
        #expect(statistics.unaccountedLoss == 0)
        let frameLength = rampFrame(channels: 2, samples: samples).header.frameLength
        #expect(
            statistics.callbackQueue.maxQueuedBytes <= byteCapacity + frameLength,
            "held \(statistics.callbackQueue.maxQueuedBytes) bytes, bound \(byteCapacity) + one frame")
        #expect(statistics.callbackQueue.maxDepth <= byteCapacity / frameLength + 1)
        #expect(statistics.callbackQueue.fullEvents > 0, "\(statistics)")
        for data in recorder.received.withLock({ $0 }) {
            let expected = try rampFrame(channels: 2, samples: samples, first: Int(data.firstSample)).payload().materialize()
            #expect(.analog(data) == expected)
        }
        subject.close()
    }
}
