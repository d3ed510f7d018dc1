// The fuzz target (Fuzz/run.sh) compiles these files into one module together with TributaryWire.
#if canImport(TributaryWire)
    import TributaryWire
#endif

/// A source's configuration frame as received, with its sequence number and time: the payload of a
/// configuration record (docs/CAPTURE.md §6).
struct ConfigurationCopy: Sendable {
    var frame: [UInt8]
    var sequence: UInt64
    var timeNs: Int64
}

/// Frames of one source being gathered into a chunk: the frame bytes without analog sample matrices
/// ("structure") and one numeric stream per sample format, filled as frames arrive.
final class ChunkBuilder: @unchecked Sendable {
    // @unchecked Sendable: owned by one thread at a time (the recording thread, then the worker it is
    // handed to under the writer's lock); see ByteStorage.
    let structure = ByteStorage(capacity: 1 << 16)
    /// Sample matrices in frame order, indexed by `SampleFormat.rawValue - 1` (float64, float32, int16);
    /// the encoder regroups them per channel (`grouping`) when the chunk is sealed.
    let streams = [ByteStorage(), ByteStorage(), ByteStorage(), ByteStorage()]
    /// Every analog row of the chunk, in walk order, with its offset in `streams`.
    var grouping = StreamGrouping()
    /// Where each row of `grouping.rows` (same order) has its samples: in a frame buffer the chunk
    /// holds (`held`), or nil: copied into `streams` at the row's position.
    private(set) var rowSources: [UnsafeRawPointer?] = []
    /// Buffers of received frames whose samples the chunk points into instead of copying them (their
    /// bytes stay as they are while referenced: `FrameBuffer`); released once the chunk is regrouped.
    private var held: [FrameBuffer] = []
    /// Bytes of each format's samples, copied or held (index `SampleFormat.rawValue - 1`).
    private(set) var streamBytes = [0, 0, 0, 0]
    /// The record payload once encoded (reused, like the rest).
    let encoded = ByteStorage(capacity: 1 << 18)
    /// Set for records that need no compression (gap, checkpoint): the envelope to write with `encoded`.
    var prebuilt: RecordEnvelope?
    var sourceID: UInt32 = 0
    var frameCount: UInt32 = 0
    var firstSequence: UInt64 = 0
    var lastSequence: UInt64 = 0
    var firstTimeNs: Int64 = 0
    var lastTimeNs: Int64 = 0
    var sampleCount: UInt64 = 0
    var kindMask: UInt32 = 0
    /// Monotonic clock (ns) when the first frame arrived.
    var openedAt: UInt64 = 0
    /// The last configuration frame of the chunk, if it holds one (the writer repeats it in configuration records).
    var configuration: ConfigurationCopy?

    var isEmpty: Bool { frameCount == 0 }
    /// Bytes of frames gathered (what the chunk decodes to).
    var byteCount: Int { structure.count + streamBytes.reduce(0, +) }

    func reset(sourceID: UInt32) {
        self.sourceID = sourceID
        prebuilt = nil
        encoded.removeAll()
        structure.removeAll()
        for s in streams { s.removeAll() }
        grouping.reset()
        rowSources.removeAll(keepingCapacity: true)
        releaseHeld()
        for f in streamBytes.indices { streamBytes[f] = 0 }
        frameCount = 0
        sampleCount = 0
        kindMask = 0
        configuration = nil
    }

    /// Adds one whole frame (header and payload bytes, as on the wire).
    func append(_ frame: UnsafeRawBufferPointer, header: FrameHeader, now: UInt64) {
        let split = min(header.headerLength, frame.count)
        append(
            header: UnsafeRawBufferPointer(rebasing: frame[..<split]), payload: UnsafeRawBufferPointer(rebasing: frame[split...]),
            frameHeader: header, now: now)
    }

    /// The held frame buffers are no longer needed (the samples are regrouped, or the chunk is reset).
    func releaseHeld() {
        held.removeAll(keepingCapacity: true)
    }

    /// Appends a frame whose encoded header and payload lie apart (a received frame: libzmq delivers
    /// them as two parts), without joining them first: the bytes are copied once, into the chunk —
    /// or, given `buffer` (the buffer `payload` lies in), the samples are not copied at all: the chunk
    /// keeps the buffer and the encoder reads them from it when it regroups the rows.
    func append(
        header headerBytes: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, frameHeader header: FrameHeader,
        now: UInt64, keeping buffer: FrameBuffer? = nil
    ) {
        if frameCount == 0 {
            firstSequence = header.sequence
            firstTimeNs = header.timestampNs
            openedAt = now
        }
        frameCount += 1
        lastSequence = header.sequence
        lastTimeNs = header.timestampNs
        kindMask |= header.kind.rawValue < 32 ? 1 << UInt32(header.kind.rawValue) : 0
        if header.kind == .properties { kindMask |= CaptureKindMask.properties }
        structure.append(headerBytes)
        if let split = analogSplit(payload: payload, kind: header.kind, payloadLength: header.payloadLength) {
            let fields = RecordReader(payload)
            let samples = Int(fields.u32(at: 4))
            sampleCount &+= UInt64(samples)
            structure.append(UnsafeRawBufferPointer(rebasing: payload[..<split.start]))
            let f = Int(split.format.rawValue) - 1
            let stream = streams[f]
            let rowLength = samples * split.format.size
            let holds = buffer != nil && rowLength > 0 && split.count > 0
            if rowLength > 0 {
                let channels = split.count / rowLength
                let first = payload.baseAddress.map { $0 + split.start }
                for r in 0..<channels {
                    grouping.add(
                        format: split.format.rawValue, channel: fields.u32(at: 24 + 4 * r),
                        length: rowLength, position: stream.count + r * rowLength)
                    rowSources.append(holds ? first.map { $0 + r * rowLength } : nil)
                }
            }
            if holds, let buffer {
                held.append(buffer)
            } else {
                stream.append(UnsafeRawBufferPointer(rebasing: payload[split.start..<(split.start + split.count)]))
            }
            streamBytes[f] += split.count
            structure.append(UnsafeRawBufferPointer(rebasing: payload[(split.start + split.count)...]))
        } else {
            structure.append(payload)
        }
    }
}

/// Bits of a chunk's `kind_mask` (docs/CAPTURE.md §3): bit *k* for wire kind *k* below 32, and bit 0,
/// which no wire kind uses, for the properties extension kind (129).
public enum CaptureKindMask {
    /// Set when the chunk holds a properties frame (wire kind 129).
    public static let properties: UInt32 = 1
}
