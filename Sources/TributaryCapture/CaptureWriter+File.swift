import CFileSync
import Foundation
import TributaryWire

/// The file side of the writer, always under `writeLock`: records, the seek table, checkpoints,
/// write-back and syncing, the footer.
extension CaptureWriter {
    /// Writes one record; `indexed` records go into the seek table and may be followed by a checkpoint
    /// (`checkpoint`: false for the configuration copies a checkpoint writes itself).
    func writeRecordLocked(
        _ envelope: RecordEnvelope, payload: UnsafeRawBufferPointer, indexed: Bool = true,
        checkpoint: Bool = true
    ) throws(CaptureError) {
        let offset = output.offset
        var head = [UInt8](repeating: 0, count: CaptureFormat.envelopeLength)
        head.withUnsafeMutableBytes { envelope.write(to: $0.baseAddress!) }
        let padding = pad8(payload.count) - payload.count
        do {
            try output.write(head)
            try output.write(payload)
            if padding > 0 {
                try output.write([UInt8](repeating: 0, count: padding))
            }
        } catch {
            // Cut the torn record off so the file stays a clean prefix (best effort: the reader copes anyway).
            _ = ftruncate(fd, off_t(goodOffset))
            output.reset(to: goodOffset)
            throw error
        }
        goodOffset = output.offset
        startWritebackLocked()
        requestBackgroundSyncLocked()
        guard indexed else { return }
        let entry = IndexEntry(offset: offset, envelope: envelope)
        index.append(entry)
        sinceCheckpoint.append(entry)
        unsynced.append(entry)
        indexedCount += 1
        try syncLocked(force: false)
        if checkpoint, options.checkpointInterval > 0,
            Double(DispatchTime.now().uptimeNanoseconds &- lastCheckpointTime) >= options.checkpointInterval * 1e9
        {
            try writeCheckpointLocked()
        }
    }

    /// Asks the kernel to start writing back what was written since the last request, once it is
    /// `writebackBytes` or more (fsync policies other than `.none`). Advisory: an error (a file
    /// system or file type where it does not apply) changes nothing; durability is fdatasync's.
    func startWritebackLocked() {
        guard options.fsync != .none, output.offset - writebackOffset >= Self.writebackBytes else { return }
        _ = tributary_start_writeback(fd, Int64(writebackOffset), Int64(output.offset - writebackOffset))
        writebackOffset = output.offset
        writebackRequests += 1
    }

    func syncLocked(force: Bool) throws(CaptureError) {
        let now = DispatchTime.now().uptimeNanoseconds
        let due: Bool
        switch options.fsync {
        case .none: due = false
        case .everyChunk: due = true
        case .interval(let seconds): due = force || Double(now &- lastSyncTime) >= seconds * 1e9
        }
        if due || (force && options.fsync != .none) {
            guard fdatasync(fd) == 0 else {
                throw CaptureError(.io, file: partialPath, offset: output.offset, "fdatasync failed: \(String(cString: strerror(errno)))")
            }
            lastSyncTime = now
        } else if options.fsync != .none {
            return
        }
        deliverDurableLocked(upTo: indexedCount)
    }

    func writeCheckpointLocked() throws(CaptureError) {
        lastCheckpointTime = DispatchTime.now().uptimeNanoseconds
        guard !sinceCheckpoint.isEmpty else { return }
        try writeConfigurationCopiesLocked(all: false)
        let payload = Self.encodeTable(
            sinceCheckpoint,
            prefix: { w in
                w.write(UInt64(lastCheckpointOffset))
                w.write(UInt32(sinceCheckpoint.count))
                w.write(UInt32(0))
            })
        let offset = output.offset
        let envelope = RecordEnvelope(
            type: .checkpoint, codec: .none, storedLength: UInt32(payload.count),
            contentLength: UInt32(payload.count), payloadCRC: CRC32C.checksum(payload))
        let failure: CaptureError? = payload.withUnsafeBytes { (p) -> CaptureError? in
            do throws(CaptureError) { try writeRecordLocked(envelope, payload: p, indexed: false); return nil } catch { return error }
        }
        if let failure { throw failure }
        lastCheckpointOffset = offset
        sinceCheckpoint.removeAll(keepingCapacity: true)
    }

    /// Writes a configuration record (type 5) with the latest configuration frame of each source that
    /// had a chunk written since the previous checkpoint (`all`: of every source), so that a source's
    /// configuration survives the loss of the chunk that holds it. Indexed like chunks and gaps.
    func writeConfigurationCopiesLocked(all: Bool) throws(CaptureError) {
        guard !configurations.isEmpty else { return }
        let recent =
            all ? Set(configurations.keys) : Set(sinceCheckpoint.lazy.filter { $0.envelope.type == .chunk }.map(\.envelope.sourceID))
        for sourceID in configurations.keys.sorted() where recent.contains(sourceID) {
            let copy = configurations[sourceID]!
            let envelope = RecordEnvelope(
                type: .configuration, codec: .none, sourceID: sourceID, firstSequence: copy.sequence,
                lastSequence: copy.sequence, firstTimeNs: copy.timeNs, lastTimeNs: copy.timeNs, frameCount: 1,
                kindMask: 1 << UInt32(FrameKind.configuration.rawValue), storedLength: UInt32(copy.frame.count),
                contentLength: UInt32(copy.frame.count), payloadCRC: CRC32C.checksum(copy.frame))
            let failure: CaptureError? = copy.frame.withUnsafeBytes { (p) -> CaptureError? in
                do throws(CaptureError) { try writeRecordLocked(envelope, payload: p, checkpoint: false); return nil } catch {
                    return error
                }
            }
            if let failure { throw failure }
        }
    }

    func writeFooterLocked(flags: UInt32) throws(CaptureError) {
        try Self.writeFooter(index, flags: flags, offset: output.offset, file: partialPath) { (bytes) throws(CaptureError) in
            try output.write(bytes)
        }
    }

    /// Encodes a 16-byte prefix (written by `prefix`) and the entries (checkpoint and footer payloads).
    static func encodeTable(_ entries: [IndexEntry], prefix: (inout RecordWriter) -> Void) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16 + entries.count * CaptureFormat.indexEntryLength)
        bytes.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress!
            var w = RecordWriter(UnsafeMutableRawBufferPointer(rebasing: raw[..<16]))
            prefix(&w)
            for (i, e) in entries.enumerated() { e.write(to: base + 16 + i * CaptureFormat.indexEntryLength) }
        }
        return bytes
    }

    /// Writes the footer record and the trailer through `write`, the footer starting at `offset`.
    static func writeFooter(
        _ entries: [IndexEntry], flags: UInt32, offset: Int, file: String,
        _ write: (UnsafeRawBufferPointer) throws(CaptureError) -> Void
    ) throws(CaptureError) {
        let payload = encodeTable(entries) { w in
            w.write(UInt32(entries.count))
            w.write(flags)
            w.write(UInt64(0))
        }
        guard payload.count <= CaptureFormat.maxRecordLength else {
            throw CaptureError(.usage, file: file, "the seek table of \(entries.count) records exceeds the record limit")
        }
        var bytes = [UInt8](repeating: 0, count: CaptureFormat.envelopeLength + pad8(payload.count) + CaptureFormat.trailerLength)
        bytes.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress!
            payload.withUnsafeBytes { p in
                RecordEnvelope(
                    type: .footer, codec: .none, storedLength: UInt32(p.count), contentLength: UInt32(p.count),
                    payloadCRC: CRC32C.checksum(p)
                ).write(to: base)
                (base + CaptureFormat.envelopeLength).copyMemory(from: p.baseAddress!, byteCount: p.count)
            }
            var w = RecordWriter(raw, position: raw.count - CaptureFormat.trailerLength)
            w.write(UInt64(offset))
            w.write(CaptureFormat.trailerMagic)
        }
        let failure: CaptureError? = bytes.withUnsafeBytes { (b) -> CaptureError? in
            do throws(CaptureError) { try write(b); return nil } catch { return error }
        }
        if let failure { throw failure }
    }
}
