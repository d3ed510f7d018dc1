import TributaryWire

/// A parse error in a channel specification, pointing at the offending character.
public struct ChannelSpecError: Error, Equatable, CustomStringConvertible {
    /// The specification as given.
    public var spec: String
    /// Character offset of the problem (0-based).
    public var position: Int
    /// What is wrong.
    public var problem: String

    public var description: String {
        "bad channel list '\(spec)' at character \(position + 1): \(problem)\n  \(spec)\n  \(String(repeating: " ", count: position))^"
    }
}

/// A channel selection such as `0-3`, `0,2,5` or `0-3,7`: zero-based, in the order given, duplicates removed.
public struct ChannelSpec: Sendable, Equatable {
    /// The channel indices, in order of first mention.
    public var channels: [Int]
    /// The highest channel index the wire format can carry (a frame has at most `WireLimits.maxChannels`).
    public static let maxChannel = WireLimits.maxChannels - 1

    /// Parses a specification.
    /// - Throws: `ChannelSpecError` naming the character that is wrong.
    public init(parsing spec: String) throws {
        let chars = Array(spec)
        var index = 0
        var result: [Int] = []
        var seen = Set<Int>()
        func fail(_ problem: String) -> ChannelSpecError { ChannelSpecError(spec: spec, position: index, problem: problem) }
        func number() throws -> Int {
            let start = index
            var value = 0
            while index < chars.count, let d = chars[index].wholeNumberValue, chars[index].isASCII {
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(d)
                if o1 || o2 || s > Self.maxChannel {
                    index = start
                    throw fail("channel number too large (channels are 0-\(Self.maxChannel))")
                }
                value = s
                index += 1
            }
            guard index > start else {
                throw fail(
                    index < chars.count ? "expected a channel number, found '\(chars[index])'" : "expected a channel number at the end")
            }
            return value
        }
        guard !chars.isEmpty else { throw fail("the list is empty") }
        while true {
            let first = try number()
            if index < chars.count, chars[index] == "-" {
                index += 1
                let rangeStart = index
                let last = try number()
                guard last >= first else {
                    index = rangeStart
                    throw fail("range \(first)-\(last) runs backwards")
                }
                for c in first...last where seen.insert(c).inserted { result.append(c) }
            } else if seen.insert(first).inserted {
                result.append(first)
            }
            if index == chars.count { break }
            guard chars[index] == "," else { throw fail("expected ',' or '-', found '\(chars[index])'") }
            index += 1
        }
        channels = result
    }

    /// Checks every channel against the number available.
    /// - Throws: `ChannelSpecError` at the first channel out of range.
    public func validate(channelCount: Int, spec: String) throws {
        if let bad = channels.first(where: { $0 >= channelCount }) {
            // Point at the first mention of the bad number.
            let position = spec.range(of: String(bad)).map { spec.distance(from: spec.startIndex, to: $0.lowerBound) } ?? 0
            throw ChannelSpecError(
                spec: spec, position: position,
                problem: "channel \(bad) does not exist (the data has \(channelCount) channels: 0-\(channelCount - 1))")
        }
    }
}
