import TributaryWire

/// Why a publisher cannot honour a signal-filter request for a source (the message says why).
public struct SignalFilterRefusal: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Makes the per-session signal filters of a publisher (docs/PROTOCOL.md §6.2). Transport depends on
/// no DSP module: whoever starts the publisher injects an implementation (`TributarySources`'
/// `DSPSignalFilters`, the same code as `tributary process`) through
/// `PublisherConfiguration.signalFilters`.
public protocol SignalFilterFactory: Sendable {
    /// A filter at rest for one source of one session.
    /// - Parameter configuration: the source's configuration in force (its channels' rates).
    /// - Throws: `SignalFilterRefusal` when the request does not fit the source (no single sampling
    ///   rate, a cutoff at or above its Nyquist frequency, …).
    func makeTransform(_ request: SignalFilterRequest, configuration: Configuration) throws(SignalFilterRefusal)
        -> any SignalFrameTransform
}

/// One source's signal filter in one session, living on the publisher's loop thread: the filters'
/// state carries from one analog frame to the next; a gap in the source's sample numbering, a change
/// of its channels or of its rate starts a new segment at rest, as `tributary process` does.
public protocol SignalFrameTransform: AnyObject {
    /// Filter operations (multiply-adds) a second at the rate of `configuration`: what the budget counts.
    func cost(_ configuration: Configuration) -> Double
    /// The configuration the session is told for the source: each channel's rate times the decimation's 1/q.
    func announced(_ configuration: Configuration) -> Configuration
    /// Takes note of a new configuration of the source (its rates for the next segment).
    /// - Throws: `SignalFilterRefusal` when the filter does not fit the new rates.
    func reconfigure(_ configuration: Configuration) throws(SignalFilterRefusal)
    /// Filters one analog frame of the source; `emit` receives the output frame, if the frame gives
    /// one (a decimation may keep no sample of a short frame).
    func process(_ frame: Frame, _ view: AnalogView, emit: (Frame) -> Void)
}

/// A source's signal filter in a session: the request, its transform and what it costs.
final class SessionSignalFilter {
    let request: SignalFilterRequest
    let transform: any SignalFrameTransform
    var cost: Double

    init(request: SignalFilterRequest, transform: any SignalFrameTransform, cost: Double) {
        self.request = request
        self.transform = transform
        self.cost = cost
    }
}

extension PublisherEngine {
    /// The signal-filter cost of every session together.
    var signalFilterCost: Double { sessions.reduce(0) { $0 + $1.signalFilterCost } }

    /// Handles a signal-filter request (kind 13): a malformed one ends the session (error 10), one
    /// that names no source of the publisher or does not fit it ends it with error 12, one past a
    /// budget ends it with error 17 (other sessions are not touched); an accepted one replaces the
    /// source's signal filter and the session is sent the configuration it now receives.
    func handleSignalFilter(_ frame: Frame, from session: Session, now: UInt64) {
        guard case .signalFilter(let request)? = decodedPayload(frame, session, now) else { return }
        let id = request.sourceID
        guard let source = core.sources.first(where: { $0.info.id == id }) else {
            let known = core.sources.map { String($0.info.id) }.joined(separator: ", ")
            return end(session, ErrorReport(.protocolViolation, "signal filter: source \(id) does not exist (sources: \(known))"), now: now)
        }
        let configuration = sourceConfigurations[id] ?? source.configuration
        if request.removes {
            session.signalFilters[id] = nil
            _ = session.send(.configuration(configuration), sourceID: id, on: router, now: now)
            return
        }
        guard let factory = core.configuration.signalFilters else {
            return end(session, ErrorReport(.protocolViolation, "signal filter: this publisher offers no signal filters"), now: now)
        }
        let transform: any SignalFrameTransform
        do throws(SignalFilterRefusal) {
            transform = try factory.makeTransform(request, configuration: configuration)
        } catch {
            return end(session, ErrorReport(.protocolViolation, "signal filter for source \(id): \(error.message)"), now: now)
        }
        let cost = transform.cost(configuration)
        let replaced = session.signalFilters[id]?.cost ?? 0
        let sessionCost = session.signalFilterCost - replaced + cost
        let publisherCost = signalFilterCost - replaced + cost
        let perSession = core.configuration.maxSignalFilterCostPerSession
        let total = core.configuration.maxSignalFilterCost
        if !(sessionCost <= perSession) || !(publisherCost <= total) {
            let which =
                !(sessionCost <= perSession)
                ? "the session's signal filters would cost \(Self.operations(sessionCost)) a second, its budget is \(Self.operations(perSession))"
                : "all sessions' signal filters would cost \(Self.operations(publisherCost)) a second, the publisher's budget is \(Self.operations(total))"
            let report = ErrorReport(.overBudget, "signal filter for source \(id) refused (\(request.summary)): \(which)")
            return end(session, report, now: now)
        }
        session.signalFilters[id] = SessionSignalFilter(request: request, transform: transform, cost: cost)
        _ = session.send(.configuration(transform.announced(configuration)), sourceID: id, on: router, now: now)
    }

    static func operations(_ value: Double) -> String {
        value >= 1e6 ? "\((value / 1e4).rounded() / 100) M operations" : "\(value.rounded()) operations"
    }
}
