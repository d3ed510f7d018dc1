import Foundation
import Synchronization
import TributaryWire

/// What `Subject.open` was called with, kept for reconnection.
struct OpenParameters: Sendable {
    var endpoint: String
    var apiKey: String
    var description: String
    var timeoutSeconds: Double
    var sourceFilterEnabled: Bool
    var timeoutNs: UInt64 { UInt64(min(timeoutSeconds, 1e9) * 1e9) }
}

/// Hands the outcome of an open from the socket thread to the thread waiting in `Subject.open`.
final class OpenWaiter: Sendable {
    private let result = Mutex<Result<Welcome, ErrorReport>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func complete(_ outcome: Result<Welcome, ErrorReport>) {
        let first = result.withLock { current -> Bool in
            guard current == nil else { return false }
            current = outcome
            return true
        }
        if first { done.signal() }
    }

    func wait(timeoutNs: UInt64) -> Result<Welcome, ErrorReport>? {
        _ = done.wait(timeout: .now() + .nanoseconds(Int(min(timeoutNs, UInt64(Int.max)))))
        return result.withLock { $0 }
    }
}
