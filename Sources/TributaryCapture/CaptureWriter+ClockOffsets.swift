import Foundation

extension CaptureWriter {
    /// Records a clock-offset estimate (record type 6), in order with the chunks and gaps around it.
    /// - Throws: `CaptureError` `.usage` for more than 65,535 source ids, or when an earlier write failed.
    public func recordClockOffset(_ estimate: CaptureClockOffset) throws(CaptureError) {
        guard estimate.sourceIDs.count <= CaptureClockOffset.maxSources else {
            throw CaptureError(.usage, file: path, "a clock offset names \(estimate.sourceIDs.count) sources; at most 65535")
        }
        let length = estimate.payloadLength
        let b = try takeBuilder(sourceID: 0)
        b.encoded.reserve(length)
        estimate.encode(into: UnsafeMutableRawBufferPointer(start: b.encoded.base, count: length))
        b.encoded.setCount(length)
        b.prebuilt = RecordEnvelope(
            type: .clockOffset, codec: .none, sourceID: 0, firstTimeNs: estimate.measuredAtNs, lastTimeNs: estimate.measuredAtNs,
            storedLength: UInt32(length), contentLength: UInt32(length), payloadCRC: CRC32C.checksum(b.encoded.bytes))
        try submit(b)
    }
}
