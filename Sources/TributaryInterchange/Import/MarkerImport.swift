import Foundation
import TributaryCapture
import TributaryFormats
import TributaryWire

/// The marker streams of an XDF file as message frames (docs/FORMATS.md, XDF import): every string
/// stream, whatever its rate, gives one message per sample, its text the sample's string (several
/// channels: a JSON array of them, `XDFMarkers.join`), its time the sample's timestamp corrected by
/// the stream's ClockOffset chunks as pyxdf's `load_xdf(synchronize_clocks=True)` corrects it
/// (`XDFClockSync`, the same correction the numeric streams get), code 0 and source id 0 (a message
/// of no source). The messages of all marker streams are recorded in time order (a stable sort:
/// equal times keep the streams' and the samples' order), sequence numbers 1, 2, ….
public enum MarkerImport {
    /// A marker stream's messages.
    public struct Stream: Sendable {
        public var streamID: UInt32
        public var name: String
        public var messages: [(timestampNs: Int64, text: String)]
    }

    /// The marker streams of the XDF file at `path` (those `select` names, by stream name or id, when given).
    /// - Throws: `CaptureError.usage` naming the file when it is malformed (`XDFMarkers.read`), a
    ///   stream's clock offsets give no finite correction, or a corrected time is beyond the range of
    ///   `timestamp_ns`.
    public static func read(xdf path: String, select: Set<String>? = nil) throws(CaptureError) -> [Stream] {
        let streams: [XDFMarkerStream]
        do { streams = try XDFMarkers.read(path: path, select: select) } catch let error where error.file == path {
            throw CaptureError(.usage, file: path, error.location.isEmpty ? error.reason : "\(error.location): \(error.reason)")
        } catch {
            throw CaptureError(.usage, file: path, "\(error)")
        }
        return try streams.map { s throws(CaptureError) in try messages(s, file: path) }
    }

    /// The messages of one marker stream, times corrected.
    static func messages(_ s: XDFMarkerStream, file: String) throws(CaptureError) -> Stream {
        let what = "marker stream '\(s.header.name)' (id \(s.header.streamID))"
        var sync = XDFClockSync(times: s.clockTimes, values: s.clockValues)
        if sync.isUnusable {
            throw CaptureError(
                .usage, file: file, "\(what): its \(s.clockTimes.count) clock offsets give no finite correction (\(sync.lines))")
        }
        var out = Stream(streamID: s.header.streamID, name: s.header.name, messages: [])
        out.messages.reserveCapacity(s.texts.count)
        for (k, text) in s.texts.enumerated() {
            let t = sync.correct(s.timestamps[k])
            guard let ns = SampleTime.nanoseconds(seconds: t) else {
                throw CaptureError(
                    .usage, file: file,
                    "\(what): sample \(k) at \(s.timestamps[k]) s (\(t) s with the clock offsets) "
                        + "is beyond the range of timestamp_ns (1677-09-21 to 2262-04-11)")
            }
            out.messages.append((ns, text))
        }
        return out
    }

    /// The message frames of `streams`: source id 0, in time order, sequence numbers from 1.
    public static func frames(_ streams: [Stream]) -> [Frame] {
        let all = streams.flatMap(\.messages).enumerated().sorted { a, b in
            a.element.timestampNs != b.element.timestampNs ? a.element.timestampNs < b.element.timestampNs : a.offset < b.offset
        }
        return all.enumerated().map { k, m in
            Frame(encoding: .message(Message(m.element.text)), sequence: UInt64(k + 1), timestampNs: m.element.timestampNs, sourceID: 0)
        }
    }
}
