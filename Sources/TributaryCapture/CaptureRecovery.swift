import Foundation
import TributaryWire

/// What `CaptureRecovery.repair` did.
public struct CaptureRepairReport: Sendable, Equatable {
    /// The capture written.
    public var output: String
    /// Chunk and gap records copied.
    public var recordsKept: Int
    /// Records or bytes left out, with their offsets in the input.
    public var damage: [CaptureDamage]
    /// True when the input already had a valid footer.
    public var inputHadFooter: Bool
}

/// Turns a crashed or damaged capture into a valid, footed one.
public enum CaptureRecovery {
    /// Copies every intact record of `input` (each chunk fully decoded to be sure) into a new capture
    /// with a seek-table footer flagged "repaired", written to a temporary file and renamed to `output`.
    /// - Parameters:
    ///   - input: the capture to repair (typically `NAME.partial` left by a crashed writer).
    ///   - output: where the repaired capture goes (may be `input` itself: it is replaced atomically).
    /// - Returns: what was kept and what was left out.
    /// - Throws: `CaptureError` when the input is not a capture or the output cannot be written.
    public static func repair(input: String, output: String) throws(CaptureError) -> CaptureRepairReport {
        let reader = try CaptureReader(path: input)
        let temporary = output + ".repair-\(getpid())"
        let fd = Foundation.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CaptureError(.io, file: temporary, "cannot create: \(String(cString: strerror(errno)))") }
        var ok = false
        defer {
            if !ok {
                Foundation.close(fd)
                unlink(temporary)
            }
        }
        var out = FileOutput(fd: fd, path: temporary)
        let original = reader.header
        let header = CaptureFileHeader(uuid: original?.uuid ?? UUID(),
                                       createdNs: original?.createdNs ?? Int64(Date().timeIntervalSince1970 * 1e9),
                                       writer: (original?.writer ?? "unknown") + " + tributary repair")
        try out.write(header.encoded())
        var entries: [IndexEntry] = []
        for entry in reader.index {
            if entry.envelope.type == .chunk {
                // A chunk is kept only if it decodes into valid frames; a failure is recorded in reader.damage.
                guard (try? reader.frames(of: entry)) != nil else { continue }
            } else {
                guard reader.verify(entry) else { continue }
            }
            guard let raw = reader.rawRecord(entry) else { continue }
            entries.append(IndexEntry(offset: out.offset, envelope: entry.envelope))
            try out.write(raw)
        }
        try CaptureWriter.writeFooter(entries, flags: 1, offset: out.offset, file: temporary) { (b) throws(CaptureError) in try out.write(b) }
        guard fdatasync(fd) == 0 else { throw CaptureError(.io, file: temporary, "fdatasync failed: \(String(cString: strerror(errno)))") }
        Foundation.close(fd)
        guard rename(temporary, output) == 0 else {
            unlink(temporary)
            ok = true
            throw CaptureError(.io, file: temporary, "cannot rename to \(output): \(String(cString: strerror(errno)))")
        }
        ok = true
        syncDirectory(of: output)
        return CaptureRepairReport(output: output, recordsKept: entries.count, damage: reader.damage, inputHadFooter: reader.hasFooter)
    }
}
