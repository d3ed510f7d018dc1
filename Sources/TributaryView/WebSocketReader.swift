import Glibc

/// Reads a WebSocket client's frames (RFC 6455 §5) from the connection's socket, deciding on each
/// frame by its header before reading its payload: a data frame whose announced length takes its
/// message past `maxMessageBytes` ends the session (close code 1009) after at most 14 bytes of it
/// were read, whatever length it announces. It holds at most one message, plus 16 KiB of buffer.
///
/// It replaces CivetWeb's reader, which allocates the length a frame's header announces (up to
/// 2 GiB) and fills it before any callback can refuse the frame.
struct WebSocketReader {
    /// Why the session ended, and the close frame to send (nil: the connection is gone, send nothing).
    struct End: Equatable, CustomStringConvertible {
        var code: UInt16?
        var reason: String
        var description: String { code.map { "\($0) \(reason)" } ?? reason }
    }

    enum Opcode: UInt8 {
        case continuation = 0
        case text = 1
        case binary = 2
        case close = 8
        case ping = 9
        case pong = 10
    }

    let fd: Int32
    let maxMessageBytes: Int
    /// Milliseconds without a byte from the client before it is pinged; after 3 unanswered pings it
    /// is closed (1001).
    let idleMilliseconds: Int
    private var buffer: [UInt8] = []
    private var start = 0

    init(fd: Int32, maxMessageBytes: Int, idleMilliseconds: Int) {
        self.fd = fd
        self.maxMessageBytes = maxMessageBytes
        self.idleMilliseconds = idleMilliseconds
        buffer.reserveCapacity(16_384 + maxMessageBytes)
    }

    /// Reads frames until the client closes, breaks a rule or goes silent, or `stop` ends the session.
    /// - Parameters:
    ///   - stop: polled at least every 250 ms while waiting; returns how to end the session, or nil.
    ///   - send: writes a control frame (opcode, payload); false when the connection failed.
    ///   - onText: a whole text message (at most `maxMessageBytes`).
    mutating func run(stop: () -> End?, send: (Opcode, [UInt8]) -> Bool, onText: ([UInt8]) -> Void) -> End {
        var message: [UInt8] = []
        var messageOpcode: Opcode?  // the first frame's opcode while a fragmented message is open
        var unansweredPings = 0
        while true {
            if let end = stop() { return end }
            // The next frame's first two bytes; silence here is idleness (pings), not a broken frame.
            switch fill(2, stop: stop) {
            case .ready: break
            case .idle:
                if unansweredPings >= 3 { return End(code: 1001, reason: "no answer to 3 pings") }
                unansweredPings += 1
                if !send(.ping, []) { return End(code: nil, reason: "the connection failed") }
                continue
            case .ended(let end): return end
            }
            let b0 = buffer[start], b1 = buffer[start + 1]
            let fin = b0 & 0x80 != 0, masked = b1 & 0x80 != 0, length7 = Int(b1 & 0x7F)
            guard b0 & 0x70 == 0 else { return End(code: 1002, reason: "reserved bits set (no extension was negotiated)") }
            guard let opcode = Opcode(rawValue: b0 & 0x0F) else { return End(code: 1002, reason: "unknown opcode \(b0 & 0x0F)") }
            guard masked else { return End(code: 1002, reason: "a client's frames must be masked") }
            let extended = length7 == 126 ? 2 : length7 == 127 ? 8 : 0
            let headerLength = 2 + extended + 4
            if case .ended(let end) = fill(headerLength, stop: stop, partial: true) { return end }
            var announced = UInt64(length7)
            if extended > 0 {
                announced = 0
                for i in 0..<extended { announced = announced << 8 | UInt64(buffer[start + 2 + i]) }
            }
            let isControl = opcode.rawValue & 0x8 != 0
            if isControl {
                guard fin, announced <= 125 else { return End(code: 1002, reason: "a control frame must be whole and at most 125 bytes") }
            } else {
                switch (opcode, messageOpcode) {
                case (.continuation, nil): return End(code: 1002, reason: "a continuation frame without a message")
                case (.text, _?), (.binary, _?): return End(code: 1002, reason: "a new message before the last one ended")
                default: break
                }
                // The rule that matters: refused by the announced length, before reading the payload.
                let room = UInt64(maxMessageBytes - message.count)
                guard announced <= room else {
                    return End(code: 1009, reason: "a message may have at most \(maxMessageBytes) bytes; this frame announces \(announced)")
                }
            }
            let length = Int(announced)  // ≤ maxMessageBytes or 125: checked above
            if case .ended(let end) = fill(headerLength + length, stop: stop, partial: true) { return end }
            let mask = Array(buffer[(start + headerLength - 4)..<(start + headerLength)])
            var payload = Array(buffer[(start + headerLength)..<(start + headerLength + length)])
            for i in payload.indices { payload[i] ^= mask[i & 3] }
            consume(headerLength + length)
            unansweredPings = 0
            switch opcode {
            case .ping:
                if !send(.pong, payload) { return End(code: nil, reason: "the connection failed") }
            case .pong:
                break
            case .close:
                let code = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : 1000
                return End(code: code == 1005 || code == 1006 || code == 1015 ? 1000 : code, reason: "closed by the client")
            case .text, .binary, .continuation:
                if opcode != .continuation { messageOpcode = opcode }
                message += payload
                if fin {
                    if messageOpcode == .text { onText(message) }  // binary messages mean nothing to the view
                    message.removeAll(keepingCapacity: true)
                    messageOpcode = nil
                }
            }
        }
    }

    private enum Fill {
        case ready, idle
        case ended(End)
    }

    /// Waits until `count` bytes are buffered. `partial`: inside a frame, where silence for the idle
    /// time ends the session instead of calling for a ping.
    private mutating func fill(_ count: Int, stop: () -> End?, partial: Bool = false) -> Fill {
        var waited = 0
        while buffer.count - start < count {
            if let end = stop() { return .ended(end) }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 250)
            if ready < 0 {
                if errno == EINTR { continue }
                return .ended(End(code: nil, reason: "poll failed (errno \(errno))"))
            }
            if ready == 0 {
                waited += 250
                if waited >= idleMilliseconds {
                    return partial ? .ended(End(code: 1002, reason: "a frame stopped half-way")) : .idle
                }
                continue
            }
            // Read no more than the frame needs plus 16 KiB: what a client sends beyond it waits in the kernel.
            let room = min(16_384, max(count - (buffer.count - start), 1_024))
            let old = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: room))
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + old, room, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                buffer.removeLast(room - n)
                waited = 0
            } else {
                buffer.removeLast(room)
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { continue }
                return .ended(
                    End(code: nil, reason: n == 0 ? "the client closed the connection" : "the connection failed (errno \(errno))"))
            }
        }
        return .ready
    }

    private mutating func consume(_ count: Int) {
        start += count
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start >= 8_192 {
            buffer.removeFirst(start)
            start = 0
        }
    }
}
