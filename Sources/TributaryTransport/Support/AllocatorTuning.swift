import CMalloc

/// Process-wide allocator settings for processes that stream frames.
///
/// Every received frame is a fresh libzmq allocation of its size (64 KiB typically) that is freed
/// once the observers are done with it. With glibc's defaults the heap top is trimmed back to the
/// kernel whenever 128 KiB at the top are free, so the next frames fault their pages in again:
/// on this project's 2-core machines that cost the publisher → subscriber path much of its
/// throughput (docs/PERFORMANCE.md, "Transport in one process"). Keeping freed memory (up to the
/// limits below) removes it.
///
/// This changes the whole process's allocator policy, so a library does not do it on its own:
/// applications call it once at startup (the `tributary` streaming commands and the benchmarks do).
public enum AllocatorTuning {
    /// Keeps up to `trimThreshold` bytes of free heap instead of returning it, grows the heap by
    /// `topPad` extra bytes at a time, and serves allocations below `mmapThreshold` from the heap.
    ///
    /// - Returns: whether glibc accepted every setting.
    @discardableResult
    public static func keepFreedMemoryForStreaming(
        trimThreshold: Int32 = 256 << 20, topPad: Int32 = 64 << 20,
        mmapThreshold: Int32 = 32 << 20
    ) -> Bool {
        // mallopt returns 1 on success.
        let trim = mallopt(M_TRIM_THRESHOLD, trimThreshold)
        let pad = mallopt(M_TOP_PAD, topPad)
        let mmap = mallopt(M_MMAP_THRESHOLD, mmapThreshold)
        return trim == 1 && pad == 1 && mmap == 1
    }

    /// Gives the free pages of every heap back to the kernel now (glibc `malloc_trim(0)`), whatever
    /// `keepFreedMemoryForStreaming` keeps: for a process that just freed a burst it will not need
    /// again soon (files a subscriber sent), so that its resident memory goes back down.
    ///
    /// - Returns: whether any memory was released.
    @discardableResult
    public static func releaseFreeMemory() -> Bool {
        malloc_trim(0) == 1
    }
}
