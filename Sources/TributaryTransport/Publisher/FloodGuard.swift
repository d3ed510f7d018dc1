import TributaryWire

/// What bounds how much one subscriber may send the publisher (docs/PROTOCOL.md §4.8), per session:
/// at most `Limits.framesPerWindow` frames read per `Limits.windowNs` (the frame guard), and at most
/// `Limits.maxUnreadBytes` received by the kernel and not yet read by the publisher (the backlog
/// guard: a peer that sends faster than it is read piles its frames up in libzmq). Socket-free: the
/// engine tells it what it read and what the connection received.
struct FloodGuard {
    struct Limits {
        /// The length of the frame guard's window.
        static let windowNs: UInt64 = 100_000_000
        /// Bytes forgiven per check (ZMTP commands libzmq consumes itself, such as a subscriber's
        /// heartbeat PINGs, are received and never read by the publisher).
        static let slackPerCheck: Int64 = 4_096

        /// Frames a session may send per window.
        let framesPerWindow: Int
        /// How far a session's peer may get ahead of the publisher's reading, in bytes.
        let maxUnreadBytes: Int64

        init(framesPerWindow: Int, maxUnreadBytes: Int64) {
            self.framesPerWindow = max(1, framesPerWindow)
            self.maxUnreadBytes = maxUnreadBytes
        }

        /// From the configuration: its frames a second spread over windows, and its unread bytes,
        /// never below two frames of the largest size (a peer may always have one in flight).
        init(_ configuration: PublisherConfiguration) {
            let windowsPerSecond = Int(1_000_000_000 / Self.windowNs)
            self.init(
                framesPerWindow: configuration.maxInboundFramesPerSecond / windowsPerSecond,
                maxUnreadBytes: max(
                    Int64(clamping: configuration.maxUnreadBytesPerSession),
                    Int64(clamping: configuration.maxInboundFrameSize).multipliedSaturated(by: 2)))
        }
    }

    private var windowStartNs: UInt64 = 0
    private var framesInWindow = 0
    /// Bytes of ZMTP frames read from the subscriber.
    private(set) var bytesRead: Int64 = 0
    private var receivedAtCheck: Int64 = -1
    private var readAtCheck: Int64 = 0
    /// How far the peer is ahead of the publisher's reading, as of the last check.
    private(set) var unreadBytes: Int64 = 0

    /// Counts a frame read from the subscriber at `now`, whose parts took `wireBytes` on the
    /// connection. - Returns: true when more than `limits.framesPerWindow` were read in the window.
    mutating func frameRead(wireBytes: Int64, now: UInt64, limits: Limits) -> Bool {
        bytesRead = bytesRead.addingSaturated(wireBytes)
        if now &- windowStartNs >= Limits.windowNs {
            windowStartNs = now
            framesInWindow = 0
        }
        framesInWindow += 1
        return framesInWindow > limits.framesPerWindow
    }

    /// Updates `unreadBytes` from the connection's received-byte count: what arrived since the last
    /// check minus what the publisher read, less the slack, never below zero (the first check only
    /// sets the baseline). - Returns: true when it is over `limits.maxUnreadBytes`.
    mutating func backlogExceeded(received: Int64, limits: Limits) -> Bool {
        if receivedAtCheck >= 0 {
            let arrived = received.subtractingSaturated(receivedAtCheck)
            let read = bytesRead.subtractingSaturated(readAtCheck)
            unreadBytes = max(0, unreadBytes.addingSaturated(arrived).subtractingSaturated(read).subtractingSaturated(Limits.slackPerCheck))
        }
        receivedAtCheck = received
        readAtCheck = bytesRead
        return unreadBytes > limits.maxUnreadBytes
    }

    /// The bytes a message part of `size` bytes took on the connection: its size and its ZMTP framing
    /// (2 bytes, 9 when the frame is longer than 255 bytes); with CURVE each part is a MESSAGE command
    /// of 33 bytes more (name, nonce, MAC and flags).
    static func wireBytes(ofPart size: Int, curve: Bool) -> Int64 {
        let frame = size + (curve ? 33 : 0)
        return Int64(frame + (frame > 255 ? 9 : 2))
    }
}
