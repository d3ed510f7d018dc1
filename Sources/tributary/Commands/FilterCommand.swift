import Foundation
import TributaryAnalysis
import TributaryWire

/// `tributary filter`: applies subscriber filters to a frame file, exactly as the publisher would.
enum FilterCommand: Command {
    static let name = "filter"
    static let summary = "apply analog/array filters to a frame file, as the publisher would"
    static let usage = """
    usage: tributary filter IN --out OUT --filter SPEC [--filter SPEC]...

    Reads IN, a file of frames (docs/PROTOCOL.md), and writes to OUT the frames a subscriber with
    these filters would receive from a publisher (docs/PROTOCOL.md §6): filtered analog and array
    frames carry their filter's id; frames no filter governs are copied unchanged. The filters get
    ids 1, 2, … in the order given. Sequence numbers are kept from IN.

      --filter analog:QUERY          an analog filter, SCCT query 'CHANNELS;SOURCES' (e.g. 'analog:1-3;0,2')
      --filter TYPE:QUERY            an array filter for arrays of TYPE (double, float, int32, int16,
                                     int64, bool, string), SCCT query 'ROWS;COLUMNS' (e.g. 'double:5-15;5-15')
      --out OUT                      the frame file to write ('-' for standard output)
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let specs = try arguments.options("--filter")
        guard let out = try arguments.option("--out") else { throw UsageError("missing --out OUT") }
        let inputs = try arguments.finish()
        guard inputs.count == 1 else { throw UsageError(inputs.isEmpty ? "missing IN" : "expected one IN, got \(inputs.count)") }
        guard !specs.isEmpty else { throw UsageError("give at least one --filter") }

        var filters = SubscriberFilters()
        for spec in specs {
            guard let colon = spec.firstIndex(of: ":") else {
                throw UsageError("--filter '\(spec)': expected KIND:QUERY, e.g. analog:1-3;0,2 or double:5-15;5-15")
            }
            let kind = String(spec[..<colon]), query = String(spec[spec.index(after: colon)...])
            do {
                if kind == "analog" {
                    try filters.add(AnalogFilterRequest(query: query), id: filters.nextFilterID)
                } else if let type = ArrayElementType.allCases.first(where: { $0.description == kind }) {
                    try filters.add(ArrayFilterRequest(elementType: type, query: query), id: filters.nextFilterID)
                } else {
                    throw UsageError("--filter '\(spec)': unknown kind '\(kind)' (analog, double, float, int32, int16, int64, bool, string)")
                }
            } catch let error as QueryError {
                throw UsageError("--filter '\(spec)': \(error)")
            }
        }

        let input = try InputFile(inputs[0])
        let output = try OutputFile(out, inputs: inputs)
        var decoder = FrameStreamDecoder()
        var pending = Data()
        do {
            while try input.readBlock({ raw in
                try decoder.feed(raw) { frame in
                    try filters.outputs(for: frame) { filtered in filtered.withUnsafeBytes { pending.append(contentsOf: $0) } }
                }
            }) {
                if pending.count > 1 << 20 { try output.write(pending); pending.removeAll(keepingCapacity: true) }
            }
            try decoder.finish()
        } catch let error as WireError {
            try output.write(pending)
            throw CommandError("\(inputs[0]): \(error)")
        }
        try output.write(pending)
        return 0
    }
}
