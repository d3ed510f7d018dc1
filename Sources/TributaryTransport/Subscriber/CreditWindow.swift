/// How many frames a subscriber lets a lossless (replay) publisher send ahead: the credit it grants
/// (docs/PROTOCOL.md §4.5). One per Subject session, on its socket thread.
///
/// The window is `frames` frames, and no more than `bytes` bytes of frames: it is
/// `W = min(frames, max(minimumFrames, bytes / s))`, `s` the moving mean size (header + payload) of
/// the data frames received (each frame weighs 1/8: a stream that alternates sizes gets the mean).
/// Credit is granted when what is outstanding falls to `W / 2`, bringing it back to `W`: at least
/// half a window is always in flight, and at most a window.
///
/// Why bytes: frames in flight beyond what the link carries in a round trip only queue. And they cost:
/// libzmq's pipes grow in chunks of 256 messages and keep one spare, so a publisher that runs more
/// than 256 message parts (128 two-part frames) ahead of its I/O thread allocates a chunk each time
/// it crosses into a new one. With 64 KiB frames a 256-frame window did that about once per 600
/// frames; 8 MiB keeps them to 127 frames, in one chunk, while 1 KiB frames keep the whole 256 (a
/// window of 120 for them cost the 1 KiB replay of `process_bench.py` a visible part of its throughput).
struct CreditWindow {
    /// Most frames outstanding (`SubjectOptions.creditWindow`).
    let frames: UInt32
    /// Most bytes of frames outstanding (`SubjectOptions.creditWindowBytes`).
    let bytes: Int
    /// The fewest frames the byte bound may leave (large file chunks still flow in batches).
    static let minimumFrames: UInt32 = 8

    /// Credit granted and not yet used (by our count: frames of live sources use none on the
    /// publisher's side, so this may reach zero while the publisher still has credit).
    private(set) var outstanding: UInt32 = 0
    /// The frames' moving mean size (0: none received yet).
    private var meanSize = 0.0

    init(frames: UInt32, bytes: Int) {
        self.frames = max(1, frames)
        self.bytes = max(1, bytes)
        target = self.frames
    }

    /// The window for frames of the mean size (the full `frames` before any frame).
    private(set) var target: UInt32

    /// A new session: nothing outstanding. Returns the first grant (the whole frame window).
    mutating func opened() -> UInt32 {
        outstanding = 0
        meanSize = 0
        target = frames
        return frames
    }

    /// A data frame of `size` bytes arrived. Returns the credit to grant now, or nil.
    mutating func received(size: Int) -> UInt32? {
        outstanding = outstanding > 0 ? outstanding - 1 : 0
        let size = Double(max(1, size))
        meanSize = meanSize == 0 ? size : meanSize + (size - meanSize) / 8
        let bySize = (Double(bytes) / meanSize).rounded(.down)
        target = bySize >= Double(frames) ? frames : max(min(Self.minimumFrames, frames), UInt32(bySize))
        return due
    }

    /// A gap notice announced `count` frames missing. Frames of a lossless source that the publisher
    /// dropped (a publisher that drops rather than holds them, or a lossless frame it could not
    /// queue) used credit too: counted as used — as frames of live sources are, which use none — so
    /// that the window is never left waiting for frames that will not come. Returns the credit to
    /// grant now, or nil.
    mutating func missed(_ count: UInt64) -> UInt32? {
        outstanding = UInt64(outstanding) > count ? outstanding - UInt32(count) : 0
        return due
    }

    /// The credit to grant now (what is outstanding is at most half the window), or nil; asked again
    /// by the session's housekeeping, so that a grant that could not be sent is not lost.
    var due: UInt32? {
        guard outstanding <= target / 2 else { return nil }
        return target - outstanding
    }

    /// The grant of `count` credits was sent.
    mutating func granted(_ count: UInt32) {
        outstanding &+= count
    }
}
