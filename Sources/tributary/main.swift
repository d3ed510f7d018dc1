import Foundation
import TributaryCapture
import TributaryTransport
import TributaryWire

@MainActor func topLevelUsage() -> String {
    let width = commands.map { $0.name.count }.max() ?? 0
    let list = commands.map { "  " + $0.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.summary }
    return """
        usage: tributary COMMAND [OPTIONS]

        Stream, filter, analyse and record multichannel measurement data.

        Commands:
        \(list.joined(separator: "\n"))

        Run 'tributary help COMMAND' (or 'tributary COMMAND --help') for the options of a command,
        'tributary --version' for the version.
        """
}

@MainActor func main() -> Int32 {
    // A closed pipe is an EPIPE error for every write, handled by `StandardOutput`, not a signal.
    ProcessSignals.ignoreBrokenPipes()
    var argv = Array(CommandLine.arguments.dropFirst())
    guard let name = argv.first else {
        printError(topLevelUsage())
        return 2
    }
    argv.removeFirst()
    if name == "--version" || name == "-V" {
        StandardOutput.line(
            "tributary \(TributaryVersion.current) (wire protocol version \(FrameHeader.currentVersion), "
                + "capture format version \(CaptureFormat.version))")
        return StandardOutput.exitStatus(0, command: name)
    }
    if name == "help", let topic = argv.first {
        // `tributary help COMMAND` is `tributary COMMAND --help`.
        guard let command = commands.first(where: { $0.name == topic }) else {
            printError("tributary help: unknown command '\(topic)'\n\n" + topLevelUsage())
            return 2
        }
        StandardOutput.line(command.usage)
        return StandardOutput.exitStatus(0, command: name)
    }
    if name == "--help" || name == "-h" || name == "help" {
        StandardOutput.line(topLevelUsage())
        return StandardOutput.exitStatus(0, command: name)
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        printError("tributary: unknown command '\(name)'\n\n" + topLevelUsage())
        return 2
    }
    if command.streamsFrames { AllocatorTuning.keepFreedMemoryForStreaming() }
    let options = argv.prefix { $0 != "--" }  // after a lone "--" everything is positional
    if options.contains("--help") || options.contains("-h") {
        StandardOutput.line(command.usage)
        return StandardOutput.exitStatus(0, command: name)
    }
    let status: Int32
    do {
        status = try command.execute(argv)
    } catch {
        // The error's type decides the exit status and what is said: ErrorExit.table.
        status = ErrorExit.report(error, command: command)
    }
    return StandardOutput.exitStatus(status, command: name)
}

exit(main())
