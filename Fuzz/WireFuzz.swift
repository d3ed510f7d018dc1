// libFuzzer target for the wire decoder: the stream decoder fed in pieces, every frame's payload
// decoded and materialised, and every decodable package re-encoded and decoded again, which must
// reproduce the same bytes (encode ∘ decode is idempotent). Any crash, sanitizer report or
// failed check is a bug; the input that caused it goes to Fuzz/regressions/wire/.

@_cdecl("LLVMFuzzerTestOneInput")
public func wireFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard size > 1 else { return 0 }
    // The first byte chooses the piece size, so splits at every position get explored.
    let piece = Int(bytes[0]) + 1
    let stream = UnsafeRawBufferPointer(rebasing: bytes[1...])
    var decoder = FrameStreamDecoder(maxFrameSize: 1 << 20, blockSize: 256)
    var offset = 0
    do {
        while offset < stream.count {
            let end = min(stream.count, offset + piece)
            try decoder.feed(UnsafeRawBufferPointer(rebasing: stream[offset..<end])) { frame in
                guard let package = try? frame.payload().materialize() else { return }
                let once = Frame(encoding: package, header: frame.header)
                guard let again = try? Frame(copying: once.encodedBytes).payload().materialize() else {
                    fatalError("re-encoded \(frame.header.kind) frame does not decode")
                }
                let twice = Frame(encoding: again, header: frame.header)
                if once.encodedBytes != twice.encodedBytes {
                    fatalError("\(frame.header.kind): encode(decode(encode(p))) differs from encode(p)")
                }
            }
            offset = end
        }
        try decoder.finish()
    } catch {
        // Typed errors are the expected outcome for malformed input.
    }
    compactHeaderFuzz(stream)
    return 0
}

/// The same bytes read as a compact header part (docs/PROTOCOL.md §3.2) and the payload part after it:
/// the expanded header must validate like any other, and a header that validates must give back the
/// same 32 bytes when compacted again (every compact byte is a field).
func compactHeaderFuzz(_ stream: UnsafeRawBufferPointer) {
    guard stream.count >= CompactHeader.length else { return }
    let compact = UnsafeRawBufferPointer(rebasing: stream[..<CompactHeader.length])
    withUnsafeTemporaryAllocation(byteCount: WireLimits.headerLength, alignment: 8) { full in
        CompactHeader.expand(compact, into: full.baseAddress!)
        guard case .frame(let header)? = try? FrameHeader.peek(UnsafeRawBufferPointer(full), maxFrameSize: 1 << 20) else { return }
        withUnsafeTemporaryAllocation(byteCount: CompactHeader.length, alignment: 8) { again in
            CompactHeader.encode(header, into: again.baseAddress!)
            if !again.elementsEqual(compact) { fatalError("compact header does not round-trip: \(header)") }
        }
        let rest = UnsafeRawBufferPointer(rebasing: stream[CompactHeader.length...])
        guard rest.count == header.payloadLength, let frame = try? Frame(header: header, payload: FrameBuffer(copying: rest)) else {
            return
        }
        _ = try? frame.payload().materialize()
    }
}
