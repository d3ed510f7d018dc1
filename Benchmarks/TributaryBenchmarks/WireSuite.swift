import Foundation
import TributaryWire

/// Decode and encode costs of the wire codec, allocations per frame, and the numpy peer.
let wireSuite = Suite(name: "wire") { context in
    // An 8 × 1000 float64 analog frame, as a publisher sends it.
    let channels = (0..<8).map { c in (0..<1000).map { s in sin(Double(s) * 0.01 * Double(c + 1)) } }
    let analogPackage = Package.analog(AnalogData(channels: channels, firstSample: 0))
    let analogFrame = Frame(encoding: analogPackage, sequence: 1, timestampNs: 1, sourceID: 1)
    let analogBuffer = FrameBuffer(copying: analogFrame.encodedBytes)
    let messagePackage = Package.message(Message(String(repeating: "x", count: 52), code: 1))
    let messageBuffer = FrameBuffer(copying: Frame(encoding: messagePackage).encodedBytes)
    precondition(messageBuffer.count == 104, "the message frame should be ~100 bytes")

    let n = 200_000
    // Header validation + O(1) payload layout + a typed view of one channel, no copy.
    func decodeAnalog() {
        for _ in 0..<n {
            do {
                let view = try Frame.analogView(decoding: analogBuffer)
                view.withSamples(Double.self, channel: 3) { blackHole($0[999] + Double(view.header.sequence)) }
            } catch { fatalError("\(error)") }
        }
    }
    func decodeMessage() {
        for _ in 0..<n {
            do {
                let frame = try Frame(decoding: messageBuffer)
                guard case .message(let m) = try frame.payload() else { fatalError("not a message") }
                blackHole(m.code)
            } catch { fatalError("\(error)") }
        }
    }
    let encodeCount = 20_000
    func encodeAnalog() { for _ in 0..<encodeCount { blackHole(Frame(encoding: analogPackage, sequence: 2)) } }
    func encodeMessage() { for _ in 0..<encodeCount { blackHole(Frame(encoding: messagePackage, sequence: 2)) } }

    let analogNs = measure(operations: n, decodeAnalog)
    let messageNs = measure(operations: n, decodeMessage)
    let encodeAnalogNs = measure(repetitions: 9, operations: encodeCount, encodeAnalog)
    let encodeMessageNs = measure(repetitions: 9, operations: encodeCount, encodeMessage)
    let analogAllocs = allocationsPerOperation(operations: n, decodeAnalog)
    let messageAllocs = allocationsPerOperation(operations: n, decodeMessage)
    let encodeAllocs = allocationsPerOperation(operations: encodeCount, encodeAnalog)

    let path = context.scratchDirectory + "/analog-8x1000.frame"
    try Data(analogFrame.encodedBytes).write(to: URL(fileURLWithPath: path))
    let peer = try context.runPeer("wire_peer.py", [path])
    guard let peerNs = peer["decode_ns"] as? Double else { throw BenchError("wire peer printed no decode_ns") }

    printTable(
        "wire codec (median of 15 runs; allocations per frame)",
        [
            BenchRow(
                name: "decode 8x1000 f64 frame + channel view", tributary: "\(fmt(analogNs)) ns, \(fmt(analogAllocs, 1)) allocs",
                peer: "numpy \(fmt(peerNs)) ns", ratio: "\(fmt(peerNs / analogNs, 1))x faster"),
            BenchRow(
                name: "decode 104-byte message frame", tributary: "\(fmt(messageNs)) ns, \(fmt(messageAllocs, 1)) allocs",
                peer: "-", ratio: "-"),
            BenchRow(
                name: "encode 8x1000 f64 frame (64 KB)", tributary: "\(fmt(encodeAnalogNs)) ns, \(fmt(encodeAllocs, 1)) allocs",
                peer: "-", ratio: "\(fmt(Double(analogBuffer.count) / encodeAnalogNs, 2)) GB/s"),
            BenchRow(name: "encode 104-byte message frame", tributary: "\(fmt(encodeMessageNs)) ns", peer: "-", ratio: "-"),
        ])
    if context.checkAllocations && analogAllocs > 0 {
        throw BenchError("allocation guard: decoding an analog frame allocated \(analogAllocs) times per frame (expected 0)")
    }
}
