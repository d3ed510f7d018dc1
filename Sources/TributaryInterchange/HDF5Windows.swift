import CHDF5
import Foundation
import TributaryWire

/// A numeric dataset's shape and the type its values are read as (`readNumbers`'s choice).
struct HDF5NumericShape {
    enum Kind {
        case float64, float32, int16, int32
        /// Bytes a value takes in memory.
        var memorySize: Int {
            switch self {
            case .int16: 2
            case .int32, .float32: 4
            case .float64: 8
            }
        }
    }
    var dims: [Int]
    var kind: Kind
    /// The samples (last dimension) of a stored chunk, nil when the dataset is not chunked.
    var chunkSamples: Int?
}

extension HDF5Object {
    /// A numeric dataset's dimensions and the type its values are read as: int16 and int32 kept,
    /// float32 as float32, other integers and floats as float64; nil for other datasets.
    func numericType() -> (shape: [hsize_t], kind: HDF5NumericShape.Kind)? {
        let s = H5Dget_space(id), t = H5Dget_type(id)
        defer { H5Sclose(s); H5Tclose(t) }
        let rank = Int(H5Sget_simple_extent_ndims(s))
        guard rank >= 0 else { return nil }
        var d = [hsize_t](repeating: 0, count: max(rank, 1))
        _ = H5Sget_simple_extent_dims(s, &d, nil)
        let cls = H5Tget_class(t), size = H5Tget_size(t)
        guard cls == H5T_INTEGER || cls == H5T_FLOAT else { return nil }
        let signed = cls == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_2
        let kind: HDF5NumericShape.Kind =
            signed && size == 2 ? .int16 : signed && size == 4 ? .int32 : cls == H5T_FLOAT && size == 4 ? .float32 : .float64
        return (rank == 0 ? [] : d, kind)
    }

    /// A dataset's shape and value type without reading its values: int16 and int32 kept, float32
    /// as float32, other numbers as float64; nil for non-numeric datasets.
    /// - Throws: `HDF5Error` when its dimensions do not fit an Int, or its values cannot be what the
    ///   file holds (more than 64 MiB and more than 1100 times the bytes stored: `readableCount`).
    func numericShape() throws(HDF5Error) -> HDF5NumericShape? {
        guard let (shape, kind) = numericType() else { return nil }
        guard Self.readableCount(shape, elementSize: kind.memorySize, storedBytes: H5Dget_storage_size(id), streamed: true) != nil else {
            throw HDF5Error(
                file: file,
                reason: "dataset of shape (\(shape.map { "\($0)" }.joined(separator: ", "))) with \(H5Dget_storage_size(id)) bytes stored: "
                    + "its values cannot be what the file holds")
        }
        let rank = shape.count
        var chunkSamples: Int?
        let plist = H5Dget_create_plist(id)
        if plist >= 0 {
            defer { H5Pclose(plist) }
            if H5Pget_layout(plist) == H5D_CHUNKED, rank > 0 {
                var chunk = [hsize_t](repeating: 0, count: rank)
                if H5Pget_chunk(plist, Int32(rank), &chunk) == rank { chunkSamples = Int(exactly: chunk[rank - 1]) }
            }
        }
        return HDF5NumericShape(dims: shape.map { Int($0) }, kind: kind, chunkSamples: chunkSamples)
    }

    /// Samples `first ..< first + count` of every channel of a rank-1 (one channel) or rank-2
    /// (channels, samples) dataset, channel-major: a hyperslab read.
    /// - Throws: `HDF5Error` when the library cannot read them.
    func readWindow(_ shape: HDF5NumericShape, first: Int, count: Int) throws(HDF5Error) -> HDF5Data {
        let channels = shape.dims.count == 2 ? shape.dims[0] : 1
        let fileSpace = H5Dget_space(id)
        defer { H5Sclose(fileSpace) }
        var start: [hsize_t] = shape.dims.count == 2 ? [0, hsize_t(first)] : [hsize_t(first)]
        var size: [hsize_t] = shape.dims.count == 2 ? [hsize_t(channels), hsize_t(count)] : [hsize_t(count)]
        var memoryDims: [hsize_t] = [hsize_t(channels * count)]
        let memorySpace = H5Screate_simple(1, &memoryDims, nil)
        defer { H5Sclose(memorySpace) }
        guard fileSpace >= 0, memorySpace >= 0, H5Sselect_hyperslab(fileSpace, H5S_SELECT_SET, &start, nil, &size, nil) >= 0 else {
            throw HDF5Error(file: file, reason: "cannot select samples \(first) to \(first + count) of the dataset")
        }
        func read<T: BitwiseCopyable>(_ zero: T, _ type: hid_t) throws(HDF5Error) -> [T] {
            var v = [T](repeating: zero, count: channels * count)
            let status = v.withUnsafeMutableBytes { H5Dread(id, type, memorySpace, fileSpace, h5pDefault, $0.baseAddress) }
            guard count == 0 || status >= 0 else {
                throw HDF5Error(file: file, reason: "cannot read samples \(first) to \(first + count) of the dataset")
            }
            return v
        }
        switch shape.kind {
        case .int16: return .int16(try read(Int16(0), chdf5_native_int16()))
        case .int32: return .int32(try read(Int32(0), chdf5_native_int32()))
        case .float32: return .float32(try read(Float(0), chdf5_native_float()))
        case .float64: return .float64(try read(Double(0), chdf5_native_double()))
        }
    }
}

/// Serves windows of any size from blocks read in larger pieces (an HDF5 dataset's stored chunks
/// are decompressed once, not once per frame).
final class BlockedSampleReader: ImportedSampleReader {
    private let readBlock: (Int, Int) throws -> AnalogSamples
    private let sampleCount: Int
    private let blockSamples: Int
    private let channels: Int
    private var block: MemorySampleReader?
    private var blockRemaining = 0
    private var position = 0

    init(sampleCount: Int, channels: Int, blockSamples: Int, _ readBlock: @escaping (Int, Int) throws -> AnalogSamples) {
        self.sampleCount = sampleCount
        self.channels = channels
        self.blockSamples = max(1, blockSamples)
        self.readBlock = readBlock
    }

    func next(_ count: Int) throws -> AnalogSamples {
        var count = min(count, sampleCount - position)
        var parts: [AnalogSamples] = []
        while count > 0 {
            if blockRemaining == 0 {
                let n = min(blockSamples, sampleCount - position)
                block = MemorySampleReader(try readBlock(position, n), sampleCount: n)
                blockRemaining = n
            }
            let take = min(count, blockRemaining)
            parts.append(try block!.next(take))
            blockRemaining -= take
            position += take
            count -= take
        }
        return AnalogSamples.joined(parts, channels: channels)
    }
}

extension AnalogSamples {
    /// Channel-major windows one after another as one window (each channel's samples in turn).
    static func joined(_ parts: [AnalogSamples], channels channelCount: Int) -> AnalogSamples {
        guard parts.count > 1 else { return parts.first ?? .float64([]) }
        let lengths = parts.map(\.valueCount)
        func join<T>(_ arrays: [[T]]) -> [T] {
            let total = lengths.reduce(0, +)
            // Every part has the same channels; a part's samples per channel = its values / channels.
            guard channelCount > 0 else { return arrays.flatMap { $0 } }
            var out: [T] = []
            out.reserveCapacity(total)
            for c in 0..<channelCount {
                for a in arrays {
                    let n = a.count / channelCount
                    out += a[(c * n)..<((c + 1) * n)]
                }
            }
            return out
        }
        switch parts[0] {
        case .float64: return .float64(join(parts.map { if case .float64(let v) = $0 { v } else { [] } }))
        case .float32: return .float32(join(parts.map { if case .float32(let v) = $0 { v } else { [] } }))
        case .int16(_, let s, let o):
            return .int16(counts: join(parts.map { if case .int16(let v, _, _) = $0 { v } else { [] } }), scale: s, offset: o)
        case .int32(_, let s, let o):
            return .int32(counts: join(parts.map { if case .int32(let v, _, _) = $0 { v } else { [] } }), scale: s, offset: o)
        }
    }

}
