import Foundation
import Testing
import TributaryFormats

private func codes(_ format: WAVSampleFormat, channels: Int, frames: Int) -> [Double] {
    let extreme: Double =
        switch format {
        case .int16: 32767
        case .int24: 8_388_607
        case .int32: 2_147_483_647
        case .float32, .float64: 1
        }
    return (0..<(channels * frames)).map { i in
        switch i % 5 {
        case 0: -extreme - (format == .float32 || format == .float64 ? 0 : 1)  // most negative code
        case 1: extreme
        case 2: 0
        default:
            format == .float32
                ? Double(Float(sin(Double(i)) * 0.7))
                : format == .float64 ? sin(Double(i)) * 0.7 : (sin(Double(i)) * extreme * 0.9).rounded()
        }
    }
}

@Test(arguments: WAVSampleFormat.allCases)
func wavRoundTripsEveryFormat(format: WAVSampleFormat) throws {
    for (channels, frames) in [(1, 0), (1, 1), (2, 1001), (8, 333)] {
        let original = WAVFile(
            sampleRate: 48_000, format: format, channelCount: channels,
            samples: codes(format, channels: channels, frames: frames))
        let bytes = try original.encoded()
        #expect(bytes.count == 44 + channels * frames * format.bitsPerSample / 8 + (channels * frames * format.bitsPerSample / 8) % 2)
        let back = try WAVFile.decode(bytes)
        #expect(back == original, "\(format) \(channels)x\(frames)")
    }
}

@Test func wavInterleavesOnDisk() throws {
    // Two int16 channels [1, 2] and [3, 4] are stored as frames (1, 3), (2, 4).
    let bytes = try WAVFile(sampleRate: 8000, format: .int16, channelCount: 2, samples: [1, 2, 3, 4]).encoded()
    #expect(Array(bytes[44...]) == [1, 0, 3, 0, 2, 0, 4, 0])
    #expect(Array(bytes[20..<24]) == [1, 0, 2, 0])  // PCM, 2 channels
}

/// A WAVE_FORMAT_EXTENSIBLE header (40-byte fmt chunk) built by hand, with a LIST chunk before the data.
private func extensibleFile(subFormat: UInt16, bits: UInt16, samples: [UInt8], channels: UInt16 = 3) -> [UInt8] {
    func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    func le32(_ v: UInt32) -> [UInt8] { le16(UInt16(v & 0xFFFF)) + le16(UInt16(v >> 16)) }
    let blockAlign = channels * bits / 8
    var fmt = le16(0xFFFE) + le16(channels) + le32(44_100) + le32(44_100 * UInt32(blockAlign)) + le16(blockAlign) + le16(bits)
    fmt += le16(22) + le16(bits) + le32(0x7) + le16(subFormat)
    fmt += [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
    let list = Array("LIST".utf8) + le32(3) + [1, 2, 3, 0]  // odd size: padded
    let body =
        Array("WAVE".utf8) + Array("fmt ".utf8) + le32(UInt32(fmt.count)) + fmt + list
        + Array("data".utf8) + le32(UInt32(samples.count)) + samples
    return Array("RIFF".utf8) + le32(UInt32(body.count)) + body
}

@Test func wavReadsExtensible24BitAndFloat() throws {
    // One frame of 3 channels of 24-bit: -1, 8388607, -8388608.
    let pcm = try WAVFile.decode(extensibleFile(subFormat: 1, bits: 24, samples: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0x80]))
    #expect(pcm.format == .int24 && pcm.sampleRate == 44_100 && pcm.channelCount == 3)
    #expect(pcm.samples == [-1, 8_388_607, -8_388_608])
    let one = Float(1.5).bitPattern
    let floatBytes = (0..<3).flatMap { _ in (0..<4).map { UInt8(truncatingIfNeeded: one >> (8 * $0)) } }
    let float = try WAVFile.decode(extensibleFile(subFormat: 3, bits: 32, samples: floatBytes))
    #expect(float.format == .float32 && float.samples == [1.5, 1.5, 1.5])
}

@Test func wavMalformedHeadersAreNamedErrors() throws {
    let good = try WAVFile(sampleRate: 1000, format: .int16, channelCount: 2, samples: [1, 2, 3, 4]).encoded()
    func expectError(_ bytes: [UInt8], _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do { _ = try WAVFile.decode(bytes, file: "x.wav"); Issue.record("accepted", sourceLocation: sourceLocation) } catch {
            #expect(error.file == "x.wav", sourceLocation: sourceLocation)
            #expect(error.description.contains(fragment), "\(error)", sourceLocation: sourceLocation)
        }
    }
    expectError([], "too short")
    expectError(Array("RIFX".utf8) + good[4...], "RIFF tag")
    var notWave = good; notWave[8] = UInt8(ascii: "X"); expectError(notWave, "byte offset 8")
    var badTag = good; badTag[20] = 2; expectError(badTag, "format tag 2")
    var badBits = good; badBits[34] = 12; expectError(badBits, "12 bits")
    var zeroChannels = good; zeroChannels[22] = 0; expectError(zeroChannels, "channel count is 0")
    var badAlign = good; badAlign[32] = 3; expectError(badAlign, "block align 3")
    var zeroRate = good; zeroRate[24...27] = [0, 0, 0, 0]; expectError(zeroRate, "sample rate is 0")
    expectError(Array(good[..<(good.count - 2)]), "truncated")
    var oddData = good; oddData[40] = 7; oddData.append(0); expectError(Array(oddData[..<51]), "not a multiple")
    expectError(Array(good[..<36]), "no data chunk")
    var shortFmt = good; shortFmt[16] = 8; expectError(shortFmt, "fmt chunk size 8")
    expectError(extensibleFile(subFormat: 1, bits: 24, samples: [1, 2, 3]).prefix(50).map { $0 }, "fmt chunk size 40")
    var shortExtensible = extensibleFile(subFormat: 1, bits: 24, samples: [1, 2, 3])
    shortExtensible[16] = 18
    expectError(shortExtensible, "40 expected")
}

@Test func wavWriteRejectsSamplesTheFormatCannotHold() {
    #expect(throws: FormatError.self) { try WAVFile(sampleRate: 1, format: .int16, channelCount: 1, samples: [32768]).encoded() }
    #expect(throws: FormatError.self) { try WAVFile(sampleRate: 1, format: .int24, channelCount: 1, samples: [0.5]).encoded() }
    #expect(throws: FormatError.self) { try WAVFile(sampleRate: 1, format: .float32, channelCount: 1, samples: [0.1]).encoded() }
    #expect(throws: FormatError.self) { try WAVFile(sampleRate: 0, format: .float64, channelCount: 1, samples: [0.1]).encoded() }
}
