import Foundation

extension WAVFile {
    /// Where a WAV file's samples are and how they are encoded: what the chunk walk finds.
    public struct Layout: Sendable {
        public var format: WAVSampleFormat
        public var channelCount: Int
        public var sampleRate: Int
        var blockAlign: Int
        /// The bytes of the data chunk.
        var dataRange: Range<Int>
        /// Samples per channel.
        public var frameCount: Int { dataRange.count / blockAlign }

        /// Walks the chunks of a RIFF/WAVE file of `size` bytes (PCM 16/24/32-bit, IEEE float
        /// 32/64-bit, plain or `WAVE_FORMAT_EXTENSIBLE`); chunks other than `fmt ` and `data` are skipped.
        /// - Parameter read: `count` bytes from an offset (fewer at the end of the file).
        /// - Throws: `FormatError` naming the byte offset and field that are wrong.
        init(size: Int, file: String, read: (Int, Int) throws(FormatError) -> [UInt8]) throws(FormatError) {
            func fail(_ offset: Int, _ reason: String) -> FormatError {
                FormatError(file: file, location: "byte offset \(offset)", reason: reason)
            }
            func u16(_ b: [UInt8], _ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 }
            func u32(_ b: [UInt8], _ o: Int) -> Int { u16(b, o) | u16(b, o + 2) << 16 }
            func tag(_ b: [UInt8], _ o: Int) -> String { String(decoding: b[o..<(o + 4)], as: UTF8.self) }
            let head = try read(0, 12)
            guard size >= 12, head.count >= 12 else { throw fail(0, "file of \(size) bytes is too short for a RIFF/WAVE header") }
            guard tag(head, 0) == "RIFF" else { throw fail(0, "RIFF tag expected, found \(String(reflecting: tag(head, 0)))") }
            guard tag(head, 8) == "WAVE" else { throw fail(8, "WAVE form type expected, found \(String(reflecting: tag(head, 8)))") }
            // Many writers get the RIFF size wrong; the chunk walk below is bounded by the real file size.
            var offset = 12
            var format: (format: WAVSampleFormat, channels: Int, rate: Int, blockAlign: Int)?
            var dataRange: Range<Int>?
            while offset + 8 <= size {
                let chunk = try read(offset, 8)
                let id = tag(chunk, 0), size32 = u32(chunk, 4), body = offset + 8
                if id == "fmt " {
                    guard size32 >= 16, body + size32 <= size else {
                        throw fail(offset + 4, "fmt chunk size \(size32) is below 16 or runs past the end of the file")
                    }
                    let b = try read(body, min(size32, 40))
                    var formatTag = u16(b, 0)
                    let channels = u16(b, 2), rate = u32(b, 4), blockAlign = u16(b, 12), bits = u16(b, 14)
                    if formatTag == 0xFFFE {
                        guard size32 >= 40 else {
                            throw fail(offset + 4, "WAVE_FORMAT_EXTENSIBLE fmt chunk of \(size32) bytes, 40 expected")
                        }
                        // The sub-format GUID starts with the plain format tag (1 = PCM, 3 = IEEE float).
                        formatTag = u16(b, 24)
                        let validBits = u16(b, 18)
                        guard validBits == 0 || validBits == bits else {
                            throw fail(body + 18, "valid bits per sample \(validBits) differ from container size \(bits) (unsupported)")
                        }
                    }
                    let sampleFormat: WAVSampleFormat
                    switch (formatTag, bits) {
                    case (1, 16): sampleFormat = .int16
                    case (1, 24): sampleFormat = .int24
                    case (1, 32): sampleFormat = .int32
                    case (3, 32): sampleFormat = .float32
                    case (3, 64): sampleFormat = .float64
                    default: throw fail(body, "unsupported encoding: format tag \(formatTag) with \(bits) bits per sample")
                    }
                    guard channels >= 1 else { throw fail(body + 2, "channel count is 0") }
                    guard rate >= 1 else { throw fail(body + 4, "sample rate is 0") }
                    guard blockAlign == channels * bits / 8 else {
                        throw fail(body + 12, "block align \(blockAlign) is not channels x bytes per sample = \(channels * bits / 8)")
                    }
                    format = (sampleFormat, channels, rate, blockAlign)
                } else if id == "data" {
                    guard format != nil else { throw fail(offset, "data chunk before the fmt chunk") }
                    guard body + size32 <= size else {
                        throw fail(offset + 4, "data chunk declares \(size32) bytes, only \(size - body) present (truncated file)")
                    }
                    dataRange = body..<(body + size32)
                    break
                }
                offset = body + size32 + (size32 & 1)  // chunks are padded to an even size
            }
            guard let format else { throw fail(12, "no fmt chunk") }
            guard let dataRange else { throw fail(offset, "no data chunk") }
            guard dataRange.count % format.blockAlign == 0 else {
                throw fail(
                    dataRange.lowerBound - 4, "data size \(dataRange.count) is not a multiple of the block align \(format.blockAlign)")
            }
            self.format = format.format
            channelCount = format.channels
            sampleRate = format.rate
            blockAlign = format.blockAlign
            self.dataRange = dataRange
        }
    }

    /// A WAV file opened for reading by windows of samples: its chunks are walked as `read` walks
    /// them, its samples read with pread(2) a window at a time.
    public final class Stream {
        public let layout: Layout
        let file: FileRange

        /// Opens a WAV file and walks its chunks.
        /// - Throws: `FormatError` as `WAVFile.read` throws it.
        public init(path: String) throws(FormatError) {
            file = try FileRange(path: path)
            let file = self.file
            layout = try Layout(size: file.size, file: path) { offset, count throws(FormatError) in try file.bytes(at: offset, count: count)
            }
        }

        /// Samples `first ..< first + count` of every channel, channel-major, as `WAVFile.samples` holds them.
        /// - Throws: `FormatError` when the file cannot be read.
        public func read(first: Int, count: Int) throws(FormatError) -> [Double] {
            precondition(first >= 0 && count >= 0 && first + count <= layout.frameCount)
            let channels = layout.channelCount, bytesPerSample = layout.format.bitsPerSample / 8
            let bytes = try file.bytes(at: layout.dataRange.lowerBound + first * layout.blockAlign, count: count * layout.blockAlign)
            var samples = [Double](repeating: 0, count: count * channels)
            bytes.withUnsafeBytes { raw in
                samples.withUnsafeMutableBufferPointer { out in
                    var p = 0
                    for i in 0..<count {
                        for c in 0..<channels {
                            out[c * count + i] = WAVFile.sample(raw, at: p, layout.format)
                            p += bytesPerSample
                        }
                    }
                }
            }
            return samples
        }
    }
}
