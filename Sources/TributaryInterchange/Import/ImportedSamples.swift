import Foundation
import TributaryCapture
import TributaryFormats
import TributaryWire

/// Reads a source's samples in order, a window at a time, so that an import holds one frame's
/// samples, never the file's (`FormatImport.forEachFrame`).
public protocol ImportedSampleReader: AnyObject {
    /// The next `count` samples of every channel, channel-major (`count` per channel), with the
    /// source's scale and offset for counts.
    /// - Throws: the format's error (`FormatError`, `NPYError`, `CaptureError`) when the file cannot be read.
    func next(_ count: Int) throws -> AnalogSamples
}

/// The samples of an imported source: their format, and how to read them from the start.
public struct ImportedSamples: Sendable {
    /// The format the samples are recorded in.
    public var format: SampleFormat
    /// Opens a reader at the first sample (each call starts again).
    public let open: @Sendable () throws -> any ImportedSampleReader

    public init(format: SampleFormat, open: @escaping @Sendable () throws -> any ImportedSampleReader) {
        self.format = format
        self.open = open
    }

    /// Samples held in memory (channel-major, `sampleCount` per channel).
    public static func memory(_ samples: AnalogSamples, sampleCount: Int) -> ImportedSamples {
        ImportedSamples(format: samples.format) { MemorySampleReader(samples, sampleCount: sampleCount) }
    }
}

/// Windows of samples held in memory.
final class MemorySampleReader: ImportedSampleReader {
    let samples: AnalogSamples
    let sampleCount: Int
    var position = 0

    init(_ samples: AnalogSamples, sampleCount: Int) {
        self.samples = samples
        self.sampleCount = sampleCount
    }

    func next(_ count: Int) throws -> AnalogSamples {
        let first = position, n = sampleCount
        let count = max(0, min(count, n - first))
        position += count
        if first == 0 && count == n { return samples }
        func window<T>(_ v: [T]) -> [T] {
            let channels = n > 0 ? v.count / n : 0
            var out: [T] = []
            out.reserveCapacity(channels * count)
            for c in 0..<channels { out += v[(c * n + first)..<(c * n + first + count)] }
            return out
        }
        switch samples {
        case .float64(let v): return .float64(window(v))
        case .float32(let v): return .float32(window(v))
        case .int16(let v, let s, let o): return .int16(counts: window(v), scale: s, offset: o)
        case .int32(let v, let s, let o): return .int32(counts: window(v), scale: s, offset: o)
        }
    }
}

/// A reader built from a function (the window readers of the formats).
final class FunctionSampleReader: ImportedSampleReader {
    let read: (Int) throws -> AnalogSamples
    init(_ read: @escaping (Int) throws -> AnalogSamples) { self.read = read }

    /// A reader of `total` samples per channel in order: `read(first, count)` gives samples
    /// `first ..< first + count`, never past `total`.
    convenience init(total: Int, windows read: @escaping (_ first: Int, _ count: Int) throws -> AnalogSamples) {
        var first = 0
        self.init { count in
            let count = min(count, total - first)
            defer { first += count }
            return try read(first, count)
        }
    }
    func next(_ count: Int) throws -> AnalogSamples { try read(count) }
}

extension NPYDType {
    /// The analog sample format of the same element type (what an imported or analysed NPY array's
    /// samples become).
    package var sampleFormat: SampleFormat {
        switch self {
        case .float64: .float64
        case .float32: .float32
        case .int16: .int16
        case .int32: .int32
        }
    }
}

extension CaptureError {
    /// A reader's error as the capture error of an import from `file`: a format error's place and
    /// reason (the file is named once).
    static func importing(_ error: any Error, file: String) -> CaptureError {
        if let error = error as? CaptureError { return error }
        if let error = error as? FormatError, error.file == file {
            return CaptureError(.usage, file: file, error.location.isEmpty ? error.reason : "\(error.location): \(error.reason)")
        }
        return CaptureError(.usage, file: file, "\(error)")
    }
}
