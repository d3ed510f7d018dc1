import Foundation
import TributaryWire

/// Automatic reconnection of a Subject that lost its session (error 4 or 5, or a close from the
/// publisher): new connection, hello, then the filters, source selection and start restored.
public struct ReconnectPolicy: Sendable {
    /// Delay before the first attempt; each failed attempt multiplies it by `multiplier`, up to `maxDelay`.
    public var initialDelay: Duration
    public var maxDelay: Duration
    public var multiplier: Double
    /// Attempts before giving up (nil: no limit).
    public var maxAttempts: Int?
    /// Asked before each attempt with the error that ended the session (or made the last attempt fail)
    /// and the attempt number (1, 2, …); false stops reconnecting (SCCT GOM's shouldReconnect).
    /// Runs on the Subject's socket thread: keep it short.
    public var shouldReconnect: @Sendable (ErrorReport, Int) -> Bool

    /// Never reconnects after a refusal (wrong key, timeout or clock: 1-3), otherwise always.
    public static let defaultShouldReconnect: @Sendable (ErrorReport, Int) -> Bool = { error, _ in
        ![ErrorCode.wrongAPIKey, .wrongTimeout, .wrongTimestamp].contains(error.code)
    }

    public init(
        initialDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(5), multiplier: Double = 2,
        maxAttempts: Int? = nil,
        shouldReconnect: @escaping @Sendable (ErrorReport, Int) -> Bool = ReconnectPolicy.defaultShouldReconnect
    ) {
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.multiplier = multiplier
        self.maxAttempts = maxAttempts
        self.shouldReconnect = shouldReconnect
    }

    /// The delay before attempt `attempt` (1-based), in nanoseconds: never negative, and the
    /// maximum when the multiplier makes no number of it (NaN, or zero times infinity).
    func delayNanoseconds(attempt: Int) -> UInt64 {
        let initial = Double(initialDelay.components.seconds) * 1e9 + Double(initialDelay.components.attoseconds) / 1e9
        let maximum = Double(maxDelay.components.seconds) * 1e9 + Double(maxDelay.components.attoseconds) / 1e9
        let delay = initial * Foundation.pow(multiplier, Double(max(0, attempt - 1)))
        let bounded = delay.isNaN ? maximum : min(delay, maximum)
        guard bounded > 0 else { return 0 }
        return bounded < 0x1p64 ? UInt64(bounded) : .max
    }
}

/// CURVE encryption of a Subject's connection.
public struct SubjectCurve: Sendable {
    /// The publisher's public key.
    public var serverKey: ZMQCurveKey
    /// This subscriber's key pair (its public key must be on the publisher's allow-list).
    public var keys: ZMQCurveKeyPair

    public init(serverKey: ZMQCurveKey, keys: ZMQCurveKeyPair) {
        self.serverKey = serverKey
        self.keys = keys
    }
}

/// How a Subject runs; every field has a working default.
public struct SubjectOptions: Sendable {
    /// Automatic reconnection (nil: a lost session stays lost, as in SCCT).
    public var reconnect: ReconnectPolicy?
    /// Optional CURVE encryption.
    public var curve: SubjectCurve?
    /// Credit granted to lossless (replay) sources: frames the publisher may send ahead of consumption.
    public var creditWindow: UInt32
    /// The same window in bytes of frames (header + payload, by the mean size of those received):
    /// the frames outstanding are at most `creditWindowBytes / size`, and at least 8 (docs/PROTOCOL.md
    /// §4.5). 8 MiB carries 8 GB/s over a 1 ms round trip; more only queues.
    public var creditWindowBytes: Int
    /// Messages libzmq buffers from the publisher before it stops reading the connection.
    public var receiveHighWaterMark: Int32
    /// The connection's kernel receive buffer (SO_RCVBUF) in bytes, or nil for the kernel's own,
    /// autotuned one. The default, `defaultReceiveBufferBytes`, is 4 MiB where the system lets a
    /// socket have it (`net.core.rmem_max` ≥ 4 MiB), else nil: Linux grows an autotuned buffer only
    /// as fast as the application read in past round trips, and on loopback it held a 64 KiB
    /// stream's window well below what the link carries, limiting the sender much of the time
    /// (`ss -ti`: `rwnd_limited`); with a fixed 4 MiB both an in-process publisher → Subject stream
    /// and `serve --preload` → `subscribe` ran faster (alternated batches of their benchmarks). Set nil
    /// for links whose bandwidth × round trip exceeds ~4 MB (a WAN), where autotuning (up to
    /// `net.ipv4.tcp_rmem`'s maximum) may go further; a size above `rmem_max` is capped there.
    public var receiveBufferBytes: Int?
    /// Largest frame accepted from the publisher.
    public var maxFrameSize: Int
    /// Largest file or image accepted from the publisher.
    public var maxTransferSize: UInt64
    /// ZMTP heartbeat PING period (the timeout is the session timeout given to `open`); `.zero`, the
    /// default, sends none. The session's own keepalives and timeout (docs/PROTOCOL.md §4.4) detect a
    /// silent publisher without them. Do not enable PINGs with libzmq 4.3.4: it aborts the whole
    /// process (`Assertion failed: !_io_error (stream_engine_base.cpp:331)`) when a PING timer fires
    /// on a connection it had stopped reading (a full receive queue: the subscriber paused, §4.5)
    /// and that was then reset — which is what a publisher that dies while a subscriber is slow does.
    public var heartbeatInterval: Duration
    /// Ask the publisher for compact header parts (docs/PROTOCOL.md §3.2; on by default): a 32-byte
    /// header part is kept inside its libzmq message, so a frame costs neither the publisher nor the
    /// subscriber a heap allocation for its header. A publisher that does not know them sends the
    /// 40-byte header, which is always accepted.
    public var compactHeaders: Bool
    /// The most source ids a publisher may use in one session (each costs state in every consumer:
    /// a recording's chunk builder, a view's traces); a frame of one more ends the session with
    /// error 11. docs/PROTOCOL.md §4.8.
    public var maxSources: Int
    /// The most bytes the latest configuration of every source may take together; past it the
    /// session ends with error 11.
    public var maxConfigurationBytes: Int

    public init(
        reconnect: ReconnectPolicy? = nil, curve: SubjectCurve? = nil, creditWindow: UInt32 = 256,
        creditWindowBytes: Int = 8 << 20, receiveHighWaterMark: Int32 = 1_000, maxFrameSize: Int = WireLimits.maxFrameSize,
        maxTransferSize: UInt64 = 256 << 20, heartbeatInterval: Duration = .zero, compactHeaders: Bool = true,
        receiveBufferBytes: Int? = SubjectOptions.defaultReceiveBufferBytes, maxSources: Int = 1_024,
        maxConfigurationBytes: Int = 16 << 20
    ) {
        self.compactHeaders = compactHeaders
        self.maxSources = maxSources
        self.maxConfigurationBytes = maxConfigurationBytes
        self.receiveBufferBytes = receiveBufferBytes
        self.reconnect = reconnect
        self.curve = curve
        self.creditWindow = creditWindow
        self.creditWindowBytes = creditWindowBytes
        self.receiveHighWaterMark = receiveHighWaterMark
        self.maxFrameSize = maxFrameSize
        self.maxTransferSize = maxTransferSize
        self.heartbeatInterval = heartbeatInterval
    }
}

extension SubjectOptions {
    /// 4 MiB when the system allows a socket that receive buffer (`net.core.rmem_max` ≥ 4 MiB), else
    /// nil (the kernel's autotuning: a smaller fixed buffer would hold the window below it).
    public static let defaultReceiveBufferBytes: Int? = {
        let wanted = 4 << 20
        guard let text = try? String(contentsOfFile: "/proc/sys/net/core/rmem_max", encoding: .utf8),
            let limit = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), limit >= wanted
        else { return nil }
        return wanted
    }()
}

/// Counters of a Subject.
public struct SubjectStatistics: Sendable, Equatable {
    /// Frames received in the current and earlier sessions (keepalives excluded).
    public var framesReceived: UInt64
    /// Gap notices received, and the frames they announced as dropped by the publisher.
    public var gapNotices: UInt64
    public var framesMissing: UInt64
    /// Sequence numbers that never arrived and that no gap notice covered (0 unless something is broken).
    public var unaccountedLoss: UInt64
    /// Sessions restored by automatic reconnection.
    public var reconnections: UInt64
    /// Times reading stopped because the callback queue was full.
    public var pauses: UInt64
    /// The callback queue's own measurements.
    public var callbackQueue: CallbackQueueStatistics
}
