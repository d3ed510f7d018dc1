import Foundation
import TributaryCapture
import TributaryText

/// `tributary repair FILE [--out FILE]`: a valid, footed capture from a crashed or damaged one.
enum RepairCommand: Command {
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
          --out FILE   the repaired capture (default: FILE without its '.partial' suffix, or FILE itself)
          --force      replace the output if it exists (needed to repair FILE in place): it is replaced
                       atomically once the repaired capture is complete
        Exit status 0 when the output was written, even if damage was found.
        """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let out = try arguments.option("--out")
        let force = arguments.flag("--force")
        let files = try arguments.finish()
        guard files.count == 1 else { throw UsageError(files.isEmpty ? "missing FILE" : "expected one FILE, got \(files.count)") }
        let input = files[0]
        let output = out ?? (input.hasSuffix(".partial") ? String(input.dropLast(".partial".count)) : input)
        let report: CaptureRepairReport
        do { report = try CaptureRecovery.repair(input: input, output: output, replace: force) } catch { throw CommandError("\(error)") }
        print("\(output): \(counted(report.recordsKept, "record")) kept" + (report.inputHadFooter ? " (the input had a valid footer)" : ""))
        for d in report.damage { print("  damage at \(d)") }
        if report.damage.isEmpty { print("  no damage found") }
        return 0
    }
}
