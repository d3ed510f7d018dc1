import TributaryTransport
import TributaryWire

/// `record --reconnect`: the analog frames each source sent while the session was lost, recorded as
/// a gap record (docs/CAPTURE.md §6, cause 2: the recorder saw `sequence` jump — the new session
/// numbers its frames from 0 again — without a gap frame).
///
/// A lost session is the error the Subject delivers (5 lost connection, 4 expired timeout, or a
/// close from a publisher that stopped). For each source that had sent analog data, the first
/// analog frame after the reconnection reveals the hole: its time minus the time of the source's
/// last frame before, in frame periods (samples per frame / configured rate), less one, is the
/// number of frames missing; the gap starts at the sequence number after the last frame received.
/// Nothing is recorded for a source without a configured rate, or when no frame slot was missed.
struct OutageGaps {
    struct Gap: Equatable {
        var sourceID: UInt32
        var firstMissing: UInt64
        var count: UInt64
        var timeNs: Int64
    }

    private struct SourceState {
        var lastSequence: UInt64
        var lastTimeNs: Int64
        var periodNs: Double?
    }

    private var rates: [UInt32: Double] = [:]
    private var sources: [UInt32: SourceState] = [:]
    /// Sources whose next analog frame is the first after an outage.
    private var resuming: Set<UInt32> = []

    /// Looks at one received package, in order.
    /// - Returns: the gap to record before this package's frame, if it reveals one.
    mutating func observe(_ package: ReceivedPackage) -> Gap? {
        let h = package.header
        switch package.content {
        case .configuration(let configuration):
            rates[h.sourceID] = configuration.channels.first?.samplingRate
            return nil
        case .error:
            // The session ended; the sources seen so far resume (or not) after the reconnection.
            resuming.formUnion(sources.keys)
            return nil
        case .analog(let view):
            let rate = rates[h.sourceID]
            let period = rate.flatMap { $0 > 0 && view.sampleCount > 0 ? Double(view.sampleCount) / $0 * 1e9 : nil }
            var gap: Gap?
            if resuming.remove(h.sourceID) != nil, let before = sources[h.sourceID], let beforePeriod = before.periodNs {
                // In Double: the publisher's timestamps may lie anywhere in Int64, apart by more than it holds.
                let slots = ((Double(h.timestampNs) - Double(before.lastTimeNs)) / beforePeriod).rounded()
                if slots >= 2, let count = UInt64(saturating: slots - 1) {
                    gap = Gap(sourceID: h.sourceID, firstMissing: before.lastSequence &+ 1, count: count, timeNs: h.timestampNs)
                }
            }
            sources[h.sourceID] = SourceState(lastSequence: h.sequence, lastTimeNs: h.timestampNs, periodNs: period)
            return gap
        default:
            return nil
        }
    }
}
