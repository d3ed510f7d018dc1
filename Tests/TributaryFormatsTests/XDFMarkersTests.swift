import Foundation
import Testing

@testable import TributaryFormats

// Reference values from pyxdf 1.17.5's `_clock_sync` (synchronize_clocks=True, handle_clock_resets=True)
// on the same offsets and timestamps.

@Test func clockSyncFitsALineRobustlyAsPyxdf() {
    let times: [Double] = (0..<12).map { 100 + 5 * Double($0) }
    var values: [Double] = times.map { -0.25 + 2e-5 * ($0 - 100) }
    values[6] += 0.004  // an outlier the Huber fit discounts
    let corrected = XDFClockSync.corrected([98.0, 120.5, 151.25, 160.0], times: times, values: values)
    let pyxdf: [Double] = [97.74996685350318, 120.25041857324841, 151.0010359235669, 159.7512115923567]
    for (a, b) in zip(corrected, pyxdf) { #expect(Swift.abs(a - b) < 1e-9, "\(a) vs \(b)") }
}

@Test func clockSyncSplitsAtAClockResetAsPyxdf() {
    let steps: [Double] = (0..<8).map { Double($0) }
    let before: [Double] = steps.map { 5000 + 5 * $0 }, after: [Double] = steps.map { 10 + 5 * $0 }
    let times: [Double] = before + after
    let jumped: [Double] = steps.map { -4900 + 1e-6 * $0 }, back: [Double] = steps.map { 120 - 1e-6 * $0 }
    let values: [Double] = jumped + back
    #expect(XDFClockSync.resetSegments(times, values) == [0...7, 8...15])
    let corrected = XDFClockSync.corrected([5001.0, 5020.0, 5038.0, 12.0, 30.5, 44.0], times: times, values: values)
    let pyxdf: [Double] = [101.00000020000334, 120.00000400000044, 138.00000759999693, 131.9999995999999, 150.4999959, 163.99999320000003]
    for (a, b) in zip(corrected, pyxdf) { #expect(Swift.abs(a - b) < 1e-9, "\(a) vs \(b)") }
}

@Test func clockSyncEdgeCases() {
    // None: nothing changes; one: a constant; equal times: a singular fit, no correction (numpy's
    // Cholesky fails and pyxdf applies nothing); times whose scaled sums overflow: unusable.
    #expect(XDFClockSync.corrected([1, 2], times: [], values: []) == [1, 2])
    #expect(XDFClockSync.corrected([1, 2], times: [5], values: [0.5]) == [1.5, 2.5])
    #expect(XDFClockSync.corrected([1, 2], times: [5, 5], values: [0.5, 0.7]) == [1, 2])
    #expect(XDFClockSync(times: [1e308, 1e308], values: [0, 1]).isUnusable)
    #expect(!XDFClockSync(times: [1, 2], values: [0, 1]).isUnusable)
}

@Test func markerTextsJoinSeveralChannelsAsAJSONArray() {
    #expect(XDFMarkers.join(["only"]) == "only")
    #expect(XDFMarkers.join([]) == "")
    #expect(XDFMarkers.join(["a", "b\"\\", "\n\u{1}ü"]) == #"["a","b\"\\","\n\u0001ü"]"#)
}

@Test func markerStreamsAreReadWithoutTheNumericSamples() throws {
    let path = NSTemporaryDirectory() + "tributary-\(UUID().uuidString)-markers.xdf"
    defer { unlink(path) }
    let writer = try XDFWriter(path: path)
    try writer.streamHeader(XDFStreamHeader(streamID: 1, name: "EEG", type: "EEG", channelCount: 1, nominalRate: 100, format: .double64))
    try writer.streamHeader(
        XDFStreamHeader(streamID: 9, name: "Events", type: "Markers", channelCount: 1, nominalRate: 4, format: .string))
    try writer.streamHeader(XDFStreamHeader(streamID: 5, name: "Other", type: "Markers", channelCount: 2, nominalRate: 0, format: .string))
    let values = [Double](repeating: 1, count: 200)
    try values.withUnsafeBufferPointer {
        try writer.samples(streamID: 1, values: $0, channels: 1, stride: 200, start: 0, count: 200, firstTimestamp: 10)
    }
    try writer.stringSamples(streamID: 9, samples: [["go"], ["stop"], ["again"]], timestamps: [10.5, nil, 20])
    try writer.stringSamples(streamID: 5, samples: [["x", "y"]], timestamps: [11])
    try writer.clockOffset(streamID: 9, collectionTime: 10, offset: -0.5)
    try writer.close()
    let all = try XDFMarkers.read(path: path)
    #expect(all.map(\.header.name) == ["Events", "Other"])
    #expect(all[0].texts == ["go", "stop", "again"])
    #expect(all[0].timestamps == [10.5, 10.75, 20])  // the unstamped one: previous + 1 / nominal_srate
    #expect(all[0].synchronizedTimestamps == [10.0, 10.25, 19.5])
    #expect(all[1].texts == [#"["x","y"]"#])
    #expect(try XDFMarkers.read(path: path, select: ["5"]).map(\.header.name) == ["Other"])
    #expect(try XDFMarkers.read(path: path, select: ["EEG"]).isEmpty)
}

@Test func aMarkerTextOverOneMebibyteIsRefused() throws {
    let path = NSTemporaryDirectory() + "tributary-\(UUID().uuidString)-big-marker.xdf"
    defer { unlink(path) }
    let writer = try XDFWriter(path: path)
    try writer.streamHeader(XDFStreamHeader(streamID: 3, name: "Big", type: "Markers", channelCount: 2, nominalRate: 0, format: .string))
    let half = String(repeating: "x", count: XDFMarkers.maxTextBytes / 2)
    try writer.stringSamples(streamID: 3, samples: [["a", "b"], [half, half]], timestamps: [1, 2])
    try writer.close()
    #expect(throws: FormatError.self) { try XDFMarkers.read(path: path) }
    do {
        _ = try XDFMarkers.read(path: path)
    } catch {
        #expect(error.reason.contains("sample 1 of string stream 3"))
        #expect(error.reason.contains("more than 1048576 bytes"))
        #expect(error.location.hasPrefix("byte offset "))
    }
}
