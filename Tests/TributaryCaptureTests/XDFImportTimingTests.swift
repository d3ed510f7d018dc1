import Foundation
import Testing
import TributaryFormats
import TributaryWire

@testable import TributaryInterchange

/// XDF import: sample times follow the file's timestamps (docs/FORMATS.md, XDF import): a stream
/// whose timestamps drift from its nominal rate gets re-timed blocks whose `first_sample` counters
/// continue, a gap still makes its counter jump, and every sample's time is within the tolerance.
@Suite struct XDFImportTimingTests {
    let path = NSTemporaryDirectory() + "tributary-xdf-timing-\(UUID().uuidString).xdf"

    /// One float64 stream at a nominal 100 Hz stamped at 100 Hz × (1 − 0.5 %), every sample stamped,
    /// with a 3 s hole after sample 400; in memory (`XDFFile.read`) or indexed (`FormatImport.read`).
    func write() throws -> [Double] {
        let writer = try XDFWriter(path: path)
        try writer.streamHeader(XDFStreamHeader(streamID: 1, name: "s", type: "", channelCount: 2, nominalRate: 100, format: .double64))
        let n = 1000
        let stamps: [Double] = (0..<n).map { (s: Int) -> Double in
            let hole: Double = s >= 400 ? 3 : 0
            return 50 + Double(s) / 99.5 + hole
        }
        let values = (0..<(2 * n)).map(Double.init)
        try values.withUnsafeBufferPointer {
            try writer.samples(streamID: 1, values: $0, channels: 2, stride: n, start: 0, count: n, firstTimestamp: nil, timestamps: stamps)
        }
        try writer.close()
        return stamps
    }

    func check(_ source: ImportedSource, stamps: [Double]) throws {
        let tolerance = FormatImport.xdfTimeTolerance(rate: 100)
        #expect(tolerance == 0.0025)
        let blocks = source.blocks
        #expect(blocks.count > 2 && blocks[0].start == 0)
        // The hole is a gap; every other block re-times samples that follow on.
        #expect(blocks.filter { !$0.continues }.map(\.start) == [0, 400])
        for (k, b) in blocks.enumerated() {
            let end = k + 1 < blocks.count ? blocks[k + 1].start : stamps.count
            for s in b.start..<end {
                let t = Double(b.timestampNs) / 1e9 + Double(s - b.start) / source.rate
                #expect(abs(t - stamps[s]) <= tolerance + 1e-6, "sample \(s)")
            }
        }
        var counters: [(first: UInt64, count: Int)] = []
        try FormatImport.forEachFrame(source, samplesPerFrame: 64) { frame in
            guard frame.header.kind == .analog, let a = try? frame.analog() else { return }
            counters.append((a.firstSample, a.sampleCount))
        }
        #expect(counters.reduce(0) { $0 + $1.count } == stamps.count)
        // Contiguous counters except at the hole, where they jump by about 3 s of samples.
        var jumps: [UInt64] = []
        for (a, b) in zip(counters, counters.dropFirst()) where b.first != a.first + UInt64(a.count) {
            jumps.append(b.first - (a.first + UInt64(a.count)))
        }
        #expect(jumps.count == 1 && (jumps.first ?? 0) >= 300)
    }

    @Test func indexedStreamIsRetimedWhereItsTimestampsDrift() throws {
        defer { unlink(path) }
        let stamps = try write()
        let sources = try FormatImport.read(path: path)
        #expect(sources.count == 1)
        try check(sources[0], stamps: stamps)
    }

    @Test func streamInMemoryIsRetimedTheSameWay() throws {
        defer { unlink(path) }
        let stamps = try write()
        let indexed = try FormatImport.read(path: path)
        let sources = try FormatImport.sources(xdf: try XDFFile.read(path: path), file: path)
        try check(sources[0], stamps: stamps)
        #expect(sources[0].blocks == indexed[0].blocks)
    }

    /// A stream at its nominal 100 Hz (jitter ±0.2 ms, a gap after sample 300) whose clock offsets
    /// drift by `offsetSlope` seconds per second over its 10 s: the blocks an indexed import finds
    /// (from the index alone when nothing drifts) equal those of a pass over every timestamp.
    func paced(offsetSlope: Double) throws -> (indexed: [ImportedBlock], whole: [ImportedBlock]) {
        let writer = try XDFWriter(path: path)
        try writer.streamHeader(XDFStreamHeader(streamID: 1, name: "p", type: "", channelCount: 1, nominalRate: 100, format: .float32))
        let n = 1000
        let stamps: [Double] = (0..<n).map { (s: Int) -> Double in
            let jitter: Double = s % 3 == 0 ? 0.0002 : s % 3 == 1 ? -0.0002 : 0
            let hole: Double = s >= 300 ? 2 : 0
            return 1000 + Double(s) / 100 + jitter + hole
        }
        let values = [Float](repeating: 1, count: n)
        try values.withUnsafeBufferPointer {
            try writer.samples(streamID: 1, values: $0, channels: 1, stride: n, start: 0, count: n, firstTimestamp: nil, timestamps: stamps)
        }
        try writer.clockOffset(streamID: 1, collectionTime: 1000, offset: 0.5)
        try writer.clockOffset(streamID: 1, collectionTime: 1012, offset: 0.5 + 12 * offsetSlope)
        try writer.close()
        let indexed = try FormatImport.read(path: path)[0].blocks
        let whole = try FormatImport.sources(xdf: try XDFFile.read(path: path), file: path)[0].blocks
        return (indexed, whole)
    }

    @Test func pacedStreamKeepsItsRunsFromTheIndexAlone() throws {
        defer { unlink(path) }
        let (indexed, whole) = try paced(offsetSlope: 0)
        #expect(indexed == whole && indexed.map(\.start) == [0, 300] && !indexed.contains(where: \.continues))
        #expect(indexed[0].timestampNs == 1_000_500_200_000)
        // The index's bound on the runs' drift (0.4 ms, 1.25 ms below the 2.5 ms tolerance) leaves the timestamps unread.
        let stream = try XDFFile.index(path: path).streams[0]
        #expect(abs(stream.paceDrift - 0.0004) < 1e-9 && abs(stream.runSpan - 6.99) < 1e-9)
    }

    @Test func driftingClockOffsetsRetimeAPacedStream() throws {
        defer { unlink(path) }
        // 1 ms per second: 2.5 ms is reached after 2.5 s of a run.
        let (indexed, whole) = try paced(offsetSlope: 0.001)
        #expect(indexed == whole && indexed.count > 3 && indexed.filter { !$0.continues }.map(\.start) == [0, 300])
    }

    /// A 10 Hz stream whose recorder's clock reset after sample 100: its timestamps jump back from
    /// 1009.9 s to 200 s, its clock offsets' collection times go back and their values jump from
    /// 0.5 s to 810.5 s (two clock segments), so the corrected times run on from 1010.5 s. Samples
    /// stamped after 602 s are nearer the first segment's last collection time (1009 s) than the
    /// second's first (200 s): only a correction in the stream's order keeps them in the second.
    func writeReset() throws {
        let writer = try XDFWriter(path: path)
        try writer.streamHeader(XDFStreamHeader(streamID: 1, name: "r", type: "", channelCount: 1, nominalRate: 10, format: .float32))
        let n = 5100
        let stamps: [Double] = (0..<n).map { (s: Int) -> Double in
            let step = Double(s < 100 ? s : s - 100) / 10
            return s < 100 ? 1000 + step : 200 + step
        }
        let values = (0..<n).map { Float($0) }
        try values.withUnsafeBufferPointer {
            try writer.samples(streamID: 1, values: $0, channels: 1, stride: n, start: 0, count: n, firstTimestamp: nil, timestamps: stamps)
        }
        for (time, offset) in [(1000.0, 0.5), (1005, 0.5), (1009, 0.5), (200, 810.5), (450, 810.5), (699, 810.5)] {
            try writer.clockOffset(streamID: 1, collectionTime: time, offset: offset)
        }
        try writer.close()
    }

    @Test func streamWithAClockResetIsStreamedAndCorrectedInOrder() throws {
        defer { unlink(path) }
        try writeReset()
        let indexed = try FormatImport.read(path: path)
        let whole = try FormatImport.sources(xdf: try XDFFile.read(path: path), file: path)
        #expect(indexed.count == 1 && whole.count == 1)
        // Read a window at a time, not from memory.
        #expect(!(try indexed[0].samples.open() is MemorySampleReader))
        #expect(indexed[0].blocks == whole[0].blocks)
        #expect(
            whole[0].blocks == [
                ImportedBlock(start: 0, timestampNs: 1_000_500_000_000), ImportedBlock(start: 100, timestampNs: 1_010_500_000_000),
            ])
        var frames: [[[UInt8]]] = [[], []]
        for (k, source) in [indexed[0], whole[0]].enumerated() {
            try FormatImport.forEachFrame(source, samplesPerFrame: 1000) { frames[k].append($0.encodedBytes) }
        }
        #expect(frames[0].count == 7 && frames[0] == frames[1])
        // The timestamps read in windows of any size, splitting the stream anywhere (at the reset too), give the same blocks.
        let stream = try XDFFile.index(path: path).streams[0]
        let offsets = stream.clockOffsets
        #expect(stream.timestamps.isEmpty && XDFClockSync(times: offsets.map(\.time), values: offsets.map(\.value)).segmentCount == 2)
        for size in [1, 7, 64, 99, 100, 101, 5099, 1 << 16] {
            var sync = XDFClockSync(times: offsets.map(\.time), values: offsets.map(\.value))
            let blocks = try FormatImport.xdfPacedBlocks(stream, file: path, corrected: [], sync: &sync, what: "r", window: size)
            #expect(blocks == whole[0].blocks, "windows of \(size)")
        }
    }
}
