import Foundation
import TributaryText
import TributaryWire

/// Human-readable and JSON descriptions of frames, shared by `inspect` and `subscribe`.
package enum FrameDescription {
    /// One line: kind, source, sequence, time, filter, size and a content summary.
    package static func line(_ frame: Frame, payload: Payload) -> String {
        let h = frame.header
        // Fields padded to widths that hold typical values, so that a listing's columns line up.
        return pad(h.kind.description, 14) + " " + pad("source=\(h.sourceID)", 10) + " " + pad("seq=\(h.sequence)", 11)
            + " t=\(timestamp(h.timestampNs)) " + pad("filter=\(h.filterID)", 9) + " " + pad("size=\(h.frameLength)", 12)
            + (h.flags.contains(.replayed) ? " replayed" : "") + " " + summary(payload)
    }

    /// `text` followed by spaces up to `width` characters (longer text is kept whole).
    package static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// Whole seconds (rounded down) and the nanoseconds after them, for any `ns` (Int64.min has no
    /// positive counterpart, so this divides rather than subtracts first).
    package static func secondsAndFraction(_ ns: Int64) -> (seconds: Int64, fraction: Int64) {
        let (seconds, fraction) = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
        return fraction < 0 ? (seconds - 1, fraction + 1_000_000_000) : (seconds, fraction)
    }

    /// ISO 8601 UTC with nanoseconds.
    package static func timestamp(_ ns: Int64) -> String {
        let (seconds, fraction) = secondsAndFraction(ns)
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        let frac = String(fraction)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec)
            + String(repeating: "0", count: 9 - frac.count) + frac + "Z"
    }

    package static func summary(_ payload: Payload) -> String {
        switch payload {
        case .configuration(let c):
            return
                "'\(c.deviceName.terminalSafe)' (\(c.deviceType.terminalSafe)): \(counted(c.channels.count, "channel")), \(counted(c.lines.count, "line"))"
                + (c.channels.first.map { ", \($0.samplingRate) S/s" } ?? "")
        case .error(let e): return "error \(e.code): \(e.message.terminalSafe)"
        case .analog(let a):
            return
                "\(a.channelCount) x \(a.sampleCount) \(a.format), first sample \(a.firstSample), channels \(rangeText(a.channelIndexes))"
        case .digital(let d): return "\(counted(d.lineCount, "line")) x \(counted(d.sampleCount, "sample")), first sample \(d.firstSample)"
        case .message(let m): return "code \(m.code): \(quoted(m.text))"
        case .xml(let x): return "\(counted(x.utf8.count, "byte")): \(quoted(x))"
        case .file(let b):
            return
                "'\(b.name.terminalSafe)' chunk \(b.chunkIndex + 1)/\(b.chunkCount), \(b.content.count) of \(counted(b.totalSize, "byte"))"
        case .image(let b):
            return
                "\(b.imageFormat.map { "\($0)" } ?? "?") '\(b.name.terminalSafe)' chunk \(b.chunkIndex + 1)/\(b.chunkCount), \(b.content.count) of \(counted(b.totalSize, "byte"))"
        case .array(let a):
            return "\(a.rowCount) x \(a.columnCount) \(a.elementType) at [\(a.rowOrigin), \(a.columnOrigin)]"
        case .analogFilter(let f): return "query '\(f.query.terminalSafe)'" + (f.replaces != 0 ? ", replaces \(f.replaces)" : "")
        case .arrayFilter(let f):
            return "\(f.elementType) query '\(f.query.terminalSafe)'" + (f.replaces != 0 ? ", replaces \(f.replaces)" : "")
        case .removeFilter: return "remove the filter"
        case .signalFilter(let f): return f.summary
        case .hello(let h):
            return
                "client '\(h.clientDescription.terminalSafe)', timeout \(h.timeoutSeconds) s, source filter \(h.sourceFilterEnabled ? "on" : "off")"
        case .welcome(let w):
            return "session \(w.sessionID) of '\(w.publisherDescription.terminalSafe)', " + sourcesText(w.sources)
        case .start: return "start transmission"
        case .stop: return "stop transmission"
        case .selectSources(let ids): return "sources \(ids.map(String.init).joined(separator: ","))"
        case .gap(let g): return "\(counted(g.missingCount, "frame")) lost from sequence \(g.firstMissingSequence)"
        case .close(let c):
            return "code \(c.code.rawValue)" + (c.code.rawValue == 0 ? " (a normal end)" : " (\(c.code.name))")
                + (c.reason.isEmpty ? "" : ": \(c.reason.terminalSafe)")
        case .credit(let n): return counted(n, "frame")
        case .properties(let p):
            let channelCount = p.channels.count
            return "\(counted(p.source.count, "source property", "source properties")), \(counted(channelCount, "channel")) with properties"
                + (p.source.first.map { ": \(quoted($0.key, limit: 30))=\(quoted($0.value, limit: 30))" } ?? "")
        }
    }

    /// A welcome's sources as a line says them: "sources 1 'dev', 2 'daq'", or "no sources (only the
    /// publisher's own packages, source 0)" for a publisher that has none.
    package static func sourcesText(_ sources: [SourceInfo]) -> String {
        guard !sources.isEmpty else { return "no sources (only the publisher's own packages, source 0)" }
        return (sources.count == 1 ? "source " : "sources ")
            + sources.map { "\($0.id) '\($0.description.terminalSafe)'" }.joined(separator: ", ")
    }

    package static func quoted(_ text: String, limit: Int = 60) -> String {
        let flat = text.terminalSafe
        return "\"" + (flat.count > limit ? String(flat.prefix(limit)) + "…" : flat) + "\""
    }

    /// "0-7" for consecutive indexes, else a comma list.
    package static func rangeText(_ ids: [UInt32]) -> String {
        guard let first = ids.first else { return "none" }
        if ids.count > 1, ids.enumerated().allSatisfy({ UInt64($0.element) == UInt64(first) + UInt64($0.offset) }) {
            return "\(first)-\(ids.last!)"
        }
        return ids.map(String.init).joined(separator: ",")
    }

    /// The JSON object of a frame: header fields, then the decoded content.
    package static func json(_ frame: Frame, payload: Payload) -> JSON {
        let h = frame.header
        return .object([
            ("kind", .string(h.kind.description)),
            ("source_id", .uint(UInt64(h.sourceID))),
            ("sequence", .uint(h.sequence)),
            ("timestamp_ns", .int(Int(h.timestampNs))),
            ("filter_id", .uint(UInt64(h.filterID))),
            ("flags", .uint(UInt64(h.flags.rawValue))),
            ("size", .int(Int(h.frameLength))),
            ("content", content(payload)),
        ])
    }

    package static func content(_ payload: Payload) -> JSON {
        switch payload {
        case .configuration(let c): return configuration(c)
        case .error(let e):
            return .object([("code", .uint(UInt64(e.code.rawValue))), ("name", .string(e.code.name)), ("message", .string(e.message))])
        case .analog(let a): return analog(a)
        case .digital(let d):
            return .object([
                ("line_indexes", .ids((0..<d.lineCount).map(d.lineIndex))), ("sample_count", .int(Int(d.sampleCount))),
                ("first_sample", .uint(d.firstSample)),
                (
                    "states",
                    .array((0..<d.lineCount).map { l in .array((0..<d.sampleCount).map { .int(d.state(line: l, sample: $0) ? 1 : 0) }) })
                ),
            ])
        case .message(let m): return .object([("code", .int(Int(m.code))), ("text", .string(m.text))])
        case .xml(let x): return .object([("xml", .string(x))])
        case .file(let b), .image(let b):
            return .object([
                ("transfer_id", .uint(b.transferID)), ("total_size", .uint(b.totalSize)), ("chunk_offset", .uint(b.chunkOffset)),
                ("chunk_index", .uint(UInt64(b.chunkIndex))), ("chunk_count", .uint(UInt64(b.chunkCount))),
                ("md5", b.md5.map { .string(MD5.hex($0)) } ?? .null),
                ("format", b.imageFormat.map { .string($0.description) } ?? .null),
                ("name", .string(b.name)), ("attributes", .strings(b.attributes)),
                ("content_base64", .string(Data(b.content).base64EncodedString())),
            ])
        case .array(let a): return array(a)
        case .analogFilter(let f):
            let channels: JSON
            switch f.channels {
            case .all: channels = .string("all")
            case .range(let from, let to): channels = .object([("from", .uint(UInt64(from))), ("to", .uint(UInt64(to)))])
            case .list(let l): channels = .ids(l)
            }
            return .object([
                ("replaces", .uint(UInt64(f.replaces))), ("channels", channels), ("sources", .ids(f.sources)),
                ("query", .string(f.query)),
            ])
        case .signalFilter(let f):
            return .object([
                ("source", .uint(UInt64(f.sourceID))), ("decimate", .uint(UInt64(f.decimate))),
                ("decimate_ftype", .string(f.decimationKind.description)), ("decimate_order", .uint(UInt64(f.decimationOrder))),
                ("lowpass_order", .uint(UInt64(f.lowpassOrder))), ("lowpass_cutoff", .double(f.lowpassCutoff)),
            ])
        case .arrayFilter(let f):
            func range(_ r: IndexRange) -> JSON {
                .object([("from", .uint(UInt64(r.from))), ("to", r.to == .max ? .null : .uint(UInt64(r.to)))])
            }
            return .object([
                ("replaces", .uint(UInt64(f.replaces))), ("element_type", .string(f.elementType.description)),
                ("rows", range(f.rows)), ("columns", range(f.columns)), ("query", .string(f.query)),
            ])
        case .removeFilter, .start, .stop: return .object([])
        case .hello(let h):
            // The API key is a secret: say only how long it is.
            return .object([
                ("timeout", .double(h.timeoutSeconds)), ("source_filter_enabled", .bool(h.sourceFilterEnabled)),
                ("api_key_length", .int(Int(h.apiKey.utf8.count))), ("description", .string(h.clientDescription)),
            ])
        case .welcome(let w):
            return .object([
                ("session_id", .uint(w.sessionID)), ("description", .string(w.publisherDescription)),
                ("sources", .array(w.sources.map { .object([("id", .uint(UInt64($0.id))), ("description", .string($0.description))]) })),
            ])
        case .selectSources(let ids): return .object([("sources", .ids(ids))])
        case .gap(let g):
            return .object([("first_missing_sequence", .uint(g.firstMissingSequence)), ("missing_count", .uint(g.missingCount))])
        case .close(let c): return .object([("code", .uint(UInt64(c.code.rawValue))), ("reason", .string(c.reason))])
        case .credit(let n): return .object([("credits", .uint(UInt64(n)))])
        case .properties(let p):
            return .object([
                ("source", properties(p.source)),
                (
                    "channels",
                    .array(p.channels.map { .object([("index", .uint(UInt64($0.index))), ("properties", properties($0.properties))]) })
                ),
            ])
        }
    }

    /// Properties as a JSON object, key to value, in their order.
    package static func properties(_ list: [Property]) -> JSON {
        .object(list.map { ($0.key, .string($0.value)) })
    }

    /// A configuration package's content.
    private static func configuration(_ c: Configuration) -> JSON {
        return .object([
            ("device_name", .string(c.deviceName)), ("device_type", .string(c.deviceType)),
            (
                "channels",
                .array(
                    c.channels.map { ch in
                        .object([
                            ("index", .uint(UInt64(ch.index))), ("description", .string(ch.description)),
                            ("direction", .string(ch.direction == .input ? "input" : "output")), ("unit", .string(ch.unit)),
                            ("sampling_rate", .double(ch.samplingRate)), ("min", .double(ch.minValue)), ("max", .double(ch.maxValue)),
                        ])
                    })
            ),
            (
                "lines",
                .array(
                    c.lines.map { l in
                        .object([
                            ("index", .uint(UInt64(l.index))), ("description", .string(l.description)),
                            ("direction", .string(l.direction == .input ? "input" : "output")),
                        ])
                    })
            ),
        ])
    }

    /// An analog frame's content: its layout and samples (int16 / int32 with each channel's scale and offset).
    private static func analog(_ a: AnalogView) -> JSON {
        var members: [(String, JSON)] = [
            ("format", .string(a.format.description)), ("channel_count", .int(Int(a.channelCount))),
            ("sample_count", .int(Int(a.sampleCount))), ("first_sample", .uint(a.firstSample)),
            ("channel_indexes", .ids(a.channelIndexes)),
        ]
        let rows: [JSON]
        switch a.format {
        case .float64: rows = (0..<a.channelCount).map { c in a.withSamples(Double.self, channel: c) { .doubles($0) } }
        case .float32:
            rows = (0..<a.channelCount).map { c in a.withSamples(Float.self, channel: c) { .array($0.map { .float($0) }) } }
        case .int16:
            members.append(("scale", .doubles((0..<a.channelCount).map(a.scale))))
            members.append(("offset", .doubles((0..<a.channelCount).map(a.offset))))
            rows = (0..<a.channelCount).map { c in a.withSamples(Int16.self, channel: c) { .array($0.map { .int(Int($0)) }) } }
        case .int32:
            members.append(("scale", .doubles((0..<a.channelCount).map(a.scale))))
            members.append(("offset", .doubles((0..<a.channelCount).map(a.offset))))
            rows = (0..<a.channelCount).map { c in a.withSamples(Int32.self, channel: c) { .array($0.map { .int(Int($0)) }) } }
        }
        members.append(("samples", .array(rows)))
        return .object(members)
    }

    /// A 2D array's content, its elements row by row.
    private static func array(_ a: ArrayView) -> JSON {
        let rows: [JSON] = (0..<a.rowCount).map { r in
            switch a.elementType {
            case .double: a.withRow(Double.self, r) { .doubles($0) }
            case .float: a.withRow(Float.self, r) { .array($0.map { .float($0) }) }
            case .int32: a.withRow(Int32.self, r) { .array($0.map { .int(Int($0)) }) }
            case .int16: a.withRow(Int16.self, r) { .array($0.map { .int(Int($0)) }) }
            case .int64: a.withRow(Int64.self, r) { .array($0.map { .int(Int($0)) }) }
            case .bool: a.withRow(UInt8.self, r) { .array($0.map { .bool($0 != 0) }) }
            case .string: .strings((0..<a.columnCount).map { a.string(row: r, column: $0) })
            }
        }
        return .object([
            ("element_type", .string(a.elementType.description)), ("rows", .int(Int(a.rowCount))),
            ("columns", .int(Int(a.columnCount))), ("row_origin", .uint(UInt64(a.rowOrigin))),
            ("column_origin", .uint(UInt64(a.columnOrigin))), ("elements", .array(rows)),
        ])
    }
}
