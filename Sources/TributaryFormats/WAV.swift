import Foundation

/// The sample encodings of a WAV file that Tributary reads and writes.
public enum WAVSampleFormat: Sendable, Equatable, CaseIterable {
    /// Signed 16-bit PCM.
    case int16
    /// Signed 24-bit PCM (3 bytes, little-endian).
    case int24
    /// Signed 32-bit PCM.
    case int32
    /// IEEE 754 binary32 (`WAVE_FORMAT_IEEE_FLOAT`).
    case float32
    /// IEEE 754 binary64 (`WAVE_FORMAT_IEEE_FLOAT`).
    case float64

    /// Bits per sample on disk.
    public var bitsPerSample: Int {
        switch self {
        case .int16: 16
        case .int24: 24
        case .int32, .float32: 32
        case .float64: 64
        }
    }

    var isFloat: Bool { self == .float32 || self == .float64 }

    /// The range of integer codes, nil for float formats.
    var integerRange: ClosedRange<Double>? {
        switch self {
        case .int16: -32768...32767
        case .int24: -8_388_608...8_388_607
        case .int32: -2_147_483_648...2_147_483_647
        case .float32, .float64: nil
        }
    }
}

/// Multichannel audio or measurement data in a RIFF/WAVE file: samples channel-major in memory,
/// interleaved on disk.
///
/// PCM samples are held as their integer codes (not scaled to ±1), as `scipy.io.wavfile` returns them,
/// so integer data round-trips exactly; float samples are held as they are (float32 widened exactly).
public struct WAVFile: Sendable, Equatable {
    /// Samples per second per channel.
    public var sampleRate: Int
    /// The on-disk sample encoding.
    public var format: WAVSampleFormat
    /// Number of channels (at least 1).
    public var channelCount: Int
    /// Samples per channel.
    public var frameCount: Int
    /// `channelCount * frameCount` values, channel-major: sample i of channel c is `samples[c * frameCount + i]`.
    public var samples: [Double]

    /// Creates a WAV image from channel-major samples.
    /// - Parameters:
    ///   - sampleRate: samples per second (1...4294967295).
    ///   - format: on-disk encoding.
    ///   - channelCount: number of channels (1...65535).
    ///   - samples: `channelCount * frameCount` values, channel-major.
    public init(sampleRate: Int, format: WAVSampleFormat, channelCount: Int, samples: [Double]) {
        self.sampleRate = sampleRate
        self.format = format
        self.channelCount = channelCount
        self.frameCount = channelCount > 0 ? samples.count / channelCount : 0
        self.samples = samples
    }

    /// The samples of one channel.
    public func channel(_ c: Int) -> ArraySlice<Double> { samples[(c * frameCount)..<((c + 1) * frameCount)] }

    // MARK: Reading

    /// Reads a WAV file.
    /// - Parameter path: the file.
    /// - Returns: its samples, channel-major.
    /// - Throws: `FormatError` naming the file and the byte offset of the first bad field.
    public static func read(path: String) throws(FormatError) -> WAVFile {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw FormatError(file: path, location: "", reason: "cannot read: \(error.localizedDescription)")
        }
        return try decode(Array(data), file: path)
    }

    /// Parses the bytes of a WAV file (PCM 16/24/32-bit, IEEE float 32/64-bit, plain or
    /// `WAVE_FORMAT_EXTENSIBLE`). Chunks other than `fmt ` and `data` are skipped.
    /// - Parameters:
    ///   - bytes: the whole file.
    ///   - file: the name to put in errors.
    /// - Returns: the samples, channel-major.
    /// - Throws: `FormatError` naming the byte offset and field that are wrong.
    public static func decode(_ bytes: [UInt8], file: String = "<memory>") throws(FormatError) -> WAVFile {
        let layout = try Layout(size: bytes.count, file: file) { offset, count in Array(bytes[offset..<min(bytes.count, offset + count)]) }
        let format = (format: layout.format, channels: layout.channelCount, rate: layout.sampleRate, blockAlign: layout.blockAlign)
        let dataRange = layout.dataRange
        let frames = dataRange.count / format.blockAlign
        let channels = format.channels
        var samples = [Double](repeating: 0, count: frames * channels)
        let bytesPerSample = format.format.bitsPerSample / 8
        bytes.withUnsafeBytes { raw in
            samples.withUnsafeMutableBufferPointer { out in
                var p = dataRange.lowerBound
                for i in 0..<frames {
                    for c in 0..<channels {
                        out[c * frames + i] = sample(raw, at: p, format.format)
                        p += bytesPerSample
                    }
                }
            }
        }
        return WAVFile(sampleRate: format.rate, format: format.format, channelCount: channels, samples: samples)
    }

    @inline(__always)
    static func sample(_ raw: UnsafeRawBufferPointer, at p: Int, _ format: WAVSampleFormat) -> Double {
        switch format {
        case .int16: Double(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: p, as: Int16.self)))
        case .int24:
            // Sign-extend by placing the 3 bytes at the top of an Int32 and shifting back.
            Double(Int32(bitPattern: UInt32(raw[p]) << 8 | UInt32(raw[p + 1]) << 16 | UInt32(raw[p + 2]) << 24) >> 8)
        case .int32: Double(Int32(littleEndian: raw.loadUnaligned(fromByteOffset: p, as: Int32.self)))
        case .float32: Double(Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: p, as: UInt32.self))))
        case .float64: Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: p, as: UInt64.self)))
        }
    }

    // MARK: Writing

    /// The file's bytes: RIFF/WAVE with a 16-byte `fmt ` chunk (format tag 1 for PCM, 3 for float)
    /// and interleaved little-endian samples.
    /// - Returns: the encoded file.
    /// - Throws: `FormatError` when the header cannot describe the data (rate, channels, size over 4 GiB)
    ///   or a PCM sample is not an integer within the format's range (naming channel and sample), or a
    ///   float32 sample does not fit.
    public func encoded(file: String = "<memory>") throws(FormatError) -> [UInt8] {
        func fail(_ reason: String) -> FormatError { FormatError(file: file, location: "", reason: reason) }
        guard (1...65535).contains(channelCount) else { throw fail("channel count \(channelCount) outside 1...65535") }
        guard (1...Int(UInt32.max)).contains(sampleRate) else { throw fail("sample rate \(sampleRate) outside 1...\(UInt32.max)") }
        guard samples.count == channelCount * frameCount else {
            throw fail("\(samples.count) samples is not \(channelCount) channels x \(frameCount) frames")
        }
        let bytesPerSample = format.bitsPerSample / 8
        let blockAlign = channelCount * bytesPerSample
        let dataSize = frameCount * blockAlign
        guard dataSize + 36 <= Int(UInt32.max) else { throw fail("data of \(dataSize) bytes exceeds the 4 GiB RIFF limit") }
        if let range = format.integerRange {
            for (index, v) in samples.enumerated() where !(range.contains(v) && v.rounded() == v) {
                throw fail("channel \(index / max(frameCount, 1)), sample \(index % max(frameCount, 1)): \(v) is not a \(format) code")
            }
        } else if format == .float32 {
            for (index, v) in samples.enumerated() where Double(Float(v)) != v && !v.isNaN {
                throw fail(
                    "channel \(index / max(frameCount, 1)), sample \(index % max(frameCount, 1)): \(v) is not exactly representable as float32"
                )
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(44 + dataSize)
        func put16(_ v: Int) { out.append(UInt8(v & 0xFF)); out.append(UInt8((v >> 8) & 0xFF)) }
        func put32(_ v: Int) { put16(v & 0xFFFF); put16((v >> 16) & 0xFFFF) }
        out.append(contentsOf: Array("RIFF".utf8)); put32(36 + dataSize + (dataSize & 1))
        out.append(contentsOf: Array("WAVEfmt ".utf8)); put32(16)
        put16(format.isFloat ? 3 : 1); put16(channelCount); put32(sampleRate)
        put32(sampleRate * blockAlign & 0xFFFF_FFFF); put16(blockAlign); put16(format.bitsPerSample)
        out.append(contentsOf: Array("data".utf8)); put32(dataSize)
        for i in 0..<frameCount {
            for c in 0..<channelCount {
                let v = samples[c * frameCount + i]
                switch format {
                case .int16, .int24, .int32:
                    let code = Int64(v)
                    for b in 0..<bytesPerSample { out.append(UInt8(truncatingIfNeeded: code >> (8 * b))) }
                case .float32:
                    let bits = Float(v).bitPattern
                    for b in 0..<4 { out.append(UInt8(truncatingIfNeeded: bits >> (8 * b))) }
                case .float64:
                    let bits = v.bitPattern
                    for b in 0..<8 { out.append(UInt8(truncatingIfNeeded: bits >> (8 * b))) }
                }
            }
        }
        if dataSize & 1 == 1 { out.append(0) }  // pad byte, not counted in the data size
        return out
    }

    /// Writes the file (see `encoded`).
    /// - Parameter path: destination, replaced atomically.
    /// - Throws: `FormatError` from `encoded`, or when the file cannot be written.
    public func write(to path: String) throws(FormatError) {
        let bytes = try encoded(file: path)
        do { try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
            throw FormatError(file: path, location: "", reason: "cannot write: \(error.localizedDescription)")
        }
    }
}
