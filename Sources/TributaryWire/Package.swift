#if _endian(big)
    #error("Tributary's zero-copy views read little-endian payloads in place; big-endian hosts are not supported")
#endif

/// An owned package of any kind: what an application sends, and what a decoded frame
/// materialises to. Each case corresponds to one `FrameKind`.
public enum Package: Sendable, Hashable {
    case configuration(Configuration)
    case error(ErrorReport)
    case analog(AnalogData)
    case digital(DigitalData)
    case message(Message)
    case xml(String)
    case file(BlobChunk)
    case image(BlobChunk)
    case array(Array2D)
    case analogFilter(AnalogFilterRequest)
    case arrayFilter(ArrayFilterRequest)
    /// Removes the filter named by the header's `filter_id`.
    case removeFilter
    /// Filters (low-pass, decimate) one source's analog data for this session.
    case signalFilter(SignalFilterRequest)
    case hello(Hello)
    case welcome(Welcome)
    case start
    case stop
    /// The sources to receive when source filtering is on; replaces the previous list.
    case selectSources([UInt32])
    case gap(Gap)
    case close(Close)
    /// Replay flow control: the subscriber can take this many more data frames.
    case credit(UInt32)
    /// The properties of the header's source and of its channels (extension kind 129).
    case properties(SourceProperties)

    public var kind: FrameKind {
        switch self {
        case .configuration: .configuration
        case .error: .error
        case .analog: .analog
        case .digital: .digital
        case .message: .message
        case .xml: .xml
        case .file: .file
        case .image: .image
        case .array: .array
        case .analogFilter: .analogFilter
        case .arrayFilter: .arrayFilter
        case .removeFilter: .removeFilter
        case .signalFilter: .signalFilter
        case .hello: .hello
        case .welcome: .welcome
        case .start: .start
        case .stop: .stop
        case .selectSources: .selectSources
        case .gap: .gap
        case .close: .close
        case .credit: .credit
        case .properties: .properties
        }
    }

    /// Bytes of this package's payload in a frame (its content padded to a multiple of 8).
    public var payloadLength: Int { align8(contentLength) }

    /// Writes the payload into caller-provided memory — no allocation, for hot paths that send small
    /// control frames (gap notices to a stalled subscriber) — and zero-fills the padding.
    ///
    /// - Parameter destination: at least `payloadLength` bytes.
    /// - Returns: the payload length written.
    public func encodePayload(into destination: UnsafeMutableRawBufferPointer) -> Int {
        let length = payloadLength
        precondition(destination.count >= length, "payload needs \(length) bytes, \(destination.count) given")
        guard length > 0 else { return 0 }
        destination.baseAddress!.initializeMemory(as: UInt8.self, repeating: 0, count: length)
        var writer = PayloadWriter(UnsafeMutableRawBufferPointer(rebasing: destination[..<length]))
        write(&writer)
        precondition(writer.position == contentLength, "encoder wrote \(writer.position) bytes for \(kind), sized \(contentLength)")
        return length
    }

    /// Payload bytes before padding.
    var contentLength: Int {
        switch self {
        case .configuration(let p): p.contentLength
        case .error(let p): p.contentLength
        case .analog(let p): p.layout.contentLength
        case .digital(let p): p.layout.contentLength
        case .message(let p): p.contentLength
        case .xml(let text): encodedSize(text)
        case .file(let p), .image(let p): p.contentLength
        case .array(let p): p.contentLength
        case .analogFilter(let p): p.contentLength
        case .arrayFilter(let p): p.contentLength
        case .signalFilter(let p): p.contentLength
        case .removeFilter, .start, .stop: 0
        case .hello(let p): p.contentLength
        case .welcome(let p): p.contentLength
        case .selectSources(let ids): IDList.contentLength(ids)
        case .gap(let p): p.contentLength
        case .close(let p): p.contentLength
        case .credit: 4
        case .properties(let p): p.contentLength
        }
    }

    func write(_ w: inout PayloadWriter) {
        switch self {
        case .configuration(let p): p.write(&w)
        case .error(let p): p.write(&w)
        case .analog(let p): p.write(&w)
        case .digital(let p): p.write(&w)
        case .message(let p): p.write(&w)
        case .xml(let text): w.write(string: text)
        case .file(let p), .image(let p): p.write(&w)
        case .array(let p): p.write(&w)
        case .analogFilter(let p): p.write(&w)
        case .arrayFilter(let p): p.write(&w)
        case .signalFilter(let p): p.write(&w)
        case .removeFilter, .start, .stop: break
        case .hello(let p): p.write(&w)
        case .welcome(let p): p.write(&w)
        case .selectSources(let ids): IDList.write(ids, &w)
        case .gap(let p): p.write(&w)
        case .close(let p): p.write(&w)
        case .credit(let n): w.write(n)
        case .properties(let p): p.write(&w)
        }
    }
}

/// A decoded payload: analog, digital and array data as zero-copy views, everything else owned.
public enum Payload: Sendable {
    case configuration(Configuration)
    case error(ErrorReport)
    case analog(AnalogView)
    case digital(DigitalView)
    case message(Message)
    case xml(String)
    case file(BlobChunk)
    case image(BlobChunk)
    case array(ArrayView)
    case analogFilter(AnalogFilterRequest)
    case arrayFilter(ArrayFilterRequest)
    case removeFilter
    case signalFilter(SignalFilterRequest)
    case hello(Hello)
    case welcome(Welcome)
    case start
    case stop
    case selectSources([UInt32])
    case gap(Gap)
    case close(Close)
    case credit(UInt32)
    case properties(SourceProperties)

    /// An owned copy (views are copied out of the frame).
    public func materialize() -> Package {
        switch self {
        case .configuration(let p): .configuration(p)
        case .error(let p): .error(p)
        case .analog(let v): .analog(v.materialize())
        case .digital(let v): .digital(v.materialize())
        case .message(let p): .message(p)
        case .xml(let p): .xml(p)
        case .file(let p): .file(p)
        case .image(let p): .image(p)
        case .array(let v): .array(v.materialize())
        case .analogFilter(let p): .analogFilter(p)
        case .arrayFilter(let p): .arrayFilter(p)
        case .removeFilter: .removeFilter
        case .signalFilter(let p): .signalFilter(p)
        case .hello(let p): .hello(p)
        case .welcome(let p): .welcome(p)
        case .start: .start
        case .stop: .stop
        case .selectSources(let p): .selectSources(p)
        case .gap(let p): .gap(p)
        case .close(let p): .close(p)
        case .credit(let p): .credit(p)
        case .properties(let p): .properties(p)
        }
    }
}
