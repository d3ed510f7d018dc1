import Dispatch
import Foundation

/// Independent pieces of one call (lines of an array, groups of lines, rows of spectra) spread over
/// the processor's cores. Each piece writes only its own outputs, so the result does not depend on
/// how many threads ran or in which order: the same values as one thread, bit for bit.
public enum ParallelWork {
    /// The threads a call may use: the processor's active cores, at most 16; 1 with the environment
    /// variable TRIBUTARY_THREADS=1 (any n from 1 to 16 caps it at n).
    public static let threads: Int = {
        let cores = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 16))
        if let text = ProcessInfo.processInfo.environment["TRIBUTARY_THREADS"], let n = Int(text), (1...16).contains(n) {
            return min(n, cores)
        }
        return cores
    }()

    /// Below this many samples of work a call runs on the calling thread (a thread's start costs
    /// more than the work).
    public static let minimumSamples = 1 << 16

    /// rows × length, saturated at Int.max (a measure of work, never trapping on a large count).
    public static func work(_ rows: Int, _ length: Int) -> Int {
        let (product, overflow) = max(rows, 0).multipliedReportingOverflow(by: max(length, 0))
        return overflow ? Int.max : product
    }

    /// Runs `body(piece)` for every piece in 0 ..< `pieces`, on up to `threads` threads when the
    /// work (`samples` in all) is large enough, else in order on this thread. `body` must touch
    /// only the piece's own outputs.
    public static func run(pieces: Int, samples: Int, _ body: (Int) -> Void) {
        let workers = min(threads, pieces)
        guard workers > 1, samples >= minimumSamples else {
            for piece in 0..<max(pieces, 0) { body(piece) }
            return
        }
        // Pieces are dealt round-robin to the workers: worker w runs pieces w, w + workers, …
        // concurrentPerform returns when every worker has: `body` does not outlive this call.
        withoutActuallyEscaping(body) { body in
            let shared = SharedBody(body: body)
            DispatchQueue.concurrentPerform(iterations: workers) { worker in
                var piece = worker
                while piece < pieces {
                    shared.body(piece)
                    piece += workers
                }
            }
        }
    }
}

/// The body of one `ParallelWork.run` call, handed to its workers; each piece writes only its own
/// outputs (the pieces share nothing mutable), which is what makes the hand-over sound.
private struct SharedBody: @unchecked Sendable {
    let body: (Int) -> Void
}
