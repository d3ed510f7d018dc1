import Foundation
import TributaryCapture
import TributaryDSP
import TributaryFormats
import TributaryInterchange
import TributaryWire

/// What `analyze` learned about an input file besides its frames.
package struct InputDescription {
    /// The sample type of each source's data as stored ("float64", "float32", "int16"), by source
    /// id (each source has its own: a capture may hold an int16 device and a float64 one).
    package var dtypes: [UInt32: String] = [:]
    /// Channels per source as stored, by source id.
    package var channelCounts: [UInt32: Int] = [:]
    /// The channel indexes each source's analog frames carry, as stored (before any filter).
    package var channelIndexes: [UInt32: Set<Int>] = [:]
    /// Problems found on the way that did not stop the analysis (damaged capture chunks, …).
    package var warnings: [String] = []
}

extension InputDescription {
    /// Notes the sample type and channel count of an analog frame's source (unfiltered: as stored).
    package mutating func note(_ frame: Frame) {
        guard frame.header.kind == .analog, let view = try? frame.analog() else { return }
        let id = frame.header.sourceID
        if dtypes[id] == nil { dtypes[id] = view.format.description }
        channelCounts[id] = max(channelCounts[id] ?? 0, view.channelCount)
        for row in 0..<view.channelCount { channelIndexes[id, default: []].insert(Int(view.channelIndex(row))) }
    }
}

/// Turns every kind of file `analyze` accepts into a stream of frames: captures (docs/CAPTURE.md;
/// every source, damaged chunks skipped and reported), NPY arrays (one source, id 1) and frame
/// files (docs/PROTOCOL.md) — recognised by their magic bytes, not their names.
package enum AnalysisInputs {
    /// Samples per channel in each frame cut from an array file.
    package static let framesamples = 65_536

    /// Streams the frames of `path` into `body`.
    ///
    /// - Parameters:
    ///   - rate: the sample rate of array files, which carry none (default 1 Hz, as scipy's fs).
    ///   - int16Scale: physical value of one int16 count in array files.
    ///   - threads: threads that decode a capture's chunks ahead of `body` (1: none).
    package static func frames(
        of path: String, rate: Double?, int16Scale: Double, threads: Int = 1,
        _ body: (Frame) throws -> Void
    ) throws -> InputDescription {
        let magic = try InputFile.head(path, count: 8)
        if magic.starts(with: [0x89, 0x54, 0x43, 0x41, 0x50, 0x0D, 0x0A, 0x1A]) {
            return try captureFrames(path, threads: threads, body)
        }
        if magic.starts(with: [0x93] + Array("NUMPY".utf8)) {
            return try npyFrames(path, rate: rate ?? 1, int16Scale: int16Scale, body)
        }
        if magic.starts(with: Array("TRIB".utf8)) {
            return try frameFileFrames(path, body)
        }
        // TDMS, XDF and HDF5 files (MeasurementFileInputs.swift, docs/FORMATS.md).
        if let kind = FormatImport.kind(path: path) {
            return try measurementFileFrames(path, kind: kind, rate: rate, body)
        }
        throw CommandError(
            "\(path): not a capture, an NPY file, a frame file, or a TDMS, XDF or HDF5 file (unrecognised magic bytes; "
                + "convert WAV and CSV files with 'tributary import' first)")
    }

    static func npyFrames(_ path: String, rate: Double, int16Scale: Double, _ body: (Frame) throws -> Void) throws -> InputDescription {
        let array: NPYArray
        do { array = try NPY.read(path: path) } catch let error as NPYError { throw CommandError(error.description) }
        let c = array.channels, n = array.samplesPerChannel
        let format = array.samples.dtype.sampleFormat
        try arrayFrames(
            name: (path as NSString).lastPathComponent, channels: c, samplesPerChannel: n, format: format,
            rate: rate, int16Scale: int16Scale,
            copy: { ch, range, out in
                switch array.samples {
                case .float64(let v): v[range].withUnsafeBytes { out.copyMemory(from: $0) }
                case .float32(let v): v[range].withUnsafeBytes { out.copyMemory(from: $0) }
                case .int16(let v): v[range].withUnsafeBytes { out.copyMemory(from: $0) }
                case .int32(let v): v[range].withUnsafeBytes { out.copyMemory(from: $0) }
                }
            }, body)
        return InputDescription(dtypes: [1: array.samples.dtype.rawValue], channelCounts: [1: c], channelIndexes: [1: Set(0..<c)])
    }

    /// The frames `analyze` makes of channel-major samples — an NPY file's, or a caller's buffer
    /// (the C interface): a configuration of source 1 (no converter range: an array says nothing of
    /// it), then analog frames of `framesamples` samples per channel.
    /// - Parameter copy: copies the samples `range` (channel-major indexes) of channel `ch` into `out`.
    package static func arrayFrames(
        name: String, channels c: Int, samplesPerChannel n: Int, format: SampleFormat,
        rate: Double, int16Scale: Double,
        copy: (_ ch: Int, _ range: Range<Int>, _ out: UnsafeMutableRawBufferPointer) -> Void,
        _ body: (Frame) throws -> Void
    ) throws {
        let configuration = Configuration(
            deviceName: name, deviceType: "NPY",
            channels: (0..<c).map {
                ChannelConfiguration(
                    index: UInt32($0), description: "channel \($0)", unit: "", samplingRate: rate,
                    minValue: -.infinity, maxValue: .infinity)
            })
        try body(Frame(encoding: .configuration(configuration), sourceID: 1))
        var start = 0
        var sequence: UInt64 = 1
        repeat {
            let count = min(framesamples, n - start)
            let layout = AnalogLayout(channelCount: c, sampleCount: count, format: format)
            let header = FrameHeader(kind: .analog, sequence: sequence, sourceID: 1)
            let frame = Frame.analog(header: header, layout: layout, firstSample: UInt64(start)) { writer in
                for ch in 0..<c {
                    writer.setChannelIndex(ch, UInt32(ch))
                    if format.isCounts { writer.setScale(ch, scale: format == .int16 ? int16Scale : 1, offset: 0) }
                    copy(ch, (ch * n + start)..<(ch * n + start + count), writer.samples(channel: ch))
                }
            }
            try body(frame)
            start += count
            sequence += 1
        } while start < n
    }

    static func captureFrames(_ path: String, threads: Int, _ body: (Frame) throws -> Void) throws -> InputDescription {
        let reader: CaptureReader
        do { reader = try CaptureReader(path: path) } catch { throw CommandError("\(error)") }
        var description = InputDescription()
        try reader.forEachFrame(threads: threads) { frame in
            description.note(frame)
            try body(frame)
        }
        description.warnings = reader.damage.map { "\(path): damage at \($0)" }
        if !reader.hasFooter {
            description.warnings.append("\(path): capture has no footer (writer crashed?); recovered by scanning")
        } else if reader.wasRepaired {
            description.warnings.append("\(path): capture was rebuilt by 'tributary repair' from a damaged one; data may be missing")
        }
        return description
    }

    static func frameFileFrames(_ path: String, _ body: (Frame) throws -> Void) throws -> InputDescription {
        let input = try InputFile(path)
        var decoder = FrameStreamDecoder()
        var description = InputDescription()
        do {
            while try input.readBlock({ raw in
                try decoder.feed(raw) { frame in
                    description.note(frame)
                    try body(frame)
                }
            }) {}
            try decoder.finish()
        } catch let error as WireError {
            throw CommandError("\(path): \(error)")
        }
        return description
    }
}
