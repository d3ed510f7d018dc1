import CTimers
import Dispatch
import Foundation
import Synchronization
import TributaryWire

/// Why a publisher could not start.
public enum PublisherError: Error, Sendable, CustomStringConvertible {
    /// CURVE is configured but no `ZMQZAPHandler` runs on the context: libzmq would let any client in.
    case curveWithoutZAPHandler
    /// CURVE is configured but no context was given (the ZAP handler must run on the publisher's context).
    case curveNeedsContext
    /// Two sources share an id, or a source has id 0.
    case invalidSourceID(UInt32)
    /// libzmq refused the endpoint or a socket option.
    case socket(ZMQError)
    /// The loop thread could not start.
    case loop(String)
    /// `addSource` after `stop`.
    case stopped

    public var description: String {
        switch self {
        case .curveWithoutZAPHandler:
            "CURVE is on but no ZAP handler runs on the publisher's context: refusing to start (any client key would be accepted)"
        case .curveNeedsContext: "CURVE is on: pass the context the ZAP handler runs on"
        case .invalidSourceID(let id): "source id \(id) is 0 or used twice"
        case .socket(let error): "publisher socket: \(error)"
        case .loop(let reason): "publisher thread: \(reason)"
        case .stopped: "the publisher is stopped"
        }
    }
}

/// Who a frame sent with `Publisher.publish(_:to:)` goes to.
public enum Recipients: Sendable, Equatable {
    /// Every subscriber that should receive it.
    case all
    /// One subscriber, by the session id of `SubscriberInfo`.
    case session(UInt64)
}

/// Counters of a publisher.
public struct PublisherStatistics: Sendable, Equatable {
    /// Frames handed to the publisher's thread.
    public var framesAccepted: UInt64
    /// Frames `publish` refused because the hand-off queue was full (the application outran the thread).
    public var handOffRefused: UInt64
    /// Frames fanned out.
    public var framesPublished: UInt64
    /// Digital frames not sent because no line changed (`digitalOnChangeOnly`).
    public var digitalSuppressed: UInt64
    /// Analog or array frames the application published that did not decode (not sent).
    public var applicationFrameErrors: UInt64
    /// Sessions opened and hellos refused since the start.
    public var sessionsOpened: UInt64
    public var sessionsRefused: UInt64
    /// Sessions open now.
    public var sessions: Int
}

/// The publishing side of Tributary (SCCT publisher): binds an endpoint, authenticates subscribers by
/// API key, streams frames from its sources and from the application to every subscriber through its
/// own filters, and hands what subscribers send to the application.
///
/// One dedicated thread owns the ROUTER socket (docs/PROTOCOL.md §3-4). `publish` may be called from
/// any thread and never waits for subscribers: frames cross to the socket thread through a bounded
/// queue, and a subscriber whose queue is full loses frames (counted, announced in a gap notice) or is
/// disconnected, per `SlowConsumerPolicy`, while the others go on at full speed.
public final class Publisher: Sendable {
    /// The endpoint bound, with the real port when the configuration asked for port 0.
    public let endpoint: String
    let core: PublisherCore
    private let loop: ZMQLoop<PublisherEngine>
    /// The sinks of the running sources, and whether `stop` began (then no source is added).
    private let sourceState = Mutex<(sinks: [SourceSink], stopped: Bool)>(([], false))
    private let sourceThreadsDone = DispatchGroup()

    /// Binds and starts: the socket thread, then one thread per source.
    /// - Parameters:
    ///   - configuration: endpoint, API key, limits, policies.
    ///   - sources: the sources (ids non-zero and unique), started once the socket is bound.
    ///   - context: the libzmq context; required with CURVE (the ZAP handler must run on it), else a
    ///     new context with one I/O thread.
    ///   - packageQueue: where `onPackage` runs (default: a private serial queue).
    ///   - onPackage: receives the packages subscribers send (messages, XML, files, images, arrays, …).
    /// - Throws: `PublisherError`.
    public init(
        configuration: PublisherConfiguration, sources: [any Source] = [], context: ZMQContext? = nil,
        packageQueue: DispatchQueue? = nil,
        onPackage: (@Sendable (SubscriberPackage) -> Void)? = nil
    ) throws(PublisherError) {
        var ids = Set<UInt32>()
        for source in sources where source.info.id == 0 || !ids.insert(source.info.id).inserted {
            throw .invalidSourceID(source.info.id)
        }
        if configuration.curve != nil && context == nil { throw .curveNeedsContext }
        let zmq: ZMQContext
        if let context {
            zmq = context
        } else {
            do throws(ZMQError) { zmq = try ZMQContext(ioThreads: 1) } catch { throw .socket(error) }
        }
        if configuration.curve != nil && !zmq.zapHandlerRunning.load(ordering: .sequentiallyConsistent) {
            throw .curveWithoutZAPHandler
        }
        let core = PublisherCore(
            configuration: configuration, sources: sources,
            inbox: packageQueue ?? DispatchQueue(label: "tributary-publisher-inbox"),
            onPackage: onPackage)
        self.core = core
        do {
            loop = try ZMQLoop(name: "tributary-pub", context: zmq) { scope in
                do throws(ZMQError) {
                    return try PublisherEngine(core: core, scope: scope)
                } catch {
                    if error.code == .curveWithoutZAPHandler { throw PublisherError.curveWithoutZAPHandler }
                    throw PublisherError.socket(error)
                }
            }
        } catch let error as PublisherError {
            throw error
        } catch {
            throw .loop("\(error)")
        }
        do {
            endpoint = try loop.performAndWait { engine, _ in engine.endpoint }
        } catch {
            throw .loop("\(error)")
        }
        // One prebuilt command: waking the loop for a burst of frames allocates nothing.
        core.handOff.setWaker(DrainWaker(loop: loop))
        for source in sources {
            let sink = SourceSink(publisher: core, sourceID: source.info.id, delivery: source.delivery)
            sourceState.withLock { $0.sinks.append(sink) }
            startThread(source, sink)
        }
    }

    /// Runs `source` on its own thread.
    private func startThread(_ source: any Source, _ sink: SourceSink) {
        sourceThreadsDone.enter()
        let group = sourceThreadsDone
        let thread = Thread {
            // A pacing source sleeps until each frame is due; the kernel's default 50 µs timer slack
            // would let every frame's wake-up, and so the frame, come up to that much later.
            _ = tributary_set_timer_slack(1)
            source.run(sink)
            group.leave()
        }
        thread.name = "tributary-src-\(source.info.id)"
        thread.start()
    }

    /// Adds a source to the running publisher and starts it on its own thread, as those given at the
    /// start: subscribers that connect later find it in their welcome; those already connected receive
    /// its configuration now (docs/PROTOCOL.md §4.1). For applications that publish what they acquire
    /// (the C and Python publishing API), whose sources come after the endpoint is bound.
    /// - Throws: `.invalidSourceID` when its id is 0 or taken, `.stopped` after `stop`.
    public func addSource(_ source: any Source) throws(PublisherError) {
        let sink = SourceSink(publisher: core, sourceID: source.info.id, delivery: source.delivery)
        // Under the lock: `stop` either sees this sink (and cancels it) or runs after the refusal.
        let outcome: PublisherError? = sourceState.withLock { state in
            if state.stopped { return .stopped }
            let added: Bool
            do { added = try loop.performAndWait { engine, _ in engine.addSource(source) } } catch { return .loop("\(error)") }
            guard added else { return .invalidSourceID(source.info.id) }
            state.sinks.append(sink)
            startThread(source, sink)
            return nil
        }
        if let outcome { throw outcome }
    }

    deinit { stop() }

    /// The port bound (from `endpoint`), or nil for a non-TCP endpoint.
    public var port: Int? {
        guard endpoint.hasPrefix("tcp://"), let colon = endpoint.lastIndex(of: ":") else { return nil }
        return Int(endpoint[endpoint.index(after: colon)...])
    }

    /// Publishes a frame to every subscriber that should receive it, or to one: data frames (analog,
    /// digital, array, message, XML, file, image) go to subscribers between start and stop, of a
    /// selected source, through their filters; other frames (configuration, error) go at any time.
    /// The publisher sets each subscriber's sequence numbers; the frame's source id, timestamp and flags
    /// are kept. Never blocks.
    /// - Returns: false when the hand-off queue is full (the frame is not sent; counted in statistics).
    @discardableResult
    public func publish(_ frame: Frame, to recipients: Recipients = .all) -> Bool {
        let target: HandOffTarget =
            switch recipients {
            case .all: .all
            case .session(let id): .session(id)
            }
        return core.handOff.push(HandOffItem(frame: frame, target: target, lossless: false))
    }

    /// Encodes and publishes a package (see `publish(_:to:)` for frames).
    /// - Parameters:
    ///   - sourceID: the source the package belongs to (0: none).
    ///   - timestampNs: nanoseconds since 1970; default now.
    @discardableResult
    public func publish(
        _ package: Package, sourceID: UInt32 = 0, timestampNs: Int64? = nil,
        to recipients: Recipients = .all
    ) -> Bool {
        publish(Frame(encoding: package, timestampNs: timestampNs ?? wallClockNanoseconds(), sourceID: sourceID), to: recipients)
    }

    /// Sends a file or an image in chunks of `chunkSize` bytes (MD5 included).
    @discardableResult
    public func publishFile(
        _ content: [UInt8], name: String, attributes: [String] = [], imageFormat: ImageFormat? = nil,
        transferID: UInt64 = UInt64.random(in: 1...UInt64.max), chunkSize: Int = 1 << 20,
        to recipients: Recipients = .all
    ) -> Bool {
        let chunks = BlobChunk.chunks(
            of: content, transferID: transferID, name: name, attributes: attributes,
            imageFormat: imageFormat, chunkSize: chunkSize)
        var all = true
        for chunk in chunks { all = publish(imageFormat == nil ? .file(chunk) : .image(chunk), to: recipients) && all }
        return all
    }

    /// Lossless (replay) frames handed to the publisher and not yet sent: waiting for credit or for
    /// the socket thread.
    public var losslessFramesPending: Int { core.handOff.losslessPending }

    /// Subscribers between start and stop right now.
    public var startedSubscribers: Int { core.startedSessions.load(ordering: .acquiring) }

    /// Replaces the API key; sessions already open stay open, new hellos must present the new key.
    public func setAPIKey(_ key: String) { core.setAPIKey(key) }

    /// The subscribers with an open session.
    public func subscribers() -> [SubscriberInfo] {
        (try? loop.performAndWait { engine, _ in engine.subscriberInfos }) ?? []
    }

    /// The publisher's counters.
    public func statistics() -> PublisherStatistics {
        let (accepted, refused) = core.handOff.counts
        let engineCounts = try? loop.performAndWait { engine, _ in
            (
                engine.framesPublished, engine.digitalSuppressed, engine.applicationFrameErrors,
                engine.sessionsOpened, engine.sessionsRefused, engine.sessionCount
            )
        }
        return PublisherStatistics(
            framesAccepted: accepted, handOffRefused: refused,
            framesPublished: engineCounts?.0 ?? 0, digitalSuppressed: engineCounts?.1 ?? 0,
            applicationFrameErrors: engineCounts?.2 ?? 0, sessionsOpened: engineCounts?.3 ?? 0,
            sessionsRefused: engineCounts?.4 ?? 0, sessions: engineCounts?.5 ?? 0)
    }

    /// Stops the sources, closes every session — a close with code 0 after the last frame queued for
    /// it — waits up to `drain` for each subscriber to read everything and close its connection, then
    /// closes the socket and joins the threads. Idempotent.
    /// - Parameters:
    ///   - reason: the reason in the close frames (subscribers show it).
    ///   - drain: how long slow subscribers get to read what was queued for them (a replay's end
    ///     deserves longer than an interrupt).
    public func stop(reason: String = "the publisher is stopping", drain: Duration = .seconds(2)) {
        let sinks: [SourceSink]? = sourceState.withLock { state in
            if state.stopped { return nil }
            state.stopped = true
            return state.sinks
        }
        guard let sinks else { return }
        for sink in sinks { sink.cancel() }
        sourceThreadsDone.wait()
        let lingerMs = max(0, milliseconds(drain))  // clamped: a caller's drain may be any Duration (negative: none)
        _ = try? loop.performAndWait { engine, _ in
            engine.drainHandOff()
            engine.closeAll(reason: reason)
            try? engine.router.setOption(.linger, lingerMs)
        }
        let deadline = ContinuousClock.now + drain
        while ContinuousClock.now < deadline, (try? loop.performAndWait({ engine, _ in engine.retryClosing() })) == false {
            Thread.sleep(forTimeInterval: 0.005)
        }
        loop.shutdown()
    }
}

/// Wakes the publisher's loop to drain the hand-off queue, with one command built once.
private final class DrainWaker: HandOffWaker {
    private let loop: ZMQLoop<PublisherEngine>
    private let command = ZMQLoopCommand<PublisherEngine>(run: { engine, _ in engine.drainHandOff() }, cancel: nil)

    init(loop: ZMQLoop<PublisherEngine>) { self.loop = loop }

    func wake() { try? loop.enqueue(command) }
}
