import Foundation

/// Waits (polling every 2 ms) until `condition` holds or `timeout` passes; returns whether it held.
/// A bound so that a broken writer fails the test instead of hanging it — not a timing assertion.
func waitUntil(_ timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}
