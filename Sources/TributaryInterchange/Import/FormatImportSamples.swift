import Foundation
import TributaryCapture
import TributaryFormats
import TributaryWire

extension FormatImport {
    /// A numeric stream's samples: read from the file a window at a time when the stream was indexed
    /// (`XDFFile.index`), else from its values in memory; counts with `scales`.
    static func xdfSamples(_ stream: XDFStream, path: String, format: SampleFormat, scales: ([Double], [Double])?) -> ImportedSamples {
        @Sendable func samples(_ data: XDFData) -> AnalogSamples {
            switch data {
            case .float64(let v): return .float64(v)
            case .float32(let v): return .float32(v)
            case .int16(let v): return .int16(counts: v, scale: scales?.0 ?? [], offset: scales?.1 ?? [])
            case .int32(let v): return .int32(counts: v, scale: scales?.0 ?? [], offset: scales?.1 ?? [])
            case .strings: return .float64([])
            }
        }
        guard stream.valueExtents != nil else { return .memory(samples(stream.data), sampleCount: stream.sampleCount) }
        return ImportedSamples(format: format) {
            let values = try XDFFile.Values(path: path, stream: stream)
            return FunctionSampleReader { count in samples(try values.next(count)) }
        }
    }

    /// A dataset's samples read by hyperslabs, a block of whole stored chunks (at most about 8 MiB,
    /// or one chunk) at a time; int16 / int32 counts with `scales`.
    static func hdf5Samples(
        path: String, dataset: String, _ numeric: HDF5NumericShape, channels: Int, sampleCount n: Int,
        scales: (scale: [Double], offset: [Double])?
    ) -> ImportedSamples {
        let format: SampleFormat, size: Int
        switch numeric.kind {
        case .float64: (format, size) = (.float64, 8)
        case .float32: (format, size) = (.float32, 4)
        case .int16: (format, size) = (.int16, 2)
        case .int32: (format, size) = (.int32, 4)
        }
        let target = max(1, (8 << 20) / max(1, channels * size))
        var block = target
        if let chunk = numeric.chunkSamples, chunk > 0 {
            block = chunk <= target ? target / chunk * chunk : min(chunk, max(1, (64 << 20) / max(1, channels * size)))
        }
        let scale = scales?.scale ?? [], offset = scales?.offset ?? []
        let blockSamples = block
        return ImportedSamples(format: format) {
            let file: HDF5Object, data: HDF5Object
            do {
                file = try HDF5Object.open(path: path)
                data = try file.openDataset(dataset)
            } catch let error as HDF5Error {
                throw CaptureError(.usage, file: path, "dataset \(dataset): \(error.reason)")
            }
            return BlockedSampleReader(sampleCount: n, channels: channels, blockSamples: blockSamples) { first, count in
                let window: HDF5Data
                do { window = try data.readWindow(numeric, first: first, count: count) } catch let error as HDF5Error {
                    throw CaptureError(.usage, file: path, "dataset \(dataset): \(error.reason)")
                }
                _ = file
                switch window {
                case .float64(let v): return .float64(v)
                case .float32(let v): return .float32(v)
                case .int16(let v): return .int16(counts: v, scale: scale, offset: offset)
                case .int32(let v): return .int32(counts: v, scale: scale, offset: offset)
                }
            }
        }
    }
}
