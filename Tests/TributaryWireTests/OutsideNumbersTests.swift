import Testing
import TributaryWire

/// The conversions and sums that numbers from outside go through (issue 38): bounds, not traps.
@Suite struct OutsideNumbersTests {
    @Test func sumsSaturateAtTheTypesBounds() {
        #expect(UInt64.max.addingSaturated(1) == .max)
        #expect((UInt64.max - 1).addingSaturated(UInt64.max) == .max)
        #expect(UInt64(2).addingSaturated(3) == 5)
        #expect(UInt64(2).subtractingSaturated(3) == 0)
        #expect(Int64.min.subtractingSaturated(1) == .min)
        #expect(Int64.max.subtractingSaturated(-1) == .max)
        #expect(Int64.min.addingSaturated(-1) == .min)
        #expect(Int64.max.addingSaturated(Int64.max) == .max)
        #expect(Int64(-3).multipliedSaturated(by: Int64.max) == .min)
        #expect(Int64(3).multipliedSaturated(by: Int64.max) == .max)
        #expect(UInt32(7).multipliedSaturated(by: 6) == 42)
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, 1e308, -1e308, 9.223372036854775807e18, -9.3e18, 0.5, -0.5, 1e-300])
    func doublesBecomeIntegersWithinRangeOrNil(_ x: Double) {
        let i = Int64(saturating: x)
        let u = UInt64(saturating: x)
        if x.isNaN {
            #expect(i == nil && u == nil)
        } else {
            #expect(i != nil && u != nil)
            if x >= 9.2e18 { #expect(i == .max) }
            if x <= -9.2e18 { #expect(i == .min) }
            if x <= 0 { #expect(u == 0) }
            if abs(x) < 1 { #expect(i == 0) }
        }
    }

    @Test func nanosecondsOnlyFromFiniteSecondsInRange() {
        #expect(2.5.nanoseconds(atMostSeconds: 10) == 2_500_000_000)
        #expect(Double.nan.nanoseconds(atMostSeconds: 10) == nil)
        #expect(Double.infinity.nanoseconds(atMostSeconds: 10) == nil)
        #expect((-1.0).nanoseconds(atMostSeconds: 10) == nil)
        #expect(2e10.nanoseconds(atMostSeconds: 1e10) == nil)
        #expect(1e308.nanoseconds(atMostSeconds: 1e308) == nil)
    }

    /// A configuration frame of one channel sampled at `rate`.
    static func configurationFrame(rate: Double) -> Frame {
        let channel = ChannelConfiguration(index: 0, description: "c", unit: "V", samplingRate: rate)
        return Frame(
            encoding: .configuration(Configuration(deviceName: "d", deviceType: "t", channels: [channel])), sequence: 0, timestampNs: 0)
    }

    @Test func configurationRatesOutsideTheProtocolsRangeAreRefused() throws {
        for rate in [Double.nan, .infinity, -.infinity, -1, 1e300, 5e-324, 1e13] {
            let frame = Self.configurationFrame(rate: rate)
            #expect(throws: WireError.self, "rate \(rate)") { try frame.payload() }
            do { _ = try frame.payload() } catch {
                #expect(error.field == "channel.sampling_rate" && error.code == .invalidValue, "\(error)")
            }
        }
        for rate in [0, 1e-6, 1, 48_000, 1e12] {
            let frame = Self.configurationFrame(rate: rate)
            #expect(throws: Never.self, "rate \(rate)") { try frame.payload() }
        }
    }
}
