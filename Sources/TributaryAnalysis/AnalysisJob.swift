import Foundation
import TributaryDSP
import TributaryText
import TributaryWire

/// The analysis of one file: frames from `AnalysisInputs` through a `FrameAnalysis`.
package struct AnalysisJob: Sendable {
    package var request: AnalysisRequest
    package var filters: SubscriberFilters
    /// Channels asked for with --channels (each must exist in every source analysed).
    package var requestedChannels: [Int]?
    /// Sources asked for with --source (nil: every source); each must have analog data.
    package var requestedSources: Set<UInt32>?
    package var rate: Double?
    package var int16Scale: Double
    /// Threads that decode a capture's chunks ahead of the analysis (1: none; more when one file is
    /// analysed at a time, so that decoding and analysis overlap).
    package var decodeThreads = 1

    package init(
        request: AnalysisRequest, filters: SubscriberFilters, requestedChannels: [Int]?, requestedSources: Set<UInt32>? = nil,
        rate: Double?, int16Scale: Double
    ) {
        self.request = request
        self.filters = filters
        self.requestedChannels = requestedChannels
        self.requestedSources = requestedSources
        self.rate = rate
        self.int16Scale = int16Scale
    }

    /// The analyses of the file's sources, in order of source id.
    package func run(_ path: String) -> Result<(InputDescription, [SourceAnalysis]), CommandError> {
        do {
            let analysis = FrameAnalysis(request: request, filters: filters, sampleRate: rate)
            let input = try AnalysisInputs.frames(of: path, rate: rate, int16Scale: int16Scale, threads: decodeThreads) { frame in
                if let requestedSources, !requestedSources.contains(frame.header.sourceID) { return }
                try analysis.add(frame)
            }
            let sources = try analysis.finish().sorted { $0.id < $1.id }
            try check(path, input)
            if sources.isEmpty { throw Self.noAnalogData(path, input) }
            return .success((input, sources))
        } catch let error as CommandError {
            return .failure(error)
        } catch {
            return .failure(CommandError("\(path): \(error)"))
        }
    }

    /// The error for a file whose analysis found no analog data: where that is because the file is
    /// damaged or torn, the damage (as `inspect` names it, with its byte offset) and what to do.
    static func noAnalogData(_ path: String, _ input: InputDescription) -> CommandError {
        guard !input.warnings.isEmpty else { return CommandError("\(path): no analog data") }
        let damage = input.warnings.map { $0.hasPrefix(path + ": ") ? String($0.dropFirst(path.count + 2)) : $0 }
        return CommandError(
            "\(path): no analog data could be read; the file is damaged: \(damage.joined(separator: "; ")). "
                + "'tributary inspect \(path)' lists the damage; 'tributary repair \(path) --out REPAIRED.tcap' "
                + "keeps whatever is intact")
    }

    /// Names what --source and --channels asked for that the file does not have, and what it has.
    private func check(_ path: String, _ input: InputDescription) throws {
        let present = input.channelIndexes.keys.sorted()
        let list = present.isEmpty ? "none" : present.map(String.init).joined(separator: ", ")
        if let requestedSources, let missing = requestedSources.sorted().first(where: { input.channelIndexes[$0] == nil }) {
            throw CommandError("\(path): --source: source \(missing) has no analog data in this file (sources with analog data: \(list))")
        }
        guard let requestedChannels else { return }
        for id in present where requestedSources?.contains(id) ?? true {
            let channels = input.channelIndexes[id] ?? []
            if let missing = requestedChannels.first(where: { !channels.contains($0) }) {
                throw CommandError(
                    "\(path): --channels: channel \(missing) is not in source \(id) (\(counted(input.channelCounts[id] ?? channels.count, "channel"))), which has channels "
                        + FrameDescription.rangeText(channels.sorted().map { UInt32($0) }))
            }
        }
    }
}
