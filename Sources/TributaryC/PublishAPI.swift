import Foundation
import TributarySources
import TributaryTransport
import TributaryWire

// The publishing side of the C interface (include/tributary.h, "Publishing"): a `Publisher` of the
// transport with `PushSource`s (TributarySources) that the application feeds. This file only checks
// and marshals the caller's arguments; pushing, timing and the hand-off are the source's.

/// An open publisher behind a `tributary_publisher *`.
final class PublisherHandle {
    let publisher: Publisher
    /// The name discovery answers give (the description passed to tributary_publisher_open).
    let name: String
    /// The sources added through this handle (closed with it).
    private var sources: [PushSource] = []
    /// Answers discovery queries (PROTOCOL.md §9) while the publisher is open, nil when switched off.
    private var announcer: DiscoveryAnnouncer?
    private let lock = NSLock()
    /// Properties set with tributary_publisher_set_properties for sources not yet added, by id.
    private var pendingProperties: [UInt32: SourceProperties] = [:]

    init(publisher: Publisher, name: String) {
        self.publisher = publisher
        self.name = name
    }

    func setProperties(_ properties: SourceProperties, for id: UInt32) {
        lock.lock()
        pendingProperties[id] = properties
        lock.unlock()
    }

    /// The properties set for source `id` (empty when none); they are used once.
    func takeProperties(for id: UInt32) -> SourceProperties {
        lock.lock()
        defer { lock.unlock() }
        return pendingProperties.removeValue(forKey: id) ?? SourceProperties()
    }

    func add(_ source: PushSource) {
        lock.lock()
        sources.append(source)
        announcer?.update(sources: sources.map(DiscoveredSource.init))
        lock.unlock()
    }

    /// Answers discovery queries on `settings` (replacing an earlier announcer), or stops answering (nil).
    /// - Throws: `APIError(.io)` when the group cannot be joined or its port bound.
    func announce(_ settings: DiscoverySettings?) throws(APIError) {
        lock.lock()
        defer { lock.unlock() }
        announcer?.stop()
        announcer = nil
        guard let settings else { return }
        do {
            announcer = try DiscoveryAnnouncer.announcing(
                endpoint: publisher.endpoint, name: name, authentication: .key, sources: sources.map(DiscoveredSource.init),
                settings: settings)?.announcer
        } catch {
            throw APIError(.io, "cannot answer discovery queries on \(settings.group):\(settings.port): \(error)")
        }
    }

    /// Closes every source, gives lossless frames up to `drainSeconds` to reach their subscribers, then
    /// stops the publisher (subscribers get the normal close).
    func close(drainSeconds: Double) {
        lock.lock()
        let all = sources
        sources = []
        announcer?.stop()
        announcer = nil
        lock.unlock()
        for source in all { source.close() }
        let deadline = monotonicNanoseconds() + (drainSeconds.nanoseconds(atMostSeconds: 3_600) ?? 0)
        while publisher.losslessFramesPending > 0 && monotonicNanoseconds() < deadline { usleep(2_000) }
        publisher.stop(reason: "the publishing application closed the publisher", drain: .seconds(2))
    }
}

/// A source behind a `tributary_source *`.
final class SourceHandle {
    let source: PushSource
    /// Serialises pushes on this handle (one call at a time per handle).
    let lock = NSLock()

    init(source: PushSource) { self.source = source }
}

/// `TRIBUTARY_TIME_AUTO`: no first-sample time given.
private let timeAuto = Int64.min

/// A C status of a push source's error.
private func apiError(_ error: PushSourceError) -> APIError {
    switch error.kind {
    case .argument: APIError(.argument, error.message)
    case .type: APIError(.type, error.message)
    case .channels: APIError(.range, error.message)
    case .closed: APIError(.handle, error.message)
    }
}

/// Binds a publisher and starts its thread; *endpoint (optional) receives the bound endpoint.
@_cdecl("tributary_publisher_open")
public func tributary_publisher_open(
    _ bind: UnsafePointer<CChar>?, _ apiKey: UnsafePointer<CChar>?, _ description: UnsafePointer<CChar>?,
    _ publisher: UnsafeMutablePointer<OpaquePointer?>?,
    _ endpoint: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    guarded("tributary_publisher_open") {
        let result = try out(publisher, "publisher")
        result.pointee = nil
        endpoint?.pointee = nil
        let address = try string(bind, "bind")
        guard !address.isEmpty else { throw APIError(.argument, "bind is empty; give an endpoint such as tcp://127.0.0.1:0") }
        let key = try string(apiKey, "api_key")
        guard !key.isEmpty else { throw APIError(.argument, "api_key is empty; subscribers must present a key") }
        let text = description.map { String(cString: $0) } ?? "libtributary publisher"
        guard address.utf8.count <= 1024, key.utf8.count <= 4096, text.utf8.count <= 4096 else {
            throw APIError(.argument, "bind (1024), api_key and description (4096 bytes each) are too long")
        }
        let started: Publisher
        do {
            var configuration = PublisherConfiguration(endpoint: address, apiKey: key, description: text)
            // Subscribers may ask for signal filters (decimate, low-pass: docs/PROTOCOL.md §6.2) with the default budgets.
            configuration.signalFilters = DSPSignalFilters()
            started = try Publisher(configuration: configuration)
        } catch {
            throw APIError(.io, "cannot publish on '\(address)': \(error)")
        }
        let bound = started.endpoint
        let handle = PublisherHandle(publisher: started, name: text)
        // Answered as `serve` answers by default; a machine without multicast publishes without it.
        try? handle.announce(DiscoverySettings.standard)
        if let endpoint {
            guard let copy = strdup(bound) else {
                handle.close(drainSeconds: 0)
                throw APIError(.internal, "out of memory")
            }
            endpoint.pointee = copy
        }
        result.pointee = Handles.insert(handle)
    }
}

/// Discovery: stops answering queries (enabled 0) or answers on another group, port or TTL (enabled 1;
/// NULL group, port 0 and ttl -1 keep the defaults).
@_cdecl("tributary_publisher_discovery")
public func tributary_publisher_discovery(
    _ publisher: OpaquePointer?, _ enabled: Int32, _ group: UnsafePointer<CChar>?, _ port: Int32, _ ttl: Int32
) -> Int32 {
    guarded("tributary_publisher_discovery") {
        let handle = try Handles.lookup(publisher, as: PublisherHandle.self, "publisher")
        guard enabled == 0 || enabled == 1 else { throw APIError(.argument, "enabled is \(enabled); give 0 (silent) or 1 (answer)") }
        guard enabled == 1 else { return try handle.announce(nil) }
        let groupText = try group.map { g throws(APIError) in try string(g, "group") } ?? DiscoverySettings.defaultGroup
        guard port == 0 || (1...65_535).contains(port) else {
            throw APIError(.argument, "port \(port) is not 0 (the default) or in 1...65535")
        }
        guard ttl == -1 || (0...255).contains(ttl) else { throw APIError(.argument, "ttl \(ttl) is not -1 (the default) or in 0...255") }
        let settings: DiscoverySettings
        do {
            settings = try DiscoverySettings(
                group: groupText, port: port == 0 ? DiscoverySettings.defaultPort : Int(port),
                ttl: ttl == -1 ? DiscoverySettings.defaultTTL : Int(ttl))
        } catch { throw APIError(.argument, "\(error)") }
        try handle.announce(settings)
    }
}

/// Adds an analog source that the application feeds with tributary_source_push.
@_cdecl("tributary_source_add")
public func tributary_source_add(
    _ publisher: OpaquePointer?, _ id: UInt32, _ deviceName: UnsafePointer<CChar>?, _ sampleRate: Double,
    _ channelCount: UInt32, _ channelNames: UnsafePointer<CChar>?, _ unit: UnsafePointer<CChar>?,
    _ sampleType: Int32, _ scale: Double, _ offset: Double, _ rangeMin: Double, _ rangeMax: Double,
    _ lossless: Int32, _ source: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guarded("tributary_source_add") {
        let result = try out(source, "source")
        result.pointee = nil
        let handle = try Handles.lookup(publisher, as: PublisherHandle.self, "publisher")
        // Taken first: properties set for this id serve this call only, whether it succeeds or not.
        let properties = handle.takeProperties(for: id)
        guard id > 0 else { throw APIError(.argument, "id 0 is reserved for the publisher's own packages; give a source id > 0") }
        let name = try string(deviceName, "device_name")
        guard channelCount >= 1, channelCount <= UInt32(WireLimits.maxChannels) else {
            throw APIError(.argument, "channel_count \(channelCount): a source has 1 to \(WireLimits.maxChannels) channels")
        }
        let count = Int(channelCount)
        var names = (0..<count).map { "ch\($0)" }
        if let channelNames {
            let list = String(cString: channelNames).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard list.count == count else {
                throw APIError(
                    .argument,
                    "channel_names lists \(list.count) name\(list.count == 1 ? "" : "s") (comma-separated); channel_count is \(count)")
            }
            names = list
        }
        let type = try PushSourceSpec.SampleType(c: sampleType)
        guard lossless == 0 || lossless == 1 else { throw APIError(.argument, "lossless is \(lossless); give 0 (live) or 1 (lossless)") }
        guard rangeMin.isFinite, rangeMax.isFinite, rangeMin < rangeMax else {
            throw APIError(.argument, "range [\(rangeMin), \(rangeMax)]: expected finite range_min < range_max")
        }
        var spec = PushSourceSpec(
            id: id, name: name, rate: sampleRate, channelNames: names, unit: try string(unit, "unit"),
            sampleType: type, scale: scale, offset: offset, range: rangeMin...rangeMax,
            delivery: lossless == 1 ? .lossless : .live)
        spec.properties = properties
        let pushSource: PushSource
        do throws(PushSourceError) { pushSource = try PushSource(spec: spec) } catch { throw apiError(error) }
        do throws(PublisherError) {
            try handle.publisher.addSource(pushSource)
        } catch {
            switch error {
            case .invalidSourceID: throw APIError(.argument, "source id \(id) is already used by this publisher")
            case .stopped: throw APIError(.handle, "the publisher is closed")
            default: throw APIError(.internal, "\(error)")
            }
        }
        handle.add(pushSource)
        result.pointee = Handles.insert(SourceHandle(source: pushSource))
    }
}

/// Sets the free-form properties of the source `source_id` that the next tributary_source_add of
/// that id creates: one per line, `KEY=VALUE` for the source, `CH:KEY=VALUE` for the channel of index CH.
@_cdecl("tributary_publisher_set_properties")
public func tributary_publisher_set_properties(_ publisher: OpaquePointer?, _ sourceID: UInt32, _ text: UnsafePointer<CChar>?) -> Int32 {
    guarded("tributary_publisher_set_properties") {
        let handle = try Handles.lookup(publisher, as: PublisherHandle.self, "publisher")
        guard sourceID > 0 else { throw APIError(.argument, "source_id 0 is the publisher's own packages; give the id of a source") }
        let properties = try PropertyLines.parse(try string(text, "properties"))
        if let problem = properties.violation() { throw APIError(.argument, "properties: \(problem)") }
        handle.setProperties(properties, for: sourceID)
    }
}

extension PushSourceSpec.SampleType {
    /// The sample type a C call names with `sample_type` (TRIBUTARY_FLOAT64, _FLOAT32, _INT16 or _INT32).
    init(c sampleType: Int32) throws(APIError) {
        switch CSampleType(rawValue: sampleType) {
        case .float64: self = .float64
        case .float32: self = .float32
        case .int16: self = .int16
        case .int32: self = .int32
        case nil:
            throw APIError(
                .argument,
                "sample_type \(sampleType) is not TRIBUTARY_FLOAT64 (1), TRIBUTARY_FLOAT32 (2), TRIBUTARY_INT16 (3) or TRIBUTARY_INT32 (4)")
        }
    }
}

/// Publishes one analog block of `channels × samples_per_channel` samples.
@_cdecl("tributary_source_push")
public func tributary_source_push(
    _ source: OpaquePointer?, _ samples: UnsafeRawPointer?, _ sampleType: Int32, _ channels: UInt32,
    _ samplesPerChannel: UInt64, _ layout: Int32, _ firstSampleTimeNs: Int64,
    _ timeoutSeconds: Double
) -> Int32 {
    var outcome = PushOutcome.sent
    let status = guarded("tributary_source_push") {
        let handle = try Handles.lookup(source, as: SourceHandle.self, "source")
        guard let samples else { throw APIError(.argument, "samples is NULL") }
        let type = try PushSourceSpec.SampleType(c: sampleType)
        let order: PushSource.Layout
        switch layout {
        case 0: order = .channelMajor
        case 1: order = .interleaved
        default: throw APIError(.argument, "layout \(layout) is not TRIBUTARY_CHANNEL_MAJOR (0) or TRIBUTARY_INTERLEAVED (1)")
        }
        guard samplesPerChannel > 0 else {
            throw APIError(.argument, "samples_per_channel is 0: a block has at least one sample per channel")
        }
        guard samplesPerChannel <= UInt64(WireLimits.maxFrameSize) else {
            throw APIError(
                .argument, "samples_per_channel \(samplesPerChannel) is more than a frame can hold (\(WireLimits.maxFrameSize) bytes)")
        }
        guard let timeoutNs = timeoutSeconds.nanoseconds(atMostSeconds: 86_400) else {
            throw APIError(.argument, "timeout_seconds \(timeoutSeconds) is not a number of seconds in [0, 86400]")
        }
        handle.lock.lock()
        defer { handle.lock.unlock() }
        do throws(PushSourceError) {
            outcome = try handle.source.push(
                samples, type: type, channels: Int(channels), samplesPerChannel: Int(samplesPerChannel),
                layout: order, firstSampleTimeNs: firstSampleTimeNs == timeAuto ? nil : firstSampleTimeNs,
                timeoutNs: timeoutNs)
        } catch {
            throw apiError(error)
        }
        switch outcome {
        case .sent: break
        case .dropped:
            throw APIError(
                .dropped,
                "source \(handle.source.info.id) is live and the publisher's queue is full: the block was dropped "
                    + "(counted; its samples are a gap)")
        case .timedOut:
            throw APIError(
                .timeout,
                "source \(handle.source.info.id) is lossless and no room came within \(timeoutSeconds) s "
                    + "(a subscriber is slow); the block was not sent, push it again")
        }
    }
    return status
}

/// Blocks pushed and live blocks dropped so far.
@_cdecl("tributary_source_counts")
public func tributary_source_counts(
    _ source: OpaquePointer?, _ pushed: UnsafeMutablePointer<UInt64>?,
    _ dropped: UnsafeMutablePointer<UInt64>?
) -> Int32 {
    guarded("tributary_source_counts") {
        let handle = try Handles.lookup(source, as: SourceHandle.self, "source")
        let counts = handle.source.counts
        pushed?.pointee = counts.pushed
        dropped?.pointee = counts.dropped
    }
}

/// Ends a source and frees its handle.
@_cdecl("tributary_source_close")
public func tributary_source_close(_ source: OpaquePointer?) -> Int32 {
    guarded("tributary_source_close") {
        let handle = try Handles.remove(source, as: SourceHandle.self, "source")
        handle.source.close()
    }
}

/// Sends a message package of the publisher itself (source 0) to every started subscriber.
@_cdecl("tributary_publisher_send_message")
public func tributary_publisher_send_message(_ publisher: OpaquePointer?, _ text: UnsafePointer<CChar>?) -> Int32 {
    guarded("tributary_publisher_send_message") {
        let handle = try Handles.lookup(publisher, as: PublisherHandle.self, "publisher")
        let message = try string(text, "text")
        guard message.utf8.count <= 1 << 20 else { throw APIError(.argument, "the message has \(message.utf8.count) bytes; at most 1 MiB") }
        guard handle.publisher.publish(.message(Message(message))) else {
            throw APIError(.dropped, "the publisher's queue is full: the message was dropped (counted)")
        }
    }
}

/// The number of subscribers receiving data now (between their start and stop).
@_cdecl("tributary_publisher_subscribers")
public func tributary_publisher_subscribers(_ publisher: OpaquePointer?, _ count: UnsafeMutablePointer<Int32>?) -> Int32 {
    guarded("tributary_publisher_subscribers") {
        let result = try out(count, "count")
        result.pointee = 0
        let handle = try Handles.lookup(publisher, as: PublisherHandle.self, "publisher")
        result.pointee = Int32(clamping: handle.publisher.startedSubscribers)
    }
}

/// Closes the sources, lets lossless frames reach their subscribers (up to 10 s), stops the
/// publisher (subscribers get the normal close) and frees the handle. Source handles of it stay
/// valid until closed, but pushes to them fail with TRIBUTARY_E_HANDLE.
@_cdecl("tributary_publisher_close")
public func tributary_publisher_close(_ publisher: OpaquePointer?) -> Int32 {
    guarded("tributary_publisher_close") {
        let handle = try Handles.remove(publisher, as: PublisherHandle.self, "publisher")
        handle.close(drainSeconds: 10)
    }
}
