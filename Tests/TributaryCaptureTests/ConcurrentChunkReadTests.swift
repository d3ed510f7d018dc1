import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

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

    /// A capture of 300 synthetic frames (every kind, float64, float32 and int16 analog) in small chunks.
    func withSyntheticCapture(_ body: (_ directory: String, _ path: String) throws -> Void) throws {
        let (dir, path) = try recordedSyntheticCapture(300)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try body(dir, path)
    }

    /// A copy of the capture at `path` with one byte flipped in the middle of each victim's payload.
    func damagedCopy(of path: String, in dir: String, victims: [IndexEntry]) throws -> String {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for victim in victims { bytes[victim.offset + 88 + Int(victim.envelope.storedLength) / 2] ^= 0x10 }
        let damaged = dir + "/damaged.tcap"
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        return damaged
    }

    @Test(arguments: [1, 2, 4, 16])
    func matchesTheSequentialReader(threads: Int) throws {
        try withSyntheticCapture { _, path in
            let reader = try CaptureReader(path: path)
            let chunks = reader.index.filter { $0.envelope.type == .chunk }
            #expect(chunks.count > 4)
            let collected = Collected()
            try reader.forEachChunkConcurrently(chunks, threads: threads) { position, frames in collected.add(position, frames) }
            let expected = try Dictionary(
                uniqueKeysWithValues: chunks.enumerated().map { ($0.offset, try reader.frames(of: $0.element).map(\.encodedBytes)) })
            #expect(collected.all == expected)
            #expect(reader.damage.isEmpty)
        }
    }

    /// What `forEachAnalogChunkConcurrently` hands out of each analog frame, as comparable values.
    struct AnalogSummary: Equatable {
        var sequence: UInt64, format: SampleFormat, indexes: [UInt32], scales: [Double], offsets: [Double], rows: [[UInt8]]
    }

    final class CollectedAnalog: @unchecked Sendable {
        private let lock = NSLock()
        private var byPosition: [Int: [AnalogSummary]] = [:]
        func add(_ position: Int, _ frames: [AnalogChunkFrame]) {
            let summaries = frames.map { f in
                AnalogSummary(
                    sequence: f.header.sequence, format: f.format, indexes: (0..<f.channelCount).map(f.channelIndex),
                    scales: (0..<f.channelCount).map(f.scale), offsets: (0..<f.channelCount).map(f.offset),
                    rows: (0..<f.channelCount).map {
                        [UInt8](UnsafeRawBufferPointer(start: f.samples(row: $0), count: f.sampleCount * f.format.size))
                    })
            }
            lock.lock(); defer { lock.unlock() }
            #expect(byPosition[position] == nil, "chunk \(position) delivered twice")
            byPosition[position] = summaries
        }
        var all: [Int: [AnalogSummary]] { lock.lock(); defer { lock.unlock() }; return byPosition }
    }

    /// The analog frames decoded without rebuilding the chunk's frames (the C interface's read) are
    /// those of the rebuilt frames: layouts, scales and every row's bytes, for float64, float32 and
    /// int16 frames among every other kind.
    @Test(arguments: [1, 2])
    func analogFramesMatchTheRebuiltFrames(threads: Int) throws {
        try withSyntheticCapture { _, path in try analogFramesMatch(path, threads: threads) }
    }

    private func analogFramesMatch(_ path: String, threads: Int) throws {
        let reader = try CaptureReader(path: path)
        let chunks = reader.index.filter { $0.envelope.type == .chunk }
        let collected = CollectedAnalog()
        try reader.forEachAnalogChunkConcurrently(chunks, threads: threads) { position, frames in collected.add(position, frames) }
        var formats = Set<SampleFormat>()
        var expected: [Int: [AnalogSummary]] = [:]
        for (position, chunk) in chunks.enumerated() {
            expected[position] = try reader.frames(of: chunk).compactMap { frame in
                guard frame.header.kind == .analog, let view = try? frame.analog(), view.channelCount * view.sampleCount > 0 else {
                    return nil
                }
                formats.insert(view.format)
                let rows: [[UInt8]] = (0..<view.channelCount).map { r in
                    switch view.format {
                    case .float64: view.withSamples(Double.self, channel: r) { [UInt8](UnsafeRawBufferPointer($0)) }
                    case .float32: view.withSamples(Float.self, channel: r) { [UInt8](UnsafeRawBufferPointer($0)) }
                    case .int16: view.withSamples(Int16.self, channel: r) { [UInt8](UnsafeRawBufferPointer($0)) }
                    case .int32: view.withSamples(Int32.self, channel: r) { [UInt8](UnsafeRawBufferPointer($0)) }
                    }
                }
                return AnalogSummary(
                    sequence: frame.header.sequence, format: view.format, indexes: view.channelIndexes,
                    scales: (0..<view.channelCount).map(view.scale), offsets: (0..<view.channelCount).map(view.offset), rows: rows)
            }
        }
        #expect(formats == [.float64, .float32, .int16])
        #expect(collected.all == expected)
        #expect(reader.damage.isEmpty)
    }

    /// Each chunk's samples per (format, channel), in frame order, as bytes.
    struct GroupKey: Hashable { var format: SampleFormat, channel: UInt32 }

    final class Groups: @unchecked Sendable {
        private let lock = NSLock()
        private var byPosition: [Int: [GroupKey: [UInt8]]] = [:]
        private var buffers: [Int: [GroupKey: UnsafeMutableRawBufferPointer]] = [:]
        func add(_ position: Int, _ frames: [AnalogChunkFrame]) {
            var groups: [GroupKey: [UInt8]] = [:]
            for f in frames {
                for k in 0..<f.channelCount {
                    groups[GroupKey(format: f.format, channel: f.channelIndex(k)), default: []] += UnsafeRawBufferPointer(
                        start: f.samples(row: k), count: f.sampleCount * f.format.size)
                }
            }
            lock.lock(); defer { lock.unlock() }
            byPosition[position] = groups
        }
        /// A buffer for each (format, channel) of the frames, sized for their samples.
        func allocate(_ position: Int, _ frames: [AnalogChunkFrame]) -> [GroupKey: UnsafeMutableRawPointer] {
            var sizes: [GroupKey: Int] = [:]
            for f in frames {
                for k in 0..<f.channelCount {
                    sizes[GroupKey(format: f.format, channel: f.channelIndex(k)), default: 0] += f.sampleCount * f.format.size
                }
            }
            let made = sizes.mapValues { UnsafeMutableRawBufferPointer.allocate(byteCount: $0, alignment: 16) }
            for buffer in made.values { buffer.initializeMemory(as: UInt8.self, repeating: 0xA5) }
            lock.lock(); defer { lock.unlock() }
            buffers[position] = made
            return made.mapValues { $0.baseAddress! }
        }
        var all: [Int: [GroupKey: [UInt8]]] {
            lock.lock(); defer { lock.unlock() }
            var result = byPosition
            for (position, groups) in buffers where result[position] == nil { result[position] = groups.mapValues { [UInt8]($0) } }
            return result
        }
        deinit { for groups in buffers.values { for buffer in groups.values { buffer.deallocate() } } }
    }

    /// Chunks decoded straight into the places a reader names (the C interface's read into the
    /// caller's array) hold exactly the samples the copying path hands out; a chunk with a channel
    /// left unplaced falls back to that path.
    @Test func directDecodingWritesEveryChannelWhereItIsPlaced() throws {
        try withSyntheticCapture { _, path in
            let reader = try CaptureReader(path: path)
            let chunks = reader.index.filter { $0.envelope.type == .chunk }
            let expected = Groups()
            try reader.forEachAnalogChunkConcurrently(chunks, threads: 2) { expected.add($0, $1) }
            let placed = Groups(), copied = Groups()
            try reader.forEachAnalogChunkConcurrently(
                chunks, threads: 2,
                direct: { position, frames in
                    guard !frames.isEmpty else { return nil }
                    let places = placed.allocate(position, frames)
                    // Every third chunk leaves one channel without a place: it must be copied instead.
                    let skipped = position % 3 == 0 ? GroupKey(format: frames[0].format, channel: frames[0].channelIndex(0)) : nil
                    return { format, channel in
                        let key = GroupKey(format: format, channel: channel)
                        return key == skipped ? nil : places[key]
                    }
                }
            ) { copied.add($0, $1) }
            // Chunks whose streams are not entropy coded (the encoder keeps the plain transforms when
            // they are smaller) are copied too.
            let copiedPositions = Set(copied.all.filter { !$0.value.isEmpty }.keys)
            let direct = placed.all.filter { !copiedPositions.contains($0.key) }
            #expect(direct.count > chunks.count / 3, "\(direct.count) of \(chunks.count) chunks decoded in place")
            #expect(copiedPositions.contains(where: { $0 % 3 == 0 }), "no chunk with an unplaced channel fell back")
            for (position, groups) in direct { #expect(groups == expected.all[position], "chunk \(position)") }
            for (position, groups) in copied.all { #expect(groups == expected.all[position], "chunk \(position)") }
            #expect(copiedPositions.union(direct.keys) == Set(expected.all.filter { !$0.value.isEmpty }.keys))
        }
    }

    @Test func aDamagedChunkIsReportedByTheAnalogReaderToo() throws {
        try withSyntheticCapture { dir, path in
            let chunks = try CaptureReader(path: path).index.filter { $0.envelope.type == .chunk }
            let reader = try CaptureReader(path: try damagedCopy(of: path, in: dir, victims: [chunks[2]]))
            let collected = CollectedAnalog()
            var thrown: CaptureError?
            do {
                try reader.forEachAnalogChunkConcurrently(reader.index.filter { $0.envelope.type == .chunk }, threads: 2) {
                    collected.add($0, $1)
                }
            } catch let error as CaptureError { thrown = error }
            #expect(thrown?.offset == chunks[2].offset, "\(String(describing: thrown))")
            #expect(Set(collected.all.keys) == Set(chunks.indices).subtracting([2]))
            #expect(reader.damage.map(\.offset) == [chunks[2].offset])
        }
    }

    @Test func aDamagedChunkIsThrownAfterTheIntactOnesAreDelivered() throws {
        try withSyntheticCapture { dir, path in
            let chunks = try CaptureReader(path: path).index.filter { $0.envelope.type == .chunk }
            let victims = [chunks[1], chunks[3]]
            let reader = try CaptureReader(path: try damagedCopy(of: path, in: dir, victims: victims))
            let collected = Collected()
            var thrown: CaptureError?
            do {
                try reader.forEachChunkConcurrently(reader.index.filter { $0.envelope.type == .chunk }, threads: 2) { position, frames in
                    collected.add(position, frames)
                }
            } catch let error as CaptureError { thrown = error }
            #expect(thrown?.offset == chunks[1].offset, "\(String(describing: thrown))")
            #expect(Set(collected.all.keys) == Set(chunks.indices).subtracting([1, 3]))
            #expect(reader.damage.map(\.offset) == victims.map(\.offset))
        }
    }
}
