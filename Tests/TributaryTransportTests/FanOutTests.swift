import Foundation
import Testing
import TributaryWire

@testable import TributaryTransport

/// The publisher's fan-out on its own: a ROUTER made as the publisher makes it, sessions made by
/// hand, and one DEALER per session over inproc reading what the fan-out sent it.
@Suite struct FanOutTests {
    /// A ROUTER, its fan-out and the peers of its sessions.
    final class Bench {
        let context: ZMQContext
        let router: ZMQSocket
        let fanOut: FanOut
        var sessions: [Session] = []
        var peers: [ZMQSocket] = []
        let endpoint = "inproc://fan-out-\(UUID().uuidString)"

        init(digitalOnChangeOnly: Bool = false, policy: SlowConsumerPolicy = .dropAndCount, queueFrames: Int32 = 1_000) throws {
            context = try ZMQContext()
            var settings = ZMQRouterSettings()
            settings.sendHighWaterMark = queueFrames
            router = try ZMQSocket.publisherRouter(context: context, settings: settings)
            try router.bind(endpoint)
            fanOut = FanOut(router: router, digitalOnChangeOnly: digitalOnChangeOnly, slowConsumerPolicy: policy)
        }

        /// A started session and the DEALER its frames go to (the ROUTER has read its first message,
        /// so it knows the peer). `queueFrames` bounds what the peer's side of the pipe holds.
        @discardableResult
        func addSession(started: Bool = true, selecting sources: [UInt32]? = nil, queueFrames: Int32 = 1_000) throws -> Session {
            let routingID = Array("peer-\(sessions.count + 1)".utf8)
            let peer = try testSocket(context, .dealer)
            try peer.setOption(.receiveHighWaterMark, queueFrames)
            try peer.setOption(.routingID, String(decoding: routingID, as: UTF8.self))
            try peer.connect(endpoint)
            try peer.send(Array("hi".utf8))
            _ = try router.receiveMultipart()
            let hello = Hello(apiKey: "k", clientDescription: "fan-out test", sourceFilterEnabled: sources != nil)
            let session = Session(
                sessionID: UInt64(sessions.count + 1), routingID: routingID, hello: hello, timeoutNs: 10_000_000_000,
                address: "", userID: nil, maxTransferSize: 1 << 20, now: monotonicNanoseconds())
            session.started = started
            if let sources {
                session.selectedSources = Set(sources)
                session.selectionOrder = sources
            }
            sessions.append(session)
            peers.append(peer)
            return session
        }

        func live(_ frame: Frame, to target: HandOffTarget = .all) -> FanOut.Delivery {
            fanOut.live(HandOffItem(frame: frame, target: target, lossless: false), to: sessions, now: monotonicNanoseconds())
        }

        /// Everything queued for peer `index`, decoded (gap notices included), without waiting for more.
        func received(by index: Int) throws -> [Frame] {
            var frames: [Frame] = []
            while true {
                let parts: [ZMQReceivedMessage]
                do throws(ZMQError) { parts = try peers[index].receiveMultipart(flags: .dontWait) } catch {
                    guard error.code == .again else { throw error }
                    return frames
                }
                guard case .frame(let frame) = try MessageFraming.decode(parts[...], maxFrameSize: 1 << 24) else {
                    Issue.record("peer \(index) received something that is not a frame")
                    continue
                }
                frames.append(frame)
            }
        }
    }

    static func message(_ text: String, source: UInt32 = 1) -> Frame {
        Frame(encoding: .message(Message(text)), timestampNs: 7, sourceID: source)
    }

    static func text(_ frame: Frame) throws -> String? {
        guard case .message(let m) = try frame.payload().materialize() else { return nil }
        return m.text
    }

    @Test func aLiveFrameGoesToEveryStartedSessionUnderItsOwnNumbers() throws {
        let bench = try Bench()
        try bench.addSession()
        try bench.addSession(started: false)
        let third = try bench.addSession()
        // The third session already sent one frame: its numbering goes on from there.
        _ = third.send(.message(Message("before")), on: bench.router, now: 0)
        for text in ["a", "b"] {
            let delivery = bench.live(Self.message(text))
            #expect(delivery.gone.isEmpty && delivery.tooSlow.isEmpty && delivery.held == 0)
        }
        let first = try bench.received(by: 0)
        #expect(try first.map { try Self.text($0) } == ["a", "b"])
        #expect(first.map(\.header.sequence) == [0, 1])
        #expect(try bench.received(by: 1).isEmpty)
        let last = try bench.received(by: 2)
        #expect(try last.map { try Self.text($0) } == ["before", "a", "b"])
        #expect(last.map(\.header.sequence) == [0, 1, 2])
        // The header is the frame's own, the number aside.
        #expect(first[0].header.timestampNs == 7 && first[0].header.sourceID == 1)
        #expect(bench.fanOut.framesPublished == 2)
    }

    @Test func sourceSelectionFiltersDataKindsOnlyAndATargetReachesOneSession() throws {
        let bench = try Bench()
        try bench.addSession(selecting: [2])
        let other = try bench.addSession()
        _ = bench.live(Self.message("from 1", source: 1))
        _ = bench.live(Self.message("from 2", source: 2))
        // A configuration is not data: a session that selected other sources still gets it.
        let configuration = Frame(
            encoding: .configuration(Configuration(deviceName: "d", deviceType: "t", channels: [])), sourceID: 1)
        _ = bench.live(configuration)
        _ = bench.live(Self.message("only to the second"), to: .session(other.sessionID))
        let selecting = try bench.received(by: 0)
        #expect(selecting.map(\.header.kind) == [.message, .configuration])
        #expect(try Self.text(selecting[0]) == "from 2")
        let all = try bench.received(by: 1)
        #expect(all.map(\.header.kind) == [.message, .message, .configuration, .message])
        #expect(try Self.text(all[3]) == "only to the second")
    }

    @Test func everySessionGetsTheSamePayloadBytes() throws {
        let bench = try Bench()
        for _ in 0..<5 { try bench.addSession() }
        let frame = rampFrame(channels: 8, samples: 16)
        _ = bench.live(frame)
        let expected = try frame.payload().materialize()
        for index in 0..<5 {
            let got = try bench.received(by: index)
            #expect(got.count == 1)
            #expect(try got.first?.payload().materialize() == expected)
        }
    }

    @Test func digitalFramesThatChangeNothingAreSuppressedWhenAsked() throws {
        let bench = try Bench(digitalOnChangeOnly: true)
        try bench.addSession()
        // One line, two samples a frame: high, high again (no change), then a fall within the frame.
        let lines = Frame(encoding: .digital(DigitalData(lines: [[true, true]])), sourceID: 1)
        _ = bench.live(lines)
        _ = bench.live(lines)
        _ = bench.live(Frame(encoding: .digital(DigitalData(lines: [[true, false]])), sourceID: 1))
        #expect(try bench.received(by: 0).count == 2)
        #expect(bench.fanOut.framesPublished == 3 && bench.fanOut.digitalSuppressed == 1)

        let unfiltered = try Bench()
        try unfiltered.addSession()
        _ = unfiltered.live(lines)
        _ = unfiltered.live(lines)
        #expect(try unfiltered.received(by: 0).count == 2)
        #expect(unfiltered.fanOut.digitalSuppressed == 0)
    }

    @Test(arguments: [SlowConsumerPolicy.dropAndCount, .disconnect])
    func aFullQueueDropsLiveFramesAndCountsThem(policy: SlowConsumerPolicy) throws {
        let bench = try Bench(policy: policy, queueFrames: 2)
        let slow = try bench.addSession(queueFrames: 2)
        try bench.addSession()
        var tooSlow = 0
        for index in 0..<50 { tooSlow += bench.live(Self.message("\(index)")).tooSlow.count }
        #expect(slow.info.framesDropped > 0)
        #expect(tooSlow == (policy == .disconnect ? Int(slow.info.framesDropped) : 0))
        // The other session lost nothing.
        #expect(try bench.received(by: 1).count == 50)
        // What the slow one got is in order; once it has read them (libzmq tells the ROUTER so
        // shortly after), the next frame that fits is preceded by the notice of the gap before it.
        let got = try bench.received(by: 0)
        #expect(!got.isEmpty && got.count < 50)
        #expect(got.map(\.header.sequence) == Array(0..<UInt64(got.count)))
        var next: [Frame] = []
        for _ in 0..<500 where next.isEmpty {
            usleep(1_000)
            _ = bench.live(Self.message("after"))
            next = try bench.received(by: 0)
        }
        #expect(next.map(\.header.kind) == [.gap, .message])
        guard next.count == 2, case .gap(let gap) = try next[0].payload().materialize() else { return }
        // The gap covers every number from the last frame received to the one after the notice.
        #expect(gap.firstMissingSequence == UInt64(got.count))
        #expect(gap.firstMissingSequence + gap.missingCount == next[0].header.sequence)
        #expect(next[1].header.sequence == next[0].header.sequence + 1)
        #expect(try Self.text(next[1]) == "after")
    }

    @Test func losslessFramesWaitInOrderForAFullQueueAndGoWhenItHasRoom() throws {
        let bench = try Bench(queueFrames: 2)
        let session = try bench.addSession(queueFrames: 2)
        session.credit.grant(100)
        var held = 0
        for index in 0..<20 {
            let delivery = bench.fanOut.lossless(Self.message("\(index)"), to: bench.sessions, now: 0)
            #expect(delivery.gone.isEmpty)
            held += delivery.held
        }
        #expect(held > 0 && held == session.heldLossless.count)
        #expect(session.info.framesDropped == 0)
        var texts = try bench.received(by: 0).map { try Self.text($0) }
        var released = 0
        while released < held {
            let flushed = bench.fanOut.flushHeld(bench.sessions, now: 0)
            #expect(flushed.gone.isEmpty && flushed.held == 0)
            released += flushed.released
            texts += try bench.received(by: 0).map { try Self.text($0) }
        }
        #expect(released == held && session.heldLossless.isEmpty)
        #expect(texts == (0..<20).map { "\($0)" })
        #expect(session.credit.isEmpty == false)
        #expect(bench.fanOut.framesPublished == 20)
    }

    @Test func aSessionWhosePeerIsGoneIsReported() throws {
        let bench = try Bench()
        try bench.addSession()
        let hello = Hello(apiKey: "k", clientDescription: "nobody")
        let ghost = Session(
            sessionID: 99, routingID: Array("ghost".utf8), hello: hello, timeoutNs: 1_000_000_000, address: "", userID: nil,
            maxTransferSize: 1 << 20, now: 0)
        ghost.started = true
        bench.sessions.append(ghost)
        let delivery = bench.live(Self.message("x"))
        #expect(delivery.gone.map(\.sessionID) == [99])
        #expect(try bench.received(by: 0).count == 1)
    }

    @Test func channelFiltersSendTheirOwnOutputsAndAMalformedFrameIsCounted() throws {
        let bench = try Bench()
        let filtered = try bench.addSession()
        try bench.addSession()
        try filtered.filters.add(try AnalogFilterRequest(query: "1-2"), id: 1)
        let frame = rampFrame(channels: 4, samples: 5)
        _ = bench.live(frame)
        var expected: [Package] = []
        try filtered.filters.outputs(for: frame) { expected.append(try $0.payload().materialize()) }
        let got = try bench.received(by: 0)
        #expect(try got.map { try $0.payload().materialize() } == expected)
        #expect(got.map(\.header.filterID) == [1])
        #expect(try bench.received(by: 1).first?.payload().materialize() == frame.payload().materialize())

        // An analog frame whose payload does not read: nothing for the filtered session, counted.
        var header = frame.header
        header.payloadLength = 8
        let broken = try Frame(header: header, payload: FrameBuffer(copying: [UInt8](repeating: 0xFF, count: 8)), position: 0)
        _ = bench.live(broken)
        #expect(try bench.received(by: 0).isEmpty)
        #expect(bench.fanOut.applicationFrameErrors == 1)
    }
}
