import Foundation
import Testing
import TributaryWire

/// The package kinds are declared once, by `FrameKind`; the C header (and through it Python, whose
/// constants a Python test checks against the header) must name each kind an application receives
/// with the same number and name (issue 39: a new kind missed by a door fails here).
@Suite struct PackageVocabularyTests {
    /// The kinds a subscriber hands to an application (docs/PROTOCOL.md §2.2's data and session kinds;
    /// a close, the publisher's normal end of the session).
    static let delivered: [FrameKind] = [
        .configuration, .error, .analog, .digital, .message, .xml, .file, .image, .array, .gap, .close, .properties,
    ]

    static func headerKinds() throws -> [String: UInt8] {
        let header = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("include/tributary.h")
        let text = try String(contentsOf: header, encoding: .utf8)
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
}
