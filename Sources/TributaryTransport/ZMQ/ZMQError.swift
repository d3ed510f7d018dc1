import CZMQ
import Foundation

/// A failed libzmq call: which operation failed, with which error number, and libzmq's own text for it.
///
/// Every throwing function of the ZMQ layer uses typed throws (`throws(ZMQError)`), so throwing on the
/// hot path (`.again` from a full pipe is a normal outcome for the publisher's fan-out) boxes nothing
/// and allocates nothing: `operation` is always a static string literal.
public struct ZMQError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The error number (`errno` as reported by `zmq_errno()`).
    public var code: Code
    /// The libzmq call (and option or endpoint kind) that failed, e.g. `"zmq_msg_send"`.
    public var operation: StaticString
    /// What the operation worked on when that is not obvious: the endpoint, the option name. Nil on the
    /// send/receive paths, so that those errors allocate nothing.
    public var detail: String?

    /// Creates an error from a code, the operation that failed and what it worked on.
    public init(_ code: Code, operation: StaticString, detail: String? = nil) {
        self.code = code
        self.operation = operation
        self.detail = detail
    }

    /// The error of the libzmq call that just failed on this thread.
    static func last(_ operation: StaticString, detail: String? = nil) -> ZMQError {
        ZMQError(Code(rawValue: zmq_errno()), operation: operation, detail: detail)
    }

    /// libzmq's description of the error number (`zmq_strerror`).
    public var message: String { code.description }

    public var description: String {
        let subject = detail.map { "\(operation)(\($0))" } ?? "\(operation)"
        return "\(subject): \(message) (errno \(code.rawValue))"
    }

    public static func == (lhs: ZMQError, rhs: ZMQError) -> Bool {
        lhs.code == rhs.code && lhs.detail == rhs.detail
            && lhs.operation.description == rhs.operation.description
    }

    /// A libzmq error number with names for the ones the transport reacts to.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// libzmq's base for error numbers the platform does not define (`ZMQ_HAUSNUMERO`).
        static let hausnumero: Int32 = 156_384_712

        /// The operation would block: a full pipe with `ZMQ_DONTWAIT`, or a timeout. The corresponding C error is `EAGAIN`.
        public static let again = Code(rawValue: EAGAIN)
        /// A ROUTER with `ZMQ_ROUTER_MANDATORY` has no peer with that routing id (gone or never connected).
        /// The corresponding C error is `EHOSTUNREACH`.
        public static let hostUnreachable = Code(rawValue: EHOSTUNREACH)
        /// The context was shut down or terminated; close the socket. The corresponding C error is `ETERM`.
        public static let terminated = Code(rawValue: hausnumero + 53)
        /// The operation is not valid in the socket's current state (e.g. REP sending twice). The corresponding C error is `EFSM`.
        public static let invalidState = Code(rawValue: hausnumero + 51)
        /// A signal interrupted a blocking call. The corresponding C error is `EINTR`.
        public static let interrupted = Code(rawValue: EINTR)
        /// An argument or option value was rejected. The corresponding C error is `EINVAL`.
        public static let invalidArgument = Code(rawValue: EINVAL)
        /// The socket was already closed. The corresponding C error is `ENOTSOCK`.
        public static let notSocket = Code(rawValue: ENOTSOCK)
        /// The address is already bound. The corresponding C error is `EADDRINUSE`.
        public static let addressInUse = Code(rawValue: EADDRINUSE)
        /// The address is not local or (for unbind/disconnect) not bound/connected. The corresponding C error is `EADDRNOTAVAIL`.
        public static let addressNotAvailable = Code(rawValue: EADDRNOTAVAIL)
        /// The endpoint's transport (tcp, inproc, ipc) is unknown. The corresponding C error is `EPROTONOSUPPORT`.
        public static let protocolNotSupported = Code(rawValue: EPROTONOSUPPORT)
        /// The endpoint names no usable interface. The corresponding C error is `ENODEV`.
        public static let noDevice = Code(rawValue: ENODEV)
        /// The operation is not supported by this socket type. The corresponding C error is `ENOTSUP`.
        public static let notSupported = Code(rawValue: ENOTSUP)
        /// The process ran out of file descriptors. The corresponding C error is `EMFILE`.
        public static let tooManyOpenFiles = Code(rawValue: EMFILE)
        /// No I/O thread is available for the operation. The corresponding C error is `EMTHREAD`.
        public static let noIOThread = Code(rawValue: hausnumero + 54)
        /// Out of memory. The corresponding C error is `ENOMEM`.
        public static let outOfMemory = Code(rawValue: ENOMEM)

        public var description: String {
            if self == .curveWithoutZAPHandler {
                return "CURVE server refused to bind: no ZAP handler runs on its context, any client key would be accepted"
            }
            return String(cString: zmq_strerror(rawValue))
        }
    }
}

/// Retries a libzmq call while it fails with `EINTR` (a signal arrived while blocked); returns its
/// non-negative result or throws the error of the last failure.
@inline(__always)
func retryingOnInterrupt(
    _ operation: StaticString, detail: @autoclosure () -> String? = nil, _ call: () -> Int32
) throws(ZMQError) -> Int32 {
    while true {
        let result = call()
        if result >= 0 { return result }
        let error = ZMQError.last(operation, detail: detail())
        if error.code != .interrupted { throw error }
    }
}
