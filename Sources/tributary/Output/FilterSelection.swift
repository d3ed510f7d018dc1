import TributaryText
import TributaryWire

/// What `tributary filter` read and kept: the analog channels and arrays of each source of the input,
/// and per filter and source the channels, frames and samples it kept. It says what was kept on
/// success, and what the input holds when the filters keep nothing of the frames they govern.
struct FilterSelection {
    let filters: SubscriberFilters
    /// The text of each filter, by id (as given on the command line).
    let specs: [UInt32: String]

    /// The channel indexes of a source's analog frames (each frame's list is added once while it repeats).
    struct Channels {
        private(set) var all = Set<UInt32>()
        private var last: [UInt32] = []

        mutating func add(_ view: AnalogView) {
            let indexes = view.channelIndexes
            if indexes != last {
                all.formUnion(indexes)
                last = indexes
            }
        }
    }

    private struct Key: Hashable {
        var filter: UInt32
        var source: UInt32
    }

    private struct Kept {
        var channels = Channels()
        var frames = 0
        /// Samples per channel of the analog frames kept (saturating: it only reports).
        var samples: UInt64 = 0
        var arrays = Set<ArrayElementType>()
    }

    private var analogIn: [UInt32: Channels] = [:]
    private var arraysIn: [ArrayElementType: Set<UInt32>] = [:]
    /// Input frames some filter governs (analog frames when there are analog filters, arrays of a filtered type).
    private var governed = 0
    /// Input frames no filter governs, copied unchanged.
    private var passed = 0
    private var kept: [Key: Kept] = [:]
    /// Gap records copied into a capture OUT.
    var gapRecords = 0

    init(filters: SubscriberFilters, specs: [UInt32: String]) {
        self.filters = filters
        self.specs = specs
    }

    /// True when the filters govern frames of the input but keep none of them.
    var keptNothing: Bool { governed > 0 && kept.isEmpty }

    /// `SubscriberFilters.outputs(for:_:)`, noting what the frame holds and what is kept of it.
    mutating func outputs(for frame: Frame, _ emit: (Frame) throws -> Void) throws {
        var isGoverned = false
        switch frame.header.kind {
        case .analog:
            // A malformed analog frame no filter governs is copied as it is, as the publisher would.
            if let view = try? frame.analog() { analogIn[frame.header.sourceID, default: Channels()].add(view) }
            isGoverned = !filters.analog.isEmpty
        case .array:
            if case .array(let view)? = try? frame.payload() {
                arraysIn[view.elementType, default: []].insert(frame.header.sourceID)
                isGoverned = filters.array.contains { $0.request.elementType == view.elementType }
            }
        default:
            break
        }
        if isGoverned { governed += 1 } else { passed += 1 }
        try filters.outputs(for: frame) { out in
            if isGoverned { note(out) }
            try emit(out)
        }
    }

    private mutating func note(_ frame: Frame) {
        let key = Key(filter: frame.header.filterID, source: frame.header.sourceID)
        var k = kept[key] ?? Kept()
        k.frames += 1
        if frame.header.kind == .analog, let view = try? frame.analog() {
            k.channels.add(view)
            let (sum, overflow) = k.samples.addingReportingOverflow(UInt64(view.sampleCount))
            k.samples = overflow ? .max : sum
        } else if case .array(let view)? = try? frame.payload() {
            k.arrays.insert(view.elementType)
        }
        kept[key] = k
    }

    /// One line: what each filter kept (sources, channels, frames, samples per channel), and the frames copied unchanged.
    func keptText() -> String {
        var parts: [String] = []
        for id in specs.keys.sorted() {
            let mine = kept.filter { $0.key.filter == id }.sorted { $0.key.source < $1.key.source }
            let what = mine.map { key, k -> String in
                var text = "source \(key.source)"
                if !k.channels.all.isEmpty { text += " channels \(indexRanges(k.channels.all))" }
                if !k.arrays.isEmpty { text += " " + k.arrays.map(\.description).sorted().joined(separator: "/") + " arrays" }
                let samples = k.channels.all.isEmpty ? "" : ", \(counted(k.samples, "sample")) per channel"
                return text + " (\(counted(k.frames, "frame"))\(samples))"
            }
            parts.append(
                "filter \(id) '\(specs[id] ?? "?")' kept " + (what.isEmpty ? "nothing" + absence(of: id) : what.joined(separator: ", ")))
        }
        parts.append("\(counted(passed, "frame")) no filter governs copied unchanged")
        if gapRecords > 0 { parts.append("\(counted(gapRecords, "gap record")) kept") }
        return parts.joined(separator: "; ")
    }

    /// Why a filter that kept nothing had nothing to keep, when the input holds nothing of its kind
    /// (" (the input has no analog frames)"); "" when it does (its channels or sources did not match).
    private func absence(of id: UInt32) -> String {
        if filters.analog.contains(where: { $0.id == id }) {
            return analogIn.isEmpty ? " (the input has no analog frames)" : ""
        }
        if let entry = filters.array.first(where: { $0.id == id }), arraysIn[entry.request.elementType] == nil {
            return " (the input has no \(entry.request.elementType) arrays)"
        }
        return ""
    }

    /// Why nothing was written: the filters and what the input holds.
    func emptySelectionText() -> String {
        let given = specs.keys.sorted().map { "'\(specs[$0] ?? "?")'" }.joined(separator: ", ")
        var holds: [String] = []
        if !analogIn.isEmpty {
            holds.append(
                "analog data of "
                    + analogIn.keys.sorted().map { "source \($0) (channels \(indexRanges(analogIn[$0]!.all)))" }
                    .joined(separator: ", "))
        }
        for type in arraysIn.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            let sources = arraysIn[type]!.sorted()
            holds.append(
                "\(type) arrays of " + (sources.count == 1 ? "source " : "sources ") + sources.map(String.init).joined(separator: ", "))
        }
        return "the filters (\(given)) keep nothing of the \(counted(governed, "frame")) they govern; nothing written. "
            + "The input holds " + (holds.isEmpty ? "no analog data or arrays" : holds.joined(separator: "; "))
    }
}
