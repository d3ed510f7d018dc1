// libFuzzer target for the subscriber's session state machine (SubscriberSession): an arbitrary
// sequence of frames, as a hostile publisher would send them, with every header field the
// fuzzer's — sequence numbers, gap counts, timestamps, source and filter ids — fed in order after
// a welcome. Nothing may trap; the counters only grow; a session that ended takes no more frames.
//
// Input: a stream of records, each [1 byte: what][40-byte header template fields][payload]. Rather
// than raw bytes (which the wire fuzzer covers), each record builds a valid frame of a kind the
// first byte picks, so the state machine sees deep sequences instead of decode errors.

@_cdecl("LLVMFuzzerTestOneInput")
public func sessionFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: data, count: size))
    var session = SubscriberSession(
        creditWindow: UInt32(input.byte() % 16 + 1), creditWindowBytes: Int(input.byte()) << 10,
        maxTransferSize: 1 << 16, maxSources: Int(input.byte() % 8 + 1),
        maxConfigurationBytes: Int(input.byte()) << 4)
    _ = session.opened()
    var open = true
    var before = (session.gapNotices, session.framesMissing, session.unaccountedLoss)
    while !input.isEmpty {
        let what = input.byte()
        let frame = makeFrame(what, &input)
        if let ending = session.sequence(of: frame.header, open: open, endpoint: "fuzz") {
            guard case .end = ending else { fatalError("sequence() answered something other than an end") }
            open = false
            session.reset()
            _ = session.opened()
            open = true
            continue
        }
        switch session.receive(frame) {
        case .deliver(let package):
            if package.header.kind != frame.header.kind && !(frame.header.kind == .gap || package.header.kind == .error) {
                if !(frame.header.kind == .file || frame.header.kind == .image) {
                    fatalError("delivered a \(package.header.kind) for a \(frame.header.kind) frame")
                }
            }
        case .none:
            break
        case .end:
            session.reset()
            _ = session.opened()
        }
        if let grant = session.takeGrant() { session.credit.granted(grant) }
        let now = (session.gapNotices, session.framesMissing, session.unaccountedLoss)
        if now.0 < before.0 || now.1 < before.1 || now.2 < before.2 { fatalError("a loss counter went down: \(before) -> \(now)") }
        before = now
    }
    return 0
}

/// Reads the fuzzer's bytes as numbers; past the end it reads zeros.
struct FuzzInput {
    var bytes: UnsafeRawBufferPointer
    var position = 0
    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    var isEmpty: Bool { position >= bytes.count }
    mutating func byte() -> UInt8 {
        defer { position += 1 }
        return position < bytes.count ? bytes[position] : 0
    }
    mutating func u32() -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 { value = value << 8 | UInt32(byte()) }
        return value
    }
    mutating func u64() -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return value
    }
    /// A number that is often at an edge: 0, 1, max, max - 1, or the fuzzer's bytes.
    mutating func edgy64() -> UInt64 {
        switch byte() % 6 {
        case 0: 0
        case 1: 1
        case 2: .max
        case 3: .max - 1
        case 4: UInt64(byte())
        default: u64()
        }
    }
}

func makeFrame(_ what: UInt8, _ input: inout FuzzInput) -> Frame {
    let sequence = input.edgy64()
    let timestamp = Int64(bitPattern: input.edgy64())
    let source = input.byte() % 4 == 0 ? input.u32() : UInt32(input.byte() % 12)
    let filter = input.byte() % 4 == 0 ? input.u32() : UInt32(input.byte() % 3)
    let package: Package
    switch what % 9 {
    case 0:
        let channels = Int(input.byte() % 4)
        let rate = [0, 1e-6, 1, 1000, 1e12, Double(input.u32())][Int(input.byte() % 6)]
        package = .configuration(
            Configuration(
                deviceName: "d", deviceType: "t",
                channels: (0..<channels).map {
                    ChannelConfiguration(
                        index: UInt32($0), description: String(repeating: "c", count: Int(input.byte())), unit: "V",
                        samplingRate: rate)
                }))
    case 1:
        let n = Int(input.byte() % 8)
        package = .analog(AnalogData(channels: [[Double](repeating: 1, count: n)], firstSample: input.edgy64()))
    case 2:
        package = .gap(Gap(firstMissingSequence: input.edgy64(), missingCount: input.edgy64()))
    case 3:
        package = .message(Message("m", code: Int32(bitPattern: input.u32())))
    case 4:
        package = .close(Close(code: ErrorCode(rawValue: input.u32() % 20), reason: "r"))
    case 5:
        package = .error(ErrorReport(ErrorCode(rawValue: input.u32() % 20), "e"))
    case 6:
        let content = [UInt8](repeating: input.byte(), count: Int(input.byte()))
        let total = input.byte() % 2 == 0 ? UInt64(content.count) : input.edgy64()
        let count = UInt32(input.byte() % 3 + 1)
        package = .file(
            BlobChunk(
                transferID: UInt64(input.byte() % 3), totalSize: total, chunkOffset: input.byte() % 2 == 0 ? 0 : input.edgy64(),
                chunkIndex: UInt32(input.byte()) % count, chunkCount: count, md5: nil, imageFormat: nil,
                name: "f", attributes: [], content: content))
    case 7:
        package = .xml("<a/>")
    default:
        package = .start
    }
    return Frame(encoding: package, sequence: sequence, timestampNs: timestamp, sourceID: source, filterID: filter)
}
