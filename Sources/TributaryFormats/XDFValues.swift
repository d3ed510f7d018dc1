import Foundation

extension XDFFile {
    /// The values of one numeric stream of an indexed XDF file (`XDFFile.index`), read in order a
    /// window at a time from the places the index recorded; the file's pages are given back as the
    /// reading passes them.
    public final class Values {
        let mapped: MappedFile
        let extents: [XDFValueExtent]
        let format: XDFChannelFormat
        let channels: Int
        private var extent = 0
        /// The next sample's byte offset and how many samples are left in the current extent.
        private var offset = 0
        private var left = 0

        /// Maps `path` to read `stream`'s values (a stream of `XDFFile.index(path:)`).
        /// - Throws: `FormatError` when the file cannot be mapped, or the stream holds strings or was not indexed.
        public init(path: String, stream: XDFStream) throws(FormatError) {
            guard let extents = stream.valueExtents, stream.header.format.size != nil else {
                throw FormatError(file: path, location: "", reason: "stream \(stream.header.streamID) has no indexed numeric values")
            }
            mapped = try MappedFile(path: path)
            self.extents = extents
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
            let size = MemoryLayout<T>.size, width = channels * size
            var rows: [(Int)] = []  // byte offsets of the samples' values
            rows.reserveCapacity(count)
            let bytes = mapped.bytes
            while rows.count < count {
                if left == 0 {
                    guard extent < extents.count else { break }
                    offset = extents[extent].offset
                    left = extents[extent].count
                    extent += 1
                    continue
                }
                // A sample: its timestamp byte count (0 or 8), the timestamp, then its values.
                guard offset < bytes.count else { throw shrunk() }
                let tb = Int(bytes[offset])
                guard tb == 0 || tb == 8 else { throw shrunk() }
                let at = offset + 1 + tb
                guard at + width <= bytes.count else { throw shrunk() }
                rows.append(at)
                offset = at + width
                left -= 1
            }
            let n = rows.count
            var out = [U]()
            out.reserveCapacity(n * channels)
            for k in 0..<channels {
                for r in rows { out.append(convert(bytes.loadUnaligned(fromByteOffset: r + k * size, as: T.self))) }
            }
            if let last = rows.last { mapped.release(before: last) }
            return out
        }

        private func shrunk() -> FormatError {
            FormatError(file: mapped.path, location: "byte offset \(offset)", reason: "the file changed since it was indexed")
        }
    }
}

extension XDFFile {
    /// The timestamps of one numeric stream of an indexed XDF file (`XDFFile.index`), read in order
    /// a window at a time from the places the index recorded (the values skipped): a stamped
    /// sample's own, an unstamped one's the previous one's + 1 / `nominal_srate`, as the index and
    /// `XDFFile.read` deduce them. The file's pages are given back as the reading passes them.
    public final class Timestamps {
        let mapped: MappedFile
        let extents: [XDFValueExtent]
        let width: Int
        let step: Double
        private var extent = 0
        private var offset = 0
        private var left = 0
        private var last: Double?

        /// Maps `path` to read `stream`'s timestamps (a stream of `XDFFile.index(path:)`).
        /// - Throws: `FormatError` when the file cannot be mapped, or the stream holds strings or was not indexed.
        public init(path: String, stream: XDFStream) throws(FormatError) {
            guard let extents = stream.valueExtents, let size = stream.header.format.size else {
                throw FormatError(file: path, location: "", reason: "stream \(stream.header.streamID) has no indexed numeric values")
            }
            let (width, overflow) = stream.header.channelCount.multipliedReportingOverflow(by: size)
            guard !overflow else {
                throw FormatError(
                    file: path, location: "",
                    reason: "stream \(stream.header.streamID): \(stream.header.channelCount) channels are too many")
            }
            mapped = try MappedFile(path: path)
            self.extents = extents
            self.width = width
            step = stream.header.nominalRate > 0 ? 1 / stream.header.nominalRate : 0
        }

        /// The next `count` timestamps (fewer at the end) in seconds.
        /// - Throws: `FormatError` when the file no longer holds what the index found.
        public func next(_ count: Int) throws(FormatError) -> [Double] {
            var out: [Double] = []
            out.reserveCapacity(max(0, min(count, 1 << 16)))
            let bytes = mapped.bytes
            while out.count < count {
                if left == 0 {
                    guard extent < extents.count else { break }
                    offset = extents[extent].offset
                    left = extents[extent].count
                    extent += 1
                    continue
                }
                guard offset < bytes.count else { throw shrunk() }
                let tb = Int(bytes[offset])
                let value: Double
                if tb == 8 {
                    guard offset + 9 <= bytes.count else { throw shrunk() }
                    value = Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: UInt64.self)))
                    guard value.isFinite else { throw shrunk() }
                } else if tb == 0 {
                    value = (last ?? 0) + step
                } else {
                    throw shrunk()
                }
                let end = offset + 1 + tb + width
                guard end <= bytes.count else { throw shrunk() }
                out.append(value)
                last = value
                offset = end
                left -= 1
            }
            mapped.release(before: offset)
            return out
        }

        private func shrunk() -> FormatError {
            FormatError(file: mapped.path, location: "byte offset \(offset)", reason: "the file changed since it was indexed")
        }
    }
}
