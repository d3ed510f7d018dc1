import Foundation
import TributaryCapture
import TributaryFormats
import TributaryWire

/// The messages (kind 5) of one source of a capture, with their times: what `export --format xdf`
/// writes as a marker stream (docs/FORMATS.md). Source 0 holds the messages of no source (those a
/// publisher sends for itself, e.g. `serve --message`).
public struct MessageSeries: Sendable {
    public var sourceID: UInt32
    /// The stream's name: "DEVICE messages" for a source with a configuration, "source N messages"
    /// for one without, "messages" for source 0.
    public var name: String
    /// Each message's `timestamp_ns`, in recorded order.
    public var times: [Int64]
    public var texts: [String]

    /// The messages of the capture, one series per source id that has any (ascending, 0 first).
    /// - Parameters:
    ///   - sources: the source ids whose messages to take (nil: every one, 0 included).
    ///   - allowDamage: skip damaged chunks rather than refuse.
    /// - Throws: `ExportError` `.damaged` for a damaged chunk holding messages without `allowDamage`.
    static func gather(
        _ reader: CaptureReader, sources: Set<UInt32>?, allowDamage: Bool, spelling: ExportOptionSpelling = .keywords
    ) throws(ExportError) -> [MessageSeries] {
        let messageBit = UInt32(1) << UInt32(FrameKind.message.rawValue)
        var bySource: [UInt32: MessageSeries] = [:]
        for entry in reader.index where entry.envelope.type == .chunk && entry.envelope.kindMask & messageBit != 0 {
            guard sources?.contains(entry.envelope.sourceID) ?? true else { continue }
            let frames: [Frame]
            do { frames = try reader.frames(of: entry, samples: false) } catch {
                if allowDamage { continue }
                throw ExportError(
                    .damaged,
                    "\(reader.path) is damaged (\(error)); nothing written. Pass \(spelling.name(.allowDamage)) to export what is intact, "
                        + "or run 'tributary repair \(reader.path) --out REPAIRED.tcap'", damage: reader.damage)
            }
            for frame in frames where frame.header.kind == .message {
                guard case .message(let m)? = try? frame.payload() else { continue }
                let id = frame.header.sourceID
                if bySource[id] == nil { bySource[id] = MessageSeries(sourceID: id, name: name(reader, id), times: [], texts: []) }
                bySource[id]!.times.append(frame.header.timestampNs)
                bySource[id]!.texts.append(m.text)
            }
        }
        return bySource.keys.sorted().compactMap { bySource[$0] }
    }

    static func name(_ reader: CaptureReader, _ id: UInt32) -> String {
        guard id != 0 else { return "messages" }
        return "\(reader.configuration(source: id)?.deviceName ?? "source \(id)") messages"
    }

    /// The messages from `start` to `end` (ns, inclusive).
    func selecting(from start: Int64, to end: Int64) -> MessageSeries {
        var out = self
        let keep = times.indices.filter { times[$0] >= start && times[$0] <= end }
        out.times = keep.map { times[$0] }
        out.texts = keep.map { texts[$0] }
        return out
    }

    /// The clock-offset records that apply to the messages of `source`: those that apply to it; for
    /// source 0 (messages of no source, i.e. of the publisher) those of every source, and those of
    /// the one publisher when every record lists the same sources (a capture of one publisher).
    static func offsets(for source: UInt32, in all: [CaptureClockOffset]) -> [CaptureClockOffset] {
        guard source == 0 else { return all.filter { $0.applies(to: source) } }
        let listed = Set(all.filter { !$0.sourceIDs.isEmpty }.map { Set($0.sourceIDs) })
        return all.filter { $0.sourceIDs.isEmpty || listed.count == 1 }
    }
}
