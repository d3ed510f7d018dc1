import Foundation
import TributaryCapture
import TributaryFormats

/// The marker streams of an XDF export (docs/FORMATS.md): per `MessageSeries` an LSL marker stream
/// (channel_format string, 1 channel labelled "message", nominal_srate 0, type "Markers", name the
/// series', source_id "tributary-messages-N"), one sample per message, stamped with its time in
/// seconds since 1970 (the same clock as the analog streams), its text the message's. Samples
/// chunks go between the analog ones in time order (one chunk per stream for the messages before
/// the next analog chunk). Clock offsets as for the analog streams: one ClockOffset chunk per record
/// that applies (`MessageSeries.offsets(for:in:)`), else 0 at the first and last message.
struct XDFMarkerChunks {
    let streams: [MessageSeries]
    let firstStreamID: Int
    /// Per stream: the offsets written (XDF's terms), and the next message to write.
    let measured: [[(time: Double, value: Double)]]
    private var next: [Int]

    init(_ streams: [MessageSeries], firstStreamID: Int, clockOffsets: [CaptureClockOffset]) {
        self.streams = streams.filter { !$0.times.isEmpty }
        self.firstStreamID = firstStreamID
        measured = self.streams.map { s in MessageSeries.offsets(for: s.sourceID, in: clockOffsets).map(FormatExport.xdfClockOffset) }
        next = Array(repeating: 0, count: self.streams.count)
    }

    func streamID(_ k: Int) -> UInt32 { UInt32(truncatingIfNeeded: firstStreamID + k) }

    func first(_ k: Int) -> Double { Double(streams[k].times.first ?? 0) / 1e9 }
    func last(_ k: Int) -> Double { Double(streams[k].times.last ?? 0) / 1e9 }

    func writeHeaders(_ writer: XDFWriter) throws(FormatError) {
        for (k, s) in streams.enumerated() {
            let header = XDFStreamHeader(
                streamID: streamID(k), name: s.name, type: "Markers", channelCount: 1, nominalRate: 0, format: .string,
                sourceID: "tributary-messages-\(s.sourceID)", channels: [XDFChannelInfo(label: "message", type: "marker")],
                extraDescription: "<messages><source_id>\(s.sourceID)</source_id></messages>")
            try writer.streamHeader(header)
        }
    }

    func writeFirstOffsets(_ writer: XDFWriter) throws(FormatError) {
        for k in streams.indices {
            for o in measured[k] { try writer.clockOffset(streamID: streamID(k), collectionTime: o.time, offset: o.value) }
            if measured[k].isEmpty { try writer.clockOffset(streamID: streamID(k), collectionTime: first(k), offset: 0) }
        }
    }

    /// Writes, per stream, the messages not yet written whose time is at most `limit` (nil: all).
    mutating func writeSamples(_ writer: XDFWriter, before limit: Int64?) throws(FormatError) {
        for (k, s) in streams.enumerated() where next[k] < s.times.count {
            var end = next[k]
            while end < s.times.count, limit.map({ s.times[end] <= $0 }) ?? true { end += 1 }
            guard end > next[k] else { continue }
            let range = next[k]..<end
            try writer.stringSamples(
                streamID: streamID(k), samples: range.map { [s.texts[$0]] }, timestamps: range.map { Double(s.times[$0]) / 1e9 })
            next[k] = end
        }
    }

    func writeFooters(_ writer: XDFWriter) throws(FormatError) {
        for (k, s) in streams.enumerated() {
            if measured[k].isEmpty { try writer.clockOffset(streamID: streamID(k), collectionTime: last(k), offset: 0) }
            try writer.streamFooter(
                streamID: streamID(k), firstTimestamp: first(k), lastTimestamp: last(k), sampleCount: s.times.count,
                clockOffsets: measured[k].isEmpty ? [(first(k), 0), (last(k), 0)] : measured[k])
        }
    }
}
