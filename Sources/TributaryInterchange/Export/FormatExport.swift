import CHDF5
import Foundation
import TributaryCapture
import TributaryFormats
import TributaryWire

/// Writes gathered capture sources as TDMS and XDF (the mapping is docs/FORMATS.md).
public enum FormatExport {
    /// Group / stream names: the device name when it is unique among the sources, else "source N".
    static func names(_ series: [SourceSeries]) -> [String] {
        let counts = Dictionary(series.map { ($0.deviceName, 1) }, uniquingKeysWith: +)
        return series.map { s in
            !s.deviceName.isEmpty && counts[s.deviceName] == 1 && s.deviceName != "" ? s.deviceName : "source \(s.sourceID)"
        }
    }

    /// Channel names made unique within a source ("name [index]" for repeats).
    static func uniqueChannelNames(_ s: SourceSeries) -> [String] {
        let counts = Dictionary(s.channelNames.map { ($0, 1) }, uniquingKeysWith: +)
        return zip(s.channelNames, s.channelIndexes).map { n, i in counts[n]! > 1 ? "\(n) [\(i)]" : n }
    }

    /// The gaps of a source as JSON text (for TDMS properties and the XDF footer / description).
    static func gapsJSON(_ s: SourceSeries) -> String {
        "["
            + s.gaps.map { g in
                "{\"first_missing_sequence\":\(g.firstMissingSequence),\"missing_count\":\(g.missingCount),\"time_ns\":\(g.timeNs)"
                    + (g.cause.map { ",\"cause\":\"\($0)\"" } ?? "") + "}"
            }.joined(separator: ",") + "]"
    }

    // MARK: TDMS

    /// A TDMS file: one group per source, one channel per analog channel, with the properties DAQmx writes
    /// (`wf_start_time`, `wf_increment`, `wf_start_offset`, `wf_samples`, `unit_string`, `NI_ChannelName`).
    /// With `counts`, int16 / int32 sources are stored as I16 / I32 counts with an NI linear scale (slope = scale,
    /// Y intercept = offset), so NI readers show physical values; otherwise as float64 physical values.
    public static func tdms(_ series: [SourceSeries], counts: Bool, name: String) -> TDMSFile {
        var file = TDMSFile(properties: [
            TDMSProperty("name", .string(name)), TDMSProperty("description", .string("exported by tributary")),
        ])
        for (s, groupName) in zip(series, names(series)) {
            var group = TDMSGroup(
                name: groupName,
                properties: [
                    TDMSProperty("source_id", .uint32(s.sourceID)),
                    TDMSProperty("device_name", .string(s.deviceName)),
                    TDMSProperty("device_type", .string(s.deviceType)),
                    TDMSProperty("gap_count", .uint32(UInt32(clamping: s.gaps.count))),
                    TDMSProperty("gaps", .string(gapsJSON(s))),
                    TDMSProperty("discontinuities", .string("[" + s.discontinuities.map(String.init).joined(separator: ",") + "]")),
                ] + customTDMS(s.properties, reserved: tdmsGroupNames))
            let values: [Double]? = counts && s.isCounts ? nil : s.physicalValues
            for (c, channelName) in uniqueChannelNames(s).enumerated() {
                var p: [TDMSProperty] = [
                    TDMSProperty("NI_ChannelName", .string(channelName)),
                    TDMSProperty("unit_string", .string(s.units[c])),
                    TDMSProperty("wf_start_time", .timestamp(TDMSTimestamp(unixNanoseconds: s.startNs))),
                    TDMSProperty("wf_start_offset", .double(0)),
                    TDMSProperty("wf_samples", .int32(Int32(clamping: s.sampleCount))),
                    TDMSProperty("channel_index", .uint32(s.channelIndexes[c])),
                ]
                if let rate = s.rate { p.insert(TDMSProperty("wf_increment", .double(1 / rate)), at: 3) }
                let data: TDMSData
                let range = (c * s.sampleCount)..<((c + 1) * s.sampleCount)
                if let values {
                    data = .float64Row(values, range)
                } else {
                    switch s.samples {
                    case .int16(let v): data = .int16Row(v, range)
                    case .int32(let v): data = .int32(Array(v[range]))
                    case .float64, .float32: preconditionFailure("counts of a float source")
                    }
                    p += [
                        TDMSProperty("NI_Scaling_Status", .string("unscaled")), TDMSProperty("NI_Number_Of_Scales", .uint32(1)),
                        TDMSProperty("NI_Scale[0]_Scale_Type", .string("Linear")),
                        TDMSProperty("NI_Scale[0]_Linear_Slope", .double(s.scale[c])),
                        TDMSProperty("NI_Scale[0]_Linear_Y_Intercept", .double(s.offset[c])),
                    ]
                }
                p += customTDMS(s.channelProperties[c], reserved: tdmsChannelNames)
                group.channels.append(TDMSChannel(name: channelName, properties: p, data: data))
            }
            file.groups.append(group)
        }
        return file
    }

    /// The group properties the TDMS export writes itself.
    public static let tdmsGroupNames: Set<String> = ["source_id", "device_name", "device_type", "gap_count", "gaps", "discontinuities"]
    /// The channel properties the TDMS export writes itself (and NI's `NI_…` names).
    public static let tdmsChannelNames: Set<String> = [
        "NI_ChannelName", "unit_string", "wf_start_time", "wf_start_offset", "wf_increment", "wf_samples", "channel_index",
    ]
    /// The prefix of a free-form property whose key is a name the export writes itself.
    public static let tdmsPropertyPrefix = "property."

    /// Free-form properties as TDMS string properties, under their own keys except those that are a
    /// name of `reserved`, start with `NI_` or with the prefix, which get `tdmsPropertyPrefix` in front.
    static func customTDMS(_ list: [Property], reserved: Set<String>) -> [TDMSProperty] {
        list.map {
            let clash = reserved.contains($0.key) || $0.key.hasPrefix("NI_") || $0.key.hasPrefix(tdmsPropertyPrefix)
            return TDMSProperty(clash ? tdmsPropertyPrefix + $0.key : $0.key, .string($0.value))
        }
    }

    // MARK: XDF

    /// Writes an XDF file: per source a stream header (name, type "Tributary", channel count, nominal
    /// rate, channel format, source id, channel labels / units), one samples chunk per recorded frame
    /// whose samples carry their times (seconds since 1970: the frame's timestamp + k / rate, each
    /// computed once, because readers that deduce unstamped times by repeated addition drift by
    /// microseconds at Unix-epoch magnitudes), boundary chunks about every 10 s of data, clock offsets of 0 at both ends and a footer
    /// with first / last timestamp, sample count, and the gaps.
    /// With `counts`, int16 / int32 sources are int16 / int32 streams whose description holds each
    /// channel's scale / offset.
    /// A source that `clockOffsets` (the capture's clock-offset records) apply to gets one ClockOffset
    /// chunk per record instead of the zeros, in XDF's terms (docs/FORMATS.md): collection time on the
    /// publisher's clock, value to add to its times (minus the recorded offset).
    /// `messages` become marker streams after the sources' streams (`XDFMarkerChunks`).
    public static func writeXDF(
        _ series: [SourceSeries], messages: [MessageSeries] = [], counts: Bool, clockOffsets: [CaptureClockOffset] = [],
        to path: String
    ) throws(FormatError) {
        let writer = try XDFWriter(path: path, fileInfo: "<writer>tributary</writer>")
        var markers = XDFMarkerChunks(messages, firstStreamID: series.count + 1, clockOffsets: clockOffsets)
        do {
            let streamNames = names(series)
            var physical: [[Double]] = []
            for (k, s) in series.enumerated() {
                let asCounts = counts && s.isCounts
                let format: XDFChannelFormat = asCounts ? (s.samples.dtype == .int32 ? .int32 : .int16) : .double64
                var extra = "<device><name>\(XML.escape(s.deviceName))</name><type>\(XML.escape(s.deviceType))</type>"
                extra += "<source_id>\(s.sourceID)</source_id></device>"
                if asCounts {
                    extra +=
                        "<scaling>"
                        + (0..<s.channelCount).map { "<channel><scale>\(s.scale[$0])</scale><offset>\(s.offset[$0])</offset></channel>" }
                        .joined() + "</scaling>"
                }
                let channels = (0..<s.channelCount).map {
                    XDFChannelInfo(
                        label: s.channelNames[$0], unit: s.units[$0], type: "analog",
                        properties: s.channelProperties[$0].map { XDFProperty($0.key, $0.value) })
                }
                var header = XDFStreamHeader(
                    streamID: UInt32(k + 1), name: streamNames[k], type: "Tributary", channelCount: s.channelCount,
                    nominalRate: s.rate ?? 0, format: format, sourceID: "tributary-source-\(s.sourceID)",
                    channels: channels, extraDescription: extra)
                header.properties = s.properties.map { XDFProperty($0.key, $0.value) }
                try writer.streamHeader(header)
                physical.append(asCounts ? [] : s.physicalValues)
            }
            try markers.writeHeaders(writer)
            let measured = series.map { s in clockOffsets.filter { $0.applies(to: s.sourceID) }.map(xdfClockOffset) }
            for k in series.indices {
                for o in measured[k] { try writer.clockOffset(streamID: UInt32(k + 1), collectionTime: o.time, offset: o.value) }
                if measured[k].isEmpty {
                    try writer.clockOffset(streamID: UInt32(k + 1), collectionTime: Double(series[k].startNs) / 1e9, offset: 0)
                }
            }
            try markers.writeFirstOffsets(writer)
            // Chunks in time order across sources, as a live recorder writes them.
            var next = Array(repeating: 0, count: series.count)
            var sinceBoundary = 0.0
            while true {
                var best: Int?
                for k in series.indices where next[k] < series[k].blocks.count {
                    if best == nil || series[k].blocks[next[k]].timestampNs < series[best!].blocks[next[best!]].timestampNs { best = k }
                }
                guard let k = best else { break }
                let s = series[k], b = s.blocks[next[k]]
                next[k] += 1
                try markers.writeSamples(writer, before: b.timestampNs)
                let t = Double(b.timestampNs) / 1e9
                let rate = s.rate ?? 0
                let stamps: [Double]? = rate > 0 ? (0..<b.count).map { Double(b.timestampNs) / 1e9 + Double($0) / rate } : nil
                if counts && s.isCounts, case .int16(let v) = s.samples {
                    try typed {
                        try v.withUnsafeBufferPointer { p in
                            try writer.samples(
                                streamID: UInt32(k + 1), values: p, channels: s.channelCount, stride: s.sampleCount, start: b.start,
                                count: b.count, firstTimestamp: t, timestamps: stamps)
                        }
                    }
                } else if counts && s.isCounts, case .int32(let v) = s.samples {
                    try typed {
                        try v.withUnsafeBufferPointer { p in
                            try writer.samples(
                                streamID: UInt32(k + 1), values: p, channels: s.channelCount, stride: s.sampleCount, start: b.start,
                                count: b.count, firstTimestamp: t, timestamps: stamps)
                        }
                    }
                } else {
                    try typed {
                        try physical[k].withUnsafeBufferPointer { p in
                            try writer.samples(
                                streamID: UInt32(k + 1), values: p, channels: s.channelCount, stride: s.sampleCount, start: b.start,
                                count: b.count, firstTimestamp: t, timestamps: stamps)
                        }
                    }
                }
                sinceBoundary += Double(b.count) / (s.rate ?? 1)
                if sinceBoundary >= 10 {
                    try writer.boundary()
                    sinceBoundary = 0
                }
            }
            try markers.writeSamples(writer, before: nil)
            try writer.boundary()
            for (k, s) in series.enumerated() {
                let first = Double(s.startNs) / 1e9
                var last = first
                if let b = s.blocks.last { last = Double(b.timestampNs) / 1e9 + Double(b.count - 1) / (s.rate ?? 1) }
                if measured[k].isEmpty { try writer.clockOffset(streamID: UInt32(k + 1), collectionTime: last, offset: 0) }
                try writer.streamFooter(
                    streamID: UInt32(k + 1), firstTimestamp: first, lastTimestamp: last, sampleCount: s.sampleCount,
                    clockOffsets: measured[k].isEmpty ? [(first, 0), (last, 0)] : measured[k],
                    extra: "<gaps>\(XML.escape(gapsJSON(s)))</gaps>")
            }
            try markers.writeFooters(writer)
            try writer.close()
        } catch {
            writer.discard()
            throw error
        }
    }

    /// A clock-offset record as XDF has it: the time it was measured on the publisher's clock (the
    /// stream's own, as pyxdf fits offsets against the stream's times) and the value to add to the
    /// publisher's times to get the recorder's (seconds).
    static func xdfClockOffset(_ o: CaptureClockOffset) -> (time: Double, value: Double) {
        (Double(o.measuredAtNs) / 1e9 + Double(o.offsetNs) / 1e9, -Double(o.offsetNs) / 1e9)
    }

    static func typed(_ body: () throws -> Void) throws(FormatError) {
        do { try body() } catch let e as FormatError { throw e } catch { throw FormatError(file: "", location: "", reason: "\(error)") }
    }

    // MARK: HDF5

    /// Writes an HDF5 file (libhdf5): per source a group (named as TDMS groups, '/' replaced by '_')
    /// with attributes source_id, device_name, device_type, sample_rate, start_time_ns, gaps (JSON) and
    /// discontinuities; a dataset `data` shaped (channels, samples), float64 physical values or with
    /// `counts` int16 / int32 counts, chunked and compressed (shuffle + deflate), with attributes
    /// channel_names, units, channel_indexes, sample_rate, start_time_ns and, for counts, scale and
    /// offset; and datasets `block_start` / `block_time_ns`: where each recorded frame starts and when.
    public static func writeHDF5(_ series: [SourceSeries], counts: Bool, name: String, to path: String) throws(HDF5Error) {
        let file = try HDF5Object.create(path: path)
        do {
            try file.setAttribute("writer", "tributary")
            try file.setAttribute("capture", name)
            for (s, groupName) in zip(series, names(series)) {
                var g = groupName.replacingOccurrences(of: "/", with: "_")
                if g == "." || g.isEmpty { g = "source \(s.sourceID)" }
                let group = try file.createGroup(g)
                try group.setAttribute("source_id", uint32s: [s.sourceID], scalar: true)
                try group.setAttribute("device_name", s.deviceName)
                try group.setAttribute("device_type", s.deviceType)
                if let rate = s.rate { try group.setAttribute("sample_rate", doubles: [rate], scalar: true) }
                try group.setAttribute("start_time_ns", int64s: [s.startNs], scalar: true)
                try group.setAttribute("gaps", gapsJSON(s))
                try group.setAttribute("discontinuities", int64s: s.discontinuities.map(Int64.init))
                try writeHDF5Properties(s, in: group)
                let asCounts = counts && s.isCounts
                let dims = [s.channelCount, s.sampleCount]
                let dataset: HDF5Object
                if asCounts {
                    dataset = try typedHDF5 {
                        switch s.samples {
                        case .int16(let v):
                            try v.withUnsafeBytes { try group.writeDataset("data", type: chdf5_native_int16(), dims: dims, bytes: $0) }
                        case .int32(let v):
                            try v.withUnsafeBytes { try group.writeDataset("data", type: chdf5_native_int32(), dims: dims, bytes: $0) }
                        case .float64, .float32: preconditionFailure("counts of a float source")
                        }
                    }
                    try dataset.setAttribute("scale", doubles: s.scale)
                    try dataset.setAttribute("offset", doubles: s.offset)
                    try dataset.setAttribute("value", "count * scale + offset")
                } else {
                    let values = s.physicalValues
                    dataset = try typedHDF5 {
                        try values.withUnsafeBytes { try group.writeDataset("data", type: chdf5_native_double(), dims: dims, bytes: $0) }
                    }
                }
                try dataset.setAttribute("channel_names", strings: s.channelNames)
                try dataset.setAttribute("units", strings: s.units)
                try dataset.setAttribute("channel_indexes", uint32s: s.channelIndexes)
                if let rate = s.rate { try dataset.setAttribute("sample_rate", doubles: [rate], scalar: true) }
                try dataset.setAttribute("start_time_ns", int64s: [s.startNs], scalar: true)
                let starts = s.blocks.map { Int64($0.start) }, times = s.blocks.map(\.timestampNs)
                _ = try typedHDF5 {
                    try starts.withUnsafeBytes {
                        try group.writeDataset("block_start", type: chdf5_native_int64(), dims: [starts.count], bytes: $0, compress: false)
                    }
                }
                _ = try typedHDF5 {
                    try times.withUnsafeBytes {
                        try group.writeDataset("block_time_ns", type: chdf5_native_int64(), dims: [times.count], bytes: $0, compress: false)
                    }
                }
            }
        } catch {
            unlink(path)
            throw error
        }
    }

    /// Free-form properties as string attributes of a group `properties` in the source's group (the
    /// source's), and of a group `channel I` in it per channel with properties (I its index).
    static func writeHDF5Properties(_ s: SourceSeries, in group: HDF5Object) throws(HDF5Error) {
        guard !s.properties.isEmpty || s.channelProperties.contains(where: { !$0.isEmpty }) else { return }
        let properties = try group.createGroup("properties", attributeOrder: true)
        for p in s.properties { try properties.setAttribute(p.key, p.value) }
        for (c, list) in s.channelProperties.enumerated() where !list.isEmpty {
            let channel = try properties.createGroup("channel \(s.channelIndexes[c])", attributeOrder: true)
            for p in list { try channel.setAttribute(p.key, p.value) }
        }
    }

    static func typedHDF5<R>(_ body: () throws -> R) throws(HDF5Error) -> R {
        do { return try body() } catch let e as HDF5Error { throw e } catch { throw HDF5Error(file: "", reason: "\(error)") }
    }
}
