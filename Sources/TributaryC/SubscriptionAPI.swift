import Foundation
import TributaryAnalysis
import TributaryText
import TributaryTransport
import TributaryWire

/// The options of `tributary_subscription_open`: a JSON object with the connection and filter options
/// of `tributary subscribe` (docs/C_API.md).
struct SubscriptionSettings: JSONOptions {
    var timeout: Double = 10
    var description = "libtributary"
    /// `sources`, `channels`, `array_filters` and the signal filter (`decimate`, `lowpass`…): the
    /// model the command line's subscribe shares.
    var request = SubscriptionRequest()
    var curve: SubjectCurve?
    var capacity = 256

    static let keys: Set<String> = [
        "timeout", "description", "channels", "sources", "array_filters", "curve_server_key",
        "curve_key", "capacity", "decimate", "decimate_ftype", "lowpass", "lowpass_order",
    ]

    init(_ members: OptionMembers) throws {
        func get<T: Decodable>(_ name: String, _ type: T.Type, _ what: String) throws -> T? { try members.get(name, type, what) }
        let timeout = try get("timeout", Double.self, "a number of seconds")
        let description = try get("description", String.self, "a string")
        let channels = try members.channels()
        let sourceList = try? get("sources", [UInt32].self, "")
        var sourceText: String?
        if sourceList == nil { sourceText = try get("sources", String.self, "source ids: an array of integers or a comma list") }
        let arrayFilterTexts = try get("array_filters", [String].self, "an array of TYPE:QUERY strings")
        let curveServerKey = try get("curve_server_key", String.self, "the path of the publisher's public key file")
        let curveKey = try get("curve_key", String.self, "the path of this subscriber's secret key file")
        let capacity = try get("capacity", Int.self, "an integer")
        let signal = SignalFilterMembers(
            decimate: try get("decimate", Int.self, "an integer from 2 to 1048576"),
            decimateFtype: try get("decimate_ftype", String.self, "\"iir\" or \"fir\""),
            lowpass: try get("lowpass", Double.self, "a frequency in Hz"),
            lowpassOrder: try get("lowpass_order", Int.self, "an integer from 1 to 16"))
        if let t = timeout {
            guard t > 1, t.isFinite else { throw APIError(.argument, "timeout must be more than 1 second") }
            self.timeout = t
        }
        if let d = description { self.description = d }
        if let c = capacity {
            guard c >= 1, c <= 1 << 20 else { throw APIError(.argument, "capacity must be 1 to 1048576 packages") }
            self.capacity = c
        }
        do throws(SubscriptionOptionError) {
            if let sourceList { request.sources = try SubscriptionRequest.sources(sourceList) }
            if let sourceText { request.sources = try SubscriptionRequest.sources(sourceText) }
            if let channels { request.analogFilter = try SubscriptionRequest.analogFilter(channels: channels, sources: request.sources) }
            for text in arrayFilterTexts ?? [] { request.arrayFilters.append(try SubscriptionRequest.arrayFilter(text)) }
        } catch {
            let name =
                switch error {
                case .sources: "sources"
                case .channels: "channels"
                case .arrayFilter: "array_filters"
                }
            throw APIError(.argument, "option '\(name)': \(error.problem)")
        }
        request.signalFilter = try Self.signalFilter(signal)
        if let curveServerKey {
            do { curve = try SubjectCurve(serverKeyFile: curveServerKey, clientKeyFile: curveKey) } catch {
                throw APIError(
                    .argument, error.failure.message(option: error.isServerKey ? "option 'curve_server_key'" : "option 'curve_key'"))
            }
        } else if curveKey != nil {
            throw APIError(.argument, "curve_key needs curve_server_key")
        }
    }
}

/// The members `decimate`, `decimate_ftype`, `lowpass` and `lowpass_order` as read.
struct SignalFilterMembers {
    var decimate: Int?
    var decimateFtype: String?
    var lowpass: Double?
    var lowpassOrder: Int?
}

extension SubscriptionSettings {
    /// `decimate`, `decimate_ftype`, `lowpass`, `lowpass_order` as one signal-filter request
    /// (docs/PROTOCOL.md §6.2), each field checked by the wire's own rules; nil when none is given.
    private static func signalFilter(_ raw: SignalFilterMembers) throws(APIError) -> SignalFilterRequest? {
        if raw.decimate == nil && raw.lowpass == nil {
            guard raw.decimateFtype == nil, raw.lowpassOrder == nil else {
                throw APIError(.argument, "decimate_ftype needs decimate, lowpass_order needs lowpass")
            }
            return nil
        }
        let kind: DecimationKind
        switch raw.decimateFtype {
        case nil, "iir": kind = .iir
        case "fir" where raw.decimate != nil: kind = .fir
        case "fir": throw APIError(.argument, "decimate_ftype needs decimate")
        case let other?: throw APIError(.argument, "decimate_ftype must be \"iir\" or \"fir\", not '\(other)'")
        }
        if raw.lowpass == nil && raw.lowpassOrder != nil { throw APIError(.argument, "lowpass_order needs lowpass") }
        // The checks are the library's, shared with the command line's --decimate and --lowpass.
        do {
            return try SignalFilterRequest.subscription(
                decimate: raw.decimate, kind: kind, lowpass: raw.lowpass, lowpassOrder: raw.lowpassOrder)
        } catch {
            switch error {
            case .factor(let q):
                throw APIError(.argument, "decimate must be an integer from 2 to \(SignalFilterRequest.maxFactor), not \(q)")
            case .order(let order):
                throw APIError(.argument, "lowpass_order must be an integer from 1 to \(SignalFilterRequest.maxLowpassOrder), not \(order)")
            case .invalid(let error):
                throw APIError(.argument, "signal filter: \(error)")
            }
        }
    }
}

/// `tcp://HOST:PORT` or `HOST:PORT` (IPv6 hosts in brackets), or `resolve:QUERY`, as `tributary
/// subscribe` reads it (PublisherAddress): malformed is an argument error, a resolution that does not
/// find exactly one publisher an I/O error naming the matches.
func parseAddress(_ text: String) throws(APIError) -> (String, Int) {
    do { return try PublisherAddress.parse(text) } catch {
        throw APIError(error.isSyntax ? .argument : .io, error.message)
    }
}

/// Receives the Subject's packages on its callback queue and holds them for `next`: bounded, so a
/// caller that does not pull makes the callback queue wait, and the Subject stop reading its socket
/// (the publisher then counts the losses, and they arrive as gap packages).
final class PullQueue: Observer, @unchecked Sendable {
    // @unchecked Sendable: `items`, `head` and `closed` are only touched with `condition` locked.
    private let condition = NSCondition()
    private var items: [ReceivedPackage] = []
    private var head = 0
    private var closed = false
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    private func push(_ package: ReceivedPackage) {
        condition.lock()
        defer { condition.unlock() }
        while !closed && items.count - head >= capacity { _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05)) }
        guard !closed else { return }
        items.append(package)
        condition.broadcast()
    }

    /// The next package, waiting up to `timeout` seconds (negative: forever); nil on timeout or when closed.
    func pop(timeout: Double) -> (ReceivedPackage?, closed: Bool) {
        condition.lock()
        defer { condition.unlock() }
        let deadline = timeout < 0 ? Date.distantFuture : Date(timeIntervalSinceNow: timeout)
        while head == items.count && !closed {
            // NSCondition.wait(until:) converts its date to Int64 nanoseconds since 1970 and traps
            // on one past 2262 (Date.distantFuture, or a caller's timeout of 1e10 s or infinity):
            // an hour at most at a time, until the deadline.
            if !condition.wait(until: min(deadline, Date(timeIntervalSinceNow: 3600))) && Date() >= deadline { break }
        }
        guard head < items.count else { return (nil, closed) }
        let package = items[head]
        head += 1
        if head == items.count || head > 4096 {
            items.removeFirst(head)
            head = 0
        }
        condition.broadcast()
        return (package, false)
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    func didReceiveConfiguration(_ configuration: Configuration, header: FrameHeader) {
        push(.init(header: header, content: .configuration(configuration)))
    }
    func didReceiveError(_ error: ErrorReport) {
        // A normal end by the publisher (it stopped, its replay ended) is handed out as the close it
        // sent (code 0, its reason), not as the error 5 SCCT's model reports it as.
        push(.init(header: FrameHeader(kind: error.publisherClose == nil ? .error : .close), content: .error(error)))
    }
    func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) { push(.init(header: header, content: .analog(data))) }
    func didReceiveDigitalData(_ data: DigitalView, header: FrameHeader) { push(.init(header: header, content: .digital(data))) }
    func didReceiveMessage(_ message: Message, header: FrameHeader) { push(.init(header: header, content: .message(message))) }
    func didReceiveXML(_ xml: String, header: FrameHeader) { push(.init(header: header, content: .xml(xml))) }
    func didReceiveFile(_ file: ReceivedFile, header: FrameHeader) { push(.init(header: header, content: .file(file))) }
    func didReceiveImage(_ image: ReceivedFile, header: FrameHeader) { push(.init(header: header, content: .image(image))) }
    func didReceiveArray(_ array: ArrayView, header: FrameHeader) { push(.init(header: header, content: .array(array))) }
    func didReceiveGap(_ gap: Gap, header: FrameHeader) { push(.init(header: header, content: .gap(gap))) }
    func didReceiveProperties(_ properties: SourceProperties, header: FrameHeader) {
        push(.init(header: header, content: .properties(properties)))
    }
}

/// An open subscription behind a `tributary_subscription *`.
final class SubscriptionHandle {
    let subject: Subject
    let queue: PullQueue
    let welcome: Welcome
    let filterIDs: [UInt32]
    /// Serialises `next` and the accessors of the current package.
    let lock = NSLock()
    /// The package `next` handed out last (its analog view and JSON stay valid until the next call).
    var current: ReceivedPackage?
    var currentJSON: UnsafeMutablePointer<CChar>?

    init(subject: Subject, queue: PullQueue, welcome: Welcome, filterIDs: [UInt32]) {
        self.subject = subject
        self.queue = queue
        self.welcome = welcome
        self.filterIDs = filterIDs
    }

    deinit { free(currentJSON) }

    func setCurrent(_ package: ReceivedPackage?, json: String?) {
        current = package
        free(currentJSON)
        currentJSON = json.flatMap { strdup($0) }
    }

    /// The JSON object of a received package: the fields of `tributary subscribe --json`, except that
    /// analog data carries its shape only (the samples are read with `tributary_subscription_analog*`).
    static func json(_ package: ReceivedPackage) -> JSON {
        let h = package.header
        let content: JSON
        switch package.content {
        case .configuration(let c): content = FrameDescription.content(.configuration(c))
        case .error(let e): content = FrameDescription.content(e.publisherClose.map { .close($0) } ?? .error(e))
        case .analog(let a):
            var members: [(String, JSON)] = [
                ("format", .string(a.format.description)), ("channel_count", .int(a.channelCount)),
                ("sample_count", .int(a.sampleCount)), ("first_sample", .uint(a.firstSample)),
                ("channel_indexes", .ids(a.channelIndexes)),
            ]
            if a.format.isCounts {
                members.append(("scale", .doubles((0..<a.channelCount).map(a.scale))))
                members.append(("offset", .doubles((0..<a.channelCount).map(a.offset))))
            }
            content = .object(members)
        case .digital(let d): content = FrameDescription.content(.digital(d))
        case .message(let m): content = FrameDescription.content(.message(m))
        case .xml(let x): content = FrameDescription.content(.xml(x))
        case .array(let a): content = FrameDescription.content(.array(a))
        case .gap(let g): content = FrameDescription.content(.gap(g))
        case .properties(let p): content = FrameDescription.content(.properties(p))
        case .file(let f), .image(let f):
            content = .object([
                ("name", .string(f.originalName)), ("size", .int(f.content.count)),
                ("md5", f.md5.map { .string(MD5.hex($0)) } ?? .null), ("attributes", .strings(f.attributes)),
                ("format", f.imageFormat.map { .string($0.description) } ?? .null),
                ("content_base64", .string(Data(f.content).base64EncodedString())),
            ])
        }
        return .object([
            ("kind", .string(h.kind.description)), ("source_id", .uint(UInt64(h.sourceID))), ("sequence", .uint(h.sequence)),
            ("timestamp_ns", .int(Int(h.timestampNs))), ("filter_id", .uint(UInt64(h.filterID))),
            ("flags", .uint(UInt64(h.flags.rawValue))), ("content", content),
        ])
    }
}

/// The SCCT error code of the last TRIBUTARY_E_SCCT failure on each thread.
private let scctKeyStorage: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

private func setLastSCCTCode(_ code: UInt32) {
    pthread_setspecific(scctKeyStorage, UnsafeRawPointer(bitPattern: UInt(code)))
}

/// The SCCT error code (1 wrong API key, 2 wrong timeout, … 9 wrong port, 10+ Tributary's) of the last
/// call on this thread that failed with TRIBUTARY_E_SCCT; 0 if none.
@_cdecl("tributary_last_scct_error")
public func tributary_last_scct_error() -> Int32 {
    Int32(truncatingIfNeeded: UInt(bitPattern: pthread_getspecific(scctKeyStorage)))
}

/// Opens a session with a publisher, sends the filters and the source selection, and starts the data.
@_cdecl("tributary_subscription_open")
public func tributary_subscription_open(
    _ address: UnsafePointer<CChar>?, _ apiKey: UnsafePointer<CChar>?, _ options: UnsafePointer<CChar>?,
    _ subscription: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guarded("tributary_subscription_open") {
        let result = try out(subscription, "subscription")
        result.pointee = nil
        let (host, port) = try parseAddress(try string(address, "address"))
        let key = try string(apiKey, "api_key")
        let settings = try SubscriptionSettings(json: options.map { String(cString: $0) })
        let subject: Subject
        do { subject = try Subject(options: SubjectOptions(curve: settings.curve)) } catch {
            throw APIError(.io, "cannot create the subscriber: \(error)")
        }
        let queue = PullQueue(capacity: settings.capacity)
        subject.register(queue)
        do {
            let (welcome, ids) = try subject.open(
                address: host, port: port, apiKey: key, description: settings.description, timeout: settings.timeout,
                request: settings.request)
            result.pointee = Handles.insert(SubscriptionHandle(subject: subject, queue: queue, welcome: welcome, filterIDs: ids))
        } catch let error as ErrorReport {
            subject.close()
            queue.close()
            setLastSCCTCode(error.code.rawValue)
            throw APIError(.scct, "\(error)")
        } catch {
            subject.close()
            queue.close()
            throw error
        }
    }
}

/// The welcome of the session: {"session_id", "description", "sources": [{"id", "description"}], "filter_ids": [...]}.
@_cdecl("tributary_subscription_info_json")
public func tributary_subscription_info_json(_ subscription: OpaquePointer?, _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?)
    -> Int32
{
    guarded("tributary_subscription_info_json") {
        let result = try out(json, "json")
        result.pointee = nil
        let handle = try Handles.lookup(subscription, as: SubscriptionHandle.self, "subscription")
        let w = handle.welcome
        result.pointee = try ownedCString(
            JSON.object([
                ("session_id", .uint(w.sessionID)), ("description", .string(w.publisherDescription)),
                ("sources", .array(w.sources.map { .object([("id", .uint(UInt64($0.id))), ("description", .string($0.description))]) })),
                ("filter_ids", .ids(handle.filterIDs)),
                (
                    "clock",
                    handle.subject.clockEstimate.map {
                        .object([
                            ("offset_s", .double(Double($0.offsetNs) / 1e9)), ("rtt_s", .double(Double($0.rttNs) / 1e9)),
                            ("measured_at_ns", .int(Int($0.measuredAtNs))), ("estimates", .uint($0.serial)),
                        ])
                    } ?? .null
                ),
            ]).text)
    }
}

/// Waits up to timeout_seconds (negative: forever) for the next package.
@_cdecl("tributary_subscription_next")
public func tributary_subscription_next(
    _ subscription: OpaquePointer?, _ timeoutSeconds: Double, _ kind: UnsafeMutablePointer<Int32>?,
    _ json: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    guarded("tributary_subscription_next") {
        kind?.pointee = 0
        json?.pointee = nil
        guard !timeoutSeconds.isNaN else { throw APIError(.argument, "timeout_seconds is NaN") }
        let handle = try Handles.lookup(subscription, as: SubscriptionHandle.self, "subscription")
        handle.lock.lock()
        defer { handle.lock.unlock() }
        handle.setCurrent(nil, json: nil)
        let (package, closed) = handle.queue.pop(timeout: timeoutSeconds)
        guard let package else {
            if closed { throw APIError(.end, "the subscription is closed") }
            throw APIError(.timeout, "nothing arrived within \(timeoutSeconds) s")
        }
        handle.setCurrent(package, json: SubscriptionHandle.json(package).text)
        kind?.pointee = Int32(package.header.kind.rawValue)
        json?.pointee = UnsafePointer(handle.currentJSON)
    }
}

/// Runs `body` on the analog block `next` handed out last, the subscription locked meanwhile.
/// - Throws: `APIError(.type)` when that package is not analog data, and what `body` throws.
private func withCurrentAnalog(_ subscription: OpaquePointer?, _ body: (AnalogView) throws -> Void) throws {
    let handle = try Handles.lookup(subscription, as: SubscriptionHandle.self, "subscription")
    handle.lock.lock()
    defer { handle.lock.unlock() }
    guard case .analog(let view)? = handle.current?.content else {
        throw APIError(.type, "the current package is not analog data")
    }
    try body(view)
}

/// The analog block `next` handed out last, in place: a pointer to its samples (channel-major, the
/// stored type) valid until the next call of `next` or `close`.
@_cdecl("tributary_subscription_analog")
public func tributary_subscription_analog(
    _ subscription: OpaquePointer?, _ samples: UnsafeMutablePointer<UnsafeRawPointer?>?,
    _ sampleType: UnsafeMutablePointer<Int32>?, _ channels: UnsafeMutablePointer<UInt32>?,
    _ samplesPerChannel: UnsafeMutablePointer<UInt64>?
) -> Int32 {
    guarded("tributary_subscription_analog") {
        try withCurrentAnalog(subscription) { view in
            samples?.pointee = view.withSampleBytes { $0.baseAddress }
            sampleType?.pointee = CSampleType(view.format).rawValue
            channels?.pointee = UInt32(view.channelCount)
            samplesPerChannel?.pointee = UInt64(view.sampleCount)
        }
    }
}

/// Copies the current analog block into a caller's buffer (channels × samples, row-major), as float64
/// physical values or in the stored type.
@_cdecl("tributary_subscription_analog_copy")
public func tributary_subscription_analog_copy(
    _ subscription: OpaquePointer?, _ sampleType: Int32, _ buffer: UnsafeMutableRawPointer?,
    _ bufferBytes: UInt
) -> Int32 {
    guarded("tributary_subscription_analog_copy") {
        try withCurrentAnalog(subscription) { view in
            guard let type = CSampleType(rawValue: sampleType) else {
                throw APIError(.argument, "sample_type \(sampleType) is not 1, 2, 3 or 4")
            }
            guard type == .float64 || type == CSampleType(view.format) else {
                throw APIError(.type, "the block stores \(view.format); copy it as float64 or as \(view.format)")
            }
            let size = type.size
            let n = view.channelCount * view.sampleCount
            guard UInt(n * size) <= bufferBytes else {
                throw APIError(
                    .buffer, "the buffer has \(bufferBytes) bytes; \(view.channelCount) × \(view.sampleCount) samples need \(n * size)")
            }
            if n == 0 { return }
            guard let buffer else { throw APIError(.argument, "buffer is NULL") }
            if type != .float64 || view.format == .float64 {
                view.withSampleBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: n * size) }
                return
            }
            let d = buffer.assumingMemoryBound(to: Double.self)
            for c in 0..<view.channelCount {
                view.copyValues(channel: c, into: UnsafeMutableBufferPointer(start: d + c * view.sampleCount, count: view.sampleCount))
            }
        }
    }
}

/// Ends the session and frees the handle; a `next` waiting on another thread returns TRIBUTARY_E_END.
@_cdecl("tributary_subscription_close")
public func tributary_subscription_close(_ subscription: OpaquePointer?) -> Int32 {
    guarded("tributary_subscription_close") {
        let handle = try Handles.remove(subscription, as: SubscriptionHandle.self, "subscription")
        handle.queue.close()
        handle.subject.unregister(handle.queue)
        handle.subject.close()
    }
}
