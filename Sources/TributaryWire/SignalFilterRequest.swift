/// The anti-aliasing filter of a signal filter's decimation (scipy.signal.decimate's `ftype`).
public enum DecimationKind: UInt8, Sendable, Hashable {
    /// Chebyshev type I, 0.05 dB ripple, cutoff 0.8/q of Nyquist, order n (default 8), as sections.
    case iir = 0
    /// firwin(n + 1, 1/q, window='hamming'), n default 20·q.
    case fir = 1
}

/// A subscriber's request that the publisher filter one source's analog data for this session
/// (kind 13, docs/PROTOCOL.md §5.18 and §6.2): a Butterworth low-pass (sosfilt), then a decimation
/// by q (decimate with `zero_phase=False`), each optional, exactly as `tributary process
/// --filter butter:ORDER:lowpass:HZ --decimate Q` does. A request with neither removes the source's
/// signal filter. Field checks that need no knowledge of the source happen when it is decoded;
/// the publisher checks the rest (the source exists, the cutoff is below its Nyquist, the budget).
public struct SignalFilterRequest: Sendable, Hashable {
    /// The largest decimation factor (as `process --decimate`).
    public static let maxFactor: UInt32 = 1 << 20
    /// The highest Butterworth order of the low-pass.
    public static let maxLowpassOrder: UInt8 = 16
    /// The highest IIR decimation order n.
    public static let maxIIROrder: UInt16 = 16
    /// The highest FIR decimation order n (taps − 1).
    public static let maxFIROrder: UInt16 = 16_384

    /// The source whose analog frames are filtered (not 0).
    public var sourceID: UInt32
    /// The decimation factor q: 0 for none, else 2 … 2^20.
    public var decimate: UInt32
    public var decimationKind: DecimationKind
    /// decimate's n: 0 for scipy's default (8 for IIR, 20·q for FIR), else 1 … 16 (IIR) or 1 … 16,384 (FIR).
    public var decimationOrder: UInt16
    /// The low-pass's Butterworth order: 0 for no low-pass, else 1 … 16.
    public var lowpassOrder: UInt8
    /// The low-pass's cutoff in Hz (0 without a low-pass).
    public var lowpassCutoff: Double

    public init(
        sourceID: UInt32, decimate: UInt32 = 0, decimationKind: DecimationKind = .iir, decimationOrder: UInt16 = 0,
        lowpassOrder: UInt8 = 0, lowpassCutoff: Double = 0
    ) {
        self.sourceID = sourceID
        self.decimate = decimate
        self.decimationKind = decimationKind
        self.decimationOrder = decimationOrder
        self.lowpassOrder = lowpassOrder
        self.lowpassCutoff = lowpassCutoff
    }

    /// A request that removes the signal filter of `sourceID`.
    public static func remove(sourceID: UInt32) -> SignalFilterRequest { SignalFilterRequest(sourceID: sourceID) }

    /// True when the request removes the source's signal filter (neither low-pass nor decimation).
    public var removes: Bool { decimate == 0 && lowpassOrder == 0 }

    /// The output rate over the input rate (1/q, or 1 without decimation).
    public var rateFactor: Double { decimate == 0 ? 1 : 1 / Double(decimate) }

    /// Checks every field as the decoder does; the `WireError` names the field (offset relative to the payload).
    public func validate() throws(WireError) {
        try Self.check(self, at: 0)
    }

    var contentLength: Int { 24 }

    func write(_ w: inout PayloadWriter) {
        w.write(sourceID)
        w.write(decimate)
        w.write(decimationKind.rawValue)
        w.write(lowpassOrder)
        w.write(decimationOrder)
        w.write(UInt32(0))
        w.write(lowpassCutoff)
    }

    static func read(_ r: inout PayloadReader) throws(WireError) -> SignalFilterRequest {
        let origin = r.absolutePosition
        let source = try r.read(UInt32.self, "signal_filter.source_id")
        let decimate = try r.read(UInt32.self, "signal_filter.decimate")
        let kindAt = r.absolutePosition
        let rawKind = try r.read(UInt8.self, "signal_filter.decimate_ftype")
        guard let kind = DecimationKind(rawValue: rawKind) else {
            throw WireError(
                .invalidValue, field: "signal_filter.decimate_ftype", offset: kindAt, detail: "\(rawKind); expected 0 (iir) or 1 (fir)")
        }
        let lowpassOrder = try r.read(UInt8.self, "signal_filter.lowpass_order")
        let order = try r.read(UInt16.self, "signal_filter.decimate_order")
        let reservedAt = r.absolutePosition
        let reserved = try r.read(UInt32.self, "signal_filter.reserved")
        guard reserved == 0 else {
            throw WireError(.invalidValue, field: "signal_filter.reserved", offset: reservedAt, detail: "\(reserved); must be 0")
        }
        let cutoff = try r.f64("signal_filter.lowpass_cutoff")
        let request = SignalFilterRequest(
            sourceID: source, decimate: decimate, decimationKind: kind, decimationOrder: order, lowpassOrder: lowpassOrder,
            lowpassCutoff: cutoff)
        try check(request, at: origin)
        return request
    }

    /// The field rules of docs/PROTOCOL.md §5.18; `origin` is the payload's offset in the decoded bytes.
    static func check(_ q: SignalFilterRequest, at origin: Int) throws(WireError) {
        func bad(_ field: String, _ offset: Int, _ detail: String) -> WireError {
            WireError(.invalidValue, field: "signal_filter." + field, offset: origin + offset, detail: detail)
        }
        guard q.sourceID != 0 else { throw bad("source_id", 0, "0; a signal filter names a source (ids from 1)") }
        if q.decimate != 0 && !(2...maxFactor).contains(q.decimate) {
            throw bad("decimate", 4, "\(q.decimate); expected 0 (none) or 2 to \(maxFactor)")
        }
        if q.decimate == 0 && (q.decimationKind != .iir || q.decimationOrder != 0) {
            throw bad("decimate_ftype", 8, "decimate_ftype and decimate_order must be 0 without decimation")
        }
        if q.decimate != 0 {
            let limit = q.decimationKind == .iir ? maxIIROrder : maxFIROrder
            if q.decimationOrder > limit {
                throw bad("decimate_order", 10, "\(q.decimationOrder); expected 0 (default) or 1 to \(limit) for \(q.decimationKind)")
            }
        }
        guard q.lowpassOrder <= maxLowpassOrder else {
            throw bad("lowpass_order", 9, "\(q.lowpassOrder); expected 0 (none) or 1 to \(maxLowpassOrder)")
        }
        if q.lowpassOrder == 0 {
            guard q.lowpassCutoff.bitPattern == 0 else {
                throw bad("lowpass_cutoff", 16, "\(q.lowpassCutoff); must be 0 without a low-pass")
            }
        } else {
            guard q.lowpassCutoff.isFinite, q.lowpassCutoff > 0 else {
                throw bad("lowpass_cutoff", 16, "\(q.lowpassCutoff); expected a finite frequency above 0 Hz")
            }
        }
    }

    /// The request in the words of the command-line options (`--lowpass 1000:4 --decimate 10`).
    public var summary: String {
        if removes { return "source \(sourceID): none" }
        var parts: [String] = []
        if lowpassOrder != 0 { parts.append("low-pass \(lowpassCutoff) Hz, Butterworth order \(lowpassOrder)") }
        if decimate != 0 {
            parts.append("decimate by \(decimate) (\(decimationKind)" + (decimationOrder != 0 ? ", n \(decimationOrder))" : ")"))
        }
        return "source \(sourceID): " + parts.joined(separator: ", then ")
    }
}

extension DecimationKind: CustomStringConvertible {
    public var description: String { self == .iir ? "iir" : "fir" }
}

/// What is wrong with a subscription's signal-filter options (`SignalFilterRequest.subscription`);
/// each caller words it in its own spelling (a command-line option, a C interface member).
public enum SignalFilterOptionError: Error, Sendable, Equatable {
    /// The decimation factor is outside 2...maxFactor.
    case factor(Int)
    /// The low-pass order is outside 1...maxLowpassOrder.
    case order(Int)
    /// The request breaks the wire's rules (docs/PROTOCOL.md §6.2).
    case invalid(WireError)
}

extension SignalFilterRequest {
    /// The one signal filter a subscriber asks of the publisher for each received source, from the
    /// options the command line (`--decimate N[:fir]`, `--lowpass HZ[:ORDER]`) and the C interface
    /// (`decimate`, `decimate_ftype`, `lowpass`, `lowpass_order`) share: checked here, in one place,
    /// by the wire's rules. The source id is set when the request is sent.
    /// - Parameters:
    ///   - decimate: the decimation factor, 2...maxFactor, or nil for none.
    ///   - kind: decimate's anti-aliasing filter.
    ///   - lowpass: the Butterworth low-pass cutoff in Hz, or nil for none.
    ///   - lowpassOrder: its order, 1...maxLowpassOrder (default 4).
    /// - Returns: nil when neither a decimation nor a low-pass is asked for.
    public static func subscription(decimate: Int?, kind: DecimationKind = .iir, lowpass: Double?, lowpassOrder: Int? = nil)
        throws(SignalFilterOptionError) -> SignalFilterRequest?
    {
        guard decimate != nil || lowpass != nil else { return nil }
        var request = SignalFilterRequest(sourceID: 1)
        if let q = decimate {
            guard q >= 2, q <= Int(maxFactor) else { throw .factor(q) }
            request.decimate = UInt32(q)
            request.decimationKind = kind
        }
        if let hz = lowpass {
            let order = lowpassOrder ?? 4
            guard order >= 1, order <= Int(maxLowpassOrder) else { throw .order(order) }
            (request.lowpassOrder, request.lowpassCutoff) = (UInt8(order), hz)
        }
        do { try request.validate() } catch { throw .invalid(error) }
        return request
    }
}
