import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

/// Reading a chunk without its samples (`frames(of:samples: false)`, `firstAnalogLayout`): the same
/// frames, headers, layouts and non-analog payloads as a full read, the sample matrices zero.
@Suite struct ChunkLayoutReadTests {
    @Test func framesWithoutSamplesKeepEverythingButTheSamples() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let frames = CodedCodecTests.adcFrames(6) + syntheticFrames(40)
        try writeCapture(frames, to: path, options: CaptureWriterOptions(compressionThreads: 1, fsync: .none, checkpointInterval: 0))
        let reader = try CaptureReader(path: path)
        var analogFrames = 0
        for entry in reader.index where entry.envelope.type == .chunk {
            let full = try reader.frames(of: entry), bare = try reader.frames(of: entry, samples: false)
            #expect(full.count == bare.count)
            for (f, b) in zip(full, bare) {
                #expect(f.header == b.header)
                guard f.header.kind == .analog else {
                    #expect(f.encodedBytes == b.encodedBytes)
                    continue
                }
                analogFrames += 1
                let fv = try f.analog(), bv = try b.analog()
                #expect(fv.channelIndexes == bv.channelIndexes && fv.format == bv.format && fv.sampleCount == bv.sampleCount)
                #expect((0..<fv.channelCount).allSatisfy { fv.scale($0) == bv.scale($0) && fv.offset($0) == bv.offset($0) })
                bv.withSampleBytes { #expect($0.allSatisfy { $0 == 0 }) }
            }
        }
        #expect(analogFrames > 0)
        // The first analog frame's layout, per source, without decoding samples.
        for source in Set(frames.map(\.header.sourceID)) {
            let first = frames.first { $0.header.sourceID == source && $0.header.kind == .analog }
            let layout = reader.firstAnalogLayout(source: source)
            #expect((first == nil) == (layout == nil))
            if let first, let layout { #expect(try first.analog().channelIndexes == layout.analog().channelIndexes) }
        }
        #expect(reader.damage.isEmpty)
    }

    /// The decoder reuses a chunk's frame buffer only once nothing holds it: frames kept from one
    /// chunk stay intact while the next chunks are decoded.
    @Test func keptFramesSurviveTheNextChunks() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tcap"
        let frames = CodedCodecTests.adcFrames(20)
        try record(frames, to: path, threads: 1, maxChunkBytes: 64 << 10)
        let reader = try CaptureReader(path: path)
        let chunks = reader.index.filter { $0.envelope.type == .chunk }
        #expect(chunks.count > 3)
        var kept: [Frame] = []
        for (n, entry) in chunks.enumerated() {
            let decoded = try reader.frames(of: entry)
            if n % 2 == 0 { kept += decoded }  // the odd chunks' frames are let go, so their buffers get reused
        }
        // What was recorded, chunk by chunk (frames of source 3 in order).
        var expected: [[UInt8]] = []
        var next = 0
        for (n, entry) in chunks.enumerated() {
            let count = Int(entry.envelope.frameCount)
            if n % 2 == 0 { expected += frames[next..<(next + count)].map(\.encodedBytes) }
            next += count
        }
        #expect(next == frames.count)
        #expect(kept.map(\.encodedBytes) == expected)
    }
}
