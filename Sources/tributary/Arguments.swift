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

/// The arguments of one command, consumed option by option.
///
/// Options are `--name value` or `--name=value`; flags are `--name`. Every option a command reads
/// is removed; `finish()` rejects whatever is left, so a misspelt flag is an error, not ignored.
struct Arguments {
    private var items: [String]
    private var positionals: [String] = []

    init(_ items: [String]) {
        // Everything after a lone "--" is positional.
        if let dash = items.firstIndex(of: "--") {
            self.items = Array(items[..<dash])
            positionals = Array(items[(dash + 1)...])
        } else {
            self.items = items
        }
    }

    /// Removes and reports a boolean flag.
    mutating func flag(_ name: String) -> Bool {
        guard let index = items.firstIndex(of: name) else { return false }
        items.remove(at: index)
        return true
    }

    /// Removes and returns every value of a repeatable option.
    mutating func options(_ name: String) throws -> [String] {
        var values: [String] = []
        var index = 0
        while index < items.count {
            let item = items[index]
            if item == name {
                guard index + 1 < items.count else { throw UsageError("option \(name) needs a value") }
                values.append(items[index + 1])
                items.removeSubrange(index...(index + 1))
            } else if item.hasPrefix(name + "=") {
                values.append(String(item.dropFirst(name.count + 1)))
                items.remove(at: index)
            } else {
                index += 1
            }
        }
        return values
    }

    /// Removes and returns the value of an option given at most once.
    mutating func option(_ name: String) throws -> String? {
        let values = try options(name)
        guard values.count <= 1 else { throw UsageError("option \(name) given \(values.count) times") }
        return values.first
    }

    /// An option parsed by `parse`, whose error names the option and the bad value.
    mutating func option<T>(_ name: String, _ what: String, _ parse: (String) -> T?) throws -> T? {
        guard let text = try option(name) else { return nil }
        guard let value = parse(text) else { throw UsageError("option \(name): '\(text)' is not \(what)") }
        return value
    }

    /// An integer option that must lie in `range`; the error names the option, the value and the
    /// allowed range ("option --welch: '1099511627776' is not a segment length in 1...4194304").
    mutating func integer(_ name: String, _ what: String, in range: ClosedRange<Int>) throws -> Int? {
        try option(name, "\(what) in \(range.lowerBound)...\(range.upperBound)") { Int($0).flatMap { range.contains($0) ? $0 : nil } }
    }

    /// A finite number option that must lie in `range` (NaN and infinities never do); `above`
    /// excludes the lower bound. The error names the option, the value and the allowed range.
    mutating func number(_ name: String, _ what: String, in range: ClosedRange<Double>, above: Bool = false) throws -> Double? {
        let lower = above ? "(\(range.lowerBound.rangeText)" : "[\(range.lowerBound.rangeText)"
        return try option(name, "\(what) in \(lower), \(range.upperBound.rangeText)]") { text in
            Double(text).flatMap { range.contains($0) && !(above && $0 == range.lowerBound) ? $0 : nil }
        }
    }

    /// Removes and returns the remaining positional arguments; rejects unknown options.
    mutating func finish() throws -> [String] {
        if let unknown = items.first(where: { $0.hasPrefix("-") && $0 != "-" }) {
            throw UsageError("unknown option '\(unknown)'")
        }
        let result = items + positionals
        items = []
        positionals = []
        return result
    }
}

/// A subcommand of `tributary`.
protocol Command {
    /// The subcommand's name, as typed.
    static var name: String { get }
    /// One line for the command list.
    static var summary: String { get }
    /// Full usage text, shown by `--help` and after a usage error (its option list generated from the
    /// command's option table).
    static var usage: String { get }
    /// Parses the arguments and runs the command; returns the process exit status.
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

/// A command not yet read through an option table: it consumes `Arguments` itself.
protocol ArgumentsCommand: Command {
    static func run(_ arguments: inout Arguments) throws -> Int32
}

extension ArgumentsCommand {
    static func execute(_ arguments: [String]) throws -> Int32 {
        var arguments = Arguments(arguments)
        return try run(&arguments)
    }
    static var optionSpecs: [OptionSpec] { [] }
}

/// Writes a line to standard error; never traps (a closed or full standard error is remembered by
/// `StandardOutput` and makes the exit status non-zero).
func printError(_ text: String) {
    StandardOutput.error(text + "\n")
}
