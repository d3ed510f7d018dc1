// Test helper for the crash-recovery test: records the SyntheticStream into a capture (fsync after
// every chunk) until it is killed, printing "durable LAST_SEQUENCE OFFSET" for each chunk once it is
// on disk, so the test knows exactly what must be recovered after SIGKILL.
import Foundation
import TributaryCapture

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: CaptureTorture PATH [FRAMES]\n".utf8))
    exit(2)
}
let limit = arguments.count >= 3 ? Int(arguments[2]) ?? Int.max : Int.max
let stream = SyntheticStream(channels: 4, samplesPerFrame: 256, rate: 10_000, gapEvery: 97)
let options = CaptureWriterOptions(
    maxChunkDuration: 0.1, maxChunkBytes: 64 << 10, compressionThreads: 2, fsync: .everyChunk,
    checkpointInterval: 0.2, writerName: "CaptureTorture")
do {
    let writer = try CaptureWriter(path: arguments[1], options: options)
    writer.onDurable = { entry in
        let line = "durable \(entry.envelope.type) \(entry.envelope.lastSequence) \(entry.offset)\n"
        FileHandle.standardOutput.write(Data(line.utf8))
    }
    var i = 0
    while i < limit {
        if let frame = stream.frame(i) { try writer.append(frame) }
        i += 1
        if i % 8 == 0 { usleep(500) }
    }
    try writer.close()
} catch {
    FileHandle.standardError.write(Data("CaptureTorture: \(error)\n".utf8))
    exit(1)
}
