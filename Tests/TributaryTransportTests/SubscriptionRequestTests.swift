import Foundation
import Testing
import TributaryDSP
import TributarySources
import TributaryWire

@testable import TributaryTransport

/// The subscription options the command line and the C interface share (SubscriptionRequest,
/// CurveKeyFile): each value read and checked once, the error naming the option and quoting the value,
/// and the request carried out as one open.
@Suite struct SubscriptionRequestTests {
    @Test func sourcesAreACommaListOrANonEmptyArrayOfIds() throws {
        #expect(try SubscriptionRequest.sources("1, 3") == [1, 3])
        #expect(try SubscriptionRequest.sources("0") == [0])
        #expect(try SubscriptionRequest.sources("4294967295") == [UInt32.max])
        #expect(try SubscriptionRequest.sources([0, 7]) == [0, 7])
        for text in ["", "x", "1,,3", "-1", "4294967296", "1;3"] {
            #expect(throws: SubscriptionOptionError.self, "'\(text)'") { try SubscriptionRequest.sources(text) }
        }
        #expect(throws: SubscriptionOptionError.sources("the list is empty: give source ids (0: the publisher's own packages)")) {
            try SubscriptionRequest.sources([UInt32]())
        }
        #expect(
            throws: SubscriptionOptionError.sources(
                "'1,x' is not a list of source ids in 0...4294967295, e.g. 1,3 (0: the publisher's own packages)")
        ) { try SubscriptionRequest.sources("1,x") }
    }

    @Test func channelsMakeTheAnalogFilterOfTheSelectedSources() throws {
        #expect(
            try SubscriptionRequest.analogFilter(channels: "0-3", sources: nil) == AnalogFilterRequest(channels: .range(from: 0, to: 3)))
        #expect(
            try SubscriptionRequest.analogFilter(channels: "0,2", sources: [1, 3])
                == AnalogFilterRequest(channels: .list([0, 2]), sources: [1, 3]))
        do {
            _ = try SubscriptionRequest.analogFilter(channels: "0-x", sources: nil)
            Issue.record("0-x was accepted")
        } catch {
            guard case .channels(let problem) = error else { throw error }
            #expect(problem.hasPrefix("'0-x': "))
        }
    }

    @Test func arrayFiltersAreTypeColonQuery() throws {
        let filter = try SubscriptionRequest.arrayFilter("double:5-15;5-15")
        #expect(filter.elementType == .double && filter.rows == IndexRange(from: 5, to: 15) && filter.columns == filter.rows)
        #expect(try SubscriptionRequest.arrayFilter("string:;").elementType == .string)
        #expect(
            throws: SubscriptionOptionError.arrayFilter(
                "'complex:1-2' is not TYPE:QUERY with TYPE double, float, int32, int16, int64, bool or string")
        ) { try SubscriptionRequest.arrayFilter("complex:1-2") }
        #expect(throws: SubscriptionOptionError.self) { try SubscriptionRequest.arrayFilter("double") }
        do {
            _ = try SubscriptionRequest.arrayFilter("int16:x")
            Issue.record("int16:x was accepted")
        } catch {
            guard case .arrayFilter(let problem) = error else { throw error }
            #expect(problem.hasPrefix("'int16:x': "))
        }
    }

    @Test func keyFilesRefuseTheWrongHalfOfAPair() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func write(_ name: String, _ comment: String, _ key: ZMQCurveKey) throws -> String {
            let path = directory + "/" + name
            try "# \(comment)\n\(key.z85)\n".write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let server = try ZMQCurveKeyPair.generate(), client = try ZMQCurveKeyPair.generate()
        let serverPublic = try write("server.pub", CurveKeyFile.publicComment, server.publicKey)
        let serverSecret = try write("server.key", CurveKeyFile.secretComment, server.secretKey)
        let clientSecret = try write("client.key", CurveKeyFile.secretComment, client.secretKey)

        #expect(try CurveKeyFile.loadPublic(serverPublic) == server.publicKey)
        #expect(try CurveKeyFile.loadSecret(serverSecret).publicKey == server.publicKey)
        #expect(throws: CurveKeyFile.Failure(path: serverSecret, reason: .secretKeyAsPublic)) { try CurveKeyFile.loadPublic(serverSecret) }
        #expect(throws: CurveKeyFile.Failure(path: serverPublic, reason: .publicKeyAsSecret)) { try CurveKeyFile.loadSecret(serverPublic) }
        do {
            _ = try CurveKeyFile.loadPublic(directory + "/missing.pub")
            Issue.record("a missing file was read")
        } catch {
            #expect(!error.isMixUp)
            #expect(error.message(option: "--curve-server-key").hasPrefix("--curve-server-key: "))
        }
        #expect(
            CurveKeyFile.Failure(path: serverPublic, reason: .publicKeyAsSecret).message(option: "--curve-key")
                .hasPrefix("--curve-key \(serverPublic): this is a public key file, not a secret key"))

        let curve = try SubjectCurve(serverKeyFile: serverPublic, clientKeyFile: clientSecret)
        #expect(curve.serverKey == server.publicKey && curve.keys.publicKey == client.publicKey)
        #expect(try SubjectCurve(serverKeyFile: serverPublic, clientKeyFile: nil).keys.publicKey != client.publicKey)
        #expect(throws: SubjectCurveFailure(isServerKey: true, failure: .init(path: serverSecret, reason: .secretKeyAsPublic))) {
            try SubjectCurve(serverKeyFile: serverSecret, clientKeyFile: clientSecret)
        }
        #expect(throws: SubjectCurveFailure(isServerKey: false, failure: .init(path: serverPublic, reason: .publicKeyAsSecret))) {
            try SubjectCurve(serverKeyFile: serverPublic, clientKeyFile: serverPublic)
        }
    }

    @Test func oneOpenSendsTheFiltersTheSelectionAndTheSignalFilterThenStarts() throws {
        let sources = try [1, 2].map { id in
            SimulatedDeviceSource(spec: try SimulationSpec(parsing: "id=\(id),name=s\(id),rate=1000,channels=4,freq=5,noise=0,block=10"))
        }
        let publisher = try makePublisher(sources: sources) { $0.signalFilters = DSPSignalFilters() }
        defer { publisher.stop() }
        var request = SubscriptionRequest(sources: try SubscriptionRequest.sources("2"))
        request.analogFilter = try SubscriptionRequest.analogFilter(channels: "0-1", sources: request.sources)
        request.arrayFilters = [try SubscriptionRequest.arrayFilter("double:0-1;0-1")]
        request.signalFilter = try SignalFilterRequest.subscription(decimate: 2, lowpass: nil)
        let (subject, recorder) = try recordingSubject()
        defer { subject.close() }
        let (welcome, ids) = try subject.open(
            address: "127.0.0.1", port: publisher.port!, apiKey: "secret", description: "request", timeout: 5, request: request)
        #expect(welcome.sources.map { $0.id } == [1, 2])
        #expect(ids == [1, 2])
        #expect(waitUntil { publisher.subscribers().first?.isStarted == true })
        let info = try #require(publisher.subscribers().first)
        #expect(info.selectedSources == [2])
        #expect(info.filters.analog.map { $0.request } == [request.analogFilter!])
        #expect(info.filters.array.map { $0.request } == request.arrayFilters)
        #expect(info.signalFilters.map { $0.sourceID } == [2])
        #expect(waitUntil { !recorder.of("analog").isEmpty })
        #expect(recorder.of("analog").allSatisfy { $0.header?.sourceID == 2 })
    }
}
