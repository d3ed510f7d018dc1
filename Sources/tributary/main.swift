import Foundation
import TributaryTransport

/// Every subcommand; each lives in Commands/<Name>Command.swift.
let commands: [any Command.Type] = [
    AnalyzeCommand.self,
    DemoCommand.self,
    FilterCommand.self,
    InspectCommand.self,
    ImportCommand.self,
    ExportCommand.self,
    ExtractCommand.self,
    RepairCommand.self,
    KeygenCommand.self,
    ServeCommand.self,
    SubscribeCommand.self,
    RecordCommand.self,
]

@MainActor func topLevelUsage() -> String {
    let width = commands.map { $0.name.count }.max() ?? 0
    let list = commands.map { "  " + $0.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.summary }
    return """
    usage: tributary COMMAND [OPTIONS]

    Stream, filter, analyse and record multichannel measurement data.

    Commands:
    \(list.joined(separator: "\n"))

    Run 'tributary COMMAND --help' for the options of a command.
    """
}

@MainActor func main() -> Int32 {
    var argv = Array(CommandLine.arguments.dropFirst())
    guard let name = argv.first else {
        printError(topLevelUsage())
        return 2
    }
    argv.removeFirst()
    if name == "--help" || name == "-h" || name == "help" {
        print(topLevelUsage())
        return 0
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        printError("tributary: unknown command '\(name)'\n\n" + topLevelUsage())
        return 2
    }
    if command.streamsFrames { AllocatorTuning.keepFreedMemoryForStreaming() }
    var arguments = Arguments(argv)
    if arguments.wantsHelp {
        print(command.usage)
        return 0
    }
    do {
        return try command.run(&arguments)
    } catch let error as UsageError {
        printError("tributary \(name): \(error)\n\n\(command.usage)")
        return 2
    } catch {
        printError("tributary \(name): \(error)")
        return 1
    }
}

exit(main())
