/// Turns numeric chunk payloads into compressed bytes and back: the transforms of
/// `ChunkTransforms` followed by one independent zstd frame (content size and checksum on).
///
/// Owns its zstd contexts and scratch buffers, so it is for one thread at a time; create one per
/// worker. Scratch grows to the largest payload seen and is then reused: no allocation per chunk.
public final class ChunkCodec {
    /// The options in force.
    public let options: ChunkCodecOptions
    private let compressor: ZstdCompressor
    private let decompressor: ZstdDecompressor
    private var scratchA: UnsafeMutableRawPointer
    private var scratchB: UnsafeMutableRawPointer
    private var scratchCapacity: Int

    /// Creates a codec.
    /// - Parameter options: which transforms to try and the zstd level.
    /// - Throws: `ChunkCodecError.zstd` when a context cannot be created or the level is rejected.
    public init(options: ChunkCodecOptions = ChunkCodecOptions()) throws(ChunkCodecError) {
        self.options = options
        do {
            compressor = try ZstdCompressor(level: options.level)
            decompressor = try ZstdDecompressor()
        } catch { throw .zstd(error) }
        scratchCapacity = 0
        scratchA = .allocate(byteCount: 0, alignment: 16)
        scratchB = .allocate(byteCount: 0, alignment: 16)
    }

    deinit {
        scratchA.deallocate()
        scratchB.deallocate()
    }

    /// A destination size that always holds `encode`'s output for a payload of `payloadSize` bytes.
    public static func maxEncodedSize(payloadSize: Int) -> Int {
        ZstdCompressor.maxCompressedSize(payloadSize + 8)
    }

    /// Encodes a payload.
    /// - Parameters:
    ///   - payload: little-endian elements of `elementType`.
    ///   - elementType: what the payload holds; `.bytes` is compressed as it is.
    ///   - destination: where the zstd frame goes; `maxEncodedSize(payloadSize:)` bytes always suffice.
    /// - Returns: the frame size and the transforms applied (record them with the chunk).
    /// - Throws: `ChunkCodecError.payloadSize` when the payload is not whole elements, `.zstd` when
    ///   compression fails (for example a destination smaller than the bound that the data needs).
    public func encode(_ payload: UnsafeRawBufferPointer, elementType: ChunkElementType,
                       into destination: UnsafeMutableRawBufferPointer) throws(ChunkCodecError) -> (byteCount: Int, transforms: ChunkTransforms) {
        let size = elementType.size
        guard payload.count % size == 0 else { throw .payloadSize(byteCount: payload.count, elementType: elementType) }
        let n = payload.count / size
        ensureScratch(payload.count + 8)
        var transforms: ChunkTransforms = []
        var content = payload

        switch elementType {
        case .bytes:
            break
        case .float64:
            if options.quantiseFloats, quantise(payload, count: n) {
                transforms.insert(.quantised)
                // scratchA now holds the Int16 counts.
                var counts = UnsafeMutableRawBufferPointer(start: scratchA, count: 2 * n)
                if options.delta {
                    let c = counts.bindMemory(to: Int16.self)
                    Delta.encode(UnsafeBufferPointer(c), into: c)
                    transforms.insert(.delta)
                }
                // The step stays in front of the counts, unshuffled.
                let body = UnsafeMutableRawBufferPointer(start: scratchB + 8, count: 2 * n)
                if options.bitShuffle {
                    BitShuffle.shuffle(UnsafeRawBufferPointer(counts), into: body, elementSize: 2)
                    transforms.insert(.bitShuffle)
                } else {
                    body.copyMemory(from: UnsafeRawBufferPointer(counts))
                }
                counts = UnsafeMutableRawBufferPointer(start: scratchB, count: 8 + 2 * n)
                content = UnsafeRawBufferPointer(counts)
            } else if options.bitShuffle {
                content = shuffle(payload, elementSize: 8, into: scratchB)
                transforms.insert(.bitShuffle)
            }
        case .float32:
            if options.bitShuffle {
                content = shuffle(payload, elementSize: 4, into: scratchB)
                transforms.insert(.bitShuffle)
            }
        case .int16, .int32:
            if options.delta {
                if elementType == .int16 {
                    Delta.encode(payload.assumingMemoryBound(to: Int16.self),
                                 into: UnsafeMutableRawBufferPointer(start: scratchA, count: payload.count).bindMemory(to: Int16.self))
                } else {
                    Delta.encode(payload.assumingMemoryBound(to: Int32.self),
                                 into: UnsafeMutableRawBufferPointer(start: scratchA, count: payload.count).bindMemory(to: Int32.self))
                }
                content = UnsafeRawBufferPointer(start: scratchA, count: payload.count)
                transforms.insert(.delta)
            }
            if options.bitShuffle {
                content = shuffle(content, elementSize: size, into: scratchB)
                transforms.insert(.bitShuffle)
            }
        }
        do {
            return (try compressor.compress(content, into: destination), transforms)
        } catch { throw .zstd(error) }
    }

    /// The decoded size of an encoded chunk, from its zstd header (no decompression).
    /// - Throws: `ChunkCodecError` when the frame is malformed or its size is impossible for the transforms.
    public static func decodedSize(of encoded: UnsafeRawBufferPointer, elementType: ChunkElementType,
                                   transforms: ChunkTransforms) throws(ChunkCodecError) -> Int {
        let contentSize: Int
        do { contentSize = try ZstdDecompressor.contentSize(of: encoded) } catch { throw .zstd(error) }
        return try decodedSize(contentSize: contentSize, elementType: elementType, transforms: transforms)
    }

    /// Decodes a chunk produced by `encode`.
    /// - Parameters:
    ///   - encoded: exactly one zstd frame.
    ///   - elementType: the element type given to `encode`.
    ///   - transforms: the transforms `encode` returned.
    ///   - destination: output; its size bounds the decoded size (checked before decompressing).
    /// - Returns: the number of payload bytes written.
    /// - Throws: `ChunkCodecError`: `.unsupportedTransforms`, `.zstd` (corrupt, truncated, checksum),
    ///   `.contentSize`, `.destinationTooSmall`, `.invalidStep`.
    public func decode(_ encoded: UnsafeRawBufferPointer, elementType: ChunkElementType, transforms: ChunkTransforms,
                       into destination: UnsafeMutableRawBufferPointer) throws(ChunkCodecError) -> Int {
        let decoded = try Self.decodedSize(of: encoded, elementType: elementType, transforms: transforms)
        guard decoded <= destination.count else { throw .destinationTooSmall(needed: decoded, available: destination.count) }
        let size = elementType.size
        let contentSize = transforms.contains(.quantised) ? 8 + decoded / 4 : decoded
        ensureScratch(decoded + 8)
        let direct = transforms.isEmpty
        let contentBuffer = UnsafeMutableRawBufferPointer(start: direct ? destination.baseAddress : scratchB, count: contentSize)
        do {
            _ = try decompressor.decompress(encoded, into: contentBuffer)
        } catch { throw .zstd(error) }
        if direct { return decoded }
        let out = UnsafeMutableRawBufferPointer(rebasing: destination[..<decoded])

        if transforms.contains(.quantised) {
            let step = Double(bitPattern: UInt64(littleEndian: scratchB.loadUnaligned(as: UInt64.self)))
            guard step > 0, step.isFinite else { throw .invalidStep(step) }
            let n = decoded / 8
            let body = UnsafeRawBufferPointer(start: scratchB + 8, count: 2 * n)
            let counts = UnsafeMutableRawBufferPointer(start: scratchA, count: 2 * n)
            if transforms.contains(.bitShuffle) {
                BitShuffle.unshuffle(body, into: counts, elementSize: 2)
            } else {
                counts.copyMemory(from: body)
            }
            let c = counts.bindMemory(to: Int16.self)
            if transforms.contains(.delta) { Delta.decode(UnsafeBufferPointer(c), into: c) }
            Quantisation.fromCounts(UnsafeBufferPointer(c), step: step, into: out.bindMemory(to: Double.self))
            return decoded
        }
        let content = UnsafeRawBufferPointer(contentBuffer)
        if transforms.contains(.delta) {
            // Unshuffle into scratch A, then integrate into the destination.
            let integers = UnsafeMutableRawBufferPointer(start: scratchA, count: decoded)
            if transforms.contains(.bitShuffle) {
                BitShuffle.unshuffle(content, into: integers, elementSize: size)
            } else {
                integers.copyMemory(from: content)
            }
            if elementType == .int16 {
                Delta.decode(UnsafeBufferPointer(integers.bindMemory(to: Int16.self)), into: out.bindMemory(to: Int16.self))
            } else {
                Delta.decode(UnsafeBufferPointer(integers.bindMemory(to: Int32.self)), into: out.bindMemory(to: Int32.self))
            }
        } else {
            BitShuffle.unshuffle(content, into: out, elementSize: size)
        }
        return decoded
    }

    /// Checks the transforms against the element type and maps the content size to the payload size.
    private static func decodedSize(contentSize: Int, elementType: ChunkElementType,
                                    transforms: ChunkTransforms) throws(ChunkCodecError) -> Int {
        let valid: Bool
        switch elementType {
        case .bytes: valid = transforms.isEmpty
        case .float32: valid = transforms.isSubset(of: [.bitShuffle])
        case .int16, .int32: valid = transforms.isSubset(of: [.bitShuffle, .delta])
        case .float64:
            valid = transforms.isSubset(of: .known)
                && (transforms.contains(.quantised) || !transforms.contains(.delta))
        }
        guard valid else { throw .unsupportedTransforms(transforms, elementType: elementType) }
        if transforms.contains(.quantised) {
            guard contentSize >= 8, (contentSize - 8) % 2 == 0, (contentSize - 8) / 2 <= Int.max / 8 else {
                throw .contentSize(contentSize, elementType: elementType, transforms: transforms)
            }
            return (contentSize - 8) / 2 * 8
        }
        guard contentSize % elementType.size == 0 else {
            throw .contentSize(contentSize, elementType: elementType, transforms: transforms)
        }
        return contentSize
    }

    /// Tries to turn a float64 payload into Int16 counts in scratch A and its step at the start of scratch B.
    private func quantise(_ payload: UnsafeRawBufferPointer, count n: Int) -> Bool {
        let values = payload.assumingMemoryBound(to: Double.self)
        guard let step = Quantisation.candidateStep(values) else { return false }
        let counts = UnsafeMutableRawBufferPointer(start: scratchA, count: 2 * n).bindMemory(to: Int16.self)
        guard Quantisation.toCounts(values, step: step, into: counts) else { return false }
        scratchB.storeBytes(of: step.bitPattern.littleEndian, as: UInt64.self)
        return true
    }

    private func shuffle(_ source: UnsafeRawBufferPointer, elementSize: Int,
                         into scratch: UnsafeMutableRawPointer) -> UnsafeRawBufferPointer {
        let out = UnsafeMutableRawBufferPointer(start: scratch, count: source.count)
        BitShuffle.shuffle(source, into: out, elementSize: elementSize)
        return UnsafeRawBufferPointer(out)
    }

    private func ensureScratch(_ byteCount: Int) {
        guard byteCount > scratchCapacity else { return }
        // Grow geometrically so a slowly growing chunk size does not reallocate every time.
        let capacity = max(byteCount, scratchCapacity * 3 / 2)
        scratchA.deallocate()
        scratchB.deallocate()
        scratchA = .allocate(byteCount: capacity, alignment: 16)
        scratchB = .allocate(byteCount: capacity, alignment: 16)
        scratchCapacity = capacity
    }
}
