/// The numeric transforms of `ChunkTransforms` — quantise, delta, bit-shuffle — applied to one
/// payload and undone, written once for the chunk codec and for the capture's per-format streams.
///
/// No allocation: the caller provides the output and one scratch area (at least the raw payload's
/// size), and reuses them from chunk to chunk.
enum NumericTransform {
    /// Why stored bytes cannot be turned back into a payload.
    enum Failure: Error, Equatable {
        /// The transforms do not apply to the element type (or unknown bits are set).
        case invalidTransforms
        /// The stored size is impossible for the element type and transforms.
        case storedSize
        /// The 8-byte quantisation step is not a positive finite number.
        case invalidStep(Double)
    }

    /// Whether `transforms` can have been applied to payloads of `elementType`.
    static func isValid(_ transforms: ChunkTransforms, for elementType: ChunkElementType) -> Bool {
        if transforms.contains(.coded) { return transforms == .coded && elementType != .bytes }
        return switch elementType {
        case .bytes: transforms.isEmpty
        case .float32: transforms.isSubset(of: [.bitShuffle])
        case .int16, .int32: transforms.isSubset(of: [.bitShuffle, .delta])
        case .float64: transforms.isSubset(of: .known) && (transforms.contains(.quantised) || !transforms.contains(.delta))
        }
    }

    /// The payload size that stored bytes of `storedSize` decode to.
    /// - Throws: `.invalidTransforms` or `.storedSize`.
    static func payloadSize(storedSize: Int, elementType: ChunkElementType, transforms: ChunkTransforms) throws(Failure) -> Int {
        guard isValid(transforms, for: elementType) else { throw .invalidTransforms }
        // A coded stream states its element count in its own header (NumericCodec.elementCount).
        guard !transforms.contains(.coded) else { throw .storedSize }
        if transforms.contains(.quantised) {
            guard storedSize >= 8, (storedSize - 8) % 2 == 0, (storedSize - 8) / 2 <= Int.max / 8 else { throw .storedSize }
            return (storedSize - 8) / 2 * 8
        }
        guard storedSize % elementType.size == 0 else { throw .storedSize }
        return storedSize
    }

    /// Applies the transforms `options` allow to `raw` (whole elements of `elementType`).
    ///
    /// - Parameters:
    ///   - out: room for `raw.count + 8` bytes (a quantised payload stores an 8-byte step first).
    ///   - scratch: room for `raw.count` bytes.
    /// - Returns: the stored bytes — at `out`, or `raw` itself when no transform applies — and the
    ///   transforms applied.
    static func apply(
        _ raw: UnsafeRawBufferPointer, elementType: ChunkElementType, options: ChunkCodecOptions,
        scratch: UnsafeMutableRawPointer, into out: UnsafeMutableRawPointer
    ) -> (stored: UnsafeRawBufferPointer, transforms: ChunkTransforms) {
        let size = elementType.size
        let n = raw.count / size
        func shuffled(_ content: UnsafeRawBufferPointer, elementSize: Int, at destination: UnsafeMutableRawPointer)
            -> UnsafeRawBufferPointer
        {
            let target = UnsafeMutableRawBufferPointer(start: destination, count: content.count)
            BitShuffle.shuffle(content, into: target, elementSize: elementSize)
            return UnsafeRawBufferPointer(target)
        }
        switch elementType {
        case .bytes:
            return (raw, [])
        case .float64:
            let values = raw.assumingMemoryBound(to: Double.self)
            let counts = UnsafeMutableRawBufferPointer(start: scratch, count: 2 * n).bindMemory(to: Int16.self)
            if options.quantiseFloats, let step = Quantisation.candidateStep(values),
                Quantisation.toCounts(values, step: step, into: counts)
            {
                var transforms: ChunkTransforms = [.quantised]
                // The step stays in front of the counts, unshuffled.
                out.storeBytes(of: step.bitPattern.littleEndian, as: UInt64.self)
                if options.delta {
                    Delta.encode(UnsafeBufferPointer(counts), into: counts)
                    transforms.insert(.delta)
                }
                let body = UnsafeMutableRawBufferPointer(start: out + 8, count: 2 * n)
                if options.bitShuffle {
                    BitShuffle.shuffle(UnsafeRawBufferPointer(counts), into: body, elementSize: 2)
                    transforms.insert(.bitShuffle)
                } else if n > 0 {
                    body.copyMemory(from: UnsafeRawBufferPointer(counts))
                }
                return (UnsafeRawBufferPointer(start: out, count: 8 + 2 * n), transforms)
            }
            return options.bitShuffle ? (shuffled(raw, elementSize: 8, at: out), [.bitShuffle]) : (raw, [])
        case .float32:
            return options.bitShuffle ? (shuffled(raw, elementSize: 4, at: out), [.bitShuffle]) : (raw, [])
        case .int16, .int32:
            var content = raw
            var transforms: ChunkTransforms = []
            if options.delta {
                if elementType == .int16 {
                    Delta.encode(
                        raw.assumingMemoryBound(to: Int16.self),
                        into: UnsafeMutableRawBufferPointer(start: scratch, count: raw.count).bindMemory(to: Int16.self))
                } else {
                    Delta.encode(
                        raw.assumingMemoryBound(to: Int32.self),
                        into: UnsafeMutableRawBufferPointer(start: scratch, count: raw.count).bindMemory(to: Int32.self))
                }
                content = UnsafeRawBufferPointer(start: scratch, count: raw.count)
                transforms.insert(.delta)
            }
            if options.bitShuffle {
                return (shuffled(content, elementSize: size, at: out), transforms.union(.bitShuffle))
            }
            if transforms.isEmpty { return (raw, []) }
            let target = UnsafeMutableRawBufferPointer(start: out, count: raw.count)
            if raw.count > 0 { target.copyMemory(from: content) }
            return (UnsafeRawBufferPointer(target), transforms)
        }
    }

    /// Undoes `apply`: writes the payload of `stored` to `destination`, whose size must be
    /// `payloadSize(storedSize: stored.count, …)`.
    ///
    /// - Parameter scratch: room for `destination.count` bytes.
    /// - Throws: `.invalidTransforms`, `.storedSize` or `.invalidStep`.
    static func reverse(
        _ stored: UnsafeRawBufferPointer, elementType: ChunkElementType, transforms: ChunkTransforms,
        scratch: UnsafeMutableRawPointer, into destination: UnsafeMutableRawBufferPointer
    ) throws(Failure) {
        guard try payloadSize(storedSize: stored.count, elementType: elementType, transforms: transforms) == destination.count else {
            throw .storedSize
        }
        if transforms.contains(.quantised) {
            let n = destination.count / 8
            let step = Double(bitPattern: UInt64(littleEndian: stored.loadUnaligned(as: UInt64.self)))
            guard step > 0, step.isFinite else { throw .invalidStep(step) }
            let counts = UnsafeMutableRawBufferPointer(start: scratch, count: 2 * n)
            let body = UnsafeRawBufferPointer(rebasing: stored[8...])
            if transforms.contains(.bitShuffle) {
                BitShuffle.unshuffle(body, into: counts, elementSize: 2)
            } else if n > 0 {
                counts.copyMemory(from: body)
            }
            let c = counts.bindMemory(to: Int16.self)
            if transforms.contains(.delta) { Delta.decode(UnsafeBufferPointer(c), into: c) }
            Quantisation.fromCounts(UnsafeBufferPointer(c), step: step, into: destination.bindMemory(to: Double.self))
        } else if transforms.contains(.delta) {
            // Unshuffle into scratch, then integrate into the destination.
            let integers = UnsafeMutableRawBufferPointer(start: scratch, count: destination.count)
            if transforms.contains(.bitShuffle) {
                BitShuffle.unshuffle(stored, into: integers, elementSize: elementType.size)
            } else if !stored.isEmpty {
                integers.copyMemory(from: stored)
            }
            if elementType == .int16 {
                Delta.decode(UnsafeBufferPointer(integers.bindMemory(to: Int16.self)), into: destination.bindMemory(to: Int16.self))
            } else {
                Delta.decode(UnsafeBufferPointer(integers.bindMemory(to: Int32.self)), into: destination.bindMemory(to: Int32.self))
            }
        } else if transforms.contains(.bitShuffle) {
            BitShuffle.unshuffle(stored, into: destination, elementSize: elementType.size)
        } else if !stored.isEmpty {
            destination.copyMemory(from: stored)
        }
    }
}
