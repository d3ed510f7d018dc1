import Foundation
import Testing
import TributaryWire

@testable import TributaryCapture

/// A real recorder process (CaptureTorture, fsync after every chunk) is killed with SIGKILL while it
/// writes; every chunk it reported durable must be recovered exactly, and repair must give a valid file.
@Suite struct CaptureCrashTests {
    static var tortureBinary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("CaptureTorture").path
    }

    @Test func sigkillLosesAtMostTheChunkBeingWritten() throws {
        let binary = Self.tortureBinary
        #expect(FileManager.default.isExecutableFile(atPath: binary), "build CaptureTorture first: \(binary)")
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/crash.tcap"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        // Read "durable TYPE LAST_SEQUENCE OFFSET" lines until enough chunks are on disk, then kill.
        var text = ""
        var durable: [(sequence: UInt64, offset: Int)] = []
        let handle = pipe.fileHandleForReading
        while durable.count < 40 {
            let data = handle.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
            durable = text.split(separator: "\n").compactMap { line in
                let parts = line.split(separator: " ")
                guard parts.count == 4, parts[1] == "chunk", let s = UInt64(parts[2]), let o = Int(parts[3]) else { return nil }
                return (s, o)
            }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(durable.count >= 40)

        let partial = path + ".partial"
        let reader = try CaptureReader(path: partial)
        #expect(!reader.hasFooter && reader.wasRecovered)
        // At most the torn tail is damaged.
        #expect(reader.damage.count <= 1)
        if let torn = reader.damage.first { #expect(torn.offset > durable.map(\.offset).max()!) }
        let recoveredOffsets = Set(reader.index.map(\.offset))
        #expect(durable.allSatisfy { recoveredOffsets.contains($0.offset) })

        // Every recovered frame is exactly what the stream produced at its sequence number, and every
        // data frame (source 1) up to the last durable chunk's last sequence is there. (Gap notices are
        // source 0: their chunk may still have been open — the chunk being written — at the kill.)
        let stream = SyntheticStream(channels: 4, samplesPerFrame: 256, rate: 10_000, gapEvery: 97)
        var seen = Set<UInt64>()
        var mismatches = 0
        reader.forEachFrame { frame in
            seen.insert(frame.header.sequence)
            if frame.encodedBytes != stream.frame(Int(frame.header.sequence))?.encodedBytes { mismatches += 1 }
        }
        #expect(mismatches == 0)
        let lastDurable = durable.map(\.sequence).max()!
        let missing = (0...lastDurable).filter { !seen.contains($0) && stream.frame(Int($0))?.header.sourceID == 1 }
        #expect(missing.isEmpty, "\(missing.prefix(10))")

        let report = try CaptureRecovery.repair(input: partial, output: path)
        #expect(report.recordsKept == reader.index.count)
        let repaired = try CaptureReader(path: path)
        #expect(repaired.hasFooter && repaired.wasRepaired && repaired.damage.isEmpty)
        #expect(repaired.index.count == reader.index.count)
        #expect(framesBySource(repaired) == framesBySource(reader))
    }
}
