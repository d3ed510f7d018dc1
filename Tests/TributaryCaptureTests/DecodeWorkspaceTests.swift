import Foundation
import Synchronization
import Testing
import TributaryWire

@testable import TributaryCapture

/// Readers share their record buffers and chunk decoders through a `DecodeWorkspacePool`: a closed
/// reader's workspace serves the next reader, concurrent readers and decoding threads never share
/// one, the pool keeps no more than its capacity, and frames a closed reader handed out stay intact
/// while its workspace decodes for another reader.
@Suite struct DecodeWorkspaceTests {
    /// A capture of 300 synthetic frames (every kind) in small chunks, and its frames as read by a
    /// reader with a pool of its own.
    func withCapture(_ body: (_ path: String, _ expected: [UInt32: [[UInt8]]]) throws -> Void) throws {
        let (dir, path, frames) = try recordSynthetic(300)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let expected = framesBySource(try CaptureReader(path: path, pool: DecodeWorkspacePool()))
        #expect(expected == bySource(frames))
        try body(path, expected)
    }

    @Test func aClosedReadersWorkspaceServesTheNextReader() throws {
        try withCapture { path, expected in
            let pool = DecodeWorkspacePool(capacity: 2)
            var first: CaptureReader? = try CaptureReader(path: path, pool: pool)
            #expect(framesBySource(first!) == expected)
            #expect(pool.idleCount == 0)
            first = nil
            #expect(pool.idleCount == 1)
            let second = try CaptureReader(path: path, pool: pool)
            #expect(pool.idleCount == 0)
            #expect(framesBySource(second) == expected)
        }
    }

    @Test func concurrentReadersAndDecodingThreadsEachHaveTheirOwn() throws {
        try withCapture { path, expected in
            let pool = DecodeWorkspacePool(capacity: 3)
            let a = try CaptureReader(path: path, pool: pool)
            let b = try CaptureReader(path: path, pool: pool)
            #expect(a.workspaceIdentity != b.workspaceIdentity)
            // Up to four decoding threads: the reader's own workspace and up to three from the pool
            // (fewer when Dispatch runs the workers one after another), all given back when the
            // read is done.
            let chunks = a.index.filter { $0.envelope.type == .chunk }
            let seen = Mutex<[Int: [[UInt8]]]>([:])
            try a.forEachChunkConcurrently(chunks, threads: 4) { position, frames in
                seen.withLock { $0[position] = frames.map(\.encodedBytes) }
            }
            #expect(seen.withLock { $0.count } == chunks.count)
            #expect((1...3).contains(pool.idleCount))
            #expect(framesBySource(b) == expected)
            // Decoding ahead on threads in file order gives back its workspaces too.
            var inOrder: [[UInt8]] = []
            a.forEachFrame(threads: 3) { inOrder.append($0.encodedBytes) }
            #expect(inOrder.count == expected.values.reduce(0) { $0 + $1.count })
            #expect((1...3).contains(pool.idleCount))
        }
    }

    @Test func thePoolKeepsAtMostItsCapacityAndNoHugeWorkspace() throws {
        let pool = DecodeWorkspacePool(capacity: 2, largestKept: 8 << 20)
        let taken = try (0..<4).map { _ in try pool.take() }
        #expect(taken[0].retainedBytes < 8 << 20)
        for workspace in taken { pool.giveBack(workspace) }
        #expect(pool.idleCount == 2)
        let big = try pool.take()
        big.record.reserve(16 << 20)
        #expect(big.retainedBytes > 16 << 20)
        pool.giveBack(big)
        #expect(pool.idleCount == 1)
    }

    /// The decoder reuses its output buffer only when no frame of the last chunk is held: frames a
    /// closed reader handed out keep their bytes while its workspace decodes other chunks.
    @Test func framesOfAClosedReaderStayIntact() throws {
        try withCapture { path, expected in
            let pool = DecodeWorkspacePool(capacity: 1)
            var first: CaptureReader? = try CaptureReader(path: path, pool: pool)
            let chunks = first!.index.filter { $0.envelope.type == .chunk }
            let held = try first!.frames(of: chunks[0])
            let heldBytes = held.map(\.encodedBytes)
            first = nil
            let second = try CaptureReader(path: path, pool: pool)
            for chunk in chunks.dropFirst() { _ = try second.frames(of: chunk) }
            #expect(held.map(\.encodedBytes) == heldBytes)
            #expect(framesBySource(second) == expected)
        }
    }
}
