extension LatentCoder {
    /// Decoding tables and scratch, allocated once and reused from block to block.
    final class Tables {
        /// Per slot: (frequency − 1) | (slot − cumulative) << 12 | symbol << 24.
        let slots = UnsafeMutablePointer<UInt32>.allocate(capacity: 4096)
        let symbolBase = UnsafeMutablePointer<UInt64>.allocate(capacity: 256)
        let symbolWidth = UnsafeMutablePointer<UInt64>.allocate(capacity: 256)
        /// 2^width − 1 for widths ≤ 56.
        let symbolMask = UnsafeMutablePointer<UInt64>.allocate(capacity: 256)
        /// The decoded symbols of a block.
        private(set) var symbols = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        private var symbolCapacity = 1
        /// The symbol bytes of a block of arity 2 or 3 (stream version 4), decompressed.
        private(set) var packed = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        private var packedCapacity = 1
        /// The positions of a block's escapes.
        private(set) var escapePositions = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        private var escapeCapacity = 1
        /// The rANS words of a block, one padded region per lane.
        private(set) var words = UnsafeMutablePointer<UInt16>.allocate(capacity: 1)
        private var wordCapacity = 1

        init() {
            slots.initialize(repeating: 0, count: 4096)
            symbolBase.initialize(repeating: 0, count: 256)
            symbolWidth.initialize(repeating: 0, count: 256)
            symbolMask.initialize(repeating: 0, count: 256)
        }

        deinit {
            slots.deallocate()
            symbolBase.deallocate()
            symbolWidth.deallocate()
            symbolMask.deallocate()
            symbols.deallocate()
            packed.deallocate()
            escapePositions.deallocate()
            words.deallocate()
        }

        func reserve(symbols n: Int, words count: Int, packed packedCount: Int = 0, escapes escapeCount: Int = 0) {
            Self.grow(&escapePositions, &escapeCapacity, to: escapeCount)
            Self.grow(&packed, &packedCapacity, to: packedCount)
            Self.grow(&symbols, &symbolCapacity, to: n)
            Self.grow(&words, &wordCapacity, to: count)
        }

        /// Replaces `buffer` by one of at least `needed` elements (1.5× the old when that is more),
        /// its contents not kept, when it holds fewer.
        private static func grow<T>(_ buffer: inout UnsafeMutablePointer<T>, _ capacity: inout Int, to needed: Int) {
            guard needed > capacity else { return }
            buffer.deallocate()
            capacity = max(needed, capacity * 3 / 2)
            buffer = .allocate(capacity: capacity)
        }
    }
}
