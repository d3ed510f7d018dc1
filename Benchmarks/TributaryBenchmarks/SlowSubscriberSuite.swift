import Foundation
import TributaryTransport
import TributaryWire

/// One slow subscriber must not slow the others. A live source offers 64 KiB frames at a fixed
/// rate that subscriber A can absorb; A's delivered rate is measured alone, then while a second
/// subscriber process B is SIGSTOPped (B's pipe fills; the publisher drops and counts B's frames
/// instead of blocking). Reports A's rate with B stopped as a share of its solo rate (target
/// ≥ 90 %), and, after SIGCONT, checks that B's gap notices add up to exactly the publisher's drop
/// count for B and that B received or was told about every frame.
let slowSubscriberSuite = Suite(name: "slow-subscriber") { context in
    let frames = 22_500, rounds = 3, offeredRate = 15_000.0  // 983 MB/s for 1.5 s per run
    let peerPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("TransportPeer").path
    guard FileManager.default.isExecutableFile(atPath: peerPath) else {
        throw BenchError("slow-subscriber: \(peerPath) is not built (swift build builds it)")
    }
    // Solo and stopped-peer runs alternate round by round and the share is the median of per-round
    // ratios: the machine's load drifts, and rates measured seconds apart compare different machines.
    var solo: [Double] = [], withStopped: [Double] = [], shares: [Double] = []
    var soloCPU: [Double] = [], stoppedCPU: [Double] = []
    var lostAlone: UInt64 = 0, lostStopped: UInt64 = 0
    var accounting: [String] = []
    var exact = true
    for _ in 0..<rounds {
        let alone = try slowSubscriberRound(frames: frames, rate: offeredRate, peerPath: nil)
        solo.append(alone.rate)
        soloCPU.append(alone.cpuMicrosecondsPerFrame)
        lostAlone += alone.lostByA
        let round = try slowSubscriberRound(frames: frames, rate: offeredRate, peerPath: peerPath)
        stoppedCPU.append(round.cpuMicrosecondsPerFrame)
        lostStopped += round.lostByA
        withStopped.append(round.rate)
        shares.append(round.rate / solo.last!)
        exact = exact && round.exact
        accounting.append(round.accounting)
    }
    let share = median(shares)
    printTable(
        "Slow subscriber: A's delivered rate, live source offering \(Int(offeredRate)) x 64 KiB frames/s (\(rounds) rounds, medians)",
        [
            BenchRow(name: "A alone [MB/s]", tributary: fmt(median(solo), 0), peer: "-", ratio: "-"),
            BenchRow(
                name: "A while subscriber B is SIGSTOPped [MB/s]", tributary: fmt(median(withStopped), 0), peer: "-",
                ratio: "\(fmt(100 * share, 1)) % of solo (median of per-round ratios; target >= 90 %)"),
            BenchRow(
                name: "frames A lost, all rounds (alone | B stopped)", tributary: "\(lostAlone) | \(lostStopped)", peer: "-", ratio: "-"),
            // CPU time of this process (publisher + subscriber A) per frame: steadier than rates on a
            // shared machine, and it shows what serving the stopped subscriber costs.
            BenchRow(
                name: "CPU µs per frame, publisher + A (alone | B stopped)",
                tributary: "\(fmt(median(soloCPU), 1)) | \(fmt(median(stoppedCPU), 1))",
                peer: "-", ratio: fmt(median(stoppedCPU) / median(soloCPU)) + "x"),
            BenchRow(
                name: "B after SIGCONT (last round)", tributary: accounting.last ?? "-", peer: "-",
                ratio: exact ? "exact in every round" : "MISMATCH"),
        ])
}

private struct SlowSubscriberRound {
    var rate: Double
    var cpuMicrosecondsPerFrame: Double = 0
    /// Frames A lost (announced in gap notices).
    var lostByA: UInt64 = 0
    var exact: Bool
    var accounting: String
}

/// One round: A alone (`peerPath` nil), or A with a stopped TransportPeer subscriber B.
private func slowSubscriberRound(frames: Int, rate: Double, peerPath: String?) throws -> SlowSubscriberRound {
    let source = RepeatingSource(delivery: .live, count: frames, rate: rate)
    let publisher = try Publisher(
        configuration: PublisherConfiguration(endpoint: "tcp://127.0.0.1:0", apiKey: "peer-key"),
        sources: [source])
    defer { publisher.stop() }
    let port = publisher.port!

    // B: a subscriber in its own process, stopped once it has started.
    var peer: Process?
    let peerInput = Pipe(), peerOutput = Pipe()
    if let peerPath {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: peerPath)
        process.arguments = ["subscribe", String(port), "B"]
        process.standardInput = peerInput
        process.standardOutput = peerOutput
        try process.run()
        peer = process
        let deadline = Date().addingTimeInterval(10)
        while publisher.subscribers().first(where: { $0.description == "B" })?.isStarted != true {
            guard Date() < deadline else { throw BenchError("slow-subscriber: B did not start") }
            usleep(1_000)
        }
        kill(process.processIdentifier, SIGSTOP)
    }
    defer {
        if let peer, peer.isRunning { kill(peer.processIdentifier, SIGCONT); peer.terminate() }
    }

    let cpuBefore = processCPUSeconds()
    let subject = try Subject()
    let observer = ThroughputObserver(expected: frames)
    subject.register(observer)
    try subject.open(address: "127.0.0.1", port: port, apiKey: "peer-key", description: "A", timeout: 10)
    try subject.start()
    while publisher.subscribers().first(where: { $0.description == "A" })?.isStarted != true { usleep(1_000) }
    source.startGate.signal()
    guard observer.done.wait(timeout: .now() + 60) == .success else { throw BenchError("slow-subscriber: A timed out") }
    let cpu = (processCPUSeconds() - cpuBefore) * 1e6 / Double(frames)
    subject.close()
    let seconds = Double(observer.last - observer.first) / 1e9
    let rate = Double(observer.bytes) * Double(observer.frames - 1) / Double(observer.frames) / seconds / 1e6
    let lostByA = observer.missing
    guard let peer else {
        return SlowSubscriberRound(rate: rate, cpuMicrosecondsPerFrame: cpu, lostByA: lostByA, exact: true, accounting: "")
    }

    // Resume B and wait until it has received or been told about every frame.
    kill(peer.processIdentifier, SIGCONT)
    let reader = peerOutput.fileHandleForReading
    var last: [String: Any] = [:]
    var buffered = ""
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline {
        let chunk = reader.availableData
        if chunk.isEmpty { break }
        buffered += String(decoding: chunk, as: UTF8.self)
        while let newline = buffered.firstIndex(of: "\n") {
            let line = String(buffered[..<newline])
            buffered.removeSubrange(...newline)
            if let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] { last = object }
        }
        let analog = last["analog"] as? Int ?? 0, missing = last["missing"] as? Int ?? 0
        if analog + missing >= frames { break }
    }
    let dropped = publisher.subscribers().first { $0.description == "B" }?.framesDropped ?? 0
    try? peerInput.fileHandleForWriting.close()
    peer.waitUntilExit()
    let analog = last["analog"] as? Int ?? 0, missing = last["missing"] as? Int ?? 0
    let unaccounted = last["unaccounted"] as? Int ?? -1
    let exact = analog + missing == frames && UInt64(missing) == dropped && unaccounted == 0
    return SlowSubscriberRound(
        rate: rate, cpuMicrosecondsPerFrame: cpu, lostByA: lostByA, exact: exact,
        accounting: "received \(analog), announced lost \(missing), publisher dropped \(dropped), unaccounted \(unaccounted)")
}

/// User + system CPU seconds of this process so far.
private func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}
