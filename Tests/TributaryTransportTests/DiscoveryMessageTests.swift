import Foundation
import Testing
import TributaryTestSupport
import TributaryWire

@testable import TributaryTransport

/// Discovery's query and answer (docs/PROTOCOL.md §9): round trips, the size bounds, and hostile
/// datagrams refused with a reason, never a trap.
@Suite struct DiscoveryMessageTests {
    static let eeg = DiscoveredSource(
        id: 7, device: "EEG amp, 32 ch", type: "EEG", rate: 500, channelCount: 3,
        channelNames: ["Fp1", "Fp2 = ref,x", "Cz µ%"], units: ["µV", "µV", "µV"], sampleType: .int16)
    static let publisher = PublisherDescription(
        name: "lab daq\n1", host: "host-a", address: "tcp://0.0.0.0:5555",
        authentication: .curve, sources: [eeg])

    @Test func answerRoundTrips() throws {
        let answer = DiscoveryAnswer(queryID: UInt64.max, publisher: Self.publisher)
        let bytes = answer.encoded()
        #expect(bytes.allSatisfy { $0 == 0x0A || ($0 >= 0x20 && $0 < 0x7F) })
        let back = try DiscoveryAnswer(datagram: bytes)
        #expect(back == answer)
        #expect(back.publisher.sources[0].unit == "µV")
    }

    @Test func queryRoundTrips() throws {
        for match in [nil, try DiscoveryMatch("name=daq,source=EEG")] {
            let query = DiscoveryQuery(id: 42, match: match)
            #expect(try DiscoveryQuery(datagram: query.encoded()) == query)
        }
    }

    @Test func anAnswerTooLargeIsShortenedToTheBound() throws {
        let names = (0..<300).map { "channel number \($0)" }
        var big = Self.publisher
        big.sources = (1...300).map {
            DiscoveredSource(
                id: UInt32($0), device: String(repeating: "d", count: 1_000), type: "EEG", rate: 1,
                channelCount: names.count, channelNames: names, units: names.map { _ in "V" },
                sampleType: .float64)
        }
        let bytes = DiscoveryAnswer(queryID: 1, publisher: big).encoded()
        #expect(bytes.count <= DiscoveryLimits.maxAnswerBytes)
        let back = try DiscoveryAnswer(datagram: bytes)
        #expect(back.publisher.truncated)
        #expect(!back.publisher.sources.isEmpty && back.publisher.sources.allSatisfy { $0.channelNames.isEmpty && $0.channelCount == 300 })
        #expect(back.publisher.sources[0].device.utf8.count == DiscoveryLimits.maxTextBytes)
    }

    @Test(arguments: [
        ("TRIBUTARY-ANSWER 2\npublisher query=1 name=a host=h address=tcp://h:1 auth=key\n", "not 'TRIBUTARY-ANSWER 1'"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=tcp://h:1 auth=key", "line feed"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=tcp://h:1 auth=none\n", "not key or curve"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h auth=key\n", "missing field 'address'"),
        ("TRIBUTARY-ANSWER 1\npublisher query=18446744073709551616 name=a host=h address=x auth=key\n", "field 'query'"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a%zz host=h address=x auth=key\n", "two hex digits"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a%FF host=h address=x auth=key\n", "not UTF-8"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a name=b host=h address=x auth=key\n", "given twice"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=x auth=key\nsource id=0 channels=1\n", "not a source id"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=x auth=key\nsource id=4294967296 channels=1\n", "not a source id"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=x auth=key\nsource id=1 channels=65536\n", "more than 65535"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=x auth=key\nsource id=1 channels=2 rate=nan\n", "field 'rate'"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=x auth=key\nsource id=1 channels=2 rate=-1\n", "field 'rate'"),
        (
            "TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=x auth=key\nsource id=1 channels=2 names=a\n",
            "1 items for 2 channels"
        ),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=x auth=key\nsource id=1 channels=2 sample=int8\n", "field 'sample'"),
        (
            "TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=x auth=key\nsource id=1 channels=1\nsource id=1 channels=1\n",
            "listed twice"
        ),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 name=a\th host=h address=x auth=key\n", "not printable ASCII"),
        ("TRIBUTARY-ANSWER 1\npublisher query=1 =a host=h address=x auth=key\n", "not key=value"),
        ("TRIBUTARY-QUERY 1\nquery id=1\n", "not 'TRIBUTARY-ANSWER 1'"),
    ])
    func hostileAnswersAreRefusedWithTheReason(text: String, reason: String) {
        do {
            _ = try DiscoveryAnswer(datagram: Array(text.utf8))
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.message.contains(reason), "\(error.message)")
        }
    }

    @Test func boundsOfLengthAndCountAreRefused() {
        let long = "TRIBUTARY-ANSWER 1\npublisher query=1 name=\(String(repeating: "a", count: 257)) host=h address=x auth=key\n"
        #expect(throws: DiscoveryFormatError.self) { try DiscoveryAnswer(datagram: Array(long.utf8)) }
        let encodedLong = "TRIBUTARY-ANSWER 1\npublisher query=1 name=\(String(repeating: "%41", count: 257)) host=h address=x auth=key\n"
        #expect(throws: DiscoveryFormatError.self) { try DiscoveryAnswer(datagram: Array(encodedLong.utf8)) }
        let many =
            "TRIBUTARY-ANSWER 1\npublisher query=1 name=a host=h address=x auth=key\n"
            + (1...257).map { "source id=\($0) channels=0\n" }.joined()
        #expect(throws: DiscoveryFormatError.self) { try DiscoveryAnswer(datagram: Array(many.utf8)) }
        #expect(throws: DiscoveryFormatError.self) {
            try DiscoveryAnswer(datagram: [UInt8](repeating: 0x41, count: DiscoveryLimits.maxAnswerBytes + 1))
        }
        #expect(throws: DiscoveryFormatError.self) {
            try DiscoveryQuery(datagram: [UInt8](repeating: 0x0A, count: DiscoveryLimits.maxQueryBytes + 1))
        }
        let longMatch = "TRIBUTARY-QUERY 1\nquery id=1 match=\(String(repeating: "a", count: 513))\n"
        #expect(throws: DiscoveryFormatError.self) { try DiscoveryQuery(datagram: Array(longMatch.utf8)) }
        #expect(throws: DiscoveryFormatError.self) {
            try DiscoveryQuery(datagram: Array("TRIBUTARY-QUERY 1\nquery id=1 match=colour%3Dred\n".utf8))
        }
        #expect(throws: DiscoveryFormatError.self) { try DiscoveryQuery(datagram: Array("TRIBUTARY-QUERY 1\nquery\n".utf8)) }
        #expect(throws: DiscoveryFormatError.self) { try DiscoveryQuery(datagram: [] as [UInt8]) }
    }

    /// A fuzz smoke: every byte-level mutation of valid datagrams parses or is refused, never traps,
    /// and whatever parses re-encodes into a datagram that parses the same.
    @Test func mutatedDatagramsNeverTrap() throws {
        var generator = SplitMix64(seed: 0x7A11)
        let answer = DiscoveryAnswer(queryID: 9, publisher: Self.publisher).encoded()
        let query = DiscoveryQuery(id: 9, match: try DiscoveryMatch("name=d*q,EEG")).encoded()
        let alphabet = Array("%=, \n0123456789AFaf-zs:.*".utf8) + [0x00, 0xFF, 0x7F, 0x09]
        var parsed = 0
        for round in 0..<20_000 {
            var bytes = round % 2 == 0 ? answer : query
            for _ in 0...(generator.next() % 4) {
                let position = Int(generator.next() % UInt64(bytes.count + 1))
                switch generator.next() % 4 {
                case 0 where position < bytes.count: bytes[position] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 1: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: position)
                case 2 where position < bytes.count: bytes.remove(at: position)
                default: bytes = Array(bytes.prefix(position))
                }
            }
            if let a = try? DiscoveryAnswer(datagram: bytes) {
                parsed += 1
                #expect(try DiscoveryAnswer(datagram: a.encoded()) == a)
            }
            if let q = try? DiscoveryQuery(datagram: bytes) {
                parsed += 1
                #expect(try DiscoveryQuery(datagram: q.encoded()) == q)
            }
        }
        #expect(parsed > 0)
    }

    @Test func queriesMatchNameHostSourceAndType() throws {
        let p = Self.publisher
        #expect(try DiscoveryMatch("name=LAB DAQ*").matches(p))
        #expect(try DiscoveryMatch("host=host-?").matches(p) == false)
        #expect(try DiscoveryMatch("host=host-*").matches(p))
        #expect(try DiscoveryMatch("source=eeg").matches(p))
        #expect(try DiscoveryMatch("source=EEG amp*").matches(p))
        #expect(try DiscoveryMatch("type=EEG amp*").matches(p) == false)
        #expect(try DiscoveryMatch("eeg,name=lab*").matches(p))
        #expect(try DiscoveryMatch("eeg,name=other").matches(p) == false)
        #expect(DiscoveryMatch.glob("a*b*c", "aXXbYYc") && !DiscoveryMatch.glob("a*b*c", "aXXbYY"))
        #expect(DiscoveryMatch.glob(String(repeating: "*a", count: 200) + "b", String(repeating: "a", count: 256)) == false)
        for bad in ["", "name=", "colour=red", "a,,b", String(repeating: "x", count: 513)] {
            #expect(throws: DiscoveryFormatError.self) { try DiscoveryMatch(bad) }
        }
    }

    @Test func addressesParseOrSayWhatIsWrong() throws {
        #expect(try PublisherAddress.parse("tcp://10.0.0.1:5555") == ("10.0.0.1", 5555))
        #expect(try PublisherAddress.parse("[::1]:7") == ("::1", 7))
        for (text, syntax) in [("udp://a:1", true), ("nohost", true), ("h:port", true), ("resolve:colour=red", true)] {
            do {
                _ = try PublisherAddress.parse(text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.isSyntax == syntax, "\(text): \(error)")
            }
        }
    }
}
