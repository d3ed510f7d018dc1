/// Recomputes a capture's checksums in place: the file header's CRC and, walking the records from the
/// header, each envelope's payload and envelope CRCs (CAPTURE.md §3, §4). For the capture fuzzer and
/// the tests that replay its inputs, whose mutated bytes would otherwise fail at the first CRC and
/// never reach the parsers behind it (package-internal: no product offers it).
package enum CaptureChecksums {
    package static func recompute(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            guard raw.count >= 48 else { return }
            let base = raw.baseAddress!
            let headerLength = Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
            guard headerLength >= 48, headerLength <= raw.count else { return }
            base.storeBytes(
                of: CRC32C.checksum(UnsafeRawBufferPointer(start: base, count: headerLength - 4)).littleEndian,
                toByteOffset: headerLength - 4, as: UInt32.self)
            var position = (headerLength + 7) & ~7
            while position + 88 <= raw.count {
                let stored = Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: position + 64, as: UInt32.self)))
                let available = min(stored, raw.count - position - 88)
                base.storeBytes(
                    of: CRC32C.checksum(UnsafeRawBufferPointer(start: base + position + 88, count: available)).littleEndian,
                    toByteOffset: position + 80, as: UInt32.self)
                base.storeBytes(
                    of: CRC32C.checksum(UnsafeRawBufferPointer(start: base + position, count: 84)).littleEndian,
                    toByteOffset: position + 84, as: UInt32.self)
                position += 88 + ((available + 7) & ~7)
            }
        }
    }
}
