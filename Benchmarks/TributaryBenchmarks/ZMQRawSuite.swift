import Dispatch
import Foundation
import Synchronization
import TributaryTransport

/// Raw libzmq throughput through the Swift wrapper against pyzmq in the same run: DEALER -> ROUTER over
/// tcp://127.0.0.1, 64 KiB messages, one context with one I/O thread, sender on its own thread, receiver
/// counting from the first message to the last (the same method as Benchmarks/peers/zmq_raw_peer.py).
let zmqRawSuite = Suite(
    name: "zmq-raw",
    run: { context in
        let messages = 4_096, size = 65_536, runs = 7
        var rows: [BenchRow] = []
        let peer = try context.runPeer("zmq_raw_peer.py", ["--messages", "\(messages)", "--size", "\(size)", "--runs", "\(runs)"])
        guard let peerMBps = peer["mb_per_s_median"] as? Double else { throw BenchError("zmq_raw_peer.py: no mb_per_s_median") }
        for mode in ZMQRawSendMode.allCases {
            _ = try zmqRawRun(mode: mode, messages: messages, size: size)  // warm-up
            var samples: [Double] = []
            for _ in 0..<runs { samples.append(try zmqRawRun(mode: mode, messages: messages, size: size)) }
            let mbps = median(samples)
            rows.append(
                BenchRow(
                    name: "64 KiB DEALER->ROUTER, \(mode.label) [MB/s]", tributary: fmt(mbps, 0),
                    peer: fmt(peerMBps, 0), ratio: fmt(mbps / peerMBps)))
        }
        printTable(
            "ZMQ raw throughput vs pyzmq \(peer["pyzmq"] ?? "?") (libzmq \(peer["zmq"] ?? "?")), tcp loopback, median of \(runs)", rows)
        printTable("ZMQ allocations per message (whole process, inproc, 10 000 messages)", try zmqAllocationRows())
    })

/// Heap allocations per message on the send and receive paths, measured over inproc (no I/O thread,
/// so every allocation counted is on this thread's path). libzmq's inproc pipe allocates a chunk per
/// 256 messages; `zmq_msg_init_data` allocates its 40-byte reference-count block.
func zmqAllocationRows() throws -> [BenchRow] {
    let count = 10_000
    let zmq = try ZMQContext(ioThreads: 1)
    let receiver = try ZMQSocket(context: zmq, type: .pair)
    try receiver.setOption(.receiveHighWaterMark, 0)
    try receiver.bind("inproc://zmq-raw-allocations")
    let sender = try ZMQSocket(context: zmq, type: .pair)
    try sender.setOption(.sendHighWaterMark, 0)
    try sender.connect("inproc://zmq-raw-allocations")
    let payload = ZMQRawPayload(size: 65_536)
    let base = UnsafeRawPointer(payload.bytes.baseAddress!)
    var failures = 0
    func drain() {
        var message = ZMQMessage()
        while (try? receiver.receive(into: &message, flags: .dontWait)) != nil {}
    }
    var rows: [BenchRow] = []
    let zeroCopy = allocationsPerOperation(operations: count) {
        for _ in 0..<count { do { try sender.send(noCopy: base, count: 65_536, owner: payload, flags: .dontWait) } catch { failures += 1 } }
        drain()
    }
    rows.append(BenchRow(name: "zero-copy send + reusable receive [allocs/msg]", tributary: fmt(zeroCopy, 3), peer: "-", ratio: "-"))
    var shared = try ZMQMessage(noCopy: base, count: 65_536, owner: payload)
    let sharedSend = allocationsPerOperation(operations: count) {
        for _ in 0..<count { do { try sender.send(sharing: &shared, flags: .dontWait) } catch { failures += 1 } }
        drain()
    }
    rows.append(
        BenchRow(name: "shared zero-copy send + reusable receive [allocs/msg]", tributary: fmt(sharedSend, 3), peer: "-", ratio: "-"))
    let keepAlive = allocationsPerOperation(operations: count) {
        for _ in 0..<count { do { try sender.send(sharing: &shared, flags: .dontWait) } catch { failures += 1 } }
        for _ in 0..<count { do { blackHole(try receiver.receive(flags: .dontWait).count) } catch { failures += 1 } }
    }
    rows.append(
        BenchRow(name: "shared send + ZMQReceivedMessage receive [allocs/msg]", tributary: fmt(keepAlive, 3), peer: "-", ratio: "-"))
    if failures > 0 { throw BenchError("zmq-raw allocations: \(failures) sends/receives failed") }
    return rows
}

/// How the Swift sender hands each message to libzmq.
enum ZMQRawSendMode: CaseIterable {
    /// `zmq_send`: libzmq allocates and copies 64 KiB per message.
    case copy
    /// `zmq_msg_init_data` per message over a buffer kept alive by an owner object (the publisher's path).
    case zeroCopy
    /// One zero-copy message, reference-counted copies sent (the fan-out path: no allocation at all).
    case shared

    var label: String {
        switch self {
        case .copy: "copy send"
        case .zeroCopy: "zero-copy send"
        case .shared: "shared zero-copy"
        }
    }
}

/// Keeps the benchmark payload alive for libzmq.
///
/// `@unchecked Sendable`: the buffer is written once in `init` and only read afterwards.
final class ZMQRawPayload: @unchecked Sendable {
    let bytes: UnsafeMutableRawBufferPointer
    init(size: Int) {
        bytes = .allocate(byteCount: size, alignment: 64)
        bytes.initializeMemory(as: UInt8.self, repeating: 0x5A)
    }
    deinit { bytes.deallocate() }
}

/// One run; returns MB/s (10^6 bytes per second) of payload received.
func zmqRawRun(mode: ZMQRawSendMode, messages: Int, size: Int) throws -> Double {
    let zmq = try ZMQContext(ioThreads: 1)
    let router = try ZMQSocket(context: zmq, type: .router)
    try router.setOption(.receiveTimeout, 10_000)
    try router.bind("tcp://127.0.0.1:0")
    let endpoint = try router.lastEndpoint()
    let payload = ZMQRawPayload(size: size)
    let received = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
    let failure = ZMQRawFailure()
    // The sender owns its socket on its own thread (libzmq sockets are single-threaded).
    let sender = Thread {
        defer { finished.signal() }
        do {
            let dealer = try ZMQSocket(context: zmq, type: .dealer)
            try dealer.connect(endpoint)
            let base = UnsafeRawPointer(payload.bytes.baseAddress!)
            switch mode {
            case .copy:
                let buffer = UnsafeRawBufferPointer(payload.bytes)
                for _ in 0..<messages { try dealer.send(buffer) }
            case .zeroCopy:
                for _ in 0..<messages { try dealer.send(noCopy: base, count: size, owner: payload) }
            case .shared:
                var message = try ZMQMessage(noCopy: base, count: size, owner: payload)
                for _ in 0..<messages { try dealer.send(sharing: &message) }
            }
            // Linger is 0: keep the socket open until everything arrived.
            received.wait()
            dealer.close()
        } catch {
            failure.record("\(error)")
            received.signal()
        }
    }
    sender.start()
    let elapsed: Double
    do {
        // Whatever happens, release the sender and wait for it, so no thread or socket outlives the run.
        defer {
            received.signal()
            finished.wait()
            router.close()
        }
        _ = try router.receiveMultipart()
        let start = nowNanoseconds()
        for _ in 1..<messages {
            let parts = try router.receiveMultipart()
            blackHole(parts[1].count)
        }
        elapsed = Double(nowNanoseconds() - start) / 1e9
    }
    if let message = failure.message { throw BenchError("zmq-raw sender: \(message)") }
    return Double((messages - 1) * size) / elapsed / 1e6
}

/// The sender thread's error, if any.
final class ZMQRawFailure: Sendable {
    private let text = Mutex<String?>(nil)
    func record(_ message: String) { text.withLock { $0 = message } }
    var message: String? { text.withLock { $0 } }
}
