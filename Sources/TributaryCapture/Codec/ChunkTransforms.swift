/// The numeric type of a chunk payload, which decides the transforms that can apply to it.
/// The raw values are part of the capture format (docs/CAPTURE.md).
public enum ChunkElementType: UInt8, Sendable, CaseIterable {
    /// Opaque bytes: compressed as they are.
    case bytes = 0
    /// Little-endian signed 16-bit integers (ADC counts).
    case int16 = 1
    /// Little-endian signed 32-bit integers.
    case int32 = 2
    /// Little-endian IEEE 754 binary32.
    case float32 = 3
    /// Little-endian IEEE 754 binary64.
    case float64 = 4

    /// Bytes per element (1 for `.bytes`).
    public var size: Int {
        switch self {
        case .bytes: 1
        case .int16: 2
        case .int32, .float32: 4
        case .float64: 8
        }
    }
}

/// The transforms applied to a payload before zstd, recorded with the chunk so a reader can undo
/// them. The raw values are part of the capture format (docs/CAPTURE.md).
///
/// Encoding applies them in this order (decoding in reverse):
/// 1. `quantised` (float64 only): the samples become Int16 counts `k` with `x == Double(k) * step`;
///    the content then starts with `step` as 8 little-endian bytes, followed by the counts.
/// 2. `delta` (int16, int32, or quantised counts): wrapping differences, first element kept.
/// 3. `bitShuffle`: BitShuffle layout with the element size of what is now stored
///    (2 for quantised counts); the 8-byte step is not shuffled.
///
/// `coded` replaces all three: the payload is stored in the format of `NumericCodec`.
public struct ChunkTransforms: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bit-shuffled (see `BitShuffle`).
    public static let bitShuffle = ChunkTransforms(rawValue: 1 << 0)
    /// Delta-coded integers.
    public static let delta = ChunkTransforms(rawValue: 1 << 1)
    /// Float64 stored as an 8-byte step followed by Int16 counts.
    public static let quantised = ChunkTransforms(rawValue: 1 << 2)

    /// Entropy coded by `NumericCodec` (docs/CAPTURE.md §5.1); never combined with another flag.
    public static let coded = ChunkTransforms(rawValue: 1 << 3)

    /// Every transform this version knows; other bits make a chunk unreadable (an error, not a guess).
    public static let known: ChunkTransforms = [.bitShuffle, .delta, .quantised, .coded]

    public var description: String {
        var names: [String] = []
        if contains(.coded) { names.append("coded") }
        if contains(.quantised) { names.append("quantised") }
        if contains(.delta) { names.append("delta") }
        if contains(.bitShuffle) { names.append("bit-shuffle") }
        let unknown = rawValue & ~Self.known.rawValue
        if unknown != 0 { names.append("unknown(0x\(String(unknown, radix: 16)))") }
        return names.isEmpty ? "none" : names.joined(separator: "+")
    }
}

/// Which transforms the encoder tries; the flags it returns say which it actually applied.
public struct ChunkCodecOptions: Sendable, Equatable {
    /// zstd level (1 = fast; the default chosen by measurement, see the compression benchmark).
    public var level: Int
    /// Bit-shuffle numeric payloads.
    public var bitShuffle: Bool
    /// Delta-code integer payloads (and quantised counts).
    public var delta: Bool
    /// Store float64 payloads that are exact multiples of one step as Int16 counts.
    public var quantiseFloats: Bool
    /// Entropy code numeric payloads (`ChunkTransforms.coded`): grids, predictors and binning
    /// chosen per segment; the other options then apply only when coding does not make the payload
    /// smaller. Off = the fast path of bit-shuffle + zstd, for writers that must spend less CPU.
    public var entropyCoding: Bool
    /// Store zstd's literals raw (no Huffman stage; `ZstdCompressor`'s `rawLiterals`). Only on the
    /// fast path (`entropyCoding` off): a coded stream's symbols need zstd's Huffman stage
    /// (docs/CAPTURE.md §5.1), so with entropy coding on this is ignored.
    public var rawLiterals: Bool

    /// The fast path as `record --fast-codec` and `import --fast-codec` write it: quantise, delta and
    /// bit-shuffle, then zstd level -1 with raw literals (zstd 1.5's default at negative levels, set
    /// here explicitly). Against zstd-1 with Huffman-coded literals (the fast path before it) it
    /// compresses the compression suite's ADC data faster for slightly more bytes, and bit-shuffled
    /// noisy float64 much faster: there the literals are mostly noise rows, which a Huffman stage
    /// spends time on for almost no gain (docs/PERFORMANCE.md, "Captures and compression").
    public static let fast = ChunkCodecOptions(level: -1, entropyCoding: false, rawLiterals: true)

    /// Whether zstd stores literals raw: `rawLiterals` on the fast path only.
    var usesRawLiterals: Bool { rawLiterals && !entropyCoding }

    /// Creates options; the defaults are the measured best trade-off for ADC data (compression
    /// benchmark, 8 x 1M ADC samples, 1 MiB chunks, one core): quantising float64 before delta,
    /// bit-shuffle and zstd-1 both compressed better and ran faster than bit-shuffle + zstd-1 alone;
    /// for int16, delta gained ratio for a little speed; zstd-3 gained a little ratio for much speed.
    public init(
        level: Int = 1, bitShuffle: Bool = true, delta: Bool = true, quantiseFloats: Bool = true,
        entropyCoding: Bool = true, rawLiterals: Bool = false
    ) {
        self.entropyCoding = entropyCoding
        self.rawLiterals = rawLiterals
        self.level = level
        self.bitShuffle = bitShuffle
        self.delta = delta
        self.quantiseFloats = quantiseFloats
    }
}
