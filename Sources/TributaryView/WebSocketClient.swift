import CCivetWeb
import Dispatch
import Foundation
import TributaryBytes

/// One WebSocket connection's writer: a one-slot mailbox for updates, a bounded queue for text.
///
/// `@unchecked Sendable`: every mutable field is guarded by `condition`. The writer thread writes to
/// `connection` until `close()` has waited for it to finish; the session's own control frames (pongs,
/// pings, the close) go through the same `mg_websocket_write`, which takes the connection's lock, so
/// frames never interleave.
final class WebSocketClient: @unchecked Sendable {
    let id: Int
    private let connection: OpaquePointer
    private let condition = NSCondition()
    private var update: [UInt8]?
    private var droppedOffset: Int?
    private var texts: [String] = []
    private var isClosed = false
    private var sent: UInt64 = 0
    private var dropped: UInt64 = 0
    private var inFlight = 0
    private let maxInFlight: Int
    private let finished = DispatchSemaphore(value: 0)
    private var ended: String?

    init(connection: OpaquePointer, id: Int, maxInFlight: Int) {
        self.connection = connection
        self.id = id
        self.maxInFlight = maxInFlight
    }

    func acknowledge() {
        condition.lock()
        inFlight = max(0, inFlight - 1)
        condition.signal()
        condition.unlock()
    }

    var statistics: HTTPServer.ClientStatistics {
        condition.lock()
        defer { condition.unlock() }
        return HTTPServer.ClientStatistics(id: id, updatesSent: sent, updatesDropped: dropped)
    }

    /// Why the writer stopped on its own (a failed write, 64 unsent texts), or nil while it runs.
    var endReason: String? {
        condition.lock()
        defer { condition.unlock() }
        return ended
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "tributary-ws-\(id)"
        thread.start()
    }

    func offer(_ bytes: [UInt8], droppedOffset: Int?) {
        condition.lock()
        if update != nil { dropped += 1 }
        update = bytes
        self.droppedOffset = droppedOffset
        condition.signal()
        condition.unlock()
    }

    func queueText(_ text: String) {
        condition.lock()
        if texts.count >= 64 {
            isClosed = true
            ended = "64 messages were waiting for this client"
        } else {
            texts.append(text)
        }
        condition.signal()
        condition.unlock()
    }

    /// Stops the writer and waits for it (CivetWeb frees the connection after its close handler returns).
    func close() {
        condition.lock()
        isClosed = true
        condition.signal()
        condition.unlock()
        _ = finished.wait(timeout: .now() + .seconds(35))
    }

    private func run() {
        defer { finished.signal() }
        while true {
            condition.lock()
            while !isClosed && texts.isEmpty && (update == nil || inFlight >= maxInFlight) { condition.wait() }
            if isClosed { condition.unlock(); return }
            let text: String? = texts.isEmpty ? nil : texts.removeFirst()
            var bytes: [UInt8]? = nil
            if text == nil {
                bytes = update
                update = nil
                inFlight += 1
                if let offset = droppedOffset, bytes != nil, offset + 8 <= bytes!.count {
                    var w = ByteWriter(bytes.take()!)
                    w.put(Double(dropped), at: offset)
                    bytes = w.bytes
                }
            }
            condition.unlock()
            let result: Int32
            if let text {
                result = Array(text.utf8).withUnsafeBytes {
                    mg_websocket_write(connection, Int32(MG_WEBSOCKET_OPCODE_TEXT), $0.baseAddress, $0.count)
                }
            } else {
                result = bytes!.withUnsafeBytes {
                    mg_websocket_write(connection, Int32(MG_WEBSOCKET_OPCODE_BINARY), $0.baseAddress, $0.count)
                }
                condition.lock()
                sent += 1
                condition.unlock()
            }
            if result <= 0 {
                condition.lock()
                isClosed = true
                ended = "a write failed or stalled"
                condition.unlock()
                return
            }
        }
    }
}
