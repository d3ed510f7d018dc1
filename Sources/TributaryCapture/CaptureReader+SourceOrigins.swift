import Foundation

// The fuzz target (Fuzz/run.sh) compiles these files into one module together with TributaryBytes.
#if canImport(TributaryBytes)
    import TributaryBytes
#endif

/// One source-origin record (type 7, docs/CAPTURE.md §6): where a source of a recording of several
/// publishers came from — the publisher (its address and name) and the publisher's own id for it.
public struct CaptureSourceOrigin: Sendable, Equatable {
    /// The source's id in the capture (its chunks', gaps' and configuration records' `source_id`).
    public var sourceID: UInt32
    /// The id the publisher gave the source (its welcome's and frames' `source_id`).
    public var publisherSourceID: UInt32
    /// The publisher's position (0, 1, …) among the addresses the recording was given.
    public var publisherIndex: UInt32
    /// The address the recorder connected to (`tcp://host:port`).
    public var address: String
    /// The publisher's own description of itself (its welcome's), possibly empty.
    public var publisher: String
    /// File offset of the record (0 before it is written).
    public var offset: Int

    public init(
        sourceID: UInt32, publisherSourceID: UInt32, publisherIndex: UInt32, address: String, publisher: String, offset: Int = 0
    ) {
        self.sourceID = sourceID
        self.publisherSourceID = publisherSourceID
        self.publisherIndex = publisherIndex
        self.address = address
        self.publisher = publisher
        self.offset = offset
    }

    /// The longest address or publisher name a record holds, in UTF-8 bytes (longer ones are cut
    /// at a character boundary when written).
    public static let maxTextBytes = 4096

    /// `text` as UTF-8, cut to at most `maxTextBytes` bytes without splitting a character.
    static func bounded(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            guard bytes.count + encoded.count <= maxTextBytes else { break }
            bytes += encoded
        }
        return bytes
    }

    /// The payload: 24 bytes of fields, the address and the publisher name.
    var payload: [UInt8] {
        let address = Self.bounded(self.address)
        let name = Self.bounded(publisher)
        var w = ByteWriter()
        w.write(sourceID)
        w.write(publisherSourceID)
        w.write(publisherIndex)
        w.write(UInt32(address.count))
        w.write(UInt32(name.count))
        w.write(UInt32(0))
        w.write(address)
        w.write(name)
        return w.bytes
    }

    /// The record a payload holds, or nil when it is malformed: shorter than 24 bytes, a reserved field
    /// not 0, text lengths over the limit or not adding up to the payload, text not UTF-8, or an id that
    /// differs from the envelope's `source_id`.
    static func decode(_ b: UnsafeRawBufferPointer, envelopeSourceID: UInt32, offset: Int) -> CaptureSourceOrigin? {
        let r = RecordReader(b)
        guard b.count >= 24, r.u32(at: 20) == 0, r.u32(at: 0) == envelopeSourceID else { return nil }
        let addressLength = Int(r.u32(at: 12))
        let nameLength = Int(r.u32(at: 16))
        guard addressLength <= maxTextBytes, nameLength <= maxTextBytes, b.count == 24 + addressLength + nameLength,
            let address = String(validating: b[24..<(24 + addressLength)], as: UTF8.self),
            let name = String(validating: b[(24 + addressLength)...], as: UTF8.self)
        else { return nil }
        return CaptureSourceOrigin(
            sourceID: r.u32(at: 0), publisherSourceID: r.u32(at: 4), publisherIndex: r.u32(at: 8), address: address, publisher: name,
            offset: offset)
    }
}

extension CaptureReader {
    /// The source-origin records, in file order, the first of each source id only (a later one of the
    /// same id is passed over). A damaged one (its envelope differs from the index, its CRC fails, or
    /// its payload is malformed) is added to `damage` and left out.
    public var sourceOrigins: [CaptureSourceOrigin] {
        var seen = Set<UInt32>()
        return index.compactMap { entry -> CaptureSourceOrigin? in
            guard entry.envelope.type == .sourceOrigin else { return nil }
            guard (try? readEnvelope(at: entry.offset)) == entry.envelope, readPayload(entry.envelope, at: entry.offset, into: record),
                let origin = CaptureSourceOrigin.decode(record.bytes, envelopeSourceID: entry.envelope.sourceID, offset: entry.offset)
            else {
                if damagedOffsets.insert(entry.offset).inserted {
                    damage.append(
                        CaptureDamage(offset: entry.offset, length: entry.envelope.recordLength, reason: "source-origin record is damaged"))
                }
                return nil
            }
            return seen.insert(origin.sourceID).inserted ? origin : nil
        }
    }

    /// The origin of `source` (nil: the capture does not say, as in a recording of one publisher).
    public func sourceOrigin(_ source: UInt32) -> CaptureSourceOrigin? {
        sourceOrigins.first { $0.sourceID == source }
    }
}
