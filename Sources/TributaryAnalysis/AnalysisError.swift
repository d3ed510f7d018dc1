/// A failure of the analysis of one input file (cannot open it, not a known format, no analog data,
/// a requested channel missing, …): its description names the file and the problem.
///
/// The code here moved from the `tributary` tool, where such failures are `CommandError`s; the alias
/// keeps that code unchanged. The tool prints this error's description as it printed its own.
package struct AnalysisError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }
}

package typealias CommandError = AnalysisError

extension InputDescription {
    /// For inputs that are not files (the C interface's caller buffers); `dtype` as NPY names it ("<f8").
    package init(memoryOf dtype: String, channels: Int, sourceID: UInt32 = 1) {
        self.init(
            dtypes: [sourceID: dtype], channelCounts: [sourceID: channels],
            channelIndexes: [sourceID: Set(0..<channels)])
    }
}
