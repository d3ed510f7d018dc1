import Testing

@testable import TributaryWire

@Suite struct BlobAssemblerTests {
    @Test func reassemblesOutOfOrderAndVerifiesMD5() throws {
        let content = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let chunks = BlobChunk.chunks(of: content, transferID: 7, name: "data.bin", attributes: ["author=me"], chunkSize: 999)
        #expect(chunks.count == 11)
        var assembler = BlobAssembler()
        var result: AssembledBlob?
        for chunk in chunks.reversed() {
            // Each chunk travels as a frame.
            guard case .file(let received) = try Frame(copying: Frame(encoding: .file(chunk)).encodedBytes).payload() else {
                Issue.record("not a file"); return
            }
            result = try assembler.add(received)
        }
        #expect(result?.content == content)
        #expect(result?.name == "data.bin" && result?.attributes == ["author=me"])
        #expect(assembler.pendingCount == 0)
    }

    @Test func corruptedContentFailsTheChecksum() {
        var chunks = BlobChunk.chunks(of: Array("hello world".utf8), transferID: 1, name: "a.txt", chunkSize: 4)
        chunks[1].content[0] ^= 1
        var assembler = BlobAssembler()
        #expect(throws: BlobError.self) { for c in chunks { _ = try assembler.add(c) } }
    }

    @Test func inconsistentChunksAreRejected() {
        var chunks = BlobChunk.chunks(of: [1, 2, 3, 4], transferID: 1, name: "a", chunkSize: 2)
        chunks[1].name = "b"
        var assembler = BlobAssembler()
        #expect(throws: BlobError.self) { for c in chunks { _ = try assembler.add(c) } }
    }
}

@Suite struct FilterQueryTests {
    @Test func analogQueries() throws {
        #expect(try AnalogFilterRequest(query: "1-3;0,2") == AnalogFilterRequest(channels: .range(from: 1, to: 3), sources: [0, 2]))
        #expect(try AnalogFilterRequest(query: "3,4;1,2") == AnalogFilterRequest(channels: .list([3, 4]), sources: [1, 2]))
        #expect(try AnalogFilterRequest(query: " 5 ; ") == AnalogFilterRequest(channels: .list([5])))
        #expect(try AnalogFilterRequest(query: ";7") == AnalogFilterRequest(channels: .all, sources: [7]))
        #expect(try AnalogFilterRequest(query: "") == AnalogFilterRequest())
        for request in [
            AnalogFilterRequest(channels: .range(from: 1, to: 3), sources: [0, 2]),
            AnalogFilterRequest(channels: .list([9, 2])), AnalogFilterRequest(),
        ] {
            #expect(try AnalogFilterRequest(query: request.query) == request)
        }
    }

    @Test(arguments: [
        ("1-x;0", 2), ("1,,2", 2), ("3-1", 2), ("1;2-3", 3), ("1;2;3", 3), ("a", 0), ("1 2", 2),
        ("99999999999", 0),
    ])
    func badAnalogQueriesPointAtTheCharacter(query: String, position: Int) {
        do {
            _ = try AnalogFilterRequest(query: query)
            Issue.record("'\(query)' parsed")
        } catch {
            #expect(error.position == position, "\(error)")
            #expect(error.description.contains("^"))
        }
    }

    @Test func arrayQueries() throws {
        let f = try ArrayFilterRequest(elementType: .double, query: "5-15;5-15")
        #expect(f.rows == IndexRange(from: 5, to: 15) && f.columns == IndexRange(from: 5, to: 15))
        let open = try ArrayFilterRequest(elementType: .string, query: "2-;")
        #expect(open.rows == IndexRange(from: 2, to: .max) && open.columns == .all)
        #expect(try ArrayFilterRequest(elementType: .int16, query: "4").rows == IndexRange(from: 4, to: 4))
        #expect(try ArrayFilterRequest(elementType: .double, query: f.query) == f)
        #expect(throws: QueryError.self) { try ArrayFilterRequest(elementType: .double, query: "5-1;0-1") }
        #expect(throws: QueryError.self) { try ArrayFilterRequest(elementType: .double, query: "5,6") }
    }
}

@Suite struct BlobAssemblerBoundsTests {
    @Test func holdsWhatWasReceivedNotWhatWasAnnounced() throws {
        var assembler = BlobAssembler(maxTransferSize: 64 << 20)
        let chunk = BlobChunk(
            transferID: 1, totalSize: 64 << 20, chunkOffset: 0, chunkIndex: 0, chunkCount: 1_000,
            md5: nil, imageFormat: nil, name: "big", attributes: [], content: [UInt8](repeating: 1, count: 120))
        #expect(try assembler.add(chunk) == nil)
        #expect(assembler.pendingBytes == 120)
    }

    @Test func aRepeatedChunkAndAHoleAreInconsistent() throws {
        let chunks = BlobChunk.chunks(of: [UInt8](repeating: 3, count: 30), transferID: 2, name: "a", chunkSize: 10)
        var assembler = BlobAssembler()
        _ = try assembler.add(chunks[0])
        #expect(throws: BlobError.self) { _ = try assembler.add(chunks[0]) }
        #expect(assembler.pendingBytes == 0 && assembler.pendingCount == 0)
        var moved = chunks
        moved[2].chunkOffset = 19  // overlaps chunk 1 and leaves byte 29 empty
        moved[2].content = Array(moved[2].content.prefix(10))
        #expect(throws: BlobError.self) { for c in moved { _ = try assembler.add(c) } }
    }

    @Test func pendingBytesAreBoundedAcrossTransfers() throws {
        var assembler = BlobAssembler(maxTransferSize: 1_000, maxPendingBytes: 150)
        func chunk(_ id: UInt64) -> BlobChunk {
            BlobChunk(
                transferID: id, totalSize: 1_000, chunkOffset: 0, chunkIndex: 0, chunkCount: 10,
                md5: nil, imageFormat: nil, name: "f", attributes: [], content: [UInt8](repeating: 0, count: 100))
        }
        _ = try assembler.add(chunk(1))
        do {
            _ = try assembler.add(chunk(2))
            Issue.record("a second transfer went past the pending budget")
        } catch {
            #expect(error.reason == .tooLarge)
        }
        #expect(assembler.pendingBytes == 100)
    }
}

@Suite struct FilterLimitTests {
    private func analogFilterFrame(_ request: AnalogFilterRequest, id: UInt32) -> Frame {
        Frame(encoding: .analogFilter(request), filterID: id)
    }

    @Test func repeatedMissingAndTooManyFiltersAreRefused() throws {
        let limits = FilterLimits(maxFilters: 2, channelCounts: [1: 4, 2: 8])
        var filters = SubscriberFilters()
        #expect(throws: FilterRequestError.self) {
            try filters.apply(analogFilterFrame(AnalogFilterRequest(channels: .list([0, 0])), id: 1), limits: limits)
        }
        do {
            try filters.apply(analogFilterFrame(AnalogFilterRequest(channels: .list([5]), sources: [1]), id: 1), limits: limits)
            Issue.record("channel 5 of a 4-channel source was accepted")
        } catch {
            #expect(error.message.contains("channel 5 does not exist"))
        }
        #expect(throws: FilterRequestError.self) {
            try filters.apply(analogFilterFrame(AnalogFilterRequest(sources: [3]), id: 1), limits: limits)
        }
        // Channel 5 exists in source 2: accepted when no source is named.
        try filters.apply(analogFilterFrame(AnalogFilterRequest(channels: .list([5])), id: 1), limits: limits)
        try filters.apply(analogFilterFrame(AnalogFilterRequest(), id: 2), limits: limits)
        #expect(throws: FilterRequestError.self) {
            try filters.apply(analogFilterFrame(AnalogFilterRequest(), id: 3), limits: limits)
        }
        // Replacing one keeps the count.
        try filters.apply(analogFilterFrame(AnalogFilterRequest(channels: .range(from: 0, to: 1), replaces: 2), id: 3), limits: limits)
        #expect(filters.analog.count == 2)
    }
}
