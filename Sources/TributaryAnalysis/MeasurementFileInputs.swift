import Foundation
import TributaryCapture
import TributaryInterchange
import TributaryWire

extension AnalysisInputs {
    /// TDMS, XDF and HDF5 files as `analyze` inputs: every group / stream / dataset with numeric data becomes a
    /// source, read exactly as `tributary import` records it (FormatImport, docs/FORMATS.md).
    /// - Parameter rate: the rate of TDMS groups without `wf_increment`.
    static func measurementFileFrames(_ path: String, kind: InterchangeFormat, rate: Double?, _ body: (Frame) throws -> Void) throws
        -> InputDescription
    {
        let sources: [ImportedSource]
        do { sources = try FormatImport.read(path: path, rate: rate) } catch { throw CommandError("\(error)") }
        var description = InputDescription()
        for source in sources {
            try FormatImport.forEachFrame(source, samplesPerFrame: framesamples) { frame in
                description.note(frame)
                try body(frame)
            }
        }
        return description
    }
}
