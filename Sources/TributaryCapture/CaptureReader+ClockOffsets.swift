import Foundation

/// One clock-offset record (type 6, docs/CAPTURE.md §6): an estimate of a publisher's wall clock
/// against the recorder's, measured by the recorder's probes (docs/PROTOCOL.md §4.9).
public struct CaptureClockOffset: Sendable, Equatable {
    /// Publisher's clock minus the recorder's, in nanoseconds: a time stamped by the publisher minus
    /// `offsetNs` is the same instant on the recorder's clock.
    public var offsetNs: Int64
    /// Round-trip time of the probe the estimate comes from.
    public var rttNs: Int64
    /// When it was measured, on the recorder's wall clock (ns since 1970).
    public var measuredAtNs: Int64
    /// Probe replies the estimate was chosen from.
    public var samples: UInt32
    /// The sources it applies to (the publisher's); empty: every source of the capture.
    public var sourceIDs: [UInt32]
    /// File offset of the record (0 before it is written).
    public var offset: Int

    public init(offsetNs: Int64, rttNs: Int64, measuredAtNs: Int64, samples: UInt32, sourceIDs: [UInt32], offset: Int = 0) {
        self.offsetNs = offsetNs
        self.rttNs = rttNs
        self.measuredAtNs = measuredAtNs
        self.samples = samples
        self.sourceIDs = sourceIDs
        self.offset = offset
    }

    /// At most this many source ids in one record (PROTOCOL.md's limit on id lists).
    public static let maxSources = 65_535

    /// Whether the estimate applies to `source`.
    public func applies(to source: UInt32) -> Bool { sourceIDs.isEmpty || sourceIDs.contains(source) }

    /// Payload bytes: 32 + 4 per source id.
    var payloadLength: Int { 32 + 4 * sourceIDs.count }

    /// Writes the payload into `bytes` (`payloadLength` of them).
    func encode(into bytes: UnsafeMutableRawBufferPointer) {
        var w = RecordWriter(bytes)
        w.write(offsetNs)
        w.write(rttNs)
        w.write(measuredAtNs)
        w.write(samples)
        w.write(UInt32(sourceIDs.count))
        for id in sourceIDs { w.write(id) }
    }

    /// The record a payload holds, or nil when its length does not match its source count.
    static func decode(_ b: UnsafeRawBufferPointer, offset: Int) -> CaptureClockOffset? {
        let r = RecordReader(b)
        guard b.count >= 32 else { return nil }
        let count = Int(r.u32(at: 28))
        guard count <= maxSources, b.count == 32 + 4 * count else { return nil }
        return CaptureClockOffset(
            offsetNs: r.i64(at: 0), rttNs: r.i64(at: 8), measuredAtNs: r.i64(at: 16), samples: r.u32(at: 24),
            sourceIDs: (0..<count).map { r.u32(at: 32 + 4 * $0) }, offset: offset)
    }
}

extension CaptureReader {
    /// The clock-offset records, in file order. A damaged one (its envelope differs from the index, its
    /// CRC fails, or its payload is malformed) is added to `damage` and left out.
    public var clockOffsets: [CaptureClockOffset] {
        index.compactMap { entry -> CaptureClockOffset? in
            guard entry.envelope.type == .clockOffset else { return nil }
            guard (try? readEnvelope(at: entry.offset)) == entry.envelope, readPayload(entry.envelope, at: entry.offset, into: record),
                let offset = CaptureClockOffset.decode(record.bytes, offset: entry.offset)
            else {
                if damagedOffsets.insert(entry.offset).inserted {
                    damage.append(
                        CaptureDamage(offset: entry.offset, length: entry.envelope.recordLength, reason: "clock-offset record is damaged"))
                }
                return nil
            }
            return offset
        }
    }
}
