import Foundation
import Testing
import TributaryWire

@testable import TributaryTransport

/// The transport follows the one package vocabulary (`FrameKind`'s traits, issue 39): a subscriber
/// delivers exactly the kinds declared `isDelivered` (a close ends the session), each as the
/// `ReceivedContent` of that kind and to the `Observer` method of that kind; everything else a
/// publisher sends in a session ends it.
@Suite struct KindDispatchTests {
    /// Records the name of each `Observer` method called (the kind it is for).
    final class MethodLog: Observer, @unchecked Sendable {
        var calls: [String] = []
        func didReceiveConfiguration(_ configuration: Configuration, header: FrameHeader) { calls.append("configuration") }
        func didReceiveError(_ error: ErrorReport, header: FrameHeader) { calls.append("error") }
        func didReceiveAnalogData(_ data: AnalogView, header: FrameHeader) { calls.append("analog") }
        func didReceiveDigitalData(_ data: DigitalView, header: FrameHeader) { calls.append("digital") }
        func didReceiveMessage(_ message: Message, header: FrameHeader) { calls.append("message") }
        func didReceiveXML(_ xml: String, header: FrameHeader) { calls.append("xml") }
        func didReceiveFile(_ file: ReceivedFile, header: FrameHeader) { calls.append("file") }
        func didReceiveImage(_ image: ReceivedFile, header: FrameHeader) { calls.append("image") }
        func didReceiveArray(_ array: ArrayView, header: FrameHeader) { calls.append("array") }
        func didReceiveDoubleArray(_ array: ArrayView, header: FrameHeader) { calls.append("array-double") }
        func didReceiveGap(_ gap: Gap, header: FrameHeader) { calls.append("gap") }
        func didReceiveProperties(_ properties: SourceProperties, header: FrameHeader) { calls.append("properties") }
    }

    /// A valid package of every kind (a file or an image in one chunk, so that it is whole).
    static func sample(_ kind: FrameKind) -> Package {
        let blob = { (format: ImageFormat?) in
            BlobChunk.chunks(
                of: [1, 2, 3], transferID: 1, name: "a.bin", attributes: [], imageFormat: format, computeMD5: true, chunkSize: 64)[0]
        }
        switch kind {
        case .configuration:
            return .configuration(
                Configuration(
                    deviceName: "dev", deviceType: "t", channels: [ChannelConfiguration(index: 0, description: "a", samplingRate: 100)]))
        case .error: return .error(ErrorReport(.malformedFrame, "a test"))
        case .analog: return .analog(AnalogData(channels: [[1, 2]]))
        case .digital: return .digital(DigitalData(lines: [[true, false]]))
        case .message: return .message(Message("hi", code: 1))
        case .xml: return .xml("<a/>")
        case .file: return .file(blob(nil))
        case .image: return .image(blob(.png))
        case .array: return .array(Array2D(rowCount: 1, columnCount: 2, elements: .double([1, 2])))
        case .analogFilter: return .analogFilter(AnalogFilterRequest(channels: .all, sources: [], replaces: 0))
        case .arrayFilter: return .arrayFilter(ArrayFilterRequest(elementType: .double, rows: .all, columns: .all, replaces: 0))
        case .removeFilter: return .removeFilter
        case .signalFilter:
            return .signalFilter(
                SignalFilterRequest(
                    sourceID: 1, decimate: 2, decimationKind: .iir, decimationOrder: 8, lowpassOrder: 0, lowpassCutoff: 0))
        case .hello: return .hello(Hello(apiKey: "k", clientDescription: "c", timeoutSeconds: 5, sourceFilterEnabled: false))
        case .welcome: return .welcome(Welcome(sessionID: 1, publisherDescription: "p", sources: []))
        case .start: return .start
        case .stop: return .stop
        case .selectSources: return .selectSources([1])
        case .gap: return .gap(Gap(firstMissingSequence: 0, missingCount: 1))
        case .close: return .close(Close(code: ErrorCode(rawValue: 0), reason: "done"))
        case .credit: return .credit(5)
        case .properties: return .properties(SourceProperties(source: [Property("serial", "42")], channels: []))
        }
    }

    @Test func aSubscriberDeliversExactlyTheDeliveredKindsToTheirObserverMethods() throws {
        for kind in FrameKind.allCases {
            var session = SubscriberSession(
                creditWindow: 0, creditWindowBytes: 0, maxTransferSize: 1 << 20, maxSources: 16, maxConfigurationBytes: 1 << 20)
            let frame = Frame(encoding: Self.sample(kind), sequence: 0, timestampNs: 0, sourceID: 1, filterID: 0, flags: [])
            switch session.receive(frame) {
            case .deliver(let package):
                #expect(kind.isDelivered && kind != .close, "\(kind) was delivered but is not declared delivered")
                #expect(package.content.kind == kind, "\(kind) was delivered as \(package.content.kind)")
                let log = MethodLog()
                log.dispatch(package)
                #expect(log.calls.first == kind.description, "\(kind) reached \(log.calls)")
            case .end(let error, _, _):
                if kind == .close {
                    #expect(error.publisherClose != nil, "a close ends the session as the publisher's close")
                } else {
                    #expect(!kind.isDelivered, "\(kind) is declared delivered but ended the session: \(error)")
                    #expect(error.code == .protocolViolation)
                }
            case .none:
                Issue.record("\(kind): nothing delivered and the session not ended")
            }
        }
    }

    /// The conversion both sides share hands over every delivered kind but those that need
    /// reassembly (file, image) or end the session (close), and no kind a subscriber sends.
    @Test func handedOverContentKeepsItsKind() {
        for kind in FrameKind.allCases {
            let frame = Frame(encoding: Self.sample(kind), sequence: 0, timestampNs: 0, sourceID: 1, filterID: 0, flags: [])
            guard let payload = try? frame.payload() else {
                Issue.record("\(kind): the sample does not decode")
                continue
            }
            let content = ReceivedContent(handedOver: payload)
            let expected = kind.isDelivered && ![.file, .image, .close].contains(kind)
            #expect((content != nil) == expected, "\(kind): handed over \(content != nil), expected \(expected)")
            if let content { #expect(content.kind == kind) }
        }
    }
}
