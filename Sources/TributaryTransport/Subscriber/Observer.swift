import Foundation
import TributaryWire

/// Receives what a `Subject` delivers (SCCT_Observer): every method has a default that does nothing,
/// so an observer implements only what it needs.
///
/// Methods are called on the Subject's callback queue (never on a socket thread), one at a time, in
/// the order the publisher sent the frames. Views (`AnalogView`, `DigitalView`, `ArrayView`) point
/// into the received message without a copy; they stay valid as long as they are kept.
public protocol Observer: AnyObject {
    /// A source's configuration (after open, after a reconnect, and whenever the publisher re-sends it).
    func didReceiveConfiguration(_ configuration: Configuration, header: FrameHeader)
    /// An error: from the publisher (1-3 on open, 10-15), or detected here (4 expired timeout,
    /// 5 lost connection, 6 transmission error, 10 malformed frame from the publisher).
    func didReceiveError(_ error: ErrorReport)
    /// The same, with the header of the frame that carried it: `sourceID` (the source the error
    /// concerns, 0 for none) and `timestampNs` (when it was raised). Its default calls
    /// `didReceiveError(_:)`; implement one of the two.
    func didReceiveError(_ error: ErrorReport, header: FrameHeader)
    /// Analog samples (header.filterID: the filter they were produced for, 0 unfiltered).
    func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader)
    /// Digital line states.
    func didReceiveDigitalData(_ data: DigitalView, header: FrameHeader)
    func didReceiveMessage(_ message: Message, header: FrameHeader)
    func didReceiveXML(_ xml: String, header: FrameHeader)
    /// A whole file (chunks reassembled, MD5 verified). Use `file.safeName` to write it.
    func didReceiveFile(_ file: ReceivedFile, header: FrameHeader)
    /// A whole image (chunks reassembled, MD5 verified).
    func didReceiveImage(_ image: ReceivedFile, header: FrameHeader)
    /// Every 2D array, whatever its element type (SCCT's generic array listener); the typed methods
    /// below are called as well.
    func didReceiveArray(_ array: ArrayView, header: FrameHeader)
    func didReceiveDoubleArray(_ array: ArrayView, header: FrameHeader)
    func didReceiveFloatArray(_ array: ArrayView, header: FrameHeader)
    func didReceiveIntegerArray(_ array: ArrayView, header: FrameHeader)
    func didReceiveShortArray(_ array: ArrayView, header: FrameHeader)
    func didReceiveLongArray(_ array: ArrayView, header: FrameHeader)
    func didReceiveBoolArray(_ array: ArrayView, header: FrameHeader)
    func didReceiveStringArray(_ array: ArrayView, header: FrameHeader)
    /// The publisher dropped `gap.missingCount` frames for this subscriber (it could not keep up).
    func didReceiveGap(_ gap: Gap, header: FrameHeader)
    /// The properties of a source and its channels, sent after its configuration (replacing earlier ones).
    func didReceiveProperties(_ properties: SourceProperties, header: FrameHeader)
    /// The Subject reconnected after losing its session; filters and source selection are restored.
    func didReconnect(_ welcome: Welcome)
}

extension Observer {
    public func didReceiveConfiguration(_ configuration: Configuration, header: FrameHeader) {}
    public func didReceiveError(_ error: ErrorReport) {}
    public func didReceiveError(_ error: ErrorReport, header: FrameHeader) { didReceiveError(error) }
    public func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) {}
    public func didReceiveDigitalData(_ data: DigitalView, header: FrameHeader) {}
    public func didReceiveMessage(_ message: Message, header: FrameHeader) {}
    public func didReceiveXML(_ xml: String, header: FrameHeader) {}
    public func didReceiveFile(_ file: ReceivedFile, header: FrameHeader) {}
    public func didReceiveImage(_ image: ReceivedFile, header: FrameHeader) {}
    public func didReceiveArray(_ array: ArrayView, header: FrameHeader) {}
    public func didReceiveDoubleArray(_ array: ArrayView, header: FrameHeader) {}
    public func didReceiveFloatArray(_ array: ArrayView, header: FrameHeader) {}
    public func didReceiveIntegerArray(_ array: ArrayView, header: FrameHeader) {}
    public func didReceiveShortArray(_ array: ArrayView, header: FrameHeader) {}
    public func didReceiveLongArray(_ array: ArrayView, header: FrameHeader) {}
    public func didReceiveBoolArray(_ array: ArrayView, header: FrameHeader) {}
    public func didReceiveStringArray(_ array: ArrayView, header: FrameHeader) {}
    public func didReceiveGap(_ gap: Gap, header: FrameHeader) {}
    public func didReceiveProperties(_ properties: SourceProperties, header: FrameHeader) {}
    public func didReconnect(_ welcome: Welcome) {}
}

extension Observer {
    /// Calls the method for `package`.
    func dispatch(_ package: ReceivedPackage) {
        let header = package.header
        switch package.content {
        case .configuration(let c): didReceiveConfiguration(c, header: header)
        case .properties(let p): didReceiveProperties(p, header: header)
        case .error(let e): didReceiveError(e, header: header)
        case .analog(let a): didReceiveAnalogData(a, header: header)
        case .digital(let d): didReceiveDigitalData(d, header: header)
        case .message(let m): didReceiveMessage(m, header: header)
        case .xml(let x): didReceiveXML(x, header: header)
        case .file(let f): didReceiveFile(f, header: header)
        case .image(let i): didReceiveImage(i, header: header)
        case .gap(let g): didReceiveGap(g, header: header)
        case .array(let a):
            didReceiveArray(a, header: header)
            switch a.elementType {
            case .double: didReceiveDoubleArray(a, header: header)
            case .float: didReceiveFloatArray(a, header: header)
            case .int32: didReceiveIntegerArray(a, header: header)
            case .int16: didReceiveShortArray(a, header: header)
            case .int64: didReceiveLongArray(a, header: header)
            case .bool: didReceiveBoolArray(a, header: header)
            case .string: didReceiveStringArray(a, header: header)
            }
        }
    }
}

/// A closure consumer of a Subject's packages (`Subject.addPackageHandler`).
struct PackageHandler: Sendable {
    let handle: @Sendable (ReceivedPackage) -> Void
    let ended: @Sendable () -> Void
}

/// A Subject's observers, package handlers and package streams: the target its callback-queue items are delivered to.
///
/// `@unchecked Sendable`: the lists are read and written only under `lock`; observers themselves are
/// only ever called from the callback queue, which is serial, so an observer that is not Sendable is
/// still only used by one thread at a time (the contract of `Observer`).
///
/// Observers are retained from `register` until `unregister` (as SCCT's `register` does): an observer
/// created inline and registered keeps receiving. Delivery copies the three lists under the lock — a
/// reference-count increment, no allocation per package.
final class SubjectDelivery: CallbackTarget, @unchecked Sendable {
    private let lock = NSLock()
    private var observers: [any Observer] = []
    private var streams: [PackageStream] = []
    private var handlers: [PackageHandler] = []
    /// The Subject's latest clock estimate (docs/PROTOCOL.md §4.9), shared with the socket thread.
    let clockEstimate = ClockEstimateBox()

    func register(_ observer: any Observer) {
        lock.withLock {
            observers.removeAll { $0 === observer }
            observers.append(observer)
        }
    }

    func unregister(_ observer: any Observer) {
        lock.withLock { observers.removeAll { $0 === observer } }
    }

    func add(_ stream: PackageStream) { lock.withLock { streams.append(stream) } }

    func add(_ handler: PackageHandler) { lock.withLock { handlers.append(handler) } }

    /// Ends every stream and handler (the Subject was closed or lost its session for good).
    func finishStreams() {
        let (endedStreams, endedHandlers) = lock.withLock { () -> ([PackageStream], [PackageHandler]) in
            defer { streams.removeAll(); handlers.removeAll() }
            return (streams, handlers)
        }
        for stream in endedStreams { stream.finish() }
        for handler in endedHandlers { handler.ended() }
    }

    var observerCount: Int { lock.withLock { observers.count } }

    func deliver(_ event: SubjectEvent) {
        let (current, currentStreams, currentHandlers) = lock.withLock { (observers, streams, handlers) }
        switch event {
        case .package(let package):
            for observer in current { observer.dispatch(package) }
            for handler in currentHandlers { handler.handle(package) }
            for stream in currentStreams { stream.push(package) }
        case .reconnected(let welcome):
            for observer in current { observer.didReconnect(welcome) }
        case .ended:
            finishStreams()
        }
    }
}
