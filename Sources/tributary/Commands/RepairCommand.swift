import Foundation
import TributaryCapture
import TributaryText

/// `tributary repair FILE [--out FILE]`: a valid, footed capture from a crashed or damaged one.
enum RepairCommand: TableCommand {
    static let name = "repair"
    static let summary = "rebuild a crashed or damaged capture into a valid one"
    static let usage = """
        usage: tributary repair FILE [--out FILE] [--force]

        Copies every intact record of FILE (typically NAME.tcap.partial left by a recorder that was
        killed) into a capture with a seek-table footer, flagged as repaired, and lists what was left
        out (damaged or duplicated records) and what was put back in order (a source's chunk records
        out of sequence order, written in sequence order: docs/CAPTURE.md §7) with byte offsets in FILE.
        FILE is scanned record by record whatever its footer says. FILE itself is never modified unless
        it is the output.
        \(options.help())
        Exit status 0 when the output was written, even if damage was found.
        """

    /// What to repair into what.
    struct Configuration {
        var input = ""
        var out: String?
        var force = false
        /// The output: --out, else the input without its '.partial' suffix, else the input itself.
        var output: String { out ?? (input.hasSuffix(".partial") ? String(input.dropLast(".partial".count)) : input) }
    }

    static var options: OptionTable<Configuration> {
        OptionTable([
            .text("--out", "FILE", "the repaired capture (default: FILE without its '.partial' suffix, or FILE itself)", \.out),
            .flag(
                "--force",
                """
                replace the output if it exists (needed to repair FILE in place): it is replaced
                atomically once the repaired capture is complete
                """, \.force),
        ])
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var configuration = Configuration()
        configuration.input = try Positionals.one(options.parse(arguments, into: &configuration), "FILE")
        return configuration
    }

    static func run(_ configuration: Configuration) throws -> Int32 {
        let output = configuration.output
        let report = try CaptureRecovery.repair(input: configuration.input, output: output, replace: configuration.force)
        print("\(output): \(counted(report.recordsKept, "record")) kept" + (report.inputHadFooter ? " (the input had a valid footer)" : ""))
        for d in report.damage { print("  damage at \(d)") }
        if report.damage.isEmpty { print("  no damage found") }
        return 0
    }
}
