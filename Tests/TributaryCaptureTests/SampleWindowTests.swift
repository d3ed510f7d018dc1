import Foundation
import Testing
import TributaryFormats
import TributaryWire

@testable import TributaryCapture
@testable import TributaryInterchange

/// `SampleWindow.read`, the one windowed read of a capture's samples (the C interface's and
/// `export`'s): any window of any rows, stored or physical, on any number of threads, with the
/// frames it read; bad rows, counts and buffers refused with their kind; damage reported.
@Suite struct SampleWindowTests {
    static let samples = 50_000
    static let scale = [0.5, 0.25], offset = [0.0, 1.0]
    static let counts = (0..<(2 * samples)).map { Int16(truncatingIfNeeded: $0 * 37 % 60_001 - 30_000) }

    /// An int16 capture of 2 channels × 50 000 samples, 1000 a frame, in chunks of at most 16 KiB.
    func withCapture(_ body: (_ dir: String, _ path: String) throws -> Void) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let signal = ImportedSignal(
            samples: .int16(counts: Self.counts, scale: Self.scale, offset: Self.offset), channelCount: 2,
            sampleCount: Self.samples)
        let path = dir + "/c.tcap"
        try CaptureImport.write(
            signal, rate: 1000, samplesPerFrame: 1000, to: path,
            options: CaptureWriterOptions(minChunkBytes: 0, maxChunkBytes: 16 << 10, fsync: .none))
        try body(dir, path)
    }

    func read<T>(
        _ window: SampleWindow, _: T.Type, rows: [Int]?, first: UInt64, count: Int, as values: SampleValues, threads: Int,
        blocks: Bool = false
    ) throws -> (values: [T], read: SampleWindowRead) {
        let rowCount = rows?.count ?? window.shape.channelCount
        var result: SampleWindowRead?
        var error: SampleReadError?
        let out = [T](unsafeUninitializedCapacity: max(0, rowCount * count)) { buffer, n in
            UnsafeMutableRawBufferPointer(buffer).initializeMemory(as: UInt8.self, repeating: 0)
            n = max(0, rowCount * count)
            do throws(SampleReadError) {
                result = try window.read(
                    rows: rows, first: first, count: count, as: values, into: UnsafeMutableRawBufferPointer(buffer),
                    threads: threads, blocks: blocks)
            } catch let e { error = e }
        }
        if let error { throw error }
        return (out, try #require(result))
    }

    @Test(arguments: [1, 2, 4])
    func readsAnyWindowOfAnyRows(threads: Int) throws {
        try withCapture { _, path in
            let reader = try CaptureReader(path: path)
            #expect(reader.index.filter { $0.envelope.type == .chunk }.count >= 8)
            let window = try SampleWindow(reader: reader, source: 1)
            #expect(window.shape.format == .int16 && window.shape.scale == Self.scale && window.shape.offset == Self.offset)
            let n = Self.samples
            let whole = try read(window, Int16.self, rows: nil, first: 0, count: n, as: .stored, threads: threads, blocks: true)
            #expect(whole.values == Self.counts && whole.read.samples == n)
            #expect(
                whole.read.blocks.count == 50
                    && whole.read.blocks.enumerated().allSatisfy {
                        $0.element.start == $0.offset * 1000 && $0.element.count == 1000
                            && $0.element.firstSample == UInt64($0.offset * 1000)
                    })
            // Rows in any order, repeated, a window across chunk boundaries, as physical values.
            let (first, count) = (12_345, 20_000)
            let part = try read(window, Double.self, rows: [1, 0, 1], first: UInt64(first), count: count, as: .physical, threads: threads)
            let expected = [1, 0, 1].flatMap { r in
                (first..<(first + count)).map { Double(Self.counts[r * n + $0]) * Self.scale[r] + Self.offset[r] }
            }
            #expect(part.values == expected && part.read.samples == count)
            // Past the end: the samples there are, the rest of the buffer untouched.
            let tail = try read(
                window, Int16.self, rows: [0], first: UInt64(n - 1000), count: 5000, as: .stored, threads: threads, blocks: true)
            #expect(tail.read.samples == 1000 && Array(tail.values[..<1000]) == Array(Self.counts[(n - 1000)..<n]))
            #expect(tail.values[1000...].allSatisfy { $0 == 0 })
            #expect(tail.read.blocks.map(\.start) == [n - 1000])
            let none = try read(window, Int16.self, rows: nil, first: UInt64(n), count: 10, as: .stored, threads: threads)
            #expect(none.read.samples == 0)
        }
    }

    @Test func refusesBadRowsCountsAndBuffers() throws {
        try withCapture { _, path in
            let window = try SampleWindow(reader: try CaptureReader(path: path), source: 1)
            func isRange(_ body: () throws -> Void) -> Bool {
                do { try body() } catch SampleReadError.range { return true } catch { return false }
                return false
            }
            #expect(isRange { _ = try read(window, Double.self, rows: [2], first: 0, count: 10, as: .physical, threads: 1) })
            #expect(isRange { _ = try read(window, Double.self, rows: [-1], first: 0, count: 10, as: .physical, threads: 1) })
            #expect(isRange { _ = try read(window, Double.self, rows: nil, first: 0, count: -1, as: .physical, threads: 1) })
            var small = [Double](repeating: 0, count: 10)
            let error = small.withUnsafeMutableBytes { buffer in
                Result { () throws(SampleReadError) in try window.read(first: 0, count: 10, as: .physical, into: buffer) }
            }
            #expect(throws: SampleReadError.buffer("the buffer has 80 bytes; 2 channels × 10 samples × 8 bytes need 160")) {
                try error.get()
            }
            #expect(throws: SampleReadError.self) { _ = try window.byteCount(rows: 2, samples: UInt64(Int.max), as: .stored, buffer: .max) }
            #expect(throws: SampleReadError.noAnalogData("source 9 has no analog data")) {
                _ = try SampleWindow(reader: try CaptureReader(path: path), source: 9)
            }
        }
    }

    @Test func reportsADamagedChunk() throws {
        try withCapture { dir, path in
            let chunks = try CaptureReader(path: path).index.filter { $0.envelope.type == .chunk && $0.envelope.sampleCount > 0 }
            let victim = chunks[chunks.count / 2]
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            bytes[victim.offset + 88 + Int(victim.envelope.storedLength) / 2] ^= 0x10
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let reader = try CaptureReader(path: path)
            let window = try SampleWindow(reader: reader, source: 1)
            #expect(throws: SampleReadError.self) {
                _ = try read(window, Int16.self, rows: nil, first: 0, count: Self.samples, as: .stored, threads: 2)
            }
            #expect(reader.damage.map(\.offset) == [victim.offset])
            // The window before the damaged chunk still reads.
            let before = try read(window, Int16.self, rows: [0], first: 0, count: 1000, as: .stored, threads: 2)
            #expect(before.values == Array(Self.counts[..<1000]))
        }
    }

    /// Export's gather through the window read gives what the frame-by-frame gather gives: samples,
    /// frames and layout, whole and from a window.
    @Test func exportsWindowReadMatchesTheFrameByFrameGather() throws {
        try withCapture { _, path in
            let reader = try CaptureReader(path: path)
            let entries = SourceSeries.analogEntries(reader, source: 1)
            let (kept, skipped) = try #require(SourceSeries.entries(entries, covering: 20_000..<30_000))
            #expect(skipped > 0)
            for (chunks, skip, channels) in [(entries, 0, nil), (kept, skipped, [UInt32(1)]), (kept, skipped, nil)]
                as [([IndexEntry], Int, [UInt32]?)]
            {
                let fast = try #require(
                    SourceSeries.windowRead(reader: reader, source: 1, channels: channels, entries: chunks, skipped: skip))
                let slow = try #require(try SourceSeries.gatherFrameByFrame(reader: reader, source: 1, channels: channels, entries: chunks))
                #expect(fast.samples == slow.samples && fast.blocks == slow.blocks && fast.total == slow.total)
                #expect(fast.rows == slow.rows && fast.scale == slow.scale && fast.offset == slow.offset && fast.indexes == slow.indexes)
            }
            #expect(SourceSeries.windowRead(reader: reader, source: 1, channels: [5], entries: entries, skipped: 0) == nil)
        }
    }
}
