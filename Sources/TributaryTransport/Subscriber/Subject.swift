import Foundation
import TributaryWire

/// One connection to one publisher (SCCT_Subject): opens a session, starts and stops the data, sends
/// packages, filters and source selections, and delivers what arrives to its registered observers and
/// package streams on its callback queue, in publisher order.
///
/// Each Subject owns one socket thread (`ZMQLoop`); many Subjects can run at once. Every method may be
/// called from any thread. Argument and session errors are `ErrorReport`s with SCCT's codes: 8 empty
/// address, 9 port ≤ 0, 2 timeout ≤ 1 s, 7 destination unreachable, 1-3 refused by the publisher,
/// 6 transmission error; errors during a session (4 expired timeout, 5 lost connection, 10-14) reach
/// the observers' `didReceiveError`.
public final class Subject: Sendable {
    /// Where observers are called.
    public let callbackQueue: CallbackQueue
    /// How the Subject runs (reconnection, CURVE, limits).
    public let options: SubjectOptions
    let delivery = SubjectDelivery()
    private let loop: ZMQLoop<SubjectEngine>

    /// Creates a closed Subject with its socket thread.
    /// - Parameters:
    ///   - options: reconnection, CURVE, limits.
    ///   - callbackQueue: where observers run (default: a new queue with a dedicated thread); may be
    ///     shared by several Subjects.
    ///   - context: the libzmq context (default: a new one with one I/O thread).
    /// - Throws: `ZMQError` or `ZMQLoopError` when the context or thread cannot be created.
    public init(options: SubjectOptions = .init(), callbackQueue: CallbackQueue? = nil, context: ZMQContext? = nil) throws {
        self.options = options
        let queue = callbackQueue ?? CallbackQueue()
        self.callbackQueue = queue
        let zmq = try context ?? ZMQContext(ioThreads: 1)
        let handle = SubjectLoopHandle()
        let delivery = self.delivery
        loop = try ZMQLoop(name: "tributary-sub", context: zmq) { scope in
            SubjectEngine(options: options, delivery: delivery, callbacks: queue.core, handle: handle, scope: scope)
        }
        handle.loop.withLock { $0 = loop }
    }

    deinit {
        close()
        loop.shutdown()
    }

    /// The longest session timeout, in seconds: the publisher is told to drop a silent connection
    /// after it through libzmq's heartbeat TTL, which counts deciseconds in 16 bits (6553.5 s).
    public static let maxTimeout: Double = 6_553

    // MARK: Session

    /// Opens a session (SCCT openCommunication): connects, sends the hello and waits for the welcome.
    /// The publisher then sends each source's configuration (delivered to observers).
    /// - Parameters:
    ///   - address: host name or IP address of the publisher.
    ///   - port: its TCP port.
    ///   - apiKey: the key the publisher expects.
    ///   - description: this client's name, shown in the publisher's subscriber list.
    ///   - timeout: seconds of silence after which the session counts as lost (> 1).
    ///   - sourceFilterEnabled: receive only the sources chosen with `selectSources` (none until then).
    /// - Returns: The welcome: session id, publisher description, sources.
    /// - Throws: `ErrorReport`: 8 empty address, 9 port ≤ 0 (or > 65535), 2 timeout ≤ 1 s or > `maxTimeout`, 7 the
    ///   connection could not be opened — said as soon as the cause is known: the host name does not
    ///   resolve, the connection is refused, the publisher's security does not match this Subject's
    ///   (CURVE on one side only) — or nothing answered within the timeout; 1/2/3 refused by the publisher.
    @discardableResult
    public func open(
        address: String, port: Int, apiKey: String, description: String, timeout: Double = 10,
        sourceFilterEnabled: Bool = false
    ) throws(ErrorReport) -> Welcome {
        let host = address.trimmingCharacters(in: .whitespaces)
        guard !host.isEmpty else { throw ErrorReport(.emptyAddress, "the address is empty") }
        guard port > 0 && port <= 65_535 else { throw ErrorReport(.wrongPort, "port \(port) is not in 1...65535") }
        guard timeout > 1 && timeout <= Self.maxTimeout else {
            throw ErrorReport(.wrongTimeout, "the timeout \(timeout) s is not in (1, \(Int(Self.maxTimeout))] s")
        }
        let endpoint = host.contains(":") && !host.hasPrefix("[") ? "tcp://[\(host)]:\(port)" : "tcp://\(host):\(port)"
        return try open(
            endpoint: endpoint, apiKey: apiKey, description: description, timeout: timeout,
            sourceFilterEnabled: sourceFilterEnabled)
    }

    /// Opens a session on a libzmq endpoint (`tcp://…`, `ipc://…`); see `open(address:port:…)`.
    /// - Throws: `ErrorReport` as `open(address:port:…)` (2, 7, 1, 3).
    @discardableResult
    public func open(
        endpoint: String, apiKey: String, description: String, timeout: Double = 10,
        sourceFilterEnabled: Bool = false
    ) throws(ErrorReport) -> Welcome {
        guard timeout > 1 && timeout <= Self.maxTimeout else {
            throw ErrorReport(.wrongTimeout, "the timeout \(timeout) s is not in (1, \(Int(Self.maxTimeout))] s")
        }
        // libzmq would retry an unresolvable name until the timeout: ask the resolver first.
        if let (host, _) = ConnectDiagnosis.tcpHostPort(endpoint),
            let failure = ConnectDiagnosis.resolutionFailure(host: host, timeout: timeout)
        {
            throw ErrorReport(.destinationUnreachable, "cannot resolve host '\(host)': \(failure)")
        }
        let parameters = OpenParameters(
            endpoint: endpoint, apiKey: apiKey, description: description,
            timeoutSeconds: timeout, sourceFilterEnabled: sourceFilterEnabled)
        let waiter = OpenWaiter()
        do {
            try loop.perform { engine, _ in engine.open(parameters, waiter: waiter) }
        } catch {
            throw ErrorReport(.transmissionError, "the subject's thread has stopped")
        }
        // The loop fails the open itself at the deadline; the extra second only covers a stalled loop.
        let outcome = waiter.wait(timeoutNs: parameters.timeoutNs + 1_000_000_000)
        switch outcome {
        case .success(let welcome)?:
            return welcome
        case .failure(let error)?:
            throw error
        case nil:
            try? loop.performAndWait { engine, _ in engine.abandonOpen() }
            throw ErrorReport(.destinationUnreachable, "nothing answered within the timeout")
        }
    }

    /// Ends the session (a close frame to the publisher), without reconnecting; package streams end.
    public func close() {
        try? loop.performAndWait { engine, _ in engine.close() }
    }

    /// Whether a session is open now.
    public var isOpen: Bool { (try? loop.performAndWait { engine, _ in engine.isOpen }) ?? false }

    /// The welcome of the current session (sources and their descriptions), nil when not open.
    public var welcome: Welcome? { try? loop.performAndWait { engine, _ in engine.welcome } }

    /// Asks the publisher to start sending data.
    /// - Throws: `ErrorReport` 6 when not open or the send fails.
    public func start() throws(ErrorReport) { try onLoop { engine throws(ErrorReport) in try engine.setStarted(true) } }

    /// Asks the publisher to stop sending data (configuration and errors still come).
    /// - Throws: `ErrorReport` 6 when not open or the send fails.
    public func stop() throws(ErrorReport) { try onLoop { engine throws(ErrorReport) in try engine.setStarted(false) } }

    // MARK: Observers

    /// Registers an observer, retained until `unregister` (as SCCT's register); any time, also while
    /// open. Registering twice is one registration.
    public func register(_ observer: any Observer) { delivery.register(observer) }

    /// Unregisters an observer; it receives nothing queued after this call returns... except what the
    /// callback queue is delivering at that moment.
    public func unregister(_ observer: any Observer) { delivery.unregister(observer) }

    /// The packages received from now on, as an `AsyncSequence` (bounded; see `PackageStream`).
    public func packages(capacity: Int = 256) -> PackageStream {
        let stream = PackageStream(capacity: capacity)
        delivery.add(stream)
        return stream
    }

    /// Calls `handle` for every package received from now on, on the callback queue (in publisher
    /// order, one at a time, as observers are called), and `ended` once after the last one, when the
    /// Subject is closed or loses its session for good (as `packages()` ends). The same packages as
    /// `packages()` without its hand-off to a task: a consumer that needs no `async` saves a thread
    /// wake-up and a lock hand-over per package. A handler that takes its time holds up the callback
    /// queue, and through it the socket (lossless sources slow down; live ones drop and count).
    public func addPackageHandler(
        _ handle: @escaping @Sendable (ReceivedPackage) -> Void,
        ended: @escaping @Sendable () -> Void = {}
    ) {
        delivery.add(PackageHandler(handle: handle, ended: ended))
    }

    // MARK: Sending

    /// Sends a package to the publisher's application: message, XML, array, analog or digital data
    /// (files and images: `sendFile`, `sendImage`).
    /// - Throws: `ErrorReport` 6 when not open, the send queue is full, or the kind is not one a
    ///   subscriber sends.
    public func send(_ package: Package) throws(ErrorReport) {
        switch package {
        case .file(let chunk), .image(let chunk):
            try onLoop { engine throws(ErrorReport) in _ = try engine.send(chunk.imageFormat == nil ? .file(chunk) : .image(chunk)) }
        // The kinds either side sends (docs/PROTOCOL.md §2.2) but a close, which `close()` sends.
        case _ where package.kind.direction == .either && package.kind != .close:
            try onLoop { engine throws(ErrorReport) in _ = try engine.send(package) }
        default:
            throw ErrorReport(.transmissionError, "a subscriber does not send \(package.kind) packages; use the Subject's methods")
        }
    }

    /// Sends a message (SCCT sendMessage).
    public func sendMessage(_ text: String, code: Int32 = 0) throws(ErrorReport) { try send(.message(Message(text, code: code))) }

    /// Sends an XML document (not validated).
    public func sendXML(_ xml: String) throws(ErrorReport) { try send(.xml(xml)) }

    /// Sends a 2D array.
    public func sendArray(_ array: Array2D) throws(ErrorReport) { try send(.array(array)) }

    /// Sends a file in chunks (MD5 included).
    public func sendFile(_ content: [UInt8], name: String, attributes: [String] = [], chunkSize: Int = 256 << 10) throws(ErrorReport) {
        try onLoop { engine throws(ErrorReport) in
            try engine.sendFile(content, name: name, attributes: attributes, imageFormat: nil, chunkSize: chunkSize)
        }
    }

    /// Sends an image in chunks (MD5 included).
    public func sendImage(
        _ content: [UInt8], description: String, format: ImageFormat, attributes: [String] = [],
        chunkSize: Int = 256 << 10
    ) throws(ErrorReport) {
        try onLoop { engine throws(ErrorReport) in
            try engine.sendFile(content, name: description, attributes: attributes, imageFormat: format, chunkSize: chunkSize)
        }
    }

    /// Sends an analog data filter (SCCT sendFilter); `request.replaces` may name a filter id this
    /// Subject returned earlier.
    /// - Returns: The filter's id; data produced for it carries it in `header.filterID`, also after a
    ///   reconnection.
    /// - Throws: `ErrorReport` 6 when not open, 12 when `replaces` names no filter.
    @discardableResult
    public func sendFilter(_ request: AnalogFilterRequest) throws(ErrorReport) -> UInt32 {
        try onLoop { engine throws(ErrorReport) in try engine.addFilter(.analog(request)) }
    }

    /// Sends an array filter; see `sendFilter(_:)` for analog filters.
    @discardableResult
    public func sendFilter(_ request: ArrayFilterRequest) throws(ErrorReport) -> UInt32 {
        try onLoop { engine throws(ErrorReport) in try engine.addFilter(.array(request)) }
    }

    /// Changes an existing filter (SCCT: setting a filter's `query`): the publisher replaces it in one
    /// step, and the data produced for it keeps carrying `id`.
    /// - Throws: `ErrorReport` 6 when not open, 12 when there is no filter `id`.
    public func changeFilter(_ id: UInt32, to request: AnalogFilterRequest) throws(ErrorReport) {
        try onLoop { engine throws(ErrorReport) in try engine.changeFilter(id, to: .analog(request)) }
    }

    /// Changes an existing array filter; see `changeFilter(_:to:)` for analog filters.
    public func changeFilter(_ id: UInt32, to request: ArrayFilterRequest) throws(ErrorReport) {
        try onLoop { engine throws(ErrorReport) in try engine.changeFilter(id, to: .array(request)) }
    }

    /// Removes a filter returned by `sendFilter`.
    /// - Throws: `ErrorReport` 6 when not open, 12 when there is no such filter.
    public func removeFilter(_ id: UInt32) throws(ErrorReport) {
        try onLoop { engine throws(ErrorReport) in try engine.removeFilter(id) }
    }

    /// Asks the publisher to low-pass and/or decimate one source's analog data for this session
    /// (docs/PROTOCOL.md §6.2); a request with neither removes the source's signal filter. The
    /// publisher answers with the source's configuration at its new rate, or with error 17 (over
    /// budget; nothing changes) or 12 (no such source, a cutoff at or above its Nyquist frequency:
    /// the session ends). Kept across reconnections, like filters.
    /// - Throws: `ErrorReport` 6 when not open, 12 when a field is out of range (nothing is sent).
    public func sendSignalFilter(_ request: SignalFilterRequest) throws(ErrorReport) {
        try onLoop { engine throws(ErrorReport) in try engine.sendSignalFilter(request) }
    }

    /// Chooses the sources to receive when the session was opened with `sourceFilterEnabled` (replaces
    /// the previous choice).
    /// - Throws: `ErrorReport` 6 when not open.
    public func selectSources(_ ids: [UInt32]) throws(ErrorReport) {
        try onLoop { engine throws(ErrorReport) in try engine.selectSources(ids) }
    }

    /// Chooses one source to receive (`selectSources([id])`).
    public func selectSource(_ id: UInt32) throws(ErrorReport) { try selectSources([id]) }

    /// The latest estimate of the publisher's clock offset and the round-trip time (docs/PROTOCOL.md
    /// §4.9): measured by probes right after the session opens (and after each reconnection) and every
    /// 5 s; nil until the first burst is answered, and for good with a publisher that does not answer
    /// probes. Cheap: no call to the socket thread.
    public var clockEstimate: ClockEstimate? { delivery.clockEstimate.current }

    /// The Subject's counters and its callback queue's measurements.
    public func statistics() -> SubjectStatistics {
        let counts = (try? loop.performAndWait { engine, _ in engine.statistics }) ?? (0, 0, 0, 0, 0, 0)
        return SubjectStatistics(
            framesReceived: counts.0, gapNotices: counts.1, framesMissing: counts.2,
            unaccountedLoss: counts.3, reconnections: counts.4, pauses: counts.5,
            callbackQueue: callbackQueue.statistics)
    }

    /// Runs `body` on the socket thread and returns its result, mapping a stopped loop to error 6.
    private func onLoop<T: Sendable>(_ body: @escaping @Sendable (SubjectEngine) throws(ErrorReport) -> T) throws(ErrorReport) -> T {
        let result: Result<T, ErrorReport>
        do {
            result = try loop.performAndWait { engine, _ -> Result<T, ErrorReport> in
                do throws(ErrorReport) { return .success(try body(engine)) } catch { return .failure(error) }
            }
        } catch {
            throw ErrorReport(.transmissionError, "the subject's thread has stopped")
        }
        return try result.get()
    }
}
