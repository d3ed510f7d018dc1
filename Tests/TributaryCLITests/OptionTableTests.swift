import Foundation
import Testing
import TributaryCapture
import TributaryInterchange
import TributaryTestSupport
import TributaryTransport
import TributaryWire

@testable import tributary

/// The option tables are the commands' options: every option a table declares is in the command's
/// help and in docs/CLI.md, and the parser they drive checks what it reads.
@Suite struct OptionTableTests {
    /// docs/CLI.md's sections by the command their heading names (`### analyze`).
    static func cliSections() throws -> [String: String] {
        var sections: [String: String] = [:], current: String?
        for line in try repositoryFile("docs/CLI.md").split(separator: "\n", omittingEmptySubsequences: false) {
            let words = line.split(separator: " ")
            if (line.hasPrefix("## ") || line.hasPrefix("### ")) && words.count == 2 {
                current = String(words[1])
                sections[current!] = ""
            } else if let current {
                sections[current]! += line + "\n"
            }
        }
        return sections
    }

    /// Whether `text` names `option` as a whole word (`--out` is not found in `--output`).
    static func names(_ text: String, _ option: String) -> Bool {
        var range = text.startIndex..<text.endIndex
        while let found = text.range(of: option, range: range) {
            let next = found.upperBound < text.endIndex ? text[found.upperBound] : " "
            if !(next.isLetter || next.isNumber || next == "-") { return true }
            range = found.upperBound..<text.endIndex
        }
        return false
    }

    @Test func everyOptionIsInItsHelpAndInTheReference() throws {
        let sections = try Self.cliSections()
        // The commands that take the subscription options may leave those to the subscribe section.
        let shared = Set(SubscriptionOptions.options.specs.map(\.name))
        #expect(commands.count == 17)
        for command in commands {
            let specs = command.optionSpecs.filter { !$0.isPositional }
            #expect(!specs.isEmpty, "\(command.name) declares no option")
            let section = try #require(sections[command.name], "docs/CLI.md has no section '### \(command.name)'")
            for spec in specs {
                #expect(command.usage.contains(spec.label), "tributary help \(command.name) does not list \(spec.label)")
                let documented =
                    Self.names(section, spec.name) || (shared.contains(spec.name) && Self.names(sections["subscribe"] ?? "", spec.name))
                #expect(documented, "docs/CLI.md's section on \(command.name) does not name \(spec.name)")
            }
            #expect(Set(specs.map(\.name)).count == specs.count, "\(command.name) declares an option twice")
        }
    }

    struct Sample {
        var flag = false
        var text: String?
        var texts: [String] = []
        var count: Int?
        var level: Double?
    }

    static var table: OptionTable<Sample> {
        OptionTable([
            .flag("--flag", "a flag", \.flag),
            .text("--text", "T", "a text", \.text),
            .texts("--many", "M", "repeatable", \.texts),
            .integer("--count", "N", "a count", in: 1...10, "a count", \.count),
            .number("--level", "L", "a level", in: 0...1, above: true, "a level", \.level),
        ])
    }

    static func parse(_ arguments: [String]) throws -> (Sample, [String]) {
        var sample = Sample()
        let rest = try table.parse(arguments, into: &sample)
        return (sample, rest)
    }

    static func usageError(_ arguments: [String]) -> String? {
        do {
            _ = try parse(arguments)
            return nil
        } catch {
            return (error as? UsageError)?.description ?? "not a usage error: \(error)"
        }
    }

    @Test func parsesValuesFlagsAndPositionals() throws {
        let (sample, rest) = try Self.parse(["in", "--flag", "--text", "a", "--many=1", "--many", "2", "--count=3", "--", "--text"])
        #expect(sample.flag && sample.text == "a" && sample.texts == ["1", "2"] && sample.count == 3 && sample.level == nil)
        #expect(rest == ["in", "--text"])
        #expect(try Self.parse(["-"]).1 == ["-"])
    }

    @Test func refusesWhatItCannotRead() {
        #expect(Self.usageError(["--text"]) == "option --text needs a value")
        #expect(Self.usageError(["--text", "a", "--text=b"]) == "option --text given 2 times")
        #expect(Self.usageError(["--bogus"]) == "unknown option '--bogus'")
        #expect(Self.usageError(["--flag=1"]) == "option --flag takes no value")
        #expect(Self.usageError(["--count", "11"]) == "option --count: '11' is not a count in 1...10")
        #expect(Self.usageError(["--count", "99999999999999999999"]) == "option --count: '99999999999999999999' is not a count in 1...10")
        #expect(Self.usageError(["--level", "0"]) == "option --level: '0' is not a level in (0, 1]")
        #expect(Self.usageError(["--level", "nan"]) == "option --level: 'nan' is not a level in (0, 1]")
        // A bad value is said before an unknown option, as each option's check comes first.
        #expect(Self.usageError(["--bogus", "--count", "0"]) == "option --count: '0' is not a count in 1...10")
    }

    @Test func helpListsEveryEntryAtOneColumn() {
        let lines = Self.table.help().split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        #expect(lines[0].hasPrefix("  --flag") && lines[3].hasPrefix("  --count N"))
        // The longest label, "  --count N", is 11 characters: every help starts 2 spaces after it.
        #expect(Self.table.helpColumn == 13)
        for line in lines {
            let characters = Array(line)
            #expect(characters.count > 13 && characters[12] == " " && characters[13] != " ", "\(line)")
        }
    }

    @Test func errorTypesMapToExitStatuses() {
        #expect(ErrorExit.exit(for: UsageError("x")).status == 2)
        #expect(ErrorExit.exit(for: UsageError("x")).showsUsage)
        #expect(ErrorExit.exit(for: ExportError(.usage, "x")).status == 2)
        #expect(ErrorExit.exit(for: ExportError(.io, "x")).status == 1)
        #expect(!ErrorExit.exit(for: ExportError(.io, "x")).showsUsage)
        #expect(ErrorExit.exit(for: CommandError("x")).status == 1)
        #expect(ErrorExit.exit(for: StandardOutputFailure()).silent)
        struct Other: Error {}
        #expect(ErrorExit.exit(for: Other()).status == 1)
    }

    /// The command line's --decimate/--lowpass and the C interface's members build the request with
    /// the library's one check (SignalFilterRequest.subscription).
    @Test func signalFilterOptionsAreTheLibrarysRequest() throws {
        #expect(try SubscriptionOptions.signalFilter(decimate: nil, lowpass: nil) == nil)
        let cli = try SubscriptionOptions.signalFilter(decimate: "8:fir", lowpass: "100:6")
        let library = try SignalFilterRequest.subscription(decimate: 8, kind: .fir, lowpass: 100, lowpassOrder: 6)
        #expect(cli == library)
        #expect(library?.decimationKind == .fir && library?.lowpassOrder == 6)
        #expect(throws: SignalFilterOptionError.factor(1)) { try SignalFilterRequest.subscription(decimate: 1, lowpass: nil) }
        #expect(throws: SignalFilterOptionError.order(17)) {
            try SignalFilterRequest.subscription(decimate: nil, lowpass: 5, lowpassOrder: 17)
        }
        #expect(throws: (any Error).self) { try SignalFilterRequest.subscription(decimate: nil, lowpass: -1) }
        func message(_ decimate: String?, _ lowpass: String?) -> String? {
            do {
                _ = try SubscriptionOptions.signalFilter(decimate: decimate, lowpass: lowpass)
                return nil
            } catch { return "\(error)" }
        }
        #expect(message("1", nil) == "option --decimate: '1' is not N or N:fir with N an integer from 2 to 1048576")
        #expect(message("4:xyz", nil) == "option --decimate: '4:xyz' is not N or N:fir with N an integer from 2 to 1048576")
        #expect(message(nil, "100:17") == "option --lowpass: the order in '100:17' is not an integer from 1 to 16")
        #expect(message(nil, "0") == "option --lowpass: '0' is not HZ[:ORDER] with HZ a frequency above 0")
    }

    /// The subscription options read into the library's model: the messages name the command line's
    /// option and quote the value; view and monitor refuse array filters in help and error alike.
    @Test func subscriptionOptionsAreTheLibrarysRequest() throws {
        func options(_ arguments: [String]) throws -> SubscriptionOptions {
            var given = SubscriptionOptions.Given()
            _ = try SubscriptionOptions.options.parse(["--api-key", "k"] + arguments, into: &given)
            return try SubscriptionOptions(given, defaultDescription: "test")
        }
        func message(_ arguments: [String]) -> String? {
            do {
                _ = try options(arguments)
                return nil
            } catch { return "\(error)" }
        }
        let parsed = try options(["--sources", "1,3", "--channels", "0-3", "--array-filter", "int16:2-;"])
        #expect(parsed.request.sources == [1, 3])
        #expect(parsed.request.analogFilter == (try SubscriptionRequest.analogFilter(channels: "0-3", sources: [1, 3])))
        #expect(parsed.request.arrayFilters == [try SubscriptionRequest.arrayFilter("int16:2-;")])
        #expect(
            message(["--sources", "1,x"])
                == "option --sources: '1,x' is not a list of source ids in 0...4294967295, e.g. 1,3 (0: the publisher's own packages)")
        #expect(message(["--channels", "0-x"])?.hasPrefix("option --channels: '0-x': ") == true)
        #expect(
            message(["--array-filter", "cplx:1"])
                == "option --array-filter: 'cplx:1' is not TYPE:QUERY with TYPE double, float, int32, int16, int64, bool or string")
        #expect(message(["--curve-key", "x.key"]) == "--curve-key needs --curve-server-key")
        let analog = SubscriptionOptions.analogOptions(refusing: "it reads analog channels only")
        var given = SubscriptionOptions.Given()
        #expect(throws: UsageError.self) { try analog.parse(["--array-filter", "double:;"], into: &given) }
        #expect(analog.specs.first { $0.name == "--array-filter" }?.help == "refused: it reads analog channels only")
    }

    /// The positional arguments: one, or none, the errors naming what is missing or extra.
    @Test func positionalsAreCounted() throws {
        func message(_ body: () throws -> Void) -> String? {
            do {
                try body()
                return nil
            } catch { return "\(error)" }
        }
        #expect(try Positionals.one(["a.tcap"], "FILE") == "a.tcap")
        #expect(message { _ = try Positionals.one([], "FILE") } == "missing FILE")
        #expect(message { _ = try Positionals.one([], "IN", missing: "IN.tcap") } == "missing IN.tcap")
        #expect(message { _ = try Positionals.one(["a", "b"], "IN", missing: "IN.tcap") } == "expected one IN, got 2")
        #expect(message { try Positionals.none([]) } == nil)
        #expect(message { try Positionals.none(["x", "y"]) } == "unexpected argument 'x'")
    }

    /// extract writes out every delivered kind that is application content (not analog: export's;
    /// not the session's configuration, gap, close and properties records): a kind added to the
    /// vocabulary must be placed on one side or the other here.
    @Test func extractTakesEveryDeliveredContentKind() {
        #expect(Set(ExtractCommand.allKinds) == [.message, .xml, .error, .file, .image, .array, .digital])
        let notExtracted: Set<FrameKind> = [.analog, .configuration, .gap, .close, .properties]
        for kind in FrameKind.allCases where kind.isDelivered {
            #expect(ExtractCommand.allKinds.contains(kind) != notExtracted.contains(kind), "\(kind) is neither extracted nor excluded")
        }
        #expect(ExtractCommand.allKinds.allSatisfy { $0.isDelivered })
    }
}
