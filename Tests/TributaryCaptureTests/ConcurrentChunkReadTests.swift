import Foundation
import Testing
@testable import TributaryCapture
import TributaryWire

/// `forEachChunkConcurrently` delivers exactly what `frames(of:)` does, chunk by chunk, whatever the
/// thread count, and reports damaged chunks once, after the intact ones are delivered.
@Suite struct ConcurrentChunkReadTests {
    /// Frames delivered per chunk position, collected from worker threads.
    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var byPosition: [Int: [[UInt8]]] = [:]
        func add(_ position: Int, _ frames: [Frame]) {
            lock.lock(); defer { lock.unlock() }
            #expect(byPosition[position] == nil, "chunk \(position) delivered twice")
            byPosition[position] = frames.map(\.encodedBytes)
        }
        var all: [Int: [[UInt8]]] { lock.lock(); defer { lock.unlock() }; return byPosition }
    }

    @Test(arguments: [1, 2, 4, 16])
    func matchesTheSequentialReader(threads: Int) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        try record(syntheticFrames(300), to: path)
        let reader = try CaptureReader(path: path)
        let chunks = reader.index.filter { $0.envelope.type == .chunk }
        #expect(chunks.count > 4)
        let collected = Collected()
        try reader.forEachChunkConcurrently(chunks, threads: threads) { position, frames in collected.add(position, frames) }
        let expected = try Dictionary(uniqueKeysWithValues: chunks.enumerated().map { ($0.offset, try reader.frames(of: $0.element).map(\.encodedBytes)) })
        #expect(collected.all == expected)
        #expect(reader.damage.isEmpty)
    }

    @Test func aDamagedChunkIsThrownAfterTheIntactOnesAreDelivered() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        try record(syntheticFrames(300), to: path)
        let clean = try CaptureReader(path: path)
        let chunks = clean.index.filter { $0.envelope.type == .chunk }
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let victims = [chunks[1], chunks[3]]
        for victim in victims { bytes[victim.offset + 88 + Int(victim.envelope.storedLength) / 2] ^= 0x10 }
        let damaged = dir + "/damaged.tcap"
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        let reader = try CaptureReader(path: damaged)
        let collected = Collected()
        var thrown: CaptureError?
        do {
            try reader.forEachChunkConcurrently(reader.index.filter { $0.envelope.type == .chunk }, threads: 2) { position, frames in
                collected.add(position, frames)
            }
        } catch { thrown = error }
        #expect(thrown?.offset == chunks[1].offset, "\(String(describing: thrown))")
        #expect(Set(collected.all.keys) == Set(chunks.indices).subtracting([1, 3]))
        #expect(reader.damage.map(\.offset) == victims.map(\.offset))
    }
}
