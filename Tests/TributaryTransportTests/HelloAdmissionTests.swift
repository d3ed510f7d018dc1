import Testing
import TributaryWire

@testable import TributaryTransport

/// The publisher's admission of a hello, without sockets: each check refuses with its own code, in
/// the documented order, and the session's timeout is bounded before it becomes an integer.
@Suite struct HelloAdmissionTests {
    let admission = HelloAdmission(maxClockSkew: .seconds(5), maxSessions: 2, maxSessionTimeout: .seconds(60))
    let now: Int64 = 1_700_000_000_000_000_000

    func verdict(_ hello: Hello, key: Bool = true, sentAt: Int64? = nil, open: Int = 0) -> Result<UInt64, ErrorReport> {
        admission.admit(hello, keyAccepted: key, sentAtNs: sentAt ?? now, wallClockNs: now, openSessions: open)
    }

    func code(_ result: Result<UInt64, ErrorReport>) -> ErrorCode? {
        if case .failure(let report) = result { return report.code }
        return nil
    }

    @Test func anAcceptableHelloGetsTheTimeoutItAskedFor() throws {
        #expect(try verdict(Hello(apiKey: "k", clientDescription: "d", timeoutSeconds: 2.5)).get() == 2_500_000_000)
    }

    @Test(arguments: [1.0, 0.5, -3, .nan, .infinity, -.infinity])
    func aTimeoutNotAboveOneSecondOrNotFiniteIsRefused(timeout: Double) {
        #expect(code(verdict(Hello(apiKey: "k", clientDescription: "d", timeoutSeconds: timeout))) == .wrongTimeout)
    }

    @Test(arguments: [60.000_000_001, 1e12, 1e308, Double.greatestFiniteMagnitude])
    func aLongTimeoutIsLoweredToTheMaximum(timeout: Double) throws {
        #expect(try verdict(Hello(apiKey: "k", clientDescription: "d", timeoutSeconds: timeout)).get() == 60_000_000_000)
    }

    @Test func theWrongKeyIsRefusedFirst() {
        // Every other check would fail too: the key's refusal is the one the peer hears.
        let hello = Hello(apiKey: "k", clientDescription: "d", timeoutSeconds: .nan)
        #expect(code(verdict(hello, key: false, sentAt: 0, open: 9)) == .wrongAPIKey)
    }

    @Test func theTimeoutIsCheckedBeforeTheClockAndTheClockBeforeTheRoom() {
        let badTimeout = Hello(apiKey: "k", clientDescription: "d", timeoutSeconds: 1)
        #expect(code(verdict(badTimeout, sentAt: 0, open: 9)) == .wrongTimeout)
        let hello = Hello(apiKey: "k", clientDescription: "d")
        #expect(code(verdict(hello, sentAt: 0, open: 9)) == .wrongTimestamp)
        #expect(code(verdict(hello, open: 9)) == .publisherFull)
    }

    @Test func aClockBeyondTheSkewEitherWayIsRefused() {
        let hello = Hello(apiKey: "k", clientDescription: "d")
        #expect(code(verdict(hello, sentAt: now - 4_999_000_000)) == nil)
        #expect(code(verdict(hello, sentAt: now + 4_999_000_000)) == nil)
        #expect(code(verdict(hello, sentAt: now - 5_001_000_000)) == .wrongTimestamp)
        #expect(code(verdict(hello, sentAt: now + 5_001_000_000)) == .wrongTimestamp)
        #expect(code(verdict(hello, sentAt: .min)) == .wrongTimestamp)
        let unchecked = HelloAdmission(maxClockSkew: nil, maxSessions: 2, maxSessionTimeout: .seconds(60))
        let result = unchecked.admit(hello, keyAccepted: true, sentAtNs: .min, wallClockNs: now, openSessions: 0)
        #expect(code(result) == nil)
    }

    @Test func theSessionTableHasRoomUpToItsLimit() {
        let hello = Hello(apiKey: "k", clientDescription: "d")
        #expect(code(verdict(hello, open: 1)) == nil)
        #expect(code(verdict(hello, open: 2)) == .publisherFull)
    }

    @Test func durationsBecomeNanosecondsWithoutTrapping() {
        #expect(HelloAdmission.nanoseconds(.milliseconds(1_500)) == 1_500_000_000)
        #expect(HelloAdmission.nanoseconds(.seconds(-1)) == 0)
        #expect(HelloAdmission.nanoseconds(.milliseconds(-500)) == 0)  // seconds 0, attoseconds negative: no trap
        #expect(HelloAdmission.nanoseconds(.zero) == 0)
        #expect(HelloAdmission.nanoseconds(.seconds(Int64.max)) == UInt64.max)
    }
}
