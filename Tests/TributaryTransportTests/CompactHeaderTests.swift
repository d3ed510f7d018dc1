import Foundation
import Testing
import TributaryWire

@testable import TributaryTransport

/// Compact header parts (docs/PROTOCOL.md §3.2) and the subscriber's pool of received parts.
@Suite struct CompactHeaderTests {
    // MARK: The bytes

    @Test func compactHeaderIsTheFortyByteHeaderWithoutMagicAndHeaderLength() throws {
        let header = FrameHeader(
            kind: .analog, flags: .replayed, sequence: 0x0102_0304_0506_0708, timestampNs: -5,
            sourceID: 0xA1B2_C3D4, filterID: 9, payloadLength: 65_536)
        var full = [UInt8](repeating: 0, count: 40), compact = [UInt8](repeating: 0xEE, count: 32)
        full.withUnsafeMutableBytes { header.encode(into: $0.baseAddress!) }
        compact.withUnsafeMutableBytes { CompactHeader.encode(header, into: $0.baseAddress!) }
        #expect(compact == Array(full[4..<8]) + Array(full[12..<40]))
        var expanded = [UInt8](repeating: 0xEE, count: 40)
        compact.withUnsafeBytes { bytes in expanded.withUnsafeMutableBytes { CompactHeader.expand(bytes, into: $0.baseAddress!) } }
        #expect(expanded == full)
    }

    @Test func specExampleKeepaliveBytes() throws {
        // docs/PROTOCOL.md §3.2: a keepalive, sequence 7, timestamp 1 700 000 000 000 000 000, compact.
        let expected: [UInt8] = [
            0x01, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0, 0, 0, 0, 0, 0, 0,
            0x00, 0x00, 0x2a, 0x36, 0xfe, 0x9c, 0x97, 0x17, 0, 0, 0, 0, 0, 0, 0, 0,
        ]
        let context = try ZMQContext()
        let pull = try testSocket(context, .pair), push = try testSocket(context, .pair)
        defer { push.close(); pull.close() }
        try pull.bind("inproc://compact-keepalive")
        try push.connect("inproc://compact-keepalive")
        try MessageFraming.sendExtension(
            kind: TransportKind.keepalive, sequence: 7, timestampNs: 1_700_000_000_000_000_000,
            routingID: nil, compact: true, on: push)
        let parts = try pull.receiveMultipart()
        #expect(parts.count == 1)
        #expect(parts.first?.bytes == expected)
        guard let first = parts.first else { return }
        let decoded = try first.withUnsafeBytes { (bytes) throws(WireError) in
            try MessageFraming.decode(header: bytes, payload: nil, extraParts: 0, maxFrameSize: 1 << 20, acceptCompact: true)
        }
        guard case .keepalive = decoded else { Issue.record("decoded as \(decoded)"); return }
    }

    // MARK: Decoding

    private func decode(_ header: [UInt8], payload: [UInt8]?, acceptCompact: Bool) throws(WireError) -> InboundFrame {
        let buffer = payload.map { FrameBuffer(copying: $0) }
        let part = FrameBuffer(copying: header)
        return try part.withUnsafeBytes { (bytes) throws(WireError) in
            try MessageFraming.decode(header: bytes, payload: buffer, extraParts: 0, maxFrameSize: 1 << 20, acceptCompact: acceptCompact)
        }
    }

    private func compactBytes(_ header: FrameHeader) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: CompactHeader.length)
        bytes.withUnsafeMutableBytes { CompactHeader.encode(header, into: $0.baseAddress!) }
        return bytes
    }

    @Test func compactSplitFrameDecodesLikeTheFullOne() throws {
        let frame = rampFrame(channels: 3, samples: 5)
        let payload = frame.buffer.array[40...].map { $0 }
        guard case .frame(let decoded) = try decode(compactBytes(frame.header), payload: payload, acceptCompact: true) else {
            Issue.record("not a frame"); return
        }
        #expect(decoded.header == frame.header)
        #expect(try decoded.payload().materialize() == frame.payload().materialize())
    }

    @Test func compactPartsAreMalformedUnlessAskedForOrWhenInconsistent() throws {
        let frame = rampFrame(channels: 1, samples: 4)
        let compact = compactBytes(frame.header)
        let payload = frame.buffer.array[40...].map { $0 }
        // Not asked for: a 32-byte first part is a truncated header.
        #expect { try decode(compact, payload: payload, acceptCompact: false) } throws: { ($0 as? WireError)?.code == .truncated }
        // A compact header announcing a payload that does not follow.
        #expect { try decode(compact, payload: nil, acceptCompact: true) } throws: {
            ($0 as? WireError)?.code == .lengthMismatch && ($0 as? WireError)?.field == "header.payload_length"
        }
        // The expanded header is checked like any other: a wrong version, an unknown kind, a short payload.
        var badVersion = compact
        badVersion[0] = 2
        #expect { try decode(badVersion, payload: payload, acceptCompact: true) } throws: {
            ($0 as? WireError)?.code == .unsupportedVersion
        }
        var badKind = compact
        badKind[1] = 14
        #expect { try decode(badKind, payload: payload, acceptCompact: true) } throws: { ($0 as? WireError)?.code == .unknownKind }
        #expect { try decode(compact, payload: Array(payload.dropLast(8)), acceptCompact: true) } throws: {
            ($0 as? WireError)?.code == .lengthMismatch
        }
        // A 40-byte header is still accepted from a peer that ignored the request.
        var full = [UInt8](repeating: 0, count: 40)
        full.withUnsafeMutableBytes { frame.header.encode(into: $0.baseAddress!) }
        guard case .frame(let decoded) = try decode(full, payload: payload, acceptCompact: true) else {
            Issue.record("not a frame"); return
        }
        #expect(decoded.header == frame.header)
    }

    // MARK: Negotiation

    @Test func publisherSendsCompactHeadersOnlyToSubscribersThatAskForThem() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        for asks in [false, true] {
            let client = try RawClient(port: publisher.port!)
            try client.socket.setOption(.receiveTimeout, Int32(5_000))
            let hello = Frame(
                encoding: .hello(Hello(apiKey: "secret", clientDescription: "raw", timeoutSeconds: 5)),
                timestampNs: wallClockNanoseconds(), flags: asks ? .compactHeaders : [])
            try client.send(hello)
            let parts = try client.socket.receiveMultipart()
            #expect(parts.count == 2)
            #expect(parts.first?.count == (asks ? CompactHeader.length : WireLimits.headerLength), "asks: \(asks)")
            let payload = FrameBuffer(copying: parts[1].bytes)
            let decoded = try parts[0].withUnsafeBytes { (bytes) throws(WireError) in
                try MessageFraming.decode(header: bytes, payload: payload, extraParts: 0, maxFrameSize: 1 << 20, acceptCompact: true)
            }
            guard case .frame(let welcome) = decoded else { Issue.record("not a frame"); continue }
            #expect(welcome.header.kind == .welcome)
            // Flag bit 9 on the welcome: the publisher reads compact header parts from this session.
            #expect(welcome.header.flags.contains(.compactHeaders) == asks, "asks: \(asks)")
        }
    }

    /// The next frame a raw client receives, compact or not (keepalives skipped); throws when none
    /// comes within the socket's receive timeout.
    private func receiveFrame(_ client: RawClient) throws -> Frame {
        while true {
            let parts = try client.socket.receiveMultipart()
            let payload = parts.count > 1 ? FrameBuffer(copying: parts[1].bytes) : nil
            let decoded = try parts[0].withUnsafeBytes { (bytes) throws(WireError) in
                try MessageFraming.decode(
                    header: bytes, payload: payload, extraParts: max(0, parts.count - 2), maxFrameSize: 1 << 20,
                    acceptCompact: true)
            }
            if case .frame(let frame) = decoded { return frame }
        }
    }

    @Test func publisherReadsCompactHeaderPartsOnlyFromSessionsThatAskedForThem() throws {
        let inbox = Inbox()
        let publisher = try makePublisher(inbox: inbox)
        defer { publisher.stop() }
        for asks in [true, false] {
            let client = try RawClient(port: publisher.port!)
            try client.socket.setOption(.receiveTimeout, Int32(5_000))
            try client.send(
                Frame(
                    encoding: .hello(Hello(apiKey: "secret", clientDescription: "raw \(asks)", timeoutSeconds: 5)),
                    timestampNs: wallClockNanoseconds(), flags: asks ? .compactHeaders : []))
            #expect(try receiveFrame(client).header.kind == .welcome)
            // A message and a header-only start, each with a 32-byte compact header part.
            let message = Frame(encoding: .message(Message("compact \(asks)", code: 7)), sequence: 1, timestampNs: wallClockNanoseconds())
            var payload = try MessageFraming.payloadMessage(message)
            try MessageFraming.send(header: message.header, payload: &payload, routingID: nil, compact: true, on: client.socket)
            try MessageFraming.sendExtension(
                kind: TransportKind.keepalive, sequence: 2, timestampNs: wallClockNanoseconds(),
                routingID: nil, compact: true, on: client.socket)
            if asks {
                #expect(waitUntil { inbox.all.contains { $0.subscriberDescription == "raw true" } })
                let received = inbox.all.first { $0.subscriberDescription == "raw true" }
                guard case .message(let m)? = received?.package.content else {
                    Issue.record("no message: \(String(describing: received))"); continue
                }
                #expect(m == Message("compact true", code: 7))
                #expect(received?.package.header.sequence == 1)
                #expect(publisher.subscribers().contains { $0.description == "raw true" })
            } else {
                // Not negotiated: a 32-byte first part is a truncated header, and the session ends.
                var frames: [Frame] = []
                while let frame = try? receiveFrame(client) {
                    frames.append(frame)
                    if frame.header.kind == .close { break }
                }
                guard case .error(let report)? = try frames.first(where: { $0.header.kind == .error })?.payload() else {
                    Issue.record("no error frame: \(frames.map(\.header.kind))"); continue
                }
                #expect(report.code == .malformedFrame)
                #expect(report.message.contains("header"), "\(report.message)")
                #expect(frames.last?.header.kind == .close)
                #expect(!inbox.all.contains { $0.subscriberDescription == "raw false" })
            }
        }
    }

    @Test func subjectReceivesTheSameDataWithAndWithoutCompactHeaders() throws {
        for compact in [true, false] {
            let publisher = try makePublisher()
            defer { publisher.stop() }
            let subject = try Subject(options: SubjectOptions(compactHeaders: compact))
            let recorder = Recorder()
            subject.register(recorder)
            _ = try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "c", timeout: 5)
            try subject.start()
            #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
            let sent = (0..<20).map { rampFrame(channels: 2, samples: 64, first: $0 * 64) }
            for frame in sent { #expect(publisher.publish(frame)) }
            #expect(waitUntil { recorder.analog.count == 20 })
            for ((header, data), frame) in zip(recorder.analog, sent) {
                #expect(header.sourceID == frame.header.sourceID)
                #expect(header.timestampNs == frame.header.timestampNs)
                #expect(.analog(data) == (try frame.payload().materialize()))
            }
            #expect(subject.statistics().unaccountedLoss == 0)
            subject.close()
        }
    }

    // MARK: The receive pool

    /// Keeps every analog view it is given (not a copy): the pool must never refill a part that a
    /// view still points into, however many frames come after it.
    final class KeepingObserver: Observer, @unchecked Sendable {
        // `@unchecked Sendable`: behind the lock.
        private let lock = NSLock()
        private var views: [AnalogView] = []
        var kept: [AnalogView] { lock.withLock { views } }
        func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) { lock.withLock { views.append(data) } }
    }

    @Test func heldViewsKeepTheirBytesWhilePooledPartsAreReused() throws {
        let publisher = try makePublisher()
        defer { publisher.stop() }
        // A small callback queue gives a small pool (capacity + 16 slots): 300 frames go round it many times.
        let subject = try Subject(callbackQueue: CallbackQueue(capacity: 4))
        let keeper = KeepingObserver(), recorder = Recorder()
        subject.register(keeper)
        _ = try subject.open(address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "pool", timeout: 5)
        try subject.start()
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        let frames = 300
        var published = 0
        for index in 0..<frames {
            let frame = rampFrame(channels: 2, samples: 512, first: index * 512)
            while !publisher.publish(frame) { usleep(500) }
            published += 1
        }
        #expect(waitUntil(.seconds(10)) { keeper.kept.count + Int(subject.statistics().framesMissing) == published })
        let kept = keeper.kept
        #expect(subject.statistics().unaccountedLoss == 0)
        // Each kept view still holds its own frame's samples: row * 1000 + sample + first.
        for view in kept {
            let first = Int(view.firstSample)
            for channel in 0..<view.channelCount {
                let samples = view.values(channel: channel)
                #expect(samples.count == 512)
                #expect(samples.first == Double(channel * 1000 + first))
                #expect(samples.last == Double(channel * 1000 + 511 + first))
            }
        }
        // Views that are released go back to the pool: with an observer that copies, slots are reused.
        subject.unregister(keeper)
        subject.register(recorder)
        for index in 0..<100 {
            while !publisher.publish(rampFrame(channels: 2, samples: 512, first: (frames + index) * 512)) { usleep(500) }
        }
        #expect(waitUntil(.seconds(10)) { recorder.analog.count + Int(subject.statistics().framesMissing) >= 100 })
        for (_, data) in recorder.analog {
            let expected = try rampFrame(channels: 2, samples: 512, first: Int(data.firstSample)).payload().materialize()
            #expect(.analog(data) == expected)
        }
        subject.close()
    }
}

/// `ZMQReceivePool` on its own, over an inproc pair: reuse, prompt release, held slots and large parts.
@Suite struct ReceivePoolTests {
    /// A connected inproc pair on its own context.
    private func pair(_ name: String) throws -> (context: ZMQContext, receiver: ZMQSocket, sender: ZMQSocket) {
        let context = try ZMQContext()
        let receiver = try testSocket(context, .pair), sender = try testSocket(context, .pair)
        try receiver.bind("inproc://\(name)")
        try sender.connect("inproc://\(name)")
        return (context, receiver, sender)
    }

    @Test func slotsAreReusedReleasedPromptlyAndNeverWhileHeld() throws {
        let (context, receiver, sender) = try pair("receive-pool")
        defer { sender.close(); receiver.close(); withExtendedLifetime(context) {} }
        let pool = ZMQReceivePool(capacity: 4)
        // Parts above the small-copy limit: the slots hold libzmq's messages.
        let size = ZMQReceivePool.smallCopyLimit + 64
        func send(_ byte: UInt8, count: Int = size) throws { try sender.send([UInt8](repeating: byte, count: count)) }

        // Consumed parts: each receive closes what was released before it, so at most one slot holds a message.
        var first: FrameBuffer? = nil
        for byte in UInt8(1)...10 {
            try send(byte)
            let (buffer, more) = try pool.receive(on: receiver)
            #expect(!more)
            #expect(buffer.array == [UInt8](repeating: byte, count: size))
            if byte == 1 { first = buffer }  // slot 0 stays held from here on
        }
        #expect(pool.unpooledParts == 2, "slot 0 came round twice while held")
        #expect(pool.copiedParts == 0)
        #expect(first?.array == [UInt8](repeating: 1, count: size), "a held slot was refilled")
        pool.trim()
        #expect(pool.filledSlots == 1, "only the held slot keeps its message after a trim")
        first = nil
        pool.trim()
        #expect(pool.filledSlots == 0)
        // With nothing held, each receive closes the message released before it, without a trim.
        for byte in UInt8(11)...20 {
            try send(byte)
            #expect(try pool.receive(on: receiver).buffer.array.first == byte)
            #expect(pool.filledSlots == 1, "after part \(byte)")
        }
        pool.trim()

        // A part above the pooled size gets a buffer of its own, and the slot stays empty.
        try send(7, count: ZMQReceivePool.maxPooledPartSize + 8)
        let (large, _) = try pool.receive(on: receiver)
        #expect(large.count == ZMQReceivePool.maxPooledPartSize + 8)
        #expect(pool.unpooledParts == 3)
        #expect(pool.filledSlots == 0)
    }

    /// Small parts are copied into the slots' own aligned memory and their messages closed at once
    /// (libzmq's read buffer is not held by them); a held slot keeps its copy; the copies' memory
    /// is reused, and bounded: beyond `maxCopyBytes` small parts are views again.
    @Test func smallPartsAreAlignedCopiesAndReleaseTheirMessagesAtOnce() throws {
        let (context, receiver, sender) = try pair("receive-pool-small")
        defer { sender.close(); receiver.close(); withExtendedLifetime(context) {} }
        let pool = ZMQReceivePool(capacity: 4)
        var held: [FrameBuffer] = []
        for (k, count) in [0, 1, 33, 1_000, 1_001, ZMQReceivePool.smallCopyLimit, 77, 3].enumerated() {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ k) }
            try sender.send(bytes)
            let unpooled = pool.unpooledParts
            let (buffer, _) = try pool.receive(on: receiver)
            #expect(buffer.array == bytes, "part \(k) of \(count) bytes")
            // (A part that finds its slot held gets a view of its own, as before.)
            #expect(pool.unpooledParts > unpooled || buffer.isAligned(to: 16), "part \(k)")
            #expect(pool.filledSlots == 0, "the message of a copied part is closed at once")
            if k == 3 { held.append(buffer) }  // slot 3 stays held: its copy must not be overwritten
        }
        #expect(pool.copiedParts == 7, "the part that found slot 3 held got a buffer of its own")
        #expect(pool.unpooledParts == 1)
        #expect(held[0].array == (0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        // Four slots' copies, each a multiple of 256 bytes.
        #expect(pool.copyBytes > 0 && pool.copyBytes % 256 == 0 && pool.copyBytes <= 4 * (ZMQReceivePool.smallCopyLimit + 256))

        // The bound: a pool with more slots than maxCopyBytes holds in copies of the largest small part.
        let slots = ZMQReceivePool.maxCopyBytes / ZMQReceivePool.smallCopyLimit + 8
        let big = ZMQReceivePool(capacity: slots)
        var keep: [FrameBuffer] = []
        for _ in 0..<slots {
            try sender.send([UInt8](repeating: 9, count: ZMQReceivePool.smallCopyLimit))
            keep.append(try big.receive(on: receiver).buffer)
        }
        #expect(big.copyBytes <= ZMQReceivePool.maxCopyBytes)
        #expect(big.copiedParts == UInt64(ZMQReceivePool.maxCopyBytes / ZMQReceivePool.smallCopyLimit))
        #expect(big.filledSlots == 8, "beyond the bound, small parts are views into their messages")
        #expect(keep.allSatisfy { $0.array == [UInt8](repeating: 9, count: ZMQReceivePool.smallCopyLimit) })
    }

    /// Copy memory reserved up front (the publisher's pool): every slot has it from the start, parts
    /// that fit use it without growing it, larger ones grow their slot as before.
    @Test func reservedCopyMemoryIsGivenToEverySlotAtOnce() throws {
        let (context, receiver, sender) = try pair("receive-pool-reserved")
        defer { sender.close(); receiver.close(); withExtendedLifetime(context) {} }
        let pool = ZMQReceivePool(capacity: 6, reservedCopyBytes: 200)
        #expect(pool.copyBytes == 6 * 256)
        for round in 0..<3 {
            for k in 0..<6 {
                let bytes = (0..<(32 + k * 40)).map { UInt8(truncatingIfNeeded: $0 &+ k &+ round) }
                try sender.send(bytes)
                let (buffer, _) = try pool.receive(on: receiver)
                #expect(buffer.array == bytes && buffer.isAligned(to: 16))
            }
        }
        #expect(pool.copyBytes == 6 * 256 && pool.copiedParts == 18)
        try sender.send([UInt8](repeating: 1, count: 1_000))
        #expect(try pool.receive(on: receiver).buffer.array == [UInt8](repeating: 1, count: 1_000))
        #expect(pool.copyBytes == 5 * 256 + 1_024)
        // Never beyond the bound, however many slots.
        let huge = ZMQReceivePool(capacity: ZMQReceivePool.maxCopyBytes / 256 + 10, reservedCopyBytes: 256)
        #expect(huge.copyBytes == ZMQReceivePool.maxCopyBytes)
    }
}
