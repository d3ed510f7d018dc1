import Foundation

extension CaptureWriter {
    /// Records where a source came from (record type 7), in order with the chunks and gaps around it;
    /// `timeNs` (the recorder's wall clock, ns since 1970) goes into the envelope's times.
    /// - Throws: `CaptureError` when an earlier write failed.
    public func recordSourceOrigin(_ origin: CaptureSourceOrigin, timeNs: Int64) throws(CaptureError) {
        let payload = origin.payload
        let b = try takeBuilder(sourceID: origin.sourceID)
        b.encoded.reserve(payload.count)
        payload.withUnsafeBytes { b.encoded.base.copyMemory(from: $0.baseAddress!, byteCount: payload.count) }
        b.encoded.setCount(payload.count)
        b.prebuilt = RecordEnvelope(
            type: .sourceOrigin, codec: .none, sourceID: origin.sourceID, firstTimeNs: timeNs, lastTimeNs: timeNs,
            storedLength: UInt32(payload.count), contentLength: UInt32(payload.count), payloadCRC: CRC32C.checksum(b.encoded.bytes))
        try submit(b)
    }
}
