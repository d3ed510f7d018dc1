import Testing

@testable import TributaryTransport

/// What a publisher can make a subscriber hold (issue 38 item 4, PROTOCOL.md §4.8).
@Suite struct SourceLedgerTests {
    @Test func sourceIDsBeyondTheLimitAreRefusedAndSourceZeroAlwaysPasses() {
        var ledger = SourceLedger(maxSources: 3, maxConfigurationBytes: 1_000)
        for id in 1...3 as ClosedRange<UInt32> { #expect(ledger.admit(sourceID: id, configurationLength: nil) == nil) }
        #expect(ledger.admit(sourceID: 2, configurationLength: nil) == nil, "a known source is not counted again")
        #expect(ledger.admit(sourceID: 0, configurationLength: nil) == nil)
        #expect(ledger.admit(sourceID: 4, configurationLength: nil)?.contains("more than 3 source ids") == true)
        ledger.reset()
        #expect(ledger.admit(sourceID: 4, configurationLength: nil) == nil, "a new session starts over")
    }

    @Test func theLatestConfigurationOfEachSourceCounts() {
        var ledger = SourceLedger(maxSources: 10, maxConfigurationBytes: 1_000)
        #expect(ledger.admit(sourceID: 1, configurationLength: 600) == nil)
        #expect(ledger.admit(sourceID: 1, configurationLength: 900) == nil, "a new configuration replaces the old")
        #expect(ledger.admit(sourceID: 2, configurationLength: 200)?.contains("over the limit of 1000") == true)
        #expect(ledger.admit(sourceID: 1, configurationLength: 100) == nil)
        #expect(ledger.admit(sourceID: 2, configurationLength: 800) == nil)
    }
}
