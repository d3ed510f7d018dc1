import CISAL

/// CRC-32C (Castagnoli): the checksum of capture record envelopes.
///
/// Parameters (as in RFC 3720 and the "CRC-32/ISCSI" catalogue entry): reflected polynomial
/// 0x82F63B78, initial value and final XOR 0xFFFFFFFF, input and output reflected.
/// Check value: the CRC of the ASCII bytes "123456789" is 0xE3069283.
/// Computed by Intel ISA-L's `crc32_iscsi` (the CRC without the initial and final XOR), which picks
/// the fastest instructions the processor has at run time.
public enum CRC32C {
    /// The CRC of `bytes`.
    /// - Parameter bytes: the data.
    /// - Returns: the CRC-32C value.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        update(0, bytes)
    }

    /// Continues a CRC over more data: `update(checksum(a), b) == checksum(a + b)`.
    /// - Parameters:
    ///   - crc: the CRC of the data so far (0 for none).
    ///   - bytes: the next bytes.
    /// - Returns: the CRC of all the data.
    public static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard var p = bytes.baseAddress else { return crc }
        var remaining = bytes.count
        var c = ~crc
        // `crc32_iscsi` takes an `int` length and a mutable pointer it only reads.
        while remaining > 0 {
            let piece = min(remaining, 1 << 30)
            c = crc32_iscsi(UnsafeMutablePointer(mutating: p.assumingMemoryBound(to: UInt8.self)), Int32(piece), c)
            p += piece
            remaining -= piece
        }
        return ~c
    }

    /// The CRC of a byte collection (convenience for headers and tests).
    public static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        if let crc = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) {
            return crc
        }
        return Array(bytes).withUnsafeBytes { checksum($0) }
    }
}
