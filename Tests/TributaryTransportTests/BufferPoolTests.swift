import Testing
import TributaryWire

@testable import TributarySources

/// The push source's frame buffers at their bounds: a lossless push waits for a buffer in flight
/// (nil), a live push takes one the pool does not keep, and nothing is allocated beyond the pool
/// while a kept buffer could serve.
@Suite struct BufferPoolTests {
    /// Takes buffers of `size` bytes, holding each (as frames in flight do), until the pool refuses.
    func fill(_ pool: inout BufferPool, size: Int) -> [FrameBuffer] {
        var inFlight: [FrameBuffer] = []
        while let buffer = pool.take(holding: size, beyondBounds: false) {
            inFlight.append(buffer)
            if inFlight.count > BufferPool.maxBuffers { break }
        }
        return inFlight
    }

    @Test func aFullPoolMakesLosslessWaitAndLiveGoBeyond() {
        var pool = BufferPool()
        let size = 64 << 10
        var inFlight = fill(&pool, size: size)
        #expect(inFlight.count == BufferPool.maxBytes / size)
        #expect(pool.count == inFlight.count)
        #expect(pool.unkept == 0)
        // Every buffer in flight: lossless gets none, live gets one the pool does not keep.
        #expect(pool.take(holding: size, beyondBounds: false) == nil)
        let extra = pool.take(holding: size, beyondBounds: true)
        #expect(extra != nil && pool.unkept == 1 && pool.count == inFlight.count)
        #expect(!inFlight.contains { $0 === extra })
        // One frame let go of: its buffer serves the next push, lossless or live, without a new one.
        let released = ObjectIdentifier(inFlight.removeFirst())
        let again = pool.take(holding: size, beyondBounds: false)
        #expect(again.map(ObjectIdentifier.init) == released)
        #expect(pool.unkept == 1 && pool.count == inFlight.count + 1)
    }

    @Test func freeBuffersTooSmallMakeRoomForALargerFrame() {
        var pool = BufferPool()
        var small = fill(&pool, size: 64 << 10)
        #expect(pool.count == BufferPool.maxBytes / (64 << 10))
        small.removeAll()  // every frame gone: the buffers are free but too small for 1 MiB
        let large = pool.take(holding: 1 << 20, beyondBounds: false)
        #expect(large != nil && large!.writableCapacity >= 1 << 20)
        #expect(pool.unkept == 0)
        #expect(pool.count < BufferPool.maxBytes / (64 << 10))
    }

    @Test func aFrameLargerThanThePoolIsNotKeptButNeverRefused() {
        var pool = BufferPool()
        let huge = BufferPool.maxBytes + 1
        #expect(pool.take(holding: huge, beyondBounds: false) != nil)
        #expect(pool.unkept == 1 && pool.count == 0)
    }
}
