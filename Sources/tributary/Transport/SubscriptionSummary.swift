import Foundation
import Synchronization
import TributaryAnalysis
import TributaryText
import TributaryTransport
import TributaryWire

/// `subscribe --summary`: counts what arrives instead of printing it, and prints one JSON object at
/// the end (what a benchmark or a script needs: delivered bytes, the arrival times of the first and
/// last data frame, and the loss — announced by gap notices, and unaccounted).
final class SubscriptionSummary: Sendable {
    private struct Counts {
        var packages: UInt64 = 0
        var dataFrames: UInt64 = 0
        /// Bytes of analog samples, digital states and array elements as received (no headers).
        var dataBytes: UInt64 = 0
        var gapNotices: UInt64 = 0
        var announcedMissing: UInt64 = 0
        var firstDataUnix: Double?
        var lastDataUnix: Double?
    }
    private let counts = Mutex(Counts())

    /// Counts one package; never fails.
    func count(_ package: ReceivedPackage) {
        var bytes: UInt64?
        switch package.content {
        case .analog(let view): bytes = UInt64(view.channelCount * view.sampleCount * view.format.size)
        case .digital, .message, .xml, .array: bytes = package.frame.map { UInt64($0.withUnsafePayloadBytes { $0.count }) } ?? 0
        case .file(let file), .image(let file): bytes = UInt64(file.content.count)
        case .gap(let gap):
            counts.withLock {
                $0.packages += 1; $0.gapNotices += 1; $0.announcedMissing = $0.announcedMissing.addingSaturated(gap.missingCount)
            }
            return
        case .configuration, .properties, .error: break
        }
        let now = Date().timeIntervalSince1970
        counts.withLock { c in
            c.packages += 1
            guard let bytes else { return }
            c.dataFrames += 1
            c.dataBytes += bytes
            if c.firstDataUnix == nil { c.firstDataUnix = now }
            c.lastDataUnix = now
        }
    }

    /// The summary as one JSON object, with the Subject's own statistics and how the run ended.
    /// `clock`: the Subject's latest clock estimate (`clock_offset_s`, `clock_rtt_s`: publisher's clock
    /// minus this one, and the probe's round trip; null without one).
    func json(statistics: SubjectStatistics, clock: ClockEstimate?, end: String) -> JSON {
        let c = counts.withLock { $0 }
        let span = (c.lastDataUnix ?? 0) - (c.firstDataUnix ?? 0)
        return .object([
            ("packages", .uint(c.packages)), ("data_frames", .uint(c.dataFrames)), ("data_bytes", .uint(c.dataBytes)),
            ("first_data_unix", c.firstDataUnix.map { .double($0) } ?? .null),
            ("last_data_unix", c.lastDataUnix.map { .double($0) } ?? .null),
            // From the first data frame to the last: the first frame's bytes are not counted in the rate.
            (
                "data_mb_per_s",
                c.dataFrames > 1 && span > 0
                    ? .double(Double(c.dataBytes) * Double(c.dataFrames - 1) / Double(c.dataFrames) / span / 1e6) : .null
            ),
            ("gap_notices", .uint(c.gapNotices)), ("frames_announced_missing", .uint(c.announcedMissing)),
            ("frames_received", .uint(statistics.framesReceived)),
            ("unaccounted_loss", .uint(statistics.unaccountedLoss)), ("reconnections", .uint(statistics.reconnections)),
            ("clock_offset_s", clock.map { .double(Double($0.offsetNs) / 1e9) } ?? .null),
            ("clock_rtt_s", clock.map { .double(Double($0.rttNs) / 1e9) } ?? .null),
            ("clock_estimates", .uint(clock?.serial ?? 0)),
            ("end", .string(end)),
        ])
    }
}
