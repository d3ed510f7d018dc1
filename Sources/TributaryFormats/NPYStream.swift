import Foundation

/// An NPY file opened for reading by windows of samples (`NPY.open`): its header is read and checked
/// as `NPY.read` checks it, its data is read a window at a time with pread(2), so memory holds one
/// window, never the file.
public final class NPYFile {
    public let path: String
    public let dtype: NPYDType
    public let channels: Int
    public let samplesPerChannel: Int
    public let isOneDimensional: Bool
    let fortranOrder: Bool
    let dataOffset: Int
    let file: FileRange

    /// Opens an NPY file: the preamble and header are read (at most what the file holds), the
    /// shape, dtype and data size checked.
    /// - Throws: `NPYError` naming the file and the problem, as `NPY.read` does.
    public init(path: String) throws {
        self.path = path
        do { file = try FileRange(path: path) } catch { throw NPYError(file: path, problem: .io(error.reason)) }
        func problem(_ p: NPYError.Problem) -> NPYError { NPYError(file: path, problem: p) }
        do {
            // The preamble says how long the header is: read that much (bounded by the file).
            let lead = try file.bytes(at: 0, count: 12)
            var length = lead.count
            if lead.count >= 10, lead[6] == 1 { length = 10 + (Int(lead[8]) | Int(lead[9]) << 8) }
            if lead.count >= 12, lead[6] == 2 || lead[6] == 3 {
                length = 12 + (Int(lead[8]) | Int(lead[9]) << 8 | Int(lead[10]) << 16 | Int(lead[11]) << 24)
            }
            let head = try file.bytes(at: 0, count: length)
            let header = try head.withUnsafeBytes { raw in try NPY.parsePreamble(raw) }
            let shape = header.shape
            switch shape.count {
            case 1: (channels, samplesPerChannel) = (1, shape[0])
            case 2: (channels, samplesPerChannel) = (shape[0], shape[1])
            default: throw problem(.unsupportedShape(shape))
            }
            let (elements, overflow1) = channels.multipliedReportingOverflow(by: samplesPerChannel)
            let (bytes, overflow2) = elements.multipliedReportingOverflow(by: header.dtype.size)
            guard !overflow1, !overflow2 else { throw problem(.unsupportedShape(shape)) }
            let available = file.size - header.dataOffset
            guard available >= bytes else {
                throw problem(.truncatedData(at: header.dataOffset, expected: bytes, available: available))
            }
            dtype = header.dtype
            fortranOrder = header.fortranOrder
            isOneDimensional = shape.count == 1
            dataOffset = header.dataOffset
        } catch var error as NPYError {
            error.file = path
            throw error
        } catch let error as FormatError {
            throw NPYError(file: path, problem: .io(error.reason))
        }
    }

    /// Samples `first ..< first + count` of every channel, channel-major (`count` per channel).
    /// - Throws: `NPYError` when the file cannot be read.
    public func read(first: Int, count: Int) throws -> NPYSamples {
        precondition(first >= 0 && count >= 0 && first + count <= samplesPerChannel)
        switch dtype {
        case .float64: return .float64(try window(UInt64.self, first, count).map { Double(bitPattern: UInt64(littleEndian: $0)) })
        case .float32: return .float32(try window(UInt32.self, first, count).map { Float(bitPattern: UInt32(littleEndian: $0)) })
        case .int16: return .int16(try window(Int16.self, first, count).map { Int16(littleEndian: $0) })
        case .int32: return .int32(try window(Int32.self, first, count).map { Int32(littleEndian: $0) })
        }
    }

    /// The window's elements as stored, channel-major: one range per channel (C order), or the
    /// samples-major rows of a Fortran-order 2-D array transposed.
    private func window<T>(_: T.Type, _ first: Int, _ count: Int) throws -> [T] {
        let size = MemoryLayout<T>.size, n = samplesPerChannel
        do {
            if channels == 1 || count == 0 { return try file.values(T.self, at: dataOffset + first * size, count: count * channels) }
            if fortranOrder && n > 1 {
                let rows = try file.values(T.self, at: dataOffset + first * channels * size, count: count * channels)
                return [T](unsafeUninitializedCapacity: rows.count) { out, initialized in
                    for c in 0..<channels { for s in 0..<count { out[c * count + s] = rows[s * channels + c] } }
                    initialized = rows.count
                }
            }
            var out: [T] = []
            out.reserveCapacity(channels * count)
            for c in 0..<channels { out += try file.values(T.self, at: dataOffset + (c * n + first) * size, count: count) }
            return out
        } catch {
            throw NPYError(file: path, problem: .io(error.reason))
        }
    }
}

extension NPY {
    /// Opens an NPY file for reading by windows (`NPYFile`).
    public static func open(path: String) throws -> NPYFile { try NPYFile(path: path) }

}
