/// A file or image put back together from its chunks.
public struct AssembledBlob: Sendable, Hashable {
    public var name: String
    public var attributes: [String]
    public var imageFormat: ImageFormat?
    /// The MD5 the sender sent (already verified against `content`), if any.
    public var md5: [UInt8]?
    public var content: [UInt8]
}

/// Why a transfer could not be assembled.
public struct BlobError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: String, Sendable { case inconsistentChunk, tooLarge, checksumMismatch }
    public var reason: Reason
    public var transferID: UInt64
    public var detail: String

    public var description: String { "transfer \(transferID): \(reason.rawValue): \(detail)" }
}

/// Reassembles chunked files and images and verifies their MD5 (SCCT FilePackage / ImagePackage).
///
/// Chunks may arrive in any order; a transfer completes when every chunk has arrived. What it holds
/// is what was received — the chunks themselves, joined only when the last one arrives — so memory
/// follows the bytes a peer actually sent, never the size it announced, and each chunk costs work in
/// proportion to its own size. Memory is bounded by `maxTransferSize` per transfer,
/// `maxPendingTransfers` transfers and `maxPendingBytes` for all unfinished transfers together.
public struct BlobAssembler {
    struct Pending {
        /// The first chunk's description of the transfer (its content is in `pieces`).
        var first: BlobChunk
        /// Content by chunk index, with its offset.
        var pieces: [UInt32: (offset: UInt64, content: [UInt8])] = [:]
        var bytes = 0
    }

    public let maxTransferSize: UInt64
    public let maxPendingTransfers: Int
    public let maxPendingBytes: UInt64
    private var pending: [UInt64: Pending] = [:]
    /// Bytes held by unfinished transfers.
    public private(set) var pendingBytes: UInt64 = 0

    public init(maxTransferSize: UInt64 = 1 << 30, maxPendingTransfers: Int = 16, maxPendingBytes: UInt64? = nil) {
        self.maxTransferSize = maxTransferSize
        self.maxPendingTransfers = maxPendingTransfers
        self.maxPendingBytes = maxPendingBytes ?? maxTransferSize
    }

    /// Number of transfers started but not complete.
    public var pendingCount: Int { pending.count }

    /// Drops every unfinished transfer.
    public mutating func removeAll() {
        pending.removeAll()
        pendingBytes = 0
    }

    private mutating func drop(_ id: UInt64) {
        if let entry = pending.removeValue(forKey: id) { pendingBytes -= UInt64(entry.bytes) }
    }

    /// Adds a chunk; returns the whole blob when this chunk completes it.
    ///
    /// - Throws: `BlobError` when the chunk contradicts earlier chunks of its transfer (a different
    ///   size, count, name or MD5, an index out of range or seen before, pieces that overlap or leave
    ///   holes), the transfer or all pending transfers would exceed their limits, or the assembled
    ///   content does not match its MD5. The transfer is dropped; other transfers are kept.
    public mutating func add(_ chunk: BlobChunk) throws(BlobError) -> AssembledBlob? {
        let id = chunk.transferID
        guard chunk.totalSize <= maxTransferSize else {
            drop(id)
            throw BlobError(
                reason: .tooLarge, transferID: id,
                detail: "\(chunk.totalSize) bytes exceed the limit of \(maxTransferSize)")
        }
        guard chunk.chunkCount > 0, chunk.chunkIndex < chunk.chunkCount,
            chunk.chunkOffset <= chunk.totalSize, UInt64(chunk.content.count) <= chunk.totalSize - chunk.chunkOffset
        else {
            drop(id)
            throw BlobError(
                reason: .inconsistentChunk, transferID: id,
                detail:
                    "chunk \(chunk.chunkIndex) of \(chunk.chunkCount) with \(chunk.content.count) bytes at offset \(chunk.chunkOffset) does not fit a transfer of \(chunk.totalSize) bytes"
            )
        }
        var entry: Pending
        if let existing = pending[id] {
            entry = existing
            let f = entry.first
            guard f.totalSize == chunk.totalSize, f.chunkCount == chunk.chunkCount, f.md5 == chunk.md5,
                f.name == chunk.name, f.imageFormat == chunk.imageFormat
            else {
                drop(id)
                throw BlobError(
                    reason: .inconsistentChunk, transferID: id,
                    detail: "chunk \(chunk.chunkIndex) disagrees with chunk \(f.chunkIndex) on size, count, name or MD5")
            }
            guard entry.pieces[chunk.chunkIndex] == nil else {
                drop(id)
                throw BlobError(reason: .inconsistentChunk, transferID: id, detail: "chunk \(chunk.chunkIndex) arrived twice")
            }
        } else {
            guard pending.count < maxPendingTransfers else {
                throw BlobError(
                    reason: .tooLarge, transferID: id,
                    detail: "more than \(maxPendingTransfers) transfers in progress")
            }
            var description = chunk
            description.content = []
            entry = Pending(first: description)
        }
        guard pendingBytes + UInt64(chunk.content.count) <= maxPendingBytes else {
            drop(id)
            throw BlobError(
                reason: .tooLarge, transferID: id,
                detail: "unfinished transfers would hold more than \(maxPendingBytes) bytes")
        }
        // Take the entry out while it changes, so that the dictionary's copy does not force a copy.
        pending[id] = nil
        entry.pieces[chunk.chunkIndex] = (chunk.chunkOffset, chunk.content)
        entry.bytes += chunk.content.count
        pendingBytes += UInt64(chunk.content.count)
        guard entry.pieces.count == Int(entry.first.chunkCount) else {
            pending[id] = entry
            return nil
        }
        pendingBytes -= UInt64(entry.bytes)
        let first = entry.first
        let ordered = entry.pieces.values.sorted { $0.offset < $1.offset }
        var content: [UInt8] = []
        content.reserveCapacity(Int(first.totalSize))
        for piece in ordered {
            guard piece.offset == UInt64(content.count) else {
                throw BlobError(
                    reason: .inconsistentChunk, transferID: id,
                    detail: "the chunks leave a hole or overlap at byte \(min(piece.offset, UInt64(content.count)))")
            }
            content.append(contentsOf: piece.content)
        }
        guard UInt64(content.count) == first.totalSize else {
            throw BlobError(
                reason: .inconsistentChunk, transferID: id,
                detail: "the chunks hold \(content.count) bytes of the announced \(first.totalSize)")
        }
        if let expected = first.md5 {
            let actual = MD5.digest(content)
            guard actual == expected else {
                throw BlobError(
                    reason: .checksumMismatch, transferID: id,
                    detail: "MD5 \(MD5.hex(actual)) of '\(first.name)' does not match the sent \(MD5.hex(expected))")
            }
        }
        return AssembledBlob(
            name: first.name, attributes: first.attributes,
            imageFormat: first.imageFormat, md5: first.md5, content: content)
    }
}
