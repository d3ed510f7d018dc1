import Testing

@testable import TributaryTransport

@Suite struct ZMQMessageTests {
    /// A connected ROUTER (mandatory) / DEALER pair; the dealer's routing id is "peer".
    func pair(_ context: ZMQContext, _ endpoint: String) throws -> (router: ZMQSocket, dealer: ZMQSocket) {
        let (router, dealer) = try routerAndDealer(context, endpoint, routingID: "peer")
        try dealer.send(Array("hello".utf8))
        _ = try router.receiveMultipart()
        return (router, dealer)
    }

    @Test func zeroCopyOverInprocDeliversTheSendersBytesAndFreesOnceWhenTheReceiverLetsGo() throws {
        let context = try ZMQContext()
        let (router, dealer) = try pair(context, "inproc://zero-copy")
        let counter = DeinitCounter()
        var received: ZMQReceivedMessage?
        do {
            let owner = CountedBytes(count: 4096, seed: 3, counter: counter)
            let base = UnsafeRawPointer(owner.buffer.baseAddress!)
            try router.send(Array("peer".utf8), flags: .sendMore)
            try router.send(noCopy: base, count: 4096, owner: owner)
            received = try dealer.receive()
            // inproc passes the message itself: the receiver sees the sender's buffer, not a copy.
            #expect(received?.baseAddress == base)
        }
        #expect(counter.value == 0)  // the received message still references the bytes
        #expect(received.map { $0.withUnsafeBytes { holdsPattern($0, seed: 3) } } == true)
        received = nil
        #expect(counter.value == 1)
    }

    @Test func zeroCopyOverTCPFreesTheOwnerExactlyOnce() throws {
        let context = try ZMQContext()
        let (router, dealer) = try pair(context, "tcp://127.0.0.1:0")
        let counter = DeinitCounter()
        for seed in 0..<8 {
            let owner = CountedBytes(count: 100_000, seed: UInt8(seed), counter: counter)
            try router.send(Array("peer".utf8), flags: .sendMore)
            try router.send(noCopy: owner.buffer.baseAddress!, count: owner.buffer.count, owner: owner)
        }
        for seed in 0..<8 {
            let part = try dealer.receive()
            #expect(part.count == 100_000)
            #expect(part.withUnsafeBytes { holdsPattern($0, seed: UInt8(seed)) })
        }
        // The I/O thread releases each owner after writing it; wait (bounded) for all eight.
        #expect(eventually { counter.value == 8 })
        #expect(counter.value == 8)
    }

    @Test func failedZeroCopySendReleasesTheOwner() throws {
        let context = try ZMQContext()
        let router = try mandatoryRouter(context, "inproc://nobody")
        let counter = DeinitCounter()
        do {
            let owner = CountedBytes(count: 1000, seed: 1, counter: counter)
            let message = try ZMQMessage(noCopy: owner.buffer.baseAddress!, count: 1000, owner: owner)
            // The routing id part fails (unknown peer); the message was never sent and is dropped here.
            #expect(throws: ZMQError(.hostUnreachable, operation: "zmq_send")) {
                try router.send(Array("ghost".utf8), flags: [.sendMore, .dontWait])
            }
            _ = consume message
        }
        #expect(counter.value == 1)
        do {
            let owner = CountedBytes(count: 1000, seed: 2, counter: counter)
            // A part that itself fails: a DEALER with no peer and ZMQ_DONTWAIT.
            let dealer = try testSocket(context, .dealer)
            #expect(throws: ZMQError(.again, operation: "zmq_msg_send")) {
                try dealer.send(noCopy: owner.buffer.baseAddress!, count: 1000, owner: owner, flags: .dontWait)
            }
        }
        #expect(counter.value == 2)
    }

    @Test func sharedFanOutCopiesNothingAndFreesOnceAfterTheLastPeer() throws {
        let context = try ZMQContext()
        let router = try mandatoryRouter(context, "inproc://fan-out")
        var dealers: [ZMQSocket] = []
        for index in 0..<3 {
            let dealer = try testSocket(context, .dealer)
            try dealer.setOption(.routingID, "peer-\(index)")
            try dealer.connect("inproc://fan-out")
            try dealer.send([0])
            _ = try router.receiveMultipart()
            dealers.append(dealer)
        }
        let counter = DeinitCounter()
        var held: [ZMQReceivedMessage] = []
        do {
            let owner = CountedBytes(count: 256, seed: 9, counter: counter)
            var message = try ZMQMessage(noCopy: owner.buffer.baseAddress!, count: 256, owner: owner)
            for index in 0..<3 {
                try router.send(Array("peer-\(index)".utf8), flags: [.sendMore, .dontWait])
                try router.send(sharing: &message, flags: .dontWait)
            }
            for dealer in dealers { held.append(try dealer.receive()) }
            #expect(held.allSatisfy { $0.baseAddress == UnsafeRawPointer(owner.buffer.baseAddress!) })
        }
        #expect(counter.value == 0)
        held.removeLast()
        #expect(counter.value == 0)
        held.removeAll()
        #expect(counter.value == 1)
    }

    @Test(arguments: [40, 1_000, 8_000, 100_000])
    func receivedBytesStayValidWhileReferenced(size: Int) throws {
        let context = try ZMQContext()
        let (router, dealer) = try pair(context, "tcp://127.0.0.1:0")
        for seed in 0..<16 {
            var bytes = [UInt8](repeating: 0, count: size)
            for index in 0..<size { bytes[index] = pattern(index, UInt8(seed)) }
            try dealer.send(bytes)
        }
        var kept: [ZMQReceivedMessage] = []
        for _ in 0..<16 {
            let parts = try router.receiveMultipart()
            kept.append(parts[1])
        }
        // Later receives reuse libzmq's receive buffers; the views of earlier parts must be unaffected.
        for (seed, part) in kept.enumerated() {
            #expect(part.count == size)
            #expect(part.withUnsafeBytes { holdsPattern($0, seed: UInt8(seed)) })
        }
    }

    @Test func reusableReceiveMessage() throws {
        let context = try ZMQContext()
        let (router, dealer) = try pair(context, "inproc://reuse")
        var message = ZMQMessage()
        for round in 0..<3 {
            try router.send(multipart: [Array("peer".utf8), [UInt8(round), 1, 2]])
            try dealer.receive(into: &message)
            let count = message.count, more = message.hasMore
            let bytes = message.withUnsafeBytes { Array($0) }
            #expect(count == 3)
            #expect(more == false)
            #expect(bytes == [UInt8(round), 1, 2])
        }
    }

    /// Records where libzmq puts received bytes over tcp: the facts the wire decoder relies on.
    @Test func receivedDataAlignmentOverTCP() throws {
        let context = try ZMQContext()
        let (router, dealer) = try pair(context, "tcp://127.0.0.1:0")
        var misalignedLarge: [Int] = []
        var sawMisalignedSmall = false
        for size in [40, 41, 100, 1_000, 4_000, 8_000, 8_184, 9_000, 65_536, 1 << 20, 4 << 20] {
            for offset in 0..<4 {
                // Messages are sent back to back, so small ones land at varying offsets of the batch.
                try dealer.send([UInt8](repeating: 1, count: size + offset))
                let part = try router.receiveMultipart()[1]
                if part.count >= 8_184 && !part.isAligned(to: 8) { misalignedLarge.append(part.count) }
                if part.count < 8_000 && !part.isAligned(to: 8) { sawMisalignedSmall = true }
            }
        }
        // Parts that do not fit in the 8 KiB receive batch are malloc'ed behind libzmq's 40-byte header: 8-aligned.
        #expect(misalignedLarge.isEmpty)
        // Parts inside the batch are views into the receive buffer: alignment is not guaranteed.
        #expect(sawMisalignedSmall)
    }
}
