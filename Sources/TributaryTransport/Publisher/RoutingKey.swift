/// A ROUTER routing id as a dictionary key. The publisher looks up the sender of every message it
/// reads; ids of up to 16 bytes (libzmq's own are 5) are held in two words, so the lookup costs no
/// allocation. A peer may choose a longer id (up to 255 bytes): those are kept in an array.
///
/// One representation per byte sequence (16 bytes or fewer: the words, zero-padded, with the length;
/// more: the array), so the synthesised equality and hash are those of the bytes.
struct RoutingKey: Hashable {
    private let low: UInt64
    private let high: UInt64
    private let count: Int
    private let long: [UInt8]?

    static let inlineCapacity = 16

    init(_ bytes: UnsafeRawBufferPointer) {
        count = bytes.count
        if bytes.count <= Self.inlineCapacity {
            var words: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: bytes) }
            (low, high) = words
            long = nil
        } else {
            (low, high) = (0, 0)
            long = Array(bytes)
        }
    }

    init(_ bytes: [UInt8]) {
        self = bytes.withUnsafeBytes { RoutingKey($0) }
    }

    /// The routing id (a new array: for sending to the peer, off the hot path).
    var bytes: [UInt8] {
        if let long { return long }
        return withUnsafeBytes(of: (low, high)) { Array($0.prefix(count)) }
    }
}
