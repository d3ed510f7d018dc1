import Foundation

/// The walk over one numeric stream's samples in an indexed XDF file: the places the index recorded
/// (`XDFStream.valueExtents`), sample by sample, each checked against the file as it is now.
struct XDFSampleCursor {
    let mapped: MappedFile
    let extents: [XDFValueExtent]
    /// Bytes of one sample's values (channels × the format's size).
    let width: Int
    private var extent = 0
    /// The next sample's byte offset and how many samples are left in the current extent.
    private(set) var offset = 0
    private var left = 0

    /// Maps `path` to walk `stream`'s samples.
    /// - Throws: `FormatError` when the file cannot be mapped, or the stream holds strings, was not
    ///   indexed, or has more channels than a sample's size can count.
    init(path: String, stream: XDFStream) throws(FormatError) {
        guard let extents = stream.valueExtents, let size = stream.header.format.size else {
            throw FormatError(file: path, location: "", reason: "stream \(stream.header.streamID) has no indexed numeric values")
        }
        let (width, overflow) = stream.header.channelCount.multipliedReportingOverflow(by: size)
        guard !overflow else {
            throw FormatError(
                file: path, location: "", reason: "stream \(stream.header.streamID): \(stream.header.channelCount) channels are too many")
        }
        mapped = try MappedFile(path: path)
        self.extents = extents
        self.width = width
    }

    /// The next sample: the byte offset of its timestamp (nil when it has none) and of its values;
    /// nil after the last sample.
    /// - Throws: `FormatError` when the file no longer holds what the index found.
    mutating func next() throws(FormatError) -> (timestamp: Int?, values: Int)? {
        while left == 0 {
            guard extent < extents.count else { return nil }
            offset = extents[extent].offset
            left = extents[extent].count
            extent += 1
        }
        // A sample: its timestamp byte count (0 or 8), the timestamp, then its values.
        let bytes = mapped.bytes
        guard offset < bytes.count else { throw shrunk() }
        let stampBytes = Int(bytes[offset])
        guard stampBytes == 0 || stampBytes == 8 else { throw shrunk() }
        let values = offset + 1 + stampBytes
        guard values <= bytes.count - width else { throw shrunk() }
        let sample = (timestamp: stampBytes == 8 ? offset + 1 : nil, values: values)
        offset = values + width
        left -= 1
        return sample
    }

    /// The error of a sample (at `at`, or the next one) that is not what the index found.
    func shrunk(at: Int? = nil) -> FormatError {
        FormatError(file: mapped.path, location: "byte offset \(at ?? offset)", reason: "the file changed since it was indexed")
    }
}

extension XDFFile {
    /// The values of one numeric stream of an indexed XDF file (`XDFFile.index`), read in order a
    /// window at a time from the places the index recorded; the file's pages are given back as the
    /// reading passes them.
    public final class Values {
        private var cursor: XDFSampleCursor
        let format: XDFChannelFormat
        let channels: Int

        /// Maps `path` to read `stream`'s values (a stream of `XDFFile.index(path:)`).
        /// - Throws: `FormatError` when the file cannot be mapped, or the stream holds strings or was not indexed.
        public init(path: String, stream: XDFStream) throws(FormatError) {
            cursor = try XDFSampleCursor(path: path, stream: stream)
            format = stream.header.format
            channels = stream.header.channelCount
        }

        /// The next `count` samples of every channel (fewer at the end), channel-major: int8 / int16 as
        /// int16, float32 as float32, int32 as int32, int64 / double64 as float64, as `XDFFile.read` gives them.
        /// - Throws: `FormatError` when the file no longer holds what the index found.
        public func next(_ count: Int) throws(FormatError) -> XDFData {
            switch format {
            case .double64: return .float64(try window(count, Double.self) { $0 })
            case .int64: return .float64(try window(count, Int64.self) { Double($0) })
            case .float32: return .float32(try window(count, Float.self) { $0 })
            case .int32: return .int32(try window(count, Int32.self) { $0 })
            case .int16: return .int16(try window(count, Int16.self) { $0 })
            case .int8: return .int16(try window(count, Int8.self) { Int16($0) })
            case .string: return .strings([])
            }
        }

        private func window<T, U>(_ count: Int, _: T.Type, _ convert: (T) -> U) throws(FormatError) -> [U] {
            let size = MemoryLayout<T>.size
            var rows: [Int] = []  // byte offsets of the samples' values
            rows.reserveCapacity(max(0, min(count, 1 << 16)))
            while rows.count < count, let sample = try cursor.next() { rows.append(sample.values) }
            let bytes = cursor.mapped.bytes
            var out = [U]()
            out.reserveCapacity(rows.count * channels)
            for k in 0..<channels {
                for r in rows { out.append(convert(bytes.loadUnaligned(fromByteOffset: r + k * size, as: T.self))) }
            }
            if let last = rows.last { cursor.mapped.release(before: last) }
            return out
        }
    }

    /// The timestamps of one numeric stream of an indexed XDF file (`XDFFile.index`), read in order
    /// a window at a time from the places the index recorded (the values skipped): a stamped
    /// sample's own, an unstamped one's the previous one's + 1 / `nominal_srate`, as the index and
    /// `XDFFile.read` deduce them. The file's pages are given back as the reading passes them.
    public final class Timestamps {
        private var cursor: XDFSampleCursor
        let step: Double
        private var last: Double?

        /// Maps `path` to read `stream`'s timestamps (a stream of `XDFFile.index(path:)`).
        /// - Throws: `FormatError` when the file cannot be mapped, or the stream holds strings or was not indexed.
        public init(path: String, stream: XDFStream) throws(FormatError) {
            cursor = try XDFSampleCursor(path: path, stream: stream)
            step = stream.header.nominalRate > 0 ? 1 / stream.header.nominalRate : 0
        }

        /// The next `count` timestamps (fewer at the end) in seconds.
        /// - Throws: `FormatError` when the file no longer holds what the index found.
        public func next(_ count: Int) throws(FormatError) -> [Double] {
            var out: [Double] = []
            out.reserveCapacity(max(0, min(count, 1 << 16)))
            let bytes = cursor.mapped.bytes
            while out.count < count, let sample = try cursor.next() {
                var value = (last ?? 0) + step
                if let at = sample.timestamp {
                    value = Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)))
                    guard value.isFinite else { throw cursor.shrunk(at: at - 1) }
                }
                out.append(value)
                last = value
            }
            cursor.mapped.release(before: cursor.offset)
            return out
        }
    }
}
