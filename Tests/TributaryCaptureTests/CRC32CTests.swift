import Testing
import TributaryTestSupport

@testable import TributaryCapture

@Test func crc32cCheckValue() {
    #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
    #expect(CRC32C.checksum([UInt8]()) == 0)
}

@Test func crc32cKnownVectors() {
    // RFC 3720 appendix B.4: 32 bytes of zeros, of 0xFF, ascending 0...31.
    #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
    #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
    #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
}

/// Bit-at-a-time definition, to check the sliced tables on every length and alignment.
func referenceCRC32C(_ bytes: ArraySlice<UInt8>) -> UInt32 {
    var c: UInt32 = 0xFFFF_FFFF
    for b in bytes {
        c ^= UInt32(b)
        for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
    }
    return ~c
}

@Test func crc32cMatchesBitwiseDefinitionAndIsIncremental() {
    var rng = SplitMix64(seed: 42)
    let data = rng.bytes(300)
    for offset in 0..<9 {
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 100, 291 - offset] {
            let slice = data[offset..<(offset + length)]
            #expect(CRC32C.checksum(slice) == referenceCRC32C(slice), "offset \(offset) length \(length)")
        }
    }
    let split = 123
    let whole = CRC32C.checksum(data)
    let partial = data.withUnsafeBytes { all in
        CRC32C.update(
            CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[..<split])),
            UnsafeRawBufferPointer(rebasing: all[split...]))
    }
    #expect(partial == whole)
}
