import Foundation

/// What the help text (and the test that holds docs/CLI.md to it) knows of one option of a command:
/// its name, the name of its value, its help and whether it may be given more than once.
struct OptionSpec: Sendable, Equatable {
    /// "--rate", or a positional argument's name ("ADDRESS"), which is only described.
    var name: String
    /// The value's name ("HZ"); nil for a flag.
    var value: String?
    /// The help, one or more lines as they are printed (the generated text indents them).
    var help: String
    var repeatable = false
    /// 1 for an option that refines the one above it (printed indented under it).
    var level = 0
    /// A positional argument: described in the list, never parsed as an option.
    var isPositional = false

    /// "--rate HZ", "--stats".
    var label: String { value.map { "\(name) \($0)" } ?? name }
}

/// One option of a command: the one declaration that parses its value, checks it (the error names the
/// option and the value) and stores it in the command's configuration, and whose `spec` is its help line.
struct OptionEntry<Configuration> {
    var spec: OptionSpec
    /// Stores one value (nil for a flag) in the configuration; throws `UsageError` for a bad one.
    var apply: (inout Configuration, String?) throws -> Void

    /// A boolean flag.
    static func flag(_ name: String, _ help: String, level: Int = 0, _ path: WritableKeyPath<Configuration, Bool>) -> Self {
        Self(spec: OptionSpec(name: name, value: nil, help: help, level: level)) { configuration, _ in configuration[keyPath: path] = true }
    }

    /// A text option given at most once.
    static func text(_ name: String, _ value: String, _ help: String, level: Int = 0, _ path: WritableKeyPath<Configuration, String?>)
        -> Self
    {
        Self(spec: OptionSpec(name: name, value: value, help: help, level: level)) { configuration, text in
            configuration[keyPath: path] = text
        }
    }

    /// A repeatable text option: every value, in order.
    static func texts(_ name: String, _ value: String, _ help: String, level: Int = 0, _ path: WritableKeyPath<Configuration, [String]>)
        -> Self
    {
        Self(spec: OptionSpec(name: name, value: value, help: help, repeatable: true, level: level)) { configuration, text in
            configuration[keyPath: path].append(text ?? "")
        }
    }

    /// An option whose value `parse` reads; nil from `parse` is "option NAME: 'TEXT' is not WHAT".
    static func parsed<T>(
        _ name: String, _ value: String, _ what: String, _ help: String, level: Int = 0, _ path: WritableKeyPath<Configuration, T?>,
        _ parse: @escaping (String) -> T?
    ) -> Self {
        parsed(name, value, what, help, level: level, path) { text -> T?? in parse(text).map(Optional.some) }
    }

    /// An option with a default (the configuration's), whose value `parse` reads.
    static func parsed<T>(
        _ name: String, _ value: String, _ what: String, _ help: String, level: Int = 0, _ path: WritableKeyPath<Configuration, T>,
        _ parse: @escaping (String) -> T?
    ) -> Self {
        Self(spec: OptionSpec(name: name, value: value, help: help, level: level)) { configuration, text in
            let text = text ?? ""
            guard let parsed = parse(text) else { throw UsageError("option \(name): '\(text)' is not \(what)") }
            configuration[keyPath: path] = parsed
        }
    }

    /// An integer option that must lie in `range`; the error names the option, the value and the
    /// allowed range ("option --welch: '1099511627776' is not a segment length in 1...4194304").
    static func integer(
        _ name: String, _ value: String, _ what: String, in range: ClosedRange<Int>, _ help: String, level: Int = 0,
        _ path: WritableKeyPath<Configuration, Int?>
    ) -> Self {
        parsed(name, value, "\(what) in \(range.lowerBound)...\(range.upperBound)", help, level: level, path) {
            Int($0).flatMap { range.contains($0) ? $0 : nil }
        }
    }

    /// A finite number option that must lie in `range` (NaN and infinities never do); `above`
    /// excludes the lower bound. The error names the option, the value and the allowed range.
    static func number(
        _ name: String, _ value: String, _ what: String, in range: ClosedRange<Double>, above: Bool = false, _ help: String,
        level: Int = 0, _ path: WritableKeyPath<Configuration, Double?>
    ) -> Self {
        let lower = above ? "(\(range.lowerBound.rangeText)" : "[\(range.lowerBound.rangeText)"
        return parsed(name, value, "\(what) in \(lower), \(range.upperBound.rangeText)]", help, level: level, path) { text in
            Double(text).flatMap { range.contains($0) && !(above && $0 == range.lowerBound) ? $0 : nil }
        }
    }

    /// An option read by `apply` (its own checks and messages); `repeatable` lets it be given more than once.
    static func custom(
        _ name: String, _ value: String, _ help: String, level: Int = 0, repeatable: Bool = false,
        _ apply: @escaping (inout Configuration, String) throws -> Void
    ) -> Self {
        Self(spec: OptionSpec(name: name, value: value, help: help, repeatable: repeatable, level: level)) { configuration, text in
            try apply(&configuration, text ?? "")
        }
    }

    /// An option a command refuses (a shared one that does not apply to it): its help and its usage
    /// error say why, "NAME: REASON".
    static func refused(_ name: String, _ value: String, because reason: String) -> Self {
        Self(spec: OptionSpec(name: name, value: value, help: "refused: " + reason)) { _, _ in throw UsageError("\(name): \(reason)") }
    }

    /// A positional argument in the option list: described, not parsed.
    static func positional(_ name: String, _ help: String) -> Self {
        Self(spec: OptionSpec(name: name, value: nil, help: help, isPositional: true)) { _, _ in }
    }

    /// This entry for a configuration that holds this one's at `path`.
    func lifted<Outer>(_ path: WritableKeyPath<Outer, Configuration>) -> OptionEntry<Outer> {
        let apply = self.apply
        return OptionEntry<Outer>(spec: spec) { outer, text in try apply(&outer[keyPath: path], text) }
    }
}

/// A command's options, one `OptionEntry` each: parses a command line into the configuration and
/// prints the option list of the command's help, so that the two cannot drift apart.
///
/// Options are `--name value` or `--name=value`; flags are `--name`; everything after a lone `--` is
/// positional. Values are checked in the table's order; an option the table does not have is an
/// error ("unknown option '--x'"), so a misspelt flag is not ignored.
struct OptionTable<Configuration> {
    var entries: [OptionEntry<Configuration>]

    init(_ entries: [OptionEntry<Configuration>]) { self.entries = entries }

    /// Every entry's help data, in the order they are listed.
    var specs: [OptionSpec] { entries.map(\.spec) }

    /// The table of a configuration holding this one's at `path`.
    func lifted<Outer>(_ path: WritableKeyPath<Outer, Configuration>) -> OptionTable<Outer> {
        OptionTable<Outer>(entries.map { $0.lifted(path) })
    }

    static func + (lhs: Self, rhs: Self) -> Self { Self(lhs.entries + rhs.entries) }

    /// This table with the entry named `name` replaced by `entry` (a command that refuses a shared
    /// option says so, in its help as in its error).
    func replacing(_ name: String, with entry: OptionEntry<Configuration>) -> Self {
        Self(entries.map { $0.spec.name == name ? entry : $0 })
    }

    /// Reads `arguments` into `configuration`; returns the positional arguments in order.
    /// - Throws: `UsageError` naming the option: a missing value, a non-repeatable option given twice,
    ///   a bad value (the entry's message), an unknown option.
    func parse(_ arguments: [String], into configuration: inout Configuration) throws -> [String] {
        var items = arguments, trailing: [String] = []
        if let dash = arguments.firstIndex(of: "--") {
            items = Array(arguments[..<dash])
            trailing = Array(arguments[(dash + 1)...])
        }
        var byName: [String: Int] = [:]
        for (index, entry) in entries.enumerated() where !entry.spec.isPositional { byName[entry.spec.name] = index }
        var values = [[String?]](repeating: [], count: entries.count)
        var positionals: [String] = [], unknown: String?
        var index = 0
        while index < items.count {
            let item = items[index]
            index += 1
            let split = item.hasPrefix("--") ? item.firstIndex(of: "=") : nil
            let name = split.map { String(item[..<$0]) } ?? item
            guard let entry = byName[name] else {
                if item.hasPrefix("-") && item != "-" {
                    unknown = unknown ?? item
                } else {
                    positionals.append(item)
                }
                continue
            }
            if entries[entry].spec.value == nil {
                guard split == nil else { throw UsageError("option \(name) takes no value") }
                values[entry].append(nil)
            } else if let split {
                values[entry].append(String(item[item.index(after: split)...]))
            } else {
                guard index < items.count else { throw UsageError("option \(name) needs a value") }
                values[entry].append(items[index])
                index += 1
            }
        }
        for (entry, given) in zip(entries, values) where !given.isEmpty {
            guard given.count == 1 || entry.spec.repeatable else {
                throw UsageError("option \(entry.spec.name) given \(given.count) times")
            }
            for value in given { try entry.apply(&configuration, value) }
        }
        if let unknown { throw UsageError("unknown option '\(unknown)'") }
        return positionals + trailing
    }

    /// The column the help starts at: after the longest label that fits (at most 28).
    var helpColumn: Int {
        let labels = entries.map { 2 + 2 * $0.spec.level + $0.spec.label.count }
        return min(28, (labels.filter { $0 <= 26 }.max() ?? 0) + 2)
    }

    /// The option list of the help: each option's label, then its help from a common column (a
    /// refining option indented under the one above); `column` aligns it with another list's.
    func help(column: Int? = nil) -> String {
        let labels = entries.map { String(repeating: " ", count: 2 + 2 * $0.spec.level) + $0.spec.label }
        let column = column ?? helpColumn
        let indent = String(repeating: " ", count: column)
        var lines: [String] = []
        for (label, entry) in zip(labels, entries) {
            let help = entry.spec.help.split(separator: "\n", omittingEmptySubsequences: false)
            let gap = label.count + 2 <= column ? String(repeating: " ", count: column - label.count) : "  "
            lines.append(label + gap + (help.first.map(String.init) ?? ""))
            for line in help.dropFirst() { lines.append(indent + line) }
        }
        return lines.joined(separator: "\n")
    }
}

/// The positional arguments `OptionTable.parse` returns, checked against what a command takes.
enum Positionals {
    /// The one positional argument a command takes, `name` ("FILE", "ADDRESS").
    /// - Throws: `UsageError` "missing MISSING" (`missing`, else `name`) or "expected one NAME, got N".
    static func one(_ items: [String], _ name: String, missing: String? = nil) throws -> String {
        guard items.count == 1 else {
            throw UsageError(items.isEmpty ? "missing \(missing ?? name)" : "expected one \(name), got \(items.count)")
        }
        return items[0]
    }

    /// A command that takes none.
    /// - Throws: `UsageError` "unexpected argument 'X'" naming the first.
    static func none(_ items: [String]) throws {
        guard items.isEmpty else { throw UsageError("unexpected argument '\(items[0])'") }
    }
}

/// A subcommand whose options are an `OptionTable`: its command line is parsed into a
/// `Configuration` (a plain value), which `run` then carries out.
protocol TableCommand: Command {
    /// The options as given (by default the configuration itself).
    associatedtype Given = Configuration
    associatedtype Configuration
    /// The command's options.
    static var options: OptionTable<Given> { get }
    /// Reads and checks the command line (`options`, then the positional arguments and the checks
    /// that involve several options).
    static func parse(_ arguments: [String]) throws -> Configuration
    /// Carries out the command; returns the process exit status.
    static func run(_ configuration: Configuration) throws -> Int32
}

extension TableCommand {
    static func execute(_ arguments: [String]) throws -> Int32 { try run(parse(arguments)) }
    static var optionSpecs: [OptionSpec] { options.specs }
}

extension Double {
    /// 1e+20 as "1e+20", 86400.0 as "86400".
    var rangeText: String { self == rounded() && abs(self) < 1e15 ? String(Int(self)) : description }
}
