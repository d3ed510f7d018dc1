import Foundation
import TributaryAnalysis
import TributaryCapture
import TributaryText
import TributaryWire

/// `tributary inspect` for capture files.
enum CaptureDescription {
    /// True when the file starts with the capture magic.
    static func isCapture(_ path: String) -> Bool {
        FileMagic.prefix(of: path) == CaptureFormat.fileMagic
    }

    static func inspect(_ path: String, json: Bool) throws -> Int32 {
        let reader = try CaptureReader(path: path)
        // Read every chunk and configuration record so that damage anywhere is found and reported,
        // noting each source's configuration frames: a configuration may change during a recording.
        var configurationFrames: [UInt32: [(timeNs: Int64, sequence: UInt64, configuration: Configuration)]] = [:]
        reader.forEachFrame { frame in
            guard frame.header.kind == .configuration, case .configuration(let c)? = try? frame.payload() else { return }
            configurationFrames[frame.header.sourceID, default: []].append((frame.header.timestampNs, frame.header.sequence, c))
        }
        let configurationRecords = reader.index.filter { $0.envelope.type == .configuration }
        for entry in configurationRecords { _ = reader.configurationFrame(entry) }
        let sources = reader.sources
        let gaps = reader.gaps
        let (clockObjects, clockLines) = describeClockOffsets(reader.clockOffsets)
        let origins = reader.sourceOrigins
        var sourceObjects: [JSON] = []
        var lines: [String] = []
        let h = reader.header
        let version = reader.formatVersion.map { "v\($0)" } ?? "of unknown version"
        lines.append(
            "\(path): capture \(version), \(counted(reader.fileSize, "byte")), writer \(h?.writer.terminalSafe ?? "?"), uuid \(h?.uuid.uuidString ?? "?")"
        )
        if let h { lines.append("created: \(TimeText.both(h.createdNs))") }
        let chunkCount = reader.index.filter { $0.envelope.type == .chunk }.count
        lines.append(
            "footer: \(reader.hasFooter ? "yes" : "no")"
                + (reader.wasRecovered ? " (recovered\(reader.wasRepaired ? " by repair" : " by scanning"))" : "")
                + "; index from " + indexSource(reader)
                + "; \(counted(reader.index.count, "record")): \(counted(chunkCount, "chunk")) of frames, "
                + "\(counted(gaps.count, "gap record")), \(counted(configurationRecords.count, "configuration record"))"
                + (origins.isEmpty ? "" : ", \(counted(origins.count, "source-origin record"))"))
        for s in sources {
            var (object, sourceLines) = describe(
                s, configuration: reader.configuration(source: s.sourceID), properties: reader.properties(source: s.sourceID),
                changes: ConfigurationChange.list(configurationFrames[s.sourceID] ?? []))
            let origin = origins.first { $0.sourceID == s.sourceID }
            if case .object(var members) = object {
                members.append(("origin", origin.map(originObject) ?? .null))
                object = .object(members)
            }
            if let origin { sourceLines.insert("  " + originText(origin), at: 1) }
            sourceObjects.append(object)
            lines += sourceLines
        }
        let gapObjects: [JSON] = gaps.map {
            .object([
                ("source_id", .uint(UInt64($0.sourceID))), ("first_missing_sequence", .uint($0.firstMissingSequence)),
                ("missing_count", .uint($0.missingCount)), ("cause", $0.cause.map { .string("\($0)") } ?? .null),
                ("offset", .int(Int($0.offset))),
            ])
        }
        for g in gaps {
            lines.append(
                "gap: source \(g.sourceID), \(counted(g.missingCount, "frame")) from sequence \(g.firstMissingSequence) (\(g.cause.map { "\($0)" } ?? "unknown cause")) at byte \(g.offset)"
            )
        }
        lines += clockLines
        let damageObjects: [JSON] = reader.damage.map {
            .object([
                ("offset", .int(Int($0.offset))), ("length", $0.length.map { .int(Int($0)) } ?? .null), ("reason", .string($0.reason)),
            ])
        }
        for d in reader.damage { lines.append("damage at \(d)") }
        if gaps.isEmpty && reader.damage.isEmpty { lines.append("no gaps, no damage") }
        if json {
            let object = JSON.object([
                ("file", .string(path)), ("format", .string("capture")), ("version", reader.formatVersion.map { .int(Int($0)) } ?? .null),
                ("uuid", h.map { .string($0.uuid.uuidString) } ?? .null), ("created_ns", h.map { .int(Int($0.createdNs)) } ?? .null),
                ("writer", h.map { .string($0.writer) } ?? .null), ("size", .int(Int(reader.fileSize))),
                ("footer", .bool(reader.hasFooter)), ("recovered", .bool(reader.wasRecovered)), ("repaired", .bool(reader.wasRepaired)),
                ("index_source", .string(indexSource(reader))),
                ("records", .int(Int(reader.index.count))),
                ("configuration_records", .int(configurationRecords.count)),
                ("sources", .array(sourceObjects)), ("gaps", .array(gapObjects)), ("clock_offsets", .array(clockObjects)),
                ("source_origins", .array(origins.map(originObject))),
                ("damage", .array(damageObjects)),
            ])
            print(object.render())
        } else {
            print(lines.joined(separator: "\n"))
        }
        return 0
    }

    /// One source of a capture: its object in `inspect --json` and its lines in the text.
    static func describe(
        _ s: CaptureSourceSummary, configuration: Configuration?, properties: SourceProperties = SourceProperties(),
        changes: [ConfigurationChange]
    ) -> (JSON, [String]) {
        let rates = Set(configuration?.channels.map(\.samplingRate) ?? [])
        let rate = rates.count == 1 ? rates.first : nil
        // Samples / rate only while the rate stays one; else the span of the frame times (in
        // Double when the difference of two timestamps from the file does not fit an Int64).
        let rateChanged = changes.contains { ConfigurationChange.rate($0.configuration) != rate }
        let (span, overflow) = s.lastTimeNs.subtractingReportingOverflow(s.firstTimeNs)
        let spanSeconds = (overflow ? Double(s.lastTimeNs) - Double(s.firstTimeNs) : Double(span)) / 1e9
        let duration = rate.flatMap { rateChanged ? nil : Double(s.samples) / $0 } ?? spanSeconds
        let channelObjects = { (c: Configuration?, p: SourceProperties) -> JSON in
            .array(
                (c?.channels ?? []).map {
                    .object([
                        ("index", .uint(UInt64($0.index))), ("name", .string($0.description)), ("unit", .string($0.unit)),
                        ("rate", .double($0.samplingRate)), ("properties", FrameDescription.properties(p.channel($0.index))),
                    ])
                })
        }
        let ratio = s.storedBytes > 0 ? Double(s.frameBytes) / Double(s.storedBytes) : 0
        let object = JSON.object([
            ("id", .uint(UInt64(s.sourceID))),
            ("name", configuration.map { .string($0.deviceName) } ?? .null),
            ("channels", channelObjects(configuration, properties)),
            ("rate", rate.map { .double($0) } ?? .null),
            ("properties", FrameDescription.properties(properties.source)),
            ("samples", .uint(s.samples)),
            ("duration_s", .double(duration)),
            ("first_time_ns", .int(Int(s.firstTimeNs))),
            ("last_time_ns", .int(Int(s.lastTimeNs))),
            ("first_time", .string(TimeText.utc(s.firstTimeNs))),
            ("last_time", .string(TimeText.utc(s.lastTimeNs))),
            ("first_time_local", .string(TimeText.local(s.firstTimeNs))),
            ("last_time_local", .string(TimeText.local(s.lastTimeNs))),
            ("chunks", .int(Int(s.chunks))),
            ("frames", .int(Int(s.frames))),
            ("frame_bytes", .int(Int(s.frameBytes))),
            ("stored_bytes", .int(Int(s.storedBytes))),
            ("compression_ratio", .double(ratio)),
            (
                "configuration_changes",
                .array(
                    changes.map { change in
                        .object([
                            ("time_ns", .int(Int(change.timeNs))), ("time", .string(TimeText.utc(change.timeNs))),
                            ("sequence", .uint(change.sequence)), ("changes", .array(change.changes.map { .string($0) })),
                            ("name", .string(change.configuration.deviceName)),
                            ("rate", ConfigurationChange.rate(change.configuration).map { .double($0) } ?? .null),
                            ("channels", channelObjects(change.configuration, SourceProperties())),
                        ])
                    })
            ),
        ])
        var lines: [String] = []
        let configured = configuration?.channels ?? []
        let storage = "\(counted(s.frames, "frame")) in \(counted(s.chunks, "chunk")), ratio \(String(format: "%.2f", ratio))x"
        if configured.isEmpty && s.samples == 0 {
            // Application packages (messages, XML, files, arrays...), or a device without analog channels.
            let what =
                s.sourceID == 0
                ? "application packages (source 0: frames of no device)"
                : (configuration.map { "\"\($0.deviceName.terminalSafe)\", no analog channels" } ?? "no configuration, no analog data")
            lines.append("source \(s.sourceID): \(what), \(storage)")
        } else {
            let channelText = configured.map { "\($0.description.terminalSafe) [\($0.unit.terminalSafe)]" }.joined(separator: ", ")
            let device: String = configuration.map { " \"\($0.deviceName.terminalSafe)\"" } ?? ""
            let list: String = configured.isEmpty ? "" : " (\(channelText))"
            let rateText: String = rate.map { ", \($0) Hz" } ?? ""
            let seconds = String(format: "%.3f", duration)
            let samples = counted(s.samples, "sample")
            let channelCount = counted(configured.count, "channel")
            let changed = changes.isEmpty ? "" : " (at the start; \(counted(changes.count, "configuration change")) below)"
            lines.append(
                "source \(s.sourceID)\(device): \(channelCount)\(list)\(rateText)\(changed), \(samples) per channel, \(seconds) s, \(storage)"
            )
        }
        lines += propertyLines(properties, configured)
        lines.append("  start: \(TimeText.both(s.firstTimeNs))")
        lines.append("  end:   \(TimeText.both(s.lastTimeNs))")
        for change in changes {
            lines.append(
                "  configuration changed at \(TimeText.utc(change.timeNs)) (sequence \(change.sequence)): "
                    + change.changes.joined(separator: "; "))
        }
        return (object, lines)
    }

    /// "  properties: serial=SN42, cal=2026-01-01" and one line per channel with properties.
    static func propertyLines(_ properties: SourceProperties, _ channels: [ChannelConfiguration]) -> [String] {
        func text(_ list: [Property]) -> String {
            list.map { "\($0.key.terminalSafe)=\(FrameDescription.quoted($0.value, limit: 200).dropFirst().dropLast())" }
                .joined(separator: ", ")
        }
        var lines: [String] = []
        if !properties.source.isEmpty { lines.append("  properties: " + text(properties.source)) }
        for entry in properties.channels where !entry.properties.isEmpty {
            let name = channels.first { $0.index == entry.index }.map { " (\($0.description.terminalSafe))" } ?? ""
            lines.append("  channel \(entry.index)\(name) properties: " + text(entry.properties))
        }
        return lines
    }

    /// A source-origin record (docs/CAPTURE.md §6) in `inspect --json`.
    static func originObject(_ o: CaptureSourceOrigin) -> JSON {
        .object([
            ("source_id", .uint(UInt64(o.sourceID))), ("publisher_index", .uint(UInt64(o.publisherIndex))),
            ("address", .string(o.address)), ("publisher", .string(o.publisher)),
            ("publisher_source_id", .uint(UInt64(o.publisherSourceID))), ("offset", .int(o.offset)),
        ])
    }

    /// "origin: publisher 2 (tcp://…, 'name'), its source 1".
    static func originText(_ o: CaptureSourceOrigin) -> String {
        "origin: publisher \(UInt64(o.publisherIndex) + 1) (\(o.address.terminalSafe), '\(o.publisher.terminalSafe)'), its source \(o.publisherSourceID)"
    }

    /// The clock-offset records (docs/CAPTURE.md §6): every one in JSON; in text a line with the first,
    /// the last and the range (a long recording has one every 5 s) for each set of sources they apply
    /// to (one publisher's, in a recording of several), in order of first appearance.
    static func describeClockOffsets(_ offsets: [CaptureClockOffset]) -> ([JSON], [String]) {
        let objects: [JSON] = offsets.map {
            .object([
                ("offset_s", .double(Double($0.offsetNs) / 1e9)), ("rtt_s", .double(Double($0.rttNs) / 1e9)),
                ("measured_at_ns", .int(Int($0.measuredAtNs))), ("samples", .uint(UInt64($0.samples))),
                ("sources", .array($0.sourceIDs.map { .uint(UInt64($0)) })), ("offset", .int($0.offset)),
            ])
        }
        var groups: [[CaptureClockOffset]] = []
        for o in offsets {
            let key = Set(o.sourceIDs)
            if let g = groups.firstIndex(where: { Set($0[0].sourceIDs) == key }) { groups[g].append(o) } else { groups.append([o]) }
        }
        return (objects, groups.map(clockOffsetLine))
    }

    /// "clock offsets: N records (…; sources 1,2): first …, last …, range …".
    private static func clockOffsetLine(_ offsets: [CaptureClockOffset]) -> String {
        func text(_ o: CaptureClockOffset) -> String {
            String(format: "%+.6f s (RTT %.3f ms)", Double(o.offsetNs) / 1e9, Double(o.rttNs) / 1e6) + " at " + TimeText.utc(o.measuredAtNs)
        }
        let low = offsets.map(\.offsetNs).min()!, high = offsets.map(\.offsetNs).max()!
        let sources = Set(offsets.flatMap(\.sourceIDs)).sorted().map(String.init).joined(separator: ",")
        return "clock offsets: \(counted(offsets.count, "record")) (publisher clock minus recorder clock; sources "
            + (sources.isEmpty ? "all" : sources) + "): first " + text(offsets.first!) + ", last " + text(offsets.last!)
            + String(format: ", range %+.6f to %+.6f s", Double(low) / 1e9, Double(high) / 1e9)
    }

    /// Where the reader's record index came from: the footer, the checkpoint chain, or a full scan.
    static func indexSource(_ reader: CaptureReader) -> String {
        switch reader.indexSource {
        case .footer: "footer"
        case .checkpoints: "checkpoints"
        case .scan: "scan"
        }
    }
}
