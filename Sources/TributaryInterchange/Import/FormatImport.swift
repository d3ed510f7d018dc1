import Foundation
import TributaryCapture
import TributaryFormats
import TributaryWire

/// Where a run of contiguous samples starts and when its first sample was taken.
public struct ImportedBlock: Sendable, Equatable {
    public var start: Int
    public var timestampNs: Int64
    /// Whether the block only re-times samples that follow the previous block's without a gap (an
    /// XDF stream whose timestamps drift from its nominal rate): its `first_sample` counter then
    /// continues the previous block's instead of jumping by the time between them.
    public var continues: Bool
    public init(start: Int, timestampNs: Int64, continues: Bool = false) {
        self.start = start
        self.timestampNs = timestampNs
        self.continues = continues
    }
}

/// One source read from a TDMS group or an XDF stream, ready to be recorded or analysed.
public struct ImportedSource: Sendable {
    public var sourceID: UInt32
    public var deviceName: String
    public var deviceType: String
    public var channelNames: [String]
    public var units: [String]
    public var rate: Double
    /// The samples, read a frame's worth at a time when the source is recorded.
    public var samples: ImportedSamples
    public var sampleCount: Int
    /// Runs of contiguous samples (at least one, starting at 0).
    public var blocks: [ImportedBlock]
    /// Free-form properties of the source and its channels (channel k: index k), recorded in a
    /// properties frame after the configuration.
    public var properties = SourceProperties()
    public var channelCount: Int { channelNames.count }
}

/// Reads TDMS, XDF (and HDF5 through the command's glue) files as capture sources (docs/FORMATS.md).
public enum FormatImport {
    /// The format of a file by its magic bytes ("TDSm", "XDF:", "\u{89}HDF\r\n\u{1A}\n"): TDMS, XDF
    /// or HDF5, nil if none (`InterchangeFormat.of(path:)` also knows NPY, WAV and CSV by name).
    public static func kind(path: String) -> InterchangeFormat? {
        let magic = FileMagic.prefix(of: path)
        if magic.starts(with: Array("TDSm".utf8)) { return .tdms }
        if magic.starts(with: Array("XDF:".utf8)) { return .xdf }
        if magic == [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A] { return .hdf5 }
        return nil
    }

    /// Reads the sources of a TDMS or XDF file.
    /// - Parameters:
    ///   - select: group / stream names to import (nil: all with numeric data).
    ///   - rate: the rate of sources whose file gives none (TDMS without `wf_increment`).
    ///   - allowNone: return no sources rather than refuse a file without numeric channels (an XDF
    ///     file whose marker streams `MarkerImport` reads).
    public static func read(
        path: String, select: Set<String>? = nil, rate: Double? = nil, allowNone: Bool = false
    ) throws(CaptureError) -> [ImportedSource] {
        let sources: [ImportedSource]
        do {
            switch kind(path: path) {
            case .tdms:
                // Indexed and read a window at a time, DAQmx raw data included; read whole only in the
                // two cases of DAQmx raw data that `TDMSFile.index` does not take (nil).
                let tdms = try TDMSFile.index(path: path) ?? TDMSFile.read(path: path)
                sources = try self.sources(tdms: tdms, file: path, select: select, rate: rate)
            case .xdf:
                // Indexed and read a window at a time, clock resets included: a stream's timestamps are
                // corrected in order as the windows pass (`xdfPacedBlocks`).
                sources = try self.sources(xdf: try XDFFile.index(path: path), file: path, select: select)
            case .hdf5: sources = try self.sources(hdf5: path, select: select, rate: rate)
            case nil, .npy, .csv, .wav: throw CaptureError(.usage, file: path, "not a TDMS, XDF or HDF5 file (unrecognised magic bytes)")
            }
        } catch let error as CaptureError {
            throw error
        } catch let error as FormatError where error.file == path {
            // The capture error names the file: the format error's own name of it is not said twice.
            throw CaptureError(.usage, file: path, error.location.isEmpty ? error.reason : "\(error.location): \(error.reason)")
        } catch {
            throw CaptureError(.usage, file: path, "\(error)")
        }
        for source in sources { try checkRateAndTimes(source, file: path) }
        if let select {
            let missing = select.subtracting(sources.map(\.deviceName)).subtracting(sources.map { "\($0.sourceID)" })
            if !missing.isEmpty && sources.count < select.count {
                throw CaptureError(.usage, file: path, "no numeric group or stream named \(missing.sorted().joined(separator: ", "))")
            }
        }
        guard !sources.isEmpty || allowNone else { throw CaptureError(.usage, file: path, "no numeric channels to import") }
        return sources
    }

    /// Assigns source ids: the wanted one when free and non-zero, else the next free one from 1.
    static func assignIDs(_ wanted: [UInt32?]) -> [UInt32] {
        var used = Set<UInt32>()
        var out: [UInt32] = []
        for w in wanted {
            if let w, w != 0, !used.contains(w) { used.insert(w); out.append(w); continue }
            var id: UInt32 = 1
            while used.contains(id) || wanted.contains(where: { $0 == id }) { id += 1 }
            used.insert(id)
            out.append(id)
        }
        return out
    }

    // MARK: TDMS

    /// Each group with numeric channels becomes a source; channels must have equal lengths. Rate from
    /// `wf_increment`, start from `wf_start_time`, units from `unit_string`. int16 channels (raw data
    /// or DAQmx scalers) with one NI linear scale are imported as counts with that scale and offset;
    /// unscaled int16 as counts with scale 1; float32 channels as float32; everything else as float64
    /// through the channels' NI scales (`tdmsSamples`).
    public static func sources(tdms: TDMSFile, file: String, select: Set<String>? = nil, rate: Double? = nil) throws(CaptureError)
        -> [ImportedSource]
    {
        var out: [ImportedSource] = []
        var wanted: [UInt32?] = []
        for group in tdms.groups {
            let id = group.property("source_id")?.number.flatMap { UInt32(exactly: $0) }
            if let select, !select.contains(group.name), !(id.map { select.contains("\($0)") } ?? false) { continue }
            let channels = group.channels.filter { c in
                if case .strings = c.data { return false }
                return c.valueCount > 0
            }
            guard let first = channels.first else { continue }
            let n = first.valueCount
            guard channels.allSatisfy({ $0.valueCount == n }) else {
                throw CaptureError(
                    .usage, file: file,
                    "group '\(group.name)': channels of different lengths ("
                        + channels.map { "\($0.name): \($0.valueCount)" }.joined(separator: ", ")
                        + "); import them with --groups one at a time")
            }
            var r = first.property("wf_increment")?.number.flatMap { $0 > 0 ? 1 / $0 : nil } ?? rate
            if let increment = first.property("wf_increment")?.number, increment > 0 {
                // 1 / (1 / rate) is not always rate; prefer the nearest integer rate when it reproduces the increment.
                let rounded = (1 / increment).rounded()
                if rounded > 0, 1 / rounded == increment { r = rounded }
            }
            guard let r, r > 0, r.isFinite else {
                throw CaptureError(.usage, file: file, "group '\(group.name)' has no wf_increment; give the rate with --rate HZ")
            }
            var startNs: Int64 = 0
            if case .timestamp(let t)? = first.property("wf_start_time") {
                guard let ns = t.unixNanoseconds else {
                    throw CaptureError(
                        .usage, file: file,
                        "group '\(group.name)': wf_start_time (\(t.seconds) s since 1904) is beyond the range of timestamp_ns (1677-09-21 to 2262-04-11)"
                    )
                }
                startNs = ns
            }
            let samples: ImportedSamples
            if channels.allSatisfy({ $0.valueIndex != nil }) {
                // The format from the channels' types and scales (their data is empty); the values a window at a time.
                let format = try tdmsSamples(channels, group: group.name, file: file).format
                let name = group.name
                samples = ImportedSamples(format: format) {
                    let values = try TDMSFile.Values(path: file, channels: channels)
                    return FunctionSampleReader { count in try tdmsSamples(try values.next(count), group: name, file: file) }
                }
            } else {
                samples = .memory(try tdmsSamples(channels, group: group.name, file: file), sampleCount: n)
            }
            wanted.append(id)
            out.append(
                ImportedSource(
                    sourceID: 0, deviceName: group.property("device_name")?.text ?? group.name,
                    deviceType: group.property("device_type")?.text ?? "TDMS",
                    channelNames: channels.map(\.name), units: channels.map { $0.property("unit_string")?.text ?? "" },
                    rate: r, samples: samples, sampleCount: n, blocks: [ImportedBlock(start: 0, timestampNs: startNs)]))
            out[out.count - 1].properties = try checked(
                SourceProperties(
                    source: tdmsProperties(group.properties, reserved: FormatExport.tdmsGroupNames),
                    channels: channels.enumerated().map {
                        ChannelProperties(
                            index: UInt32($0.offset),
                            properties: tdmsProperties($0.element.properties, reserved: FormatExport.tdmsChannelNames))
                    }), file: file, what: "group '\(group.name)'")
        }
        for (k, id) in assignIDs(wanted).enumerated() { out[k].sourceID = id }
        return out
    }

    /// The samples of a TDMS group's channels (equal lengths): int16 counts when every channel is
    /// int16 (raw data or DAQmx scaler) with at most one linear NI scale, int32 counts when every
    /// channel is int16 or int32 so and one is int32, float32 when every channel
    /// is unscaled float32, float64 otherwise, each channel through its NI scales (TDMSScaling; a
    /// DAQmx channel's values are scaled by the reader already).
    static func tdmsSamples(_ channels: [TDMSChannel], group: String, file: String) throws(CaptureError) -> AnalogSamples {
        func raw(_ c: TDMSChannel) -> TDMSData? { c.daqmxScalers.isEmpty ? c.data : nil }
        func counts(_ c: TDMSChannel) -> (TDMSData, Double, Double)? {
            if let linear = TDMSScaling.linearCounts(properties: c.properties, raw: raw(c), scalers: c.daqmxScalers) { return linear }
            // Unscaled int16 / int32 raw data: counts with scale 1.
            guard c.daqmxScalers.isEmpty, !TDMSScaling.hasScales(c.properties) else { return nil }
            switch c.data {
            case .int16, .int32: return (c.data, 1, 0)
            default: return nil
            }
        }
        func scaled(_ c: TDMSChannel) throws(CaptureError) -> [Double]? {
            guard c.daqmxScalers.isEmpty else { return nil }
            do {
                return try TDMSScaling.scaled(properties: c.properties, raw: c.data, scalers: [:])
            } catch {
                throw CaptureError(.usage, file: file, "group '\(group)', channel '\(c.name)': \(error.reason)")
            }
        }
        let n = channels.first?.data.count ?? 0
        let asCounts = channels.compactMap(counts)
        if asCounts.count == channels.count {
            let scale = asCounts.map(\.1), offset = asCounts.map(\.2)
            if asCounts.allSatisfy({ if case .int16 = $0.0 { true } else { false } }) {
                var v: [Int16] = []
                v.reserveCapacity(n * channels.count)
                for c in asCounts { if case .int16(let x) = c.0 { v += x } }
                return .int16(counts: v, scale: scale, offset: offset)
            }
            // Any I32 channel: every channel as int32 counts (I16 widened exactly).
            var v: [Int32] = []
            v.reserveCapacity(n * channels.count)
            for c in asCounts {
                switch c.0 {
                case .int16(let x): v += x.map(Int32.init)
                case .int32(let x): v += x
                default: break
                }
            }
            return .int32(counts: v, scale: scale, offset: offset)
        }
        var unscaled32: [Float] = []
        var allUnscaled32 = true
        for c in channels {
            guard case .float32(let x) = c.data, c.daqmxScalers.isEmpty, try scaled(c) == nil else {
                allUnscaled32 = false
                break
            }
            unscaled32 += x
        }
        if allUnscaled32 { return .float32(unscaled32) }
        var v: [Double] = []
        v.reserveCapacity(n * channels.count)
        for c in channels {
            if let x = try scaled(c) {
                guard x.count == n else {
                    throw CaptureError(
                        .usage, file: file, "group '\(group)', channel '\(c.name)': its scales give \(x.count) values of \(n)")
                }
                v += x
            } else if case .float64(let x) = c.data {
                v += x
            } else {
                v += c.data.doubles ?? []
            }
        }
        return .float64(v)
    }

    // MARK: XDF

    /// The per-channel scale and offset of an XDF counts stream (its header's `scaling`, as export
    /// writes it), else 1 and 0.
    static func xdfScaling(_ stream: XDFStream) -> ([Double], [Double]) {
        let n = stream.header.channelCount
        guard let scaling = XML.value(stream.headerXML, "scaling") else {
            return (Array(repeating: 1, count: n), Array(repeating: 0, count: n))
        }
        let items = XML.elements(scaling, "channel")
        guard items.count == n else { return (Array(repeating: 1, count: n), Array(repeating: 0, count: n)) }
        return (items.map { Double(XML.value($0, "scale") ?? "") ?? 1 }, items.map { Double(XML.value($0, "offset") ?? "") ?? 0 })
    }

    /// Each numeric stream becomes a source: rate = nominal rate (estimated from the timestamps for
    /// irregular streams), channel labels and units from the header, timestamps corrected by the stream's
    /// clock offsets (`XDFClockSync`), a new block wherever a stamped sample breaks the pace by more
    /// than half a sample, and for a stream with a nominal rate wherever the corrected timestamps
    /// drift from the block's nominal times by more than `xdfTimeTolerance` (`xdfPacedBlocks`).
    /// - Throws: `CaptureError.usage` when the clock offsets give no finite correction, no finite
    ///   positive rate comes from the header or the timestamps, or a block's corrected time is
    ///   beyond the range of `timestamp_ns`.
    public static func sources(xdf: XDFFile, file: String, select: Set<String>? = nil) throws(CaptureError) -> [ImportedSource] {
        var out: [ImportedSource] = []
        var wanted: [UInt32?] = []
        for stream in xdf.streams {
            let h = stream.header
            if let select, !select.contains(h.name), !select.contains("\(h.streamID)") { continue }
            if case .strings = stream.data { continue }
            guard stream.sampleCount > 0, h.channelCount > 0 else { continue }
            let n = stream.sampleCount
            // Clock offsets: as pyxdf's synchronize_clocks applies them (XDFClockSync), as to marker streams.
            let o = stream.clockOffsets
            var sync = XDFClockSync(times: o.map(\.time), values: o.map(\.value))
            let what = "stream '\(h.name)' (id \(h.streamID))"
            // Offsets the reader found finite can still add up to infinities.
            guard !sync.isUnusable else {
                throw CaptureError(.usage, file: file, "\(what): its \(o.count) clock offsets give no finite correction (\(sync.lines))")
            }
            let firstTime = stream.firstTimestamp ?? stream.timestamps[0], lastTime = stream.lastTimestamp ?? stream.timestamps[n - 1]
            // Every timestamp corrected in the stream's order when the stream has them; an indexed stream
            // (its timestamps not kept: one with a nominal rate) has them corrected in the same order a
            // window at a time by `xdfPacedBlocks`, clock resets included.
            let correctedTimes = sync.isEmpty || stream.timestamps.isEmpty ? stream.timestamps : stream.timestamps.map { sync.correct($0) }
            var rate = h.nominalRate
            if !(rate > 0) {
                let span = lastTime - firstTime
                rate = n > 1 && span > 0 ? Double(n - 1) / span : 1
            }
            guard rate > 0, rate.isFinite else {
                throw CaptureError(
                    .usage, file: file,
                    "\(what): no sampling rate: nominal_srate \(h.nominalRate), and \(n) timestamps from "
                        + "\(firstTime) s to \(lastTime) s give \(rate) Hz")
            }
            /// The time of sample `s` (timestamp `timestamp`) in ns: corrected by the clock offsets, which must fit `timestamp_ns`.
            func time(_ s: Int, _ timestamp: Double) throws(CaptureError) -> Int64 {
                let t = s < correctedTimes.count ? correctedTimes[s] : sync.isEmpty ? timestamp : sync.correct(timestamp)
                guard let ns = SampleTime.nanoseconds(seconds: t) else {
                    throw CaptureError(
                        .usage, file: file,
                        "\(what): sample \(s) at \(timestamp) s (\(t) s with the clock offsets) "
                            + "is beyond the range of timestamp_ns (1677-09-21 to 2262-04-11)")
                }
                return ns
            }
            var blocks: [ImportedBlock]
            if h.nominalRate > 0 {
                // Gaps where the reader found the pace broken, and re-timed blocks where the timestamps drift.
                blocks = try xdfPacedBlocks(stream, file: file, corrected: correctedTimes, sync: &sync, what: what)
            } else {
                blocks = [ImportedBlock(start: 0, timestampNs: try time(0, firstTime))]
                for s in stream.stampedSamples where s > 0 {
                    let expected = stream.timestamps[s - 1] + 1 / rate
                    if abs(stream.timestamps[s] - expected) > 0.5 / rate {
                        blocks.append(ImportedBlock(start: s, timestampNs: try time(s, stream.timestamps[s])))
                    }
                }
            }
            let format: SampleFormat
            var scales: ([Double], [Double])?
            switch stream.data {
            case .float64: format = .float64
            case .float32: format = .float32
            case .int16:
                format = .int16
                scales = xdfScaling(stream)
            case .int32:
                format = .int32
                scales = xdfScaling(stream)
            case .strings: continue
            }
            let samples = xdfSamples(stream, path: file, format: format, scales: scales)
            let names = (0..<h.channelCount).map { k in
                k < h.channels.count && !h.channels[k].label.isEmpty ? h.channels[k].label : "ch\(k)"
            }
            let units = (0..<h.channelCount).map { k in k < h.channels.count ? h.channels[k].unit : "" }
            let device = XML.value(stream.headerXML, "device")
            var id: UInt32?
            if h.sourceID.hasPrefix("tributary-source-") { id = UInt32(h.sourceID.dropFirst("tributary-source-".count)) }
            wanted.append(id)
            out.append(
                ImportedSource(
                    sourceID: 0, deviceName: device.flatMap { XML.value($0, "name") } ?? h.name,
                    deviceType: device.flatMap { XML.value($0, "type") } ?? (h.type.isEmpty ? "XDF" : h.type),
                    channelNames: names, units: units, rate: rate, samples: samples, sampleCount: n, blocks: blocks))
            out[out.count - 1].properties = try checked(
                SourceProperties(
                    source: h.properties.map { Property($0.key, $0.value) },
                    channels: h.channels.prefix(h.channelCount).enumerated().map {
                        ChannelProperties(index: UInt32($0.offset), properties: $0.element.properties.map { Property($0.key, $0.value) })
                    }), file: file, what: "stream \(h.streamID) '\(h.name)'")
        }
        for (k, id) in assignIDs(wanted).enumerated() { out[k].sourceID = id }
        return out
    }

    /// TDMS properties other than those the export writes itself (and NI's `NI_…`) as free-form
    /// properties, values as text, the export's `property.` prefix taken off.
    static func tdmsProperties(_ list: [TDMSProperty], reserved: Set<String>) -> [Property] {
        var out: [Property] = []
        for p in list where !reserved.contains(p.name) && !p.name.hasPrefix("NI_") && !p.name.isEmpty {
            let key =
                p.name.hasPrefix(FormatExport.tdmsPropertyPrefix) ? String(p.name.dropFirst(FormatExport.tdmsPropertyPrefix.count)) : p.name
            if let k = out.firstIndex(where: { $0.key == key }) {
                out[k].value = p.value.text
            } else {
                out.append(Property(key, p.value.text))
            }
        }
        return out
    }

    /// `properties` normalised, or a usage error naming `what` when they exceed the bounds of
    /// docs/PROTOCOL.md §5.19.
    static func checked(_ properties: SourceProperties, file: String, what: String) throws(CaptureError) -> SourceProperties {
        let p = properties.normalized
        if let problem = p.violation() { throw CaptureError(.usage, file: file, "\(what): properties: \(problem)") }
        return p
    }

    /// The properties the HDF5 export writes: attributes of the group `properties` beside the dataset
    /// (the source's) and of its groups `channel I` (channel I's); empty without that group.
    /// `recorded` are the channels' indexes in the capture the file was exported from (the dataset's
    /// `channel_indexes`), which name the groups; the imported channels are numbered 0, 1, ….
    static func hdf5Properties(
        _ file: HDF5Object, groupPath: String, recorded: [UInt32], path: String
    ) throws(CaptureError) -> SourceProperties {
        guard let group = try? file.openGroup(groupPath == "/" ? "/properties" : groupPath + "/properties") else {
            return SourceProperties()
        }
        func list(_ object: HDF5Object, _ what: String) throws(CaptureError) -> [Property] {
            guard let names = object.attributeNames(limit: PropertyLimits.maxPerObject) else {
                throw CaptureError(.usage, file: path, "\(what): more than \(PropertyLimits.maxPerObject) properties")
            }
            return names.map { name in
                let value: String
                switch object.attribute(name) {
                case .strings(let s)?: value = s.joined(separator: ",")
                case .numbers(let v)?: value = v.map { "\($0)" }.joined(separator: ",")
                case nil: value = ""
                }
                return Property(name, value)
            }
        }
        var properties = SourceProperties(source: try list(group, "group \(groupPath)/properties"))
        for (k, index) in recorded.enumerated() {
            guard let channel = try? group.openGroup("channel \(index)") else { continue }
            properties.channels.append(ChannelProperties(index: UInt32(k), properties: try list(channel, "channel \(index)")))
        }
        return try checked(properties, file: path, what: "group \(groupPath)")
    }

    // MARK: HDF5

    /// Each numeric dataset of rank 1 (one channel) or 2 (channels, samples) becomes a source, except
    /// `block_start` / `block_time_ns` (frame times written by `export`). Attributes are looked up on
    /// the dataset, then its group: sample_rate (or sampling_rate, rate, fs), start_time_ns,
    /// channel_names, units, device_name, source_id; int16 datasets with scale / offset are counts.
    /// `select` names datasets (by path, name or group name).
    public static func sources(hdf5 path: String, select: Set<String>? = nil, rate: Double? = nil) throws(CaptureError) -> [ImportedSource]
    {
        let file: HDF5Object
        do { file = try HDF5Object.open(path: path) } catch { throw CaptureError(.usage, file: path, error.reason) }
        var out: [ImportedSource] = []
        var wanted: [UInt32?] = []
        for datasetPath in file.datasetPaths() {
            let parts = datasetPath.split(separator: "/").map(String.init)
            let name = parts.last ?? datasetPath
            let groupPath = "/" + parts.dropLast().joined(separator: "/")
            if ["block_start", "block_time_ns"].contains(name) { continue }
            if let select, !select.contains(datasetPath), !select.contains(name), !select.contains(parts.dropLast().last ?? "/") {
                continue
            }
            guard let dataset = try? file.openDataset(datasetPath) else { continue }
            let numeric: HDF5NumericShape?
            do { numeric = try dataset.numericShape() } catch {
                throw CaptureError(.usage, file: path, "dataset \(datasetPath): \(error.reason)")
            }
            guard let numeric, (1...2).contains(numeric.dims.count) else { continue }
            let dims = numeric.dims
            let group = try? file.openGroup(groupPath)
            func attribute(_ names: String...) -> HDF5Value? {
                for n in names { if let v = dataset.attribute(n) ?? group?.attribute(n) { return v } }
                return nil
            }
            let channels = dims.count == 2 ? dims[0] : 1, n = dims.count == 2 ? dims[1] : dims[0]
            guard channels > 0, n > 0 else { continue }
            guard let r = attribute("sample_rate", "sampling_rate", "rate", "fs")?.number ?? rate, r > 0, r.isFinite else {
                throw CaptureError(.usage, file: path, "dataset \(datasetPath) has no sample_rate attribute; give the rate with --rate HZ")
            }
            let names = attribute("channel_names")?.strings.flatMap { $0.count == channels ? $0 : nil } ?? (0..<channels).map { "ch\($0)" }
            let units = attribute("units")?.strings.flatMap { $0.count == channels ? $0 : nil } ?? Array(repeating: "", count: channels)
            /// A time in ns from a float64 value: a whole number (truncated) within the range of `timestamp_ns`.
            func nanoseconds(_ v: Double, _ what: String) throws(CaptureError) -> Int64 {
                guard let ns = Int64(exactly: v.rounded(.towardZero)) else {
                    throw CaptureError(
                        .usage, file: path, "dataset \(datasetPath): \(what) \(v) is not a time in ns within the range of timestamp_ns")
                }
                return ns
            }
            // int64 nanoseconds read through float64 lose precision beyond 2^53 (and Int64.max reads as
            // 2^63, which no Int64 holds): integer times are read exactly.
            let exact = exactInt64(file: file, path: groupPath + "/block_time_ns")
            var blocks = [ImportedBlock(start: 0, timestampNs: 0)]
            if let g = group, let starts = try? g.openDataset("block_start").readNumbers(),
                let times = try? g.openDataset("block_time_ns").readNumbers(),
                case .float64(let s) = starts.data, case .float64(let t) = times.data, s.count == t.count, !s.isEmpty, s[0] == 0,
                zip(s, s.dropFirst()).allSatisfy({ $0 < $1 }), (s.last ?? 0) < Double(n)
            {
                blocks = []
                for k in s.indices {
                    let time: Int64
                    if let exact, exact.count == s.count { time = exact[k] } else { time = try nanoseconds(t[k], "block_time_ns[\(k)]") }
                    blocks.append(ImportedBlock(start: Int(s[k]), timestampNs: time))  // 0 <= s[k] < n: checked above
                }
            }
            if let exact, exact.count == blocks.count, !exact.isEmpty {
                for k in blocks.indices { blocks[k].timestampNs = exact[k] }
            }
            if blocks.count == 1 {
                if let exactStart = exactInt64Attribute(dataset, "start_time_ns")
                    ?? group.flatMap({ exactInt64Attribute($0, "start_time_ns") })
                {
                    blocks[0].timestampNs = exactStart
                } else if let start = attribute("start_time_ns")?.number {
                    blocks[0].timestampNs = try nanoseconds(start, "start_time_ns")
                }
            }
            var scales: (scale: [Double], offset: [Double])?
            if numeric.kind == .int16 || numeric.kind == .int32 {
                let scale = attribute("scale")?.numbers.flatMap { $0.count == channels ? $0 : nil } ?? Array(repeating: 1, count: channels)
                let offset =
                    attribute("offset")?.numbers.flatMap { $0.count == channels ? $0 : nil } ?? Array(repeating: 0, count: channels)
                scales = (scale, offset)
            }
            let samples = hdf5Samples(path: path, dataset: datasetPath, numeric, channels: channels, sampleCount: n, scales: scales)
            wanted.append(attribute("source_id")?.number.flatMap { UInt32(exactly: $0) })
            out.append(
                ImportedSource(
                    sourceID: 0, deviceName: attribute("device_name")?.string ?? (parts.count > 1 ? parts[parts.count - 2] : name),
                    deviceType: attribute("device_type")?.string ?? "HDF5", channelNames: names, units: units, rate: r,
                    samples: samples, sampleCount: n, blocks: blocks))
            let recorded =
                attribute("channel_indexes")?.numbers.flatMap { v in v.count == channels ? v.compactMap { UInt32(exactly: $0) } : nil }
                .flatMap { $0.count == channels ? $0 : nil } ?? (0..<channels).map { UInt32($0) }
            out[out.count - 1].properties = try hdf5Properties(file, groupPath: groupPath, recorded: recorded, path: path)
        }
        for (k, id) in assignIDs(wanted).enumerated() { out[k].sourceID = id }
        return out
    }

    static func exactInt64(file: HDF5Object, path: String) -> [Int64]? {
        guard let d = try? file.openDataset(path) else { return nil }
        return d.readInt64s()
    }

    static func exactInt64Attribute(_ object: HDF5Object, _ name: String) -> Int64? {
        object.int64Attribute(name)
    }

    // MARK: Frames and captures

    /// Checks that a source's rate fits a configuration (`WireLimits.isValidSamplingRate`, and not 0)
    /// and that every frame time `forEachFrame` stamps fits `timestamp_ns`: each block's last
    /// sample, `rate` after its first, is within its range.
    /// - Throws: `CaptureError.usage` naming the source and the block.
    public static func checkRateAndTimes(_ source: ImportedSource, file: String) throws(CaptureError) {
        let what = "source '\(source.deviceName)'"
        guard source.rate > 0, WireLimits.isValidSamplingRate(source.rate) else {
            throw CaptureError(
                .usage, file: file,
                "\(what): rate \(source.rate) Hz is outside what a capture's configuration holds "
                    + "(\(WireLimits.minSamplingRate) to \(WireLimits.maxSamplingRate) Hz)")
        }
        for (k, block) in source.blocks.enumerated() {
            let end = k + 1 < source.blocks.count ? source.blocks[k + 1].start : source.sampleCount
            let last = max(0, end - 1 - block.start)
            guard SampleTime.adding(Double(last) / source.rate, to: block.timestampNs) != nil else {
                throw CaptureError(
                    .usage, file: file,
                    "\(what): \(last + 1) samples at \(source.rate) Hz from \(block.timestampNs) ns (sample \(block.start)) "
                        + "run beyond the range of timestamp_ns (1677-09-21 to 2262-04-11)")
            }
        }
    }

    /// The frames of a source: its configuration, then analog frames of at most `samplesPerFrame`
    /// samples, each with the time of its first sample and a `first_sample` counter that jumps where
    /// the blocks' times say samples are missing. Times that would leave the range of `timestamp_ns`
    /// saturate (`checkRateAndTimes` refuses such sources first).
    /// The samples are read a frame's worth at a time (`ImportedSamples`): memory holds one frame's.
    public static func forEachFrame(_ source: ImportedSource, samplesPerFrame: Int = 4096, _ body: (Frame) throws -> Void) throws {
        let channels = source.channelCount, n = source.sampleCount, rate = source.rate
        let configuration = Configuration(
            deviceName: source.deviceName, deviceType: source.deviceType,
            channels: (0..<channels).map {
                ChannelConfiguration(
                    index: UInt32($0), description: source.channelNames[$0], unit: source.units[$0], samplingRate: rate,
                    minValue: -.infinity, maxValue: .infinity)
            })
        let t0 = source.blocks.first?.timestampNs ?? 0
        try body(Frame(encoding: .configuration(configuration), sequence: 0, timestampNs: t0, sourceID: source.sourceID))
        if !source.properties.isEmpty {
            // The next sequence number, not consumed (docs/PROTOCOL.md §5.19): the first analog frame has it too.
            try body(Frame(encoding: .properties(source.properties.normalized), sequence: 1, timestampNs: t0, sourceID: source.sourceID))
        }
        let perFrame = max(1, min(samplesPerFrame, (32 << 20) / max(1, channels * 8)))
        let reader = try source.samples.open()
        var sequence: UInt64 = 1
        var counterEnd: UInt64 = 0
        for (k, block) in source.blocks.enumerated() {
            let end = k + 1 < source.blocks.count ? source.blocks[k + 1].start : n
            // Samples since the first block by the clock; capped at 2^62 so that the counter cannot overflow.
            let elapsed = SourceSeries.seconds(block.timestampNs, since: t0) * rate
            var counter =
                k == 0 ? 0 : block.continues ? counterEnd : max(counterEnd, elapsed > 0 ? UInt64(min(elapsed.rounded(), 0x1p62)) : 0)
            var first = block.start
            while first < end {
                let count = min(perFrame, end - first)
                let header = FrameHeader(
                    kind: .analog, sequence: sequence,
                    timestampNs: SampleTime.adding(saturating: Double(first - block.start) / rate, to: block.timestampNs),
                    sourceID: source.sourceID)
                let window = try reader.next(count)
                guard window.valueCount == count * channels else {
                    throw CaptureError(
                        .usage, file: "",
                        "source '\(source.deviceName)': \(window.valueCount) values read where \(count * channels) were expected")
                }
                let frame = window.frame(header: header, samplesPerChannel: count, first: 0, count: count, firstSample: counter)
                try body(frame)
                sequence += 1
                first += count
                counter += UInt64(count)
            }
            counterEnd = counter
        }
    }

    /// Records the sources as a capture at a checked destination (replaced only once complete).
    /// - Parameter messages: frames of no source recorded after the sources' (`MarkerImport.frames`).
    @discardableResult
    public static func write(
        _ sources: [ImportedSource], messages: [Frame] = [], to destination: CaptureDestination,
        options: CaptureWriterOptions = CaptureWriterOptions(fsync: .none)
    ) throws(CaptureError) -> CaptureWriteSummary {
        for s in sources {
            try checkRateAndTimes(s, file: destination.path)
            try ImportedSignal.validate(
                channelCount: s.channelCount, sampleCount: s.sampleCount, channelNames: s.channelNames, file: destination.path, shape: nil)
            for (what, text) in [("device name", s.deviceName)] + s.units.map({ ("unit", $0) }) where text.utf8.count > 65_536 {
                throw CaptureError(
                    .usage, file: destination.path, "the \(what) '\(text.prefix(40))…' is \(text.utf8.count) bytes; at most 65536")
            }
        }
        let writer = try CaptureWriter(destination: destination, options: options)
        do {
            for s in sources {
                try forEachFrame(s) { frame in try writer.append(frame) }
            }
            for frame in messages { try writer.append(frame) }
            return try writer.close()
        } catch {
            writer.abandon()
            unlink(writer.partialPath)
            throw CaptureError.importing(error, file: destination.path)
        }
    }
}
