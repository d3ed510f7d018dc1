/// An SCCT error code. Codes 1-9 are SCCT's, with SCCT's meanings; Tributary's own start at 10.
public struct ErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// 1: the API key is incorrect.
    public static let wrongAPIKey = ErrorCode(rawValue: 1)
    /// 2: the timeout is less than or equal to 1 second.
    public static let wrongTimeout = ErrorCode(rawValue: 2)
    /// 3: the client's timestamp is too far from the publisher's clock.
    public static let wrongTimestamp = ErrorCode(rawValue: 3)
    /// 4: nothing was heard from the peer within the timeout.
    public static let expiredTimeout = ErrorCode(rawValue: 4)
    /// 5: the connection broke down before the timeout expired.
    public static let lostConnection = ErrorCode(rawValue: 5)
    /// 6: a package could not be sent.
    public static let transmissionError = ErrorCode(rawValue: 6)
    /// 7: the connection with the publisher could not be opened.
    public static let destinationUnreachable = ErrorCode(rawValue: 7)
    /// 8: the address string is empty.
    public static let emptyAddress = ErrorCode(rawValue: 8)
    /// 9: the port is less than or equal to 0.
    public static let wrongPort = ErrorCode(rawValue: 9)
    /// 10: the peer sent a frame that does not decode (the detail says which field and byte).
    public static let malformedFrame = ErrorCode(rawValue: 10)
    /// 11: the peer sent a frame or package larger than the receiver accepts.
    public static let tooLarge = ErrorCode(rawValue: 11)
    /// 12: a request was out of order or invalid in the session's state (e.g. data before hello,
    /// a filter id that is not the next one, removing an unknown filter).
    public static let protocolViolation = ErrorCode(rawValue: 12)
    /// 13: the subscriber could not keep up and the publisher's policy is to disconnect it.
    public static let slowConsumer = ErrorCode(rawValue: 13)
    /// 14: a reassembled file or image does not match its MD5.
    public static let checksumMismatch = ErrorCode(rawValue: 14)
    /// 15: the publisher has as many sessions as it accepts; try again later.
    public static let publisherFull = ErrorCode(rawValue: 15)
    /// 16: the peer sent frames faster than the receiver reads them (the publisher's
    /// `maxInboundFramesPerSecond`); its connection is closed.
    public static let tooManyFrames = ErrorCode(rawValue: 16)
    /// 17: a signal-filter request (kind 13) would take the session's or the publisher's signal
    /// filters past their CPU budget; it was refused and the session ended.
    public static let overBudget = ErrorCode(rawValue: 17)

    /// SCCT's name for the code.
    public var name: String {
        switch rawValue {
        case 1: "wrong API key"
        case 2: "wrong timeout"
        case 3: "wrong timestamp"
        case 4: "expired timeout"
        case 5: "lost connection"
        case 6: "transmission error"
        case 7: "destination unreachable"
        case 8: "empty address"
        case 9: "wrong port"
        case 10: "malformed frame"
        case 11: "too large"
        case 12: "protocol violation"
        case 13: "slow consumer"
        case 14: "checksum mismatch"
        case 15: "publisher full"
        case 16: "too many frames"
        case 17: "over budget"
        default: "error \(rawValue)"
        }
    }

    public var description: String { "\(rawValue) (\(name))" }
}

/// An error package: a code and a human-readable explanation (SCCT ErrorPackage).
public struct ErrorReport: Sendable, Hashable, Error, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String = "") {
        self.code = code
        self.message = message
    }

    public var description: String { "error \(code)" + (message.isEmpty ? "" : ": \(message)") }

    var contentLength: Int { CodedText.contentLength(message) }

    func write(_ w: inout PayloadWriter) { CodedText.write(code.rawValue, message, into: &w) }

    static func read(_ r: inout PayloadReader) throws(WireError) -> ErrorReport {
        let (code, message) = try CodedText.read(UInt32.self, &r, codeField: "error.code", textField: "error.message", limit: Int.max)
        return ErrorReport(ErrorCode(rawValue: code), message)
    }
}

/// A text message with an application-defined code (SCCT MessagePackage).
public struct Message: Sendable, Hashable {
    public var code: Int32
    public var text: String

    public init(_ text: String, code: Int32 = 0) {
        self.text = text
        self.code = code
    }

    var contentLength: Int { CodedText.contentLength(text) }

    func write(_ w: inout PayloadWriter) { CodedText.write(code, text, into: &w) }

    static func read(_ r: inout PayloadReader) throws(WireError) -> Message {
        let (code, text) = try CodedText.read(Int32.self, &r, codeField: "message.code", textField: "message.text", limit: Int.max)
        return Message(text, code: code)
    }
}
