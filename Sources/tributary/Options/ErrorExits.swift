import Foundation
import TributaryAnalysis
import TributaryCapture
import TributaryDSP
import TributaryFormats
import TributaryInterchange
import TributarySources
import TributaryTransport
import TributaryWire

/// How an error that ends a command is reported at the edge (main.swift): commands let the library's
/// typed errors through (adding context such as a file name only where it says more), and this one
/// table maps each error type to the exit status and to what is printed.
struct ErrorExit: Sendable {
    /// What the row is for, as the reader of the table sees it.
    let type: String
    /// The exit status.
    let status: Int32
    /// The command's usage follows the message (a usage error).
    let showsUsage: Bool
    /// Nothing is printed (standard output went away: `StandardOutput.exitStatus` says so if it must).
    let silent: Bool
    let matches: @Sendable (any Error) -> Bool

    static func row<E: Error>(
        _ type: E.Type, status: Int32 = 1, usage: Bool = false, silent: Bool = false, when: @escaping @Sendable (E) -> Bool = { _ in true }
    ) -> ErrorExit {
        ErrorExit(type: "\(type)", status: status, showsUsage: usage, silent: silent) { ($0 as? E).map(when) ?? false }
    }

    /// First match wins; an error no row names is a failure (status 1) printed as it describes itself.
    static let table: [ErrorExit] = [
        row(UsageError.self, status: 2, usage: true),
        row(ExportError.self, status: 2, usage: true) { $0.kind == .usage },
        row(StandardOutputFailure.self, silent: true),
        row(CommandError.self),
        row(CaptureError.self),
        row(SampleReadError.self),
        row(ExportError.self),
        row(FormatError.self),
        row(NPYError.self),
        row(WireError.self),
        row(ErrorReport.self),
        row(ZMQError.self),
        row(ZMQCurveKeyError.self),
        row(PublisherError.self),
        row(FilterError.self),
        row(MeasurementError.self),
    ]

    /// The row for `error` (the failure row when none names it).
    static func exit(for error: any Error) -> ErrorExit {
        table.first { $0.matches(error) } ?? ErrorExit(type: "Error", status: 1, showsUsage: false, silent: false) { _ in true }
    }

    /// Prints what the row says for `error` of the command `name` and returns its exit status.
    @MainActor static func report(_ error: any Error, command: any Command.Type) -> Int32 {
        let row = exit(for: error)
        if !row.silent {
            printError("tributary \(command.name): \(error)" + (row.showsUsage ? "\n\n\(command.usage)" : ""))
        }
        return row.status
    }
}
