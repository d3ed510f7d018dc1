import Testing

@testable import TributaryDSP

@Suite struct ChannelSpecTests {
    @Test func parses() throws {
        #expect(try ChannelSpec(parsing: "0-3").channels == [0, 1, 2, 3])
        #expect(try ChannelSpec(parsing: "0,2,5").channels == [0, 2, 5])
        #expect(try ChannelSpec(parsing: "5,0-2,1").channels == [5, 0, 1, 2])
    }

    @Test(arguments: [("0,x", 2), ("", 0), ("3-1", 2), ("1,", 2), ("1-", 2), ("0;1", 1), ("-1", 0)])
    func pointsAtTheBadCharacter(spec: String, position: Int) {
        do {
            _ = try ChannelSpec(parsing: spec)
            Issue.record("'\(spec)' parsed")
        } catch let error as ChannelSpecError {
            #expect(error.position == position)
            #expect(error.description.contains("^"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    /// Channels beyond the format's 65535 are refused; the widest range parses at once (it was
    /// de-duplicated in quadratic time: 0-1000000 took hours).
    @Test func channelsAreBoundedByTheFormat() throws {
        #expect(throws: ChannelSpecError.self) { try ChannelSpec(parsing: "0-65535") }
        #expect(throws: ChannelSpecError.self) { try ChannelSpec(parsing: "1000000") }
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try ChannelSpec(parsing: "0-65534,3").channels.count == 65_535)
        #expect(clock.now - start < .seconds(2))
    }

    @Test func validatesAgainstChannelCount() throws {
        #expect(throws: ChannelSpecError.self) { try ChannelSpec(parsing: "0-4").validate(channelCount: 4, spec: "0-4") }
        try ChannelSpec(parsing: "0-3").validate(channelCount: 4, spec: "0-3")
    }
}
