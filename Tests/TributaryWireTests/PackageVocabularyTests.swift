import Foundation
import Testing
import TributaryTestSupport
import TributaryWire

/// The package kinds are declared once, by `FrameKind` (and `ExtensionKind`) with their traits; the C
/// header (and through it Python, whose constants a Python test checks against the header and the
/// library) must name each kind an application receives with the same number and name, and
/// docs/PROTOCOL.md §2.2 each kind with its number, name and direction (issue 39: a new kind missed by
/// a door fails here).
@Suite struct PackageVocabularyTests {
    /// The kinds a subscriber hands to an application, as declared (docs/PROTOCOL.md §2.2's data and
    /// session kinds; a close, the publisher's normal end of the session).
    static let delivered: [FrameKind] = FrameKind.allCases.filter(\.isDelivered)

    /// The declared vocabulary as name → number.
    static let declared: [String: UInt8] = Dictionary(uniqueKeysWithValues: FrameKind.vocabulary.map { ($0.name, $0.number) })

    static func headerKinds() throws -> [String: UInt8] {
        let text = try repositoryFile("include/tributary.h")
        var kinds: [String: UInt8] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("#define TRIBUTARY_KIND_") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 3, let value = UInt8(parts[2]) else { continue }
            kinds[String(parts[1].dropFirst("TRIBUTARY_KIND_".count))] = value
        }
        return kinds
    }

    @Test func theCHeaderNamesEveryDeliveredKindAsFrameKindDoes() throws {
        let kinds = try Self.headerKinds()
        #expect(!kinds.isEmpty, "no TRIBUTARY_KIND_ constants found in include/tributary.h")
        for kind in Self.delivered {
            let name = kind.description.uppercased().replacingOccurrences(of: "-", with: "_")
            #expect(kinds[name] == kind.rawValue, "include/tributary.h: TRIBUTARY_KIND_\(name) should be \(kind.rawValue)")
        }
        for (name, value) in kinds {
            let kind = FrameKind(rawValue: value)
            #expect(kind != nil && Self.delivered.contains(kind!), "TRIBUTARY_KIND_\(name) = \(value) is not a delivered FrameKind")
            #expect(kind.map { $0.description.uppercased().replacingOccurrences(of: "-", with: "_") } == name)
        }
    }

    @Test func theVocabularyIsOneNumberAndOneNamePerKind() {
        #expect(Self.declared.count == FrameKind.vocabulary.count, "two declared kinds share a name")
        #expect(Set(FrameKind.vocabulary.map(\.number)).count == FrameKind.vocabulary.count, "two declared kinds share a number")
        for kind in FrameKind.allCases {
            // A FrameKind in the extension range (129 properties) is one a subscriber hands to the
            // application as a package; ExtensionKind holds the transport's own (no package).
            #expect(kind.rawValue < 128 || kind == .properties, "FrameKind.\(kind) is in the extension range: declare it in ExtensionKind")
            #expect(FrameKind(name: kind.description) == kind)
            #expect(FrameKind.name(ofNumber: kind.rawValue) == kind.description)
        }
        for kind in ExtensionKind.allCases {
            #expect(kind.rawValue >= 128, "ExtensionKind.\(kind) is below the extension range")
            #expect(FrameKind.name(ofNumber: kind.rawValue) == kind.description)
        }
        #expect(FrameKind(name: "keepalive") == nil && FrameKind(name: "nope") == nil && FrameKind.name(ofNumber: 0) == nil)
    }

    /// docs/PROTOCOL.md §2.2's table as name → (number, direction cell).
    static func protocolTable() throws -> [String: (number: UInt8, direction: String)] {
        let text = try repositoryFile("docs/PROTOCOL.md")
        let section = try #require(text.range(of: "### 2.2 Kinds").map { text[$0.upperBound...] })
        let end = section.range(of: "\n### ")?.lowerBound ?? section.endIndex
        var documented: [String: (number: UInt8, direction: String)] = [:]
        for line in section[..<end].split(separator: "\n") where line.hasPrefix("| ") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, let number = UInt8(cells[0]) else { continue }
            #expect(documented[cells[1]] == nil, "docs/PROTOCOL.md §2.2 lists \(cells[1]) twice")
            documented[cells[1]] = (number, cells[2])
        }
        return documented
    }

    /// docs/PROTOCOL.md §2.2's table documents exactly the declared kinds, with their numbers and
    /// directions.
    @Test func theProtocolTableDocumentsEveryDeclaredKind() throws {
        let documented = try Self.protocolTable()
        #expect(documented.mapValues(\.number) == Self.declared, "docs/PROTOCOL.md §2.2's table differs from FrameKind + ExtensionKind")
        for (name, number) in Self.declared {
            let direction = try #require(FrameKind.direction(ofNumber: number))
            #expect(
                documented[name]?.direction == direction.rawValue,
                "docs/PROTOCOL.md §2.2: \(name) should be sent by '\(direction.rawValue)'")
        }
    }

    /// The traits nest as their documentation says: application packages are data, data kinds are
    /// delivered and travel either way, delivered kinds are never only a subscriber's.
    @Test func theTraitsAreConsistent() {
        for kind in FrameKind.allCases {
            if kind.isApplicationPackage { #expect(kind.isData, "\(kind) is an application package but not data") }
            if kind.isData {
                #expect(kind.isDelivered, "\(kind) is data but not delivered")
                #expect(kind.direction == .either, "\(kind) is data but not sent either way")
            }
            if kind.isDelivered { #expect(kind.direction != .subscriberToPublisher, "\(kind) is delivered but only a subscriber sends it") }
        }
        #expect(FrameKind.allCases.filter(\.isData) == [.analog, .digital, .message, .xml, .file, .image, .array])
        #expect(FrameKind.allCases.filter(\.isApplicationPackage) == [.message, .xml, .file, .image, .array])
    }

    /// The tests' independent encoder (Tests/Interop/wire_spec.py) numbers every FrameKind as declared,
    /// and names no kind that is not declared.
    @Test func theSpecEncoderNumbersEveryKindAsDeclared() throws {
        let text = try repositoryFile("Tests/Interop/wire_spec.py")
        let start = try #require(text.range(of: "\nKINDS = {")).upperBound
        let body = text[start...].prefix { $0 != "}" }
        var kinds: [String: UInt8] = [:]
        for entry in body.split(separator: ",") {
            let parts = entry.split(separator: ":").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            guard parts.count == 2, let number = UInt8(parts[1]) else { continue }
            kinds[parts[0].trimmingCharacters(in: CharacterSet(charactersIn: "\""))] = number
        }
        for kind in FrameKind.allCases {
            #expect(kinds[kind.description] == kind.rawValue, "wire_spec.py: KINDS[\"\(kind)\"] should be \(kind.rawValue)")
        }
        for (name, number) in kinds {
            #expect(Self.declared[name] == number, "wire_spec.py: \(name) = \(number) is no declared kind")
        }
    }
}
