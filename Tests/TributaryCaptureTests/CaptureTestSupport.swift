import Foundation
import Testing
import TributaryCapture
import TributaryWire

/// A fresh temporary directory per test, removed by the caller.
func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "tributary-capture-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// The frames of the synthetic stream at positions 0..<count (lost positions left out).
func syntheticFrames(_ count: Int, stream: SyntheticStream = SyntheticStream(channels: 2, samplesPerFrame: 64, rate: 1000, gapEvery: 13))
    -> [Frame]
{
    (0..<count).compactMap { stream.frame($0) }
}

/// Records frames into `path` with small chunks so that a small file has many records.
@discardableResult
func record(
    _ frames: [Frame], to path: String, threads: Int = 2, close: Bool = true, maxChunkBytes: Int = 64 << 10,
    chunkDuration: Double = 0.2
) throws -> CaptureWriter {
    let writer = try CaptureWriter(
        path: path,
        options: CaptureWriterOptions(
            maxChunkDuration: chunkDuration, minChunkBytes: 0, maxChunkBytes: maxChunkBytes, compressionThreads: threads, fsync: .none,
            checkpointInterval: 0))
    for frame in frames { try writer.append(frame) }
    if close { try writer.close() } else { try writer.flush() }
    return writer
}

/// `syntheticFrames(count)` recorded by `record` into `name` in a fresh temporary directory, which
/// the caller removes: (the directory, the capture's path, the frames).
func recordSynthetic(_ count: Int, name: String = "a.tcap") throws -> (dir: String, path: String, frames: [Frame]) {
    let dir = temporaryDirectory()
    let path = dir + "/" + name
    let frames = syntheticFrames(count)
    try record(frames, to: path)
    return (dir, path, frames)
}

/// Overwrites the byte at `offset` of the capture at `path` (with 0x5A) and opens it again; `records`
/// checks the records the reader decodes (which is when it finds them damaged), then the reader must
/// report the record at `record` damaged and still yield every one of `frames`.
func expectDamagedRecordSkipped(
    _ path: String, byteAt offset: Int, inRecordAt record: Int, frames: [Frame],
    sourceLocation: SourceLocation = #_sourceLocation, records: (CaptureReader) -> Void
) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    try handle.seek(toOffset: UInt64(offset))
    try handle.write(contentsOf: Data([0x5A]))
    try handle.close()
    let reader = try CaptureReader(path: path)
    records(reader)
    #expect(reader.damage.contains { $0.offset == record }, sourceLocation: sourceLocation)
    #expect(framesBySource(reader) == bySource(frames), sourceLocation: sourceLocation)
}

/// Every frame a reader yields, grouped by source, as bytes.
func framesBySource(_ reader: CaptureReader) -> [UInt32: [[UInt8]]] {
    var result: [UInt32: [[UInt8]]] = [:]
    reader.forEachFrame { result[$0.header.sourceID, default: []].append($0.encodedBytes) }
    return result
}

func bySource(_ frames: [Frame]) -> [UInt32: [[UInt8]]] {
    var result: [UInt32: [[UInt8]]] = [:]
    for f in frames { result[f.header.sourceID, default: []].append(f.encodedBytes) }
    return result
}

/// Writes `frames` into a new capture at `path` with `options` and closes it; returns the writer (for
/// its counters).
@discardableResult
func writeCapture(_ frames: [Frame], to path: String, options: CaptureWriterOptions) throws -> CaptureWriter {
    let writer = try CaptureWriter(path: path, options: options)
    for f in frames { try writer.append(f) }
    _ = try writer.close()
    return writer
}

/// Reads the capture at `path`, expecting it undamaged and holding exactly `frames` (by source).
@discardableResult
func readIntact(_ path: String, holding frames: [Frame]) throws -> CaptureReader {
    let reader = try CaptureReader(path: path)
    #expect(reader.damage.isEmpty)
    #expect(framesBySource(reader) == bySource(frames))
    return reader
}

/// Writer options that write a checkpoint after (nearly) every record, with chunks of at most
/// `maxChunkDuration` seconds and 64 KiB.
func checkpointingEveryRecord(maxChunkDuration: Double) -> CaptureWriterOptions {
    CaptureWriterOptions(
        maxChunkDuration: maxChunkDuration, minChunkBytes: 0, maxChunkBytes: 64 << 10, compressionThreads: 1, fsync: .none,
        checkpointInterval: 1e-9)
}

/// A fresh temporary directory (the caller removes it) holding `name`: the first `count` frames of
/// the synthetic stream, recorded by `record`.
func recordedSyntheticCapture(_ count: Int, named name: String = "a.tcap") throws -> (dir: String, path: String) {
    let dir = temporaryDirectory()
    let path = dir + "/" + name
    try record(syntheticFrames(count), to: path)
    return (dir, path)
}
