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
/// Chunks may arrive in any order; a transfer completes when every chunk has arrived. Memory is
/// bounded by `maxTransferSize` per transfer and `maxPendingTransfers` transfers.
public struct BlobAssembler {
    struct Pending {
        var first: BlobChunk
        var content: [UInt8]
        var received: Set<UInt32>
    }

    public let maxTransferSize: UInt64
    public let maxPendingTransfers: Int
    private var pending: [UInt64: Pending] = [:]

    public init(maxTransferSize: UInt64 = 1 << 30, maxPendingTransfers: Int = 16) {
        self.maxTransferSize = maxTransferSize
        self.maxPendingTransfers = maxPendingTransfers
    }

    /// Number of transfers started but not complete.
    public var pendingCount: Int { pending.count }

    /// Adds a chunk; returns the whole blob when this chunk completes it.
    ///
    /// - Throws: `BlobError` when the chunk contradicts earlier chunks of its transfer, the transfer
    ///   is too large, or the assembled content does not match its MD5. The transfer is dropped.
    public mutating func add(_ chunk: BlobChunk) throws(BlobError) -> AssembledBlob? {
        let id = chunk.transferID
        guard chunk.totalSize <= maxTransferSize else {
            pending[id] = nil
            throw BlobError(reason: .tooLarge, transferID: id,
                            detail: "\(chunk.totalSize) bytes exceed the limit of \(maxTransferSize)")
        }
        var entry: Pending
        if let existing = pending[id] {
            entry = existing
            let f = entry.first
            guard f.totalSize == chunk.totalSize, f.chunkCount == chunk.chunkCount, f.md5 == chunk.md5,
                  f.name == chunk.name, f.imageFormat == chunk.imageFormat else {
                pending[id] = nil
                throw BlobError(reason: .inconsistentChunk, transferID: id,
                                detail: "chunk \(chunk.chunkIndex) disagrees with chunk \(f.chunkIndex) on size, count, name or MD5")
            }
        } else {
            guard pending.count < maxPendingTransfers else {
                throw BlobError(reason: .tooLarge, transferID: id,
                                detail: "more than \(maxPendingTransfers) transfers in progress")
            }
            entry = Pending(first: chunk, content: [UInt8](repeating: 0, count: Int(chunk.totalSize)), received: [])
        }
        let start = Int(chunk.chunkOffset)
        entry.content.replaceSubrange(start..<(start + chunk.content.count), with: chunk.content)
        entry.received.insert(chunk.chunkIndex)
        guard entry.received.count == Int(entry.first.chunkCount) else {
            pending[id] = entry
            return nil
        }
        pending[id] = nil
        if let expected = entry.first.md5 {
            let actual = MD5.digest(entry.content)
            guard actual == expected else {
                throw BlobError(reason: .checksumMismatch, transferID: id,
                                detail: "MD5 \(MD5.hex(actual)) of '\(entry.first.name)' does not match the sent \(MD5.hex(expected))")
            }
        }
        return AssembledBlob(name: entry.first.name, attributes: entry.first.attributes,
                             imageFormat: entry.first.imageFormat, md5: entry.first.md5, content: entry.content)
    }
}
