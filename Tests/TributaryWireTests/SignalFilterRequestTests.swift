import Testing

@testable import TributaryWire

/// The signal-filter request (kind 13) against docs/PROTOCOL.md §5.18: its bytes as the table
/// gives them, a round trip, and every field's rule refused with the field's name and offset.
@Suite struct SignalFilterRequestTests {
    /// The 24 payload bytes of §5.18, written from the table.
    static func payload(
        source: UInt32 = 1, decimate: UInt32 = 0, ftype: UInt8 = 0, lowpassOrder: UInt8 = 0, decimateOrder: UInt16 = 0,
        reserved: UInt32 = 0, cutoff: Double = 0
    ) -> [UInt8] {
        func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
        return le(source) + le(decimate) + [ftype, lowpassOrder] + le(decimateOrder) + le(reserved) + le(cutoff.bitPattern)
    }

    static func frame(_ payload: [UInt8]) -> Frame {
        var header = FrameHeader(kind: .signalFilter)
        header.payloadLength = payload.count
        var bytes = [UInt8](repeating: 0, count: header.headerLength + payload.count)
        bytes.withUnsafeMutableBytes { header.encode(into: $0.baseAddress!) }
        bytes.replaceSubrange(header.headerLength..., with: payload)
        return try! Frame(decoding: FrameBuffer(copying: bytes))
    }

    @Test func encodesAsTheTableSaysAndRoundTrips() throws {
        let request = SignalFilterRequest(
            sourceID: 7, decimate: 10, decimationKind: .fir, decimationOrder: 300, lowpassOrder: 6, lowpassCutoff: 812.5)
        let frame = Frame(encoding: .signalFilter(request))
        #expect(frame.header.kind == .signalFilter && frame.header.kind.rawValue == 13)
        #expect(
            Array(frame.payloadBytes) == Self.payload(source: 7, decimate: 10, ftype: 1, lowpassOrder: 6, decimateOrder: 300, cutoff: 812.5)
        )
        guard case .signalFilter(let decoded) = try frame.payload() else {
            Issue.record("not a signal filter")
            return
        }
        #expect(decoded == request)
        #expect(FrameKind.signalFilter.description == "signal-filter")
        let removal = Frame(encoding: .signalFilter(.remove(sourceID: 3)))
        guard case .signalFilter(let r) = try removal.payload() else { return }
        #expect(r.removes && r.sourceID == 3)
    }

    @Test func everyFieldOutsideItsRuleIsRefusedByName() {
        let cases: [([UInt8], String)] = [
            (Self.payload(source: 0, decimate: 10), "signal_filter.source_id"),
            (Self.payload(decimate: 1), "signal_filter.decimate"),
            (Self.payload(decimate: (1 << 20) + 1), "signal_filter.decimate"),
            (Self.payload(decimate: 10, ftype: 2), "signal_filter.decimate_ftype"),
            (Self.payload(ftype: 1, lowpassOrder: 2, cutoff: 5), "signal_filter.decimate_ftype"),
            (Self.payload(lowpassOrder: 2, decimateOrder: 4, cutoff: 5), "signal_filter.decimate_ftype"),
            (Self.payload(decimate: 10, decimateOrder: 17), "signal_filter.decimate_order"),
            (Self.payload(decimate: 10, ftype: 1, decimateOrder: 16_385), "signal_filter.decimate_order"),
            (Self.payload(lowpassOrder: 17, cutoff: 5), "signal_filter.lowpass_order"),
            (Self.payload(lowpassOrder: 2, cutoff: .nan), "signal_filter.lowpass_cutoff"),
            (Self.payload(lowpassOrder: 2, cutoff: .infinity), "signal_filter.lowpass_cutoff"),
            (Self.payload(lowpassOrder: 2, cutoff: -1), "signal_filter.lowpass_cutoff"),
            (Self.payload(lowpassOrder: 2, cutoff: 0), "signal_filter.lowpass_cutoff"),
            (Self.payload(decimate: 10, cutoff: -0.0), "signal_filter.lowpass_cutoff"),
            (Self.payload(decimate: 10, reserved: 1), "signal_filter.reserved"),
        ]
        for (bytes, field) in cases {
            #expect(throws: WireError.self) { try Self.frame(bytes).payload() }
            do {
                _ = try Self.frame(bytes).payload()
            } catch {
                #expect(error.field == field, "\(error)")
                #expect(error.code == .invalidValue)
            }
        }
        // Short and long payloads are refused too.
        #expect(throws: WireError.self) { try Self.frame(Array(Self.payload(decimate: 10)[0..<16])).payload() }
        #expect(throws: WireError.self) { try Self.frame(Self.payload(decimate: 10) + [UInt8](repeating: 0, count: 8)).payload() }
    }

    @Test func theLimitsThemselvesAreAccepted() throws {
        for bytes in [
            Self.payload(decimate: 2), Self.payload(decimate: 1 << 20), Self.payload(decimate: 10, decimateOrder: 16),
            Self.payload(decimate: 10, ftype: 1, decimateOrder: 16_384), Self.payload(lowpassOrder: 16, cutoff: 1e-300),
            Self.payload(source: .max),
        ] {
            guard case .signalFilter = try Self.frame(bytes).payload() else {
                Issue.record("not decoded")
                continue
            }
        }
    }
}
