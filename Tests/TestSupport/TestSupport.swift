import Foundation

// What the Swift test targets share, written once: a seeded generator, the repository's files and
// the fuzzers' regression corpora. A test helper, not part of any product.

/// Deterministic pseudo-random numbers for tests (SplitMix64), so that failures reproduce.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` pseudo-random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
    }
}

/// The root of the repository (the folder of Package.swift), found from this file's place.
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The text of a file of the repository, by its path from the root.
public func repositoryFile(_ path: String) throws -> String {
    try String(contentsOf: repositoryRoot.appendingPathComponent(path), encoding: .utf8)
}

/// One fuzz target's regression corpus (Fuzz/regressions/TARGET/): every input that ever tripped it,
/// which the unit tests replay forever after.
public struct FuzzCorpus: Sendable {
    public let directory: URL

    public init(target: String) {
        directory = repositoryRoot.appendingPathComponent("Fuzz/regressions/\(target)")
    }

    /// The inputs' file names, sorted (none when the folder is missing: a test checks it is not).
    public var inputs: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    }

    /// The bytes of one input.
    public func bytes(_ name: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
    }
}
