import Foundation

/// A command-line usage error: printed with the command's usage to stderr, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A failure while running a command: printed to stderr, exit status 1.
struct CommandError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Every subcommand; each lives in Commands/<Name>Command.swift.
let commands: [any Command.Type] = [
    AnalyzeCommand.self,
    DemoCommand.self,
    FilterCommand.self,
    InspectCommand.self,
    ImportCommand.self,
    ExportCommand.self,
    ExtractCommand.self,
    ProcessCommand.self,
    RepairCommand.self,
    KeygenCommand.self,
    ServeCommand.self,
    SubscribeCommand.self,
    RecordCommand.self,
    BenchCommand.self,
    ViewCommand.self,
    MonitorCommand.self,
    ResolveCommand.self,
]

/// A subcommand of `tributary`.
protocol Command {
    /// The subcommand's name, as typed.
    static var name: String { get }
    /// One line for the command list.
    static var summary: String { get }
    /// Full usage text, shown by `--help` and after a usage error (its option list generated from the
    /// command's option table).
    static var usage: String { get }
    /// Parses the arguments and runs the command (`TableCommand`); returns the process exit status.
    static func execute(_ arguments: [String]) throws -> Int32
    /// The options the command takes, as its help lists them.
    static var optionSpecs: [OptionSpec] { get }
    /// Whether the command streams frames over the network (its process keeps freed message memory:
    /// `AllocatorTuning`).
    static var streamsFrames: Bool { get }
}

extension Command {
    static var streamsFrames: Bool { false }
}

/// Writes a line to standard error; never traps (a closed or full standard error is remembered by
/// `StandardOutput` and makes the exit status non-zero).
func printError(_ text: String) {
    StandardOutput.error(text + "\n")
}
