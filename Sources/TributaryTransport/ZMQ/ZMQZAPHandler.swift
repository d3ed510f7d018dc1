import CZMQ
import Synchronization

/// Which CURVE clients a `ZMQZAPHandler` lets in, and the User-Id it reports for each.
public struct ZMQZAPPolicy: Sendable {
    enum Rule: Sendable {
        case allowList([ZMQCurveKey: String])
        case acceptAnyClient
    }

    let rule: Rule
    /// The only ZAP domain accepted, or nil for any domain.
    public var domain: String?

    /// Accepts the listed client public keys, reporting the mapped User-Id for each.
    public static func allow(_ clients: [ZMQCurveKey: String], domain: String? = nil) -> ZMQZAPPolicy {
        ZMQZAPPolicy(rule: .allowList(clients), domain: domain)
    }

    /// Accepts the listed client public keys, reporting each key's Z85 text as its User-Id.
    public static func allow(_ keys: [ZMQCurveKey], domain: String? = nil) -> ZMQZAPPolicy {
        allow(Dictionary(keys.map { ($0, $0.z85) }, uniquingKeysWith: { first, _ in first }), domain: domain)
    }

    /// Accepts every CURVE client (traffic stays encrypted, but anyone with the server's public key gets
    /// in); the User-Id is the client's public key, so per-client state can still be bound to it.
    /// Must be chosen explicitly: it is never a default.
    public static func acceptAnyClient(domain: String? = nil) -> ZMQZAPPolicy {
        ZMQZAPPolicy(rule: .acceptAnyClient, domain: domain)
    }

    /// The User-Id for a client key, or nil when the key is refused.
    func userID(for key: ZMQCurveKey) -> String? {
        switch rule {
        case .acceptAnyClient: key.z85
        case .allowList(let clients): clients[key]
        }
    }
}

/// One authentication decision of a `ZMQZAPHandler`, for logging and tests.
public struct ZMQZAPDecision: Sendable, Equatable {
    /// The security mechanism the client used ("CURVE", "NULL", "PLAIN").
    public var mechanism: String
    /// The ZAP domain of the server socket.
    public var domain: String
    /// The client's IP address.
    public var address: String
    /// The client's public key (CURVE only).
    public var clientKey: ZMQCurveKey?
    /// The User-Id reported to the server socket when accepted; nil when refused.
    public var userID: String?
    /// Why a client was refused; nil when accepted.
    public var refusal: String?

    /// Whether the client was let in.
    public var accepted: Bool { userID != nil }
}

/// The ZAP (ZeroMQ Authentication Protocol, RFC 27) handler of a context: authenticates CURVE clients
/// against a `ZMQZAPPolicy` on its own thread, bound to `inproc://zeromq.zap.01`.
///
/// libzmq accepts **any** client key on a CURVE server when no ZAP handler is bound, so this handler must
/// be running before a CURVE server binds (`ZMQSocket.bind` refuses otherwise) and must outlive every
/// CURVE server socket of the context: stop it only after those sockets are closed. Only CURVE is let in;
/// NULL and PLAIN requests (sockets of the same context with a ZAP domain) are refused.
public final class ZMQZAPHandler: Sendable {
    /// The endpoint libzmq sends ZAP requests to (fixed by RFC 27).
    public static let endpoint = "inproc://zeromq.zap.01"

    private final class State {
        let socket: ZMQSocket
        init(socket: ZMQSocket) { self.socket = socket }
    }

    private let loop: ZMQLoop<State>
    private let context: ZMQContext
    private let policy: ZMQLoopBox<ZMQZAPPolicy>

    /// Binds the ZAP endpoint on `context` and starts answering requests on a dedicated thread.
    /// - Parameters:
    ///   - context: The context whose CURVE servers this handler protects.
    ///   - policy: Which clients get in.
    ///   - onDecision: Called on the handler thread after each decision (keep it short).
    /// - Throws: `ZMQError` `.addressInUse` when another ZAP handler runs on the context.
    public init(
        context: ZMQContext, policy: ZMQZAPPolicy,
        onDecision: (@Sendable (ZMQZAPDecision) -> Void)? = nil
    ) throws {
        self.context = context
        let policyBox = ZMQLoopBox(policy)
        self.policy = policyBox
        loop = try ZMQLoop(name: "tributary-zap", context: context) { scope in
            let socket = try ZMQSocket(context: scope.context, type: .rep)
            try socket.bind(ZMQZAPHandler.endpoint)
            scope.register(socket) { socket, _ in
                ZMQZAPHandler.answer(on: socket, policy: policyBox.value.withLock { $0 }, onDecision: onDecision)
            }
            // Only now can CURVE servers bind: requests will be answered.
            scope.context.zapHandlerRunning.store(true, ordering: .sequentiallyConsistent)
            return State(socket: socket)
        }
    }

    deinit { stop() }

    /// Whether the handler is answering requests.
    public var isRunning: Bool { loop.isRunning }

    /// Replaces the policy (e.g. to revoke a key); applies to handshakes from now on.
    public func updatePolicy(_ newPolicy: ZMQZAPPolicy) {
        policy.value.withLock { $0 = newPolicy }
    }

    /// Stops answering and unbinds the endpoint. Close the context's CURVE server sockets first.
    public func stop() {
        context.zapHandlerRunning.store(false, ordering: .sequentiallyConsistent)
        loop.shutdown()
    }

    /// Reads one ZAP request and sends the reply.
    private static func answer(
        on socket: ZMQSocket, policy: ZMQZAPPolicy,
        onDecision: (@Sendable (ZMQZAPDecision) -> Void)?
    ) {
        let parts: [ZMQReceivedMessage]
        do throws(ZMQError) { parts = try socket.receiveMultipart(flags: .dontWait) } catch { return }
        let text = { (index: Int) -> String in
            index < parts.count ? String(decoding: parts[index].bytes, as: UTF8.self) : ""
        }
        // Request: version, request id, domain, address, routing id, mechanism, credentials...
        let requestID = parts.count > 1 ? parts[1].bytes : []
        var decision = ZMQZAPDecision(
            mechanism: text(5), domain: text(2), address: text(3),
            clientKey: nil, userID: nil, refusal: nil)
        if parts.count < 6 || text(0) != "1.0" {
            decision.refusal = "malformed ZAP request (\(parts.count) parts, version '\(text(0))')"
        } else if let domain = policy.domain, domain != decision.domain {
            decision.refusal = "ZAP domain '\(decision.domain)' is not '\(domain)'"
        } else if decision.mechanism != "CURVE" {
            decision.refusal = "mechanism \(decision.mechanism) is not allowed (CURVE only)"
        } else if parts.count != 7 || parts[6].count != 32 {
            decision.refusal = "CURVE credentials are not one 32-byte public key"
        } else if let key = ZMQCurveKey(binary: parts[6].bytes) {
            decision.clientKey = key
            decision.userID = policy.userID(for: key)
            if decision.userID == nil { decision.refusal = "client key \(key.z85) is not allowed" }
        } else {
            decision.refusal = "client key is not encodable"
        }
        let status: [UInt8] = Array((decision.accepted ? "200" : "400").utf8)
        let statusText: [UInt8] = Array((decision.accepted ? "OK" : decision.refusal ?? "refused").utf8)
        let reply: [[UInt8]] = [
            Array("1.0".utf8), requestID, status, statusText,
            Array((decision.userID ?? "").utf8), [],
        ]
        // The REP socket must send a reply to read the next request; a failure here means the context
        // is terminating, and the loop will stop on its next poll.
        try? socket.send(multipart: reply)
        onDecision?(decision)
    }
}
