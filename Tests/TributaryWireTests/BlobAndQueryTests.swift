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
        for request in [AnalogFilterRequest(channels: .range(from: 1, to: 3), sources: [0, 2]),
                        AnalogFilterRequest(channels: .list([9, 2])), AnalogFilterRequest()] {
            #expect(try AnalogFilterRequest(query: request.query) == request)
        }
    }

    @Test(arguments: [("1-x;0", 2), ("1,,2", 2), ("3-1", 2), ("1;2-3", 3), ("1;2;3", 3), ("a", 0), ("1 2", 2),
                      ("99999999999", 0)])
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
