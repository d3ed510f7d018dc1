import Foundation

// The fuzz target (Fuzz/run.sh) compiles these files into one module together with TributaryWire.
#if canImport(TributaryWire)
    import TributaryWire
#endif

/// How a reader finds its records: the footer's seek table, else the checkpoints, else a scan for
/// envelopes (a crashed or damaged file), and the envelopes and payloads read on the way.
extension CaptureReader {
    /// Reads the trailer and footer; false (with a damage note when there was one) if they are unusable.
    func loadFooter() -> Bool {
        let minimum = recordsStart + CaptureFormat.envelopeLength + 16 + CaptureFormat.trailerLength
        guard header != nil, fileSize >= minimum, fileSize & 7 == 0 else { return false }
        var trailer = [UInt8](repeating: 0, count: 16)
        guard trailer.withUnsafeMutableBytes({ preadFully(fd, $0, offset: fileSize - 16) }) == 16 else { return false }
        let (footerOffset, magic) = trailer.withUnsafeBytes { (RecordReader($0).u64(at: 0), RecordReader($0).u64(at: 8)) }
        guard magic == CaptureFormat.trailerMagic else { return false }
        func reject(_ reason: String) -> Bool {
            damage.append(
                CaptureDamage(offset: Int(clamping: footerOffset), length: nil, reason: "footer: \(reason); the file was scanned instead"))
            return false
        }
        guard footerOffset >= UInt64(recordsStart), footerOffset & 7 == 0,
            footerOffset + UInt64(CaptureFormat.envelopeLength + 16 + 16) <= UInt64(fileSize)
        else { return reject("offset \(footerOffset) is impossible") }
        let offset = Int(footerOffset)
        let envelope: RecordEnvelope
        do { envelope = try readEnvelope(at: offset) } catch { return reject("\(error)") }
        guard envelope.type == .footer, offset + envelope.recordLength + 16 == fileSize else {
            return reject("the record at the footer offset is not a footer ending at the trailer")
        }
        guard readPayload(envelope, at: offset, into: record) else { return reject("payload CRC32C mismatch") }
        let p = record.bytes
        guard p.count >= 16 else { return reject("payload too short") }
        let fields = RecordReader(p)
        let count = Int(fields.u32(at: 0))
        guard p.count == 16 + count * CaptureFormat.indexEntryLength else {
            return reject("entry_count \(count) does not fill the payload")
        }
        var entries: [IndexEntry] = []
        entries.reserveCapacity(count)
        var end = recordsStart
        for i in 0..<count {
            let e = CaptureFormat.indexEntryLength
            let bytes = UnsafeRawBufferPointer(rebasing: p[(16 + i * e)..<(16 + (i + 1) * e)])
            // Compared without adding to the entry's offset: a hostile one near Int.max would overflow.
            guard let entry = try? IndexEntry.parse(bytes), entry.offset >= end, entry.offset & 7 == 0,
                Self.isIndexed(entry.envelope.type), entry.offset <= offset,
                entry.envelope.recordLength <= offset - entry.offset
            else { return reject("entry \(i) is invalid") }
            end = entry.offset + entry.envelope.recordLength
            entries.append(entry)
        }
        index = entries
        hasFooter = true
        wasRepaired = fields.u32(at: 4) & 1 != 0
        return true
    }

    /// How far back from the end of the file the last checkpoint is looked for before falling back to
    /// a full scan: the writer checkpoints every 10 s by default, so the records after the last one are
    /// normally a few MiB; a file with no checkpoint at all then costs at most this much extra reading.
    static let checkpointSearchLimit = 128 << 20

    /// Builds the index of a capture without a footer from its checkpoint records (docs/CAPTURE.md §7,
    /// step 2): the last valid checkpoint is searched backwards from the end of the file, its chain is
    /// followed to the first one, and the entries must tile the file exactly from the header to the last
    /// checkpoint (each entry's record right behind the previous one, each checkpoint right behind its
    /// entries). Chunk envelopes and payloads are then verified when read, as with a footer.
    /// - Returns: the offset after the last checkpoint, where the caller scans on; nil (index untouched)
    ///   when there is no usable chain, and the whole file must be scanned.
    func loadCheckpoints() -> Int? {
        guard header != nil, let last = findLastCheckpoint() else { return nil }
        var chain = [last]
        while let previous = chain.last?.previous {
            // Offsets strictly decrease, so a corrupt chain cannot loop.
            guard previous >= recordsStart, previous < chain.last!.offset, let checkpoint = checkpoint(at: previous) else { return nil }
            chain.append(checkpoint)
        }
        var entries: [IndexEntry] = []
        var expected = recordsStart
        for checkpoint in chain.reversed() {
            for entry in checkpoint.entries {
                guard entry.offset == expected, Self.isIndexed(entry.envelope.type) else { return nil }
                expected += entry.envelope.recordLength
                entries.append(entry)
            }
            guard expected == checkpoint.offset else { return nil }
            expected = checkpoint.end
        }
        index = entries
        return expected
    }

    /// The valid checkpoint record at `offset` (envelope, payload CRC, table), or nil.
    func checkpoint(at offset: Int) -> CaptureCheckpoint? {
        guard offset & 7 == 0, let envelope = try? readEnvelope(at: offset), envelope.type == .checkpoint,
            offset + envelope.recordLength <= fileSize, readPayload(envelope, at: offset, into: record)
        else { return nil }
        let p = record.bytes
        let fields = RecordReader(p)
        guard p.count >= 16, fields.u32(at: 12) == 0 else { return nil }
        let count = Int(fields.u32(at: 8)), previous = fields.u64(at: 0)
        guard p.count == 16 + count * CaptureFormat.indexEntryLength, previous < UInt64(offset) else { return nil }
        var entries: [IndexEntry] = []
        entries.reserveCapacity(count)
        for i in 0..<count {
            let e = CaptureFormat.indexEntryLength
            guard let entry = try? IndexEntry.parse(UnsafeRawBufferPointer(rebasing: p[(16 + i * e)..<(16 + (i + 1) * e)])) else {
                return nil
            }
            entries.append(entry)
        }
        return CaptureCheckpoint(
            offset: offset, end: offset + envelope.recordLength, previous: previous == 0 ? nil : Int(previous), entries: entries)
    }

    /// The last valid checkpoint in the final `checkpointSearchLimit` bytes, searched backwards at
    /// 8-aligned offsets for the sync marker.
    func findLastCheckpoint() -> CaptureCheckpoint? {
        let window = 1 << 20, e = CaptureFormat.envelopeLength
        let floor = max(recordsStart, fileSize - Self.checkpointSearchLimit) & ~7
        var buffer = [UInt8](repeating: 0, count: window + e)
        var windowEnd = fileSize
        while windowEnd > floor {
            let windowStart = max(floor, (windowEnd - window) & ~7)
            let readLength = min(fileSize, windowEnd + e) - windowStart
            let n = buffer.withUnsafeMutableBytes {
                preadFully(fd, UnsafeMutableRawBufferPointer(rebasing: $0[..<readLength]), offset: windowStart)
            }
            guard n == readLength else { return nil }
            var candidates: [Int] = []
            buffer.withUnsafeBytes { bytes in
                let b = RecordReader(bytes)
                var i = (windowEnd - 1 - windowStart) & ~7
                while i >= 0 {
                    if i + e <= n, b.u64(at: i) == CaptureFormat.syncMarker, b.u8(at: i + 8) == RecordType.checkpoint.rawValue {
                        candidates.append(windowStart + i)
                    }
                    i -= 8
                }
            }
            for offset in candidates {
                if let found = checkpoint(at: offset) { return found }
            }
            windowEnd = windowStart
        }
        return nil
    }

    /// Rebuilds the index by reading every record from `start` (recovery of a file without a footer).
    func scan(from start: Int, to end: Int) {
        var position = start
        while position < end {
            if end - position < CaptureFormat.envelopeLength {
                damage.append(
                    CaptureDamage(
                        offset: position, length: end - position, reason: "torn tail: \(end - position) bytes shorter than an envelope"))
                return
            }
            let envelope: RecordEnvelope
            do {
                envelope = try readEnvelope(at: position)
            } catch {
                // Resynchronise at the next valid envelope, 8-aligned like every record.
                guard let next = findEnvelope(after: position, end: end) else {
                    damage.append(
                        CaptureDamage(offset: position, length: end - position, reason: "\(error); no valid record follows (torn tail)"))
                    return
                }
                damage.append(CaptureDamage(offset: position, length: next - position, reason: "\(error); skipped to the next record"))
                position = next
                continue
            }
            let length = envelope.recordLength
            guard position + length <= end else {
                damage.append(
                    CaptureDamage(
                        offset: position, length: end - position,
                        reason: "torn tail: the \(envelope.type) record needs \(length) bytes, \(end - position) present"))
                return
            }
            if envelope.type == .footer {
                position += length
                // Its trailer (a full scan of a footed file), or nothing: the writer died while closing.
                if end - position == CaptureFormat.trailerLength, isTrailer(at: position, footer: position - length) { return }
                continue
            }
            if !readPayload(envelope, at: position, into: record) {
                damage.append(CaptureDamage(offset: position, length: length, reason: "\(envelope.type) payload CRC32C mismatch"))
                damagedOffsets.insert(position)
            } else if Self.isIndexed(envelope.type) {
                index.append(IndexEntry(offset: position, envelope: envelope))
            }
            position += length
        }
    }

    /// Whether the 16 bytes at `offset` are a trailer pointing at the footer at `footer`.
    func isTrailer(at offset: Int, footer: Int) -> Bool {
        var trailer = (UInt64(0), UInt64(0))
        guard withUnsafeMutableBytes(of: &trailer, { preadFully(fd, $0, offset: offset) }) == 16 else { return false }
        let (pointer, magic) = withUnsafeBytes(of: trailer) { (RecordReader($0).u64(at: 0), RecordReader($0).u64(at: 8)) }
        return pointer == UInt64(footer) && magic == CaptureFormat.trailerMagic
    }

    /// The next 8-aligned offset after `position` where a valid envelope starts.
    func findEnvelope(after position: Int, end: Int) -> Int? {
        let window = 1 << 20
        var base = position + 8
        var buffer = [UInt8](repeating: 0, count: window + CaptureFormat.envelopeLength)
        while base + CaptureFormat.envelopeLength <= end {
            let n = buffer.withUnsafeMutableBytes {
                preadFully(fd, UnsafeMutableRawBufferPointer(rebasing: $0[..<min($0.count, end - base)]), offset: base)
            }
            guard n >= CaptureFormat.envelopeLength else { return nil }
            let found: Int? = buffer.withUnsafeBytes { b in
                var i = 0
                while i + CaptureFormat.envelopeLength <= n {
                    if RecordReader(b).u64(at: i) == CaptureFormat.syncMarker,
                        (try? RecordEnvelope.parse(UnsafeRawBufferPointer(rebasing: b[i..<(i + CaptureFormat.envelopeLength)]))) != nil
                    {
                        return base + i
                    }
                    i += 8
                }
                return nil
            }
            if let found { return found }
            base += window
        }
        return nil
    }

    func readEnvelope(at offset: Int) throws(RecordEnvelope.Problem) -> RecordEnvelope {
        var bytes = (
            UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0)
        )
        let n = withUnsafeMutableBytes(of: &bytes) { preadFully(fd, $0, offset: offset) }
        guard n == CaptureFormat.envelopeLength else { throw .noSyncMarker }
        let result: Result<RecordEnvelope, RecordEnvelope.Problem> = withUnsafeBytes(of: bytes) { b in
            do throws(RecordEnvelope.Problem) { return .success(try RecordEnvelope.parse(b)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Reads a record's payload into `record` and checks its CRC.
    func readPayload(_ envelope: RecordEnvelope, at offset: Int, into record: ByteStorage) -> Bool {
        let length = Int(envelope.storedLength)
        record.removeAll()
        record.reserve(length)
        let n = preadFully(
            fd, UnsafeMutableRawBufferPointer(start: record.base, count: length), offset: offset + CaptureFormat.envelopeLength)
        guard n == length else { return false }
        record.setCount(length)
        return CRC32C.checksum(record.bytes) == envelope.payloadCRC
    }
}

/// A checkpoint record's position and what it says (docs/CAPTURE.md).
struct CaptureCheckpoint {
    var offset: Int
    var end: Int
    var previous: Int?
    var entries: [IndexEntry]
}
