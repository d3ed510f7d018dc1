/// CRC-32C (Castagnoli): the checksum of capture record envelopes.
///
/// Parameters (as in RFC 3720 and the "CRC-32/ISCSI" catalogue entry): reflected polynomial
/// 0x82F63B78, initial value and final XOR 0xFFFFFFFF, input and output reflected.
/// Check value: the CRC of the ASCII bytes "123456789" is 0xE3069283.
/// Computed by slicing-by-8 (eight 256-entry tables, eight bytes per step).
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
        return tables.withUnsafeBufferPointer { t -> UInt32 in
            let t = t.baseAddress!
            while remaining >= 8 {
                let word = p.loadUnaligned(as: UInt64.self).littleEndian ^ UInt64(c)
                let lo = UInt32(truncatingIfNeeded: word), hi = UInt32(truncatingIfNeeded: word &>> 32)
                c = t[7 &* 256 &+ Int(lo & 0xFF)] ^ t[6 &* 256 &+ Int((lo &>> 8) & 0xFF)]
                    ^ t[5 &* 256 &+ Int((lo &>> 16) & 0xFF)] ^ t[4 &* 256 &+ Int(lo &>> 24)]
                    ^ t[3 &* 256 &+ Int(hi & 0xFF)] ^ t[2 &* 256 &+ Int((hi &>> 8) & 0xFF)]
                    ^ t[1 &* 256 &+ Int((hi &>> 16) & 0xFF)] ^ t[Int(hi &>> 24)]
                p += 8
                remaining &-= 8
            }
            while remaining > 0 {
                c = t[Int((c ^ UInt32(p.load(as: UInt8.self))) & 0xFF)] ^ (c &>> 8)
                p += 1
                remaining &-= 1
            }
            return ~c
        }
    }

    /// The CRC of a byte collection (convenience for headers and tests).
    public static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        if let crc = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) {
            return crc
        }
        return Array(bytes).withUnsafeBytes { checksum($0) }
    }

    /// Table k maps a byte to its CRC contribution k bytes further along (table 0 is the classic table).
    private static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for n in 0..<256 {
            var c = UInt32(n)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[n] = c
        }
        for n in 0..<256 {
            for k in 1..<8 {
                let previous = t[(k - 1) * 256 + n]
                t[k * 256 + n] = t[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return t
    }()
}
