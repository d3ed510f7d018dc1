import Dispatch
import Synchronization
import TributaryWire

/// The publisher state shared between its handle (any thread), its sources' sinks and its loop thread.
final class PublisherCore: Sendable {
    let configuration: PublisherConfiguration
    /// The sources: those given at the start, then those added (`Publisher.addSource`), which only
    /// the loop thread appends, so that a hello sees either none or all of a new source.
    private let sourceList: Mutex<[any Source]>
    let handOff: HandOffQueue
    /// Sessions between start and stop, published by the loop thread for sources that wait for an
    /// audience (a replay that would otherwise run to its end before anyone listens).
    let startedSessions = Atomic<Int>(0)
    private let apiKey: Mutex<[UInt8]>
    private let inbox: DispatchQueue
    private let onPackage: (@Sendable (SubscriberPackage) -> Void)?

    init(
        configuration: PublisherConfiguration, sources: [any Source], inbox: DispatchQueue,
        onPackage: (@Sendable (SubscriberPackage) -> Void)?
    ) {
        self.configuration = configuration
        sourceList = Mutex(sources)
        handOff = HandOffQueue(capacity: configuration.handOffCapacity)
        apiKey = Mutex(Array(configuration.apiKey.utf8))
        self.inbox = inbox
        self.onPackage = onPackage
    }

    /// The sources now.
    var sources: [any Source] { sourceList.withLock { $0 } }

    /// Appends a source (on the loop thread, `PublisherEngine.addSource`).
    func appendSource(_ source: any Source) { sourceList.withLock { $0.append(source) } }

    func setAPIKey(_ key: String) { apiKey.withLock { $0 = Array(key.utf8) } }

    /// Whether `candidate` is the current API key (constant time in the key's content).
    func acceptsAPIKey(_ candidate: String) -> Bool {
        let expected = apiKey.withLock { $0 }
        return ConstantTime.equal(expected, candidate.utf8)
    }

    /// Hands a package received from a subscriber to the application, on the inbox queue (never on the
    /// socket thread, so a slow application cannot stall the fan-out).
    func deliver(_ package: SubscriberPackage) {
        guard let onPackage else { return }
        inbox.async { onPackage(package) }
    }
}
