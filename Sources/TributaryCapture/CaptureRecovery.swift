import Foundation
import TributaryWire

/// What `CaptureRecovery.repair` did.
public struct CaptureRepairReport: Sendable, Equatable {
    /// The capture written.
    public var output: String
    /// Chunk, gap and configuration records copied.
    public var recordsKept: Int
    /// Records or bytes left out (damaged, or duplicates), with their offsets in the input.
    public var damage: [CaptureDamage]
    /// True when the input already had a valid footer.
    public var inputHadFooter: Bool
}

/// Turns a crashed or damaged capture into a valid, footed one.
public enum CaptureRecovery {
    /// Copies every intact record of `input` (each chunk fully decoded to be sure) into a new capture
    /// with a seek-table footer flagged "repaired", written to a temporary file and renamed to `output`.
    ///
    /// The input is scanned record by record from its header to its end, whatever its footer or
    /// checkpoints say: a valid footer that does not list a record (or lists it elsewhere) must not cost
    /// that record. Records are copied in file order; duplicates (docs/CAPTURE.md §7) are left out and
    /// reported.
    /// - Parameters:
    ///   - input: the capture to repair (typically `NAME.partial` left by a crashed writer).
    ///   - output: where the repaired capture goes (may be `input` itself, with `replace`: it is replaced
    ///     atomically once the repaired capture is complete).
    ///   - replace: allow replacing an existing `output` (`--force`); without it an existing output is refused.
    /// - Returns: what was kept and what was left out.
    /// - Throws: `CaptureError` when the input is not a capture or the output cannot (or may not) be written.
    public static func repair(input: String, output: String, replace: Bool = false) throws(CaptureError) -> CaptureRepairReport {
        let destination = try CaptureDestination(path: output, replace: replace, temporaryPath: output + ".repair-\(getpid())")
        let reader = try CaptureReader(path: input, scanAll: true)
        let fd = try destination.createTemporary()
        var ok = false
        defer {
            if !ok {
                Foundation.close(fd)
                destination.discardTemporary()
            }
        }
        var out = FileOutput(fd: fd, path: destination.temporaryPath)
        let original = reader.header
        let header = CaptureFileHeader(
            uuid: original?.uuid ?? UUID(),
            createdNs: original?.createdNs ?? Int64(Date().timeIntervalSince1970 * 1e9),
            writer: String((original?.writer ?? "unknown").prefix(200)) + " + tributary repair")
        try out.write(header.encoded())
        var entries: [IndexEntry] = []
        for entry in reader.index {
            switch entry.envelope.type {
            case .chunk:
                // A chunk is kept only if it decodes into valid frames; a failure is recorded in reader.damage.
                guard (try? reader.frames(of: entry)) != nil else { continue }
            case .configuration:
                guard reader.configurationFrame(entry) != nil else { continue }
            default:
                guard reader.verify(entry) else { continue }
            }
            guard let raw = reader.rawRecord(entry) else { continue }
            entries.append(IndexEntry(offset: out.offset, envelope: entry.envelope))
            try out.write(raw)
        }
        try CaptureWriter.writeFooter(entries, flags: 1, offset: out.offset, file: destination.temporaryPath) { (b) throws(CaptureError) in
            try out.write(b)
        }
        guard fdatasync(fd) == 0 else {
            throw CaptureError(.io, file: destination.temporaryPath, "fdatasync failed: \(String(cString: strerror(errno)))")
        }
        Foundation.close(fd)
        ok = true
        do { try destination.publish() } catch {
            destination.discardTemporary()
            throw error
        }
        return CaptureRepairReport(output: output, recordsKept: entries.count, damage: reader.damage, inputHadFooter: reader.hasFooter)
    }
}
