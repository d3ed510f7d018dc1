import Foundation
import Testing

@testable import TributaryFormats

/// The window readers the streaming import uses give, window after window, exactly what the whole
/// readers give, for any window size.
@Suite struct StreamingReadTests {
    func path(_ name: String) -> String { NSTemporaryDirectory() + "tributary-\(UUID().uuidString)-\(name)" }

    @Test func npyWindowsEqualTheWholeArrayInEitherOrder() throws {
        let values = (0..<(3 * 1001)).map { Double($0) * 0.25 - 7 }
        let a = try NPYArray(channels: 3, samplesPerChannel: 1001, samples: .float64(values))
        let p = path("a.npy")
        defer { unlink(p) }
        try NPY.write(a, path: p)
        var fortran = NPY.encode(a)
        // The same values stored Fortran-order (samples-major), as numpy writes np.asfortranarray.
        let flag = try #require(fortran.range(of: Data("False".utf8)))
        fortran.replaceSubrange(flag, with: Data("True ".utf8))
        var body = [Double](repeating: 0, count: values.count)
        for c in 0..<3 { for s in 0..<1001 { body[s * 3 + c] = values[c * 1001 + s] } }
        fortran.replaceSubrange(128..., with: body.withUnsafeBytes { Data($0) })
        let pf = path("f.npy")
        defer { unlink(pf) }
        try fortran.write(to: URL(fileURLWithPath: pf))
        #expect(try NPY.read(path: pf) == a)
        for file in [p, pf] {
            let npy = try NPY.open(path: file)
            for size in [1, 7, 1000, 1001] {
                var got = [[Double]](repeating: [], count: 3), first = 0
                while first < 1001 {
                    let n = min(size, 1001 - first)
                    guard case .float64(let w) = try npy.read(first: first, count: n) else { Issue.record("not float64"); return }
                    for c in 0..<3 { got[c] += w[(c * n)..<((c + 1) * n)] }
                    first += n
                }
                #expect(got.flatMap { $0 } == values, "\(file) in windows of \(size)")
            }
        }
    }

    @Test func wavWindowsEqualTheWholeFile() throws {
        let samples = (0..<(2 * 333)).map { Double(($0 * 37) % 2001 - 1000) }
        for format in WAVSampleFormat.allCases {
            let p = path("w.wav")
            defer { unlink(p) }
            try WAVFile(sampleRate: 8000, format: format, channelCount: 2, samples: samples).write(to: p)
            let whole = try WAVFile.read(path: p)
            let stream = try WAVFile.Stream(path: p)
            #expect(stream.layout.frameCount == 333 && stream.layout.sampleRate == 8000 && stream.layout.format == format)
            var got: [[Double]] = [[], []], first = 0
            while first < 333 {
                let n = min(50, 333 - first)
                let w = try stream.read(first: first, count: n)
                for c in 0..<2 { got[c] += w[(c * n)..<((c + 1) * n)] }
                first += n
            }
            #expect(got.flatMap { $0 } == whole.samples, "\(format)")
        }
    }

    @Test func csvScanAndStreamEqualTheWholeTable() throws {
        var text = "a, b ,\"c,d\"\n"
        for k in 0..<300_000 { text += "\(k),\(-k).5,\(k % 7)e-3\n" }
        text += "\n  \n1,2,3"
        let p = path("t.csv")
        defer { unlink(p) }
        try Data(text.utf8).write(to: URL(fileURLWithPath: p))
        let whole = try CSVTable.read(path: p)
        let scan = try CSVTable.scan(path: p)
        #expect(scan.channelNames == whole.channelNames && scan.channelCount == 3 && scan.sampleCount == whole.sampleCount)
        let stream = try CSVTable.Stream(path: p, channelCount: 3)
        var got: [[Double]] = [[], [], []], rows = 0
        while true {
            let w = try stream.next(4096)
            let n = w.count / 3
            if n == 0 { break }
            for c in 0..<3 { got[c] += w[(c * n)..<((c + 1) * n)] }
            rows += n
        }
        #expect(rows == whole.sampleCount)
        #expect(got.flatMap { $0 } == whole.values)
    }

    /// The timestamps an indexed stream's reader gives are the ones `XDFFile.read` keeps: stamped
    /// ones as written, unstamped ones deduced by repeated addition of 1 / nominal_srate (as pyxdf).
    @Test func xdfIndexedTimestampsEqualTheWholeRead() throws {
        let p = path("t.xdf")
        defer { unlink(p) }
        let writer = try XDFWriter(path: p)
        try writer.streamHeader(XDFStreamHeader(streamID: 1, name: "a", type: "", channelCount: 3, nominalRate: 300, format: .float32))
        let values = [Float](repeating: 0.5, count: 3 * 500)
        let stamped = (0..<200).map { 1_700_000_000 + Double($0) / 299.97 }
        try values.withUnsafeBufferPointer {
            try writer.samples(streamID: 1, values: $0, channels: 3, stride: 500, start: 0, count: 150, firstTimestamp: 7.25)
            try writer.samples(
                streamID: 1, values: $0, channels: 3, stride: 500, start: 150, count: 200, firstTimestamp: nil, timestamps: stamped)
            try writer.samples(streamID: 1, values: $0, channels: 3, stride: 500, start: 350, count: 150, firstTimestamp: nil)
        }
        try writer.close()
        let whole = try XDFFile.read(path: p), index = try XDFFile.index(path: p)
        let reader = try XDFFile.Timestamps(path: p, stream: index.streams[0])
        var got: [Double] = []
        while true {
            let w = try reader.next(64)
            if w.isEmpty { break }
            got += w
        }
        #expect(got.count == 500 && got == whole.streams[0].timestamps)
        #expect(got[149] == got[148] + 1.0 / 300 && got[150] == stamped[0] && got[350] == stamped[199] + 1.0 / 300)
        #expect(throws: FormatError.self) { try XDFFile.Timestamps(path: p, stream: whole.streams[0]) }
    }

    @Test func xdfIndexAndValuesEqualTheWholeRead() throws {
        let p = path("x.xdf")
        defer { unlink(p) }
        let writer = try XDFWriter(path: p)
        try writer.streamHeader(XDFStreamHeader(streamID: 3, name: "a", type: "", channelCount: 2, nominalRate: 250, format: .double64))
        try writer.streamHeader(XDFStreamHeader(streamID: 4, name: "b", type: "", channelCount: 1, nominalRate: 0, format: .int16))
        let values: [Double] = (0..<600).map { Double($0) * 0.5 }
        try values.withUnsafeBufferPointer {
            try writer.samples(streamID: 3, values: $0, channels: 2, stride: 300, start: 0, count: 100, firstTimestamp: 10)
            try writer.samples(streamID: 3, values: $0, channels: 2, stride: 300, start: 100, count: 200, firstTimestamp: 11)
        }
        let counts: [Int16] = [-5, 6, 7]
        try counts.withUnsafeBufferPointer {
            try writer.samples(
                streamID: 4, values: $0, channels: 1, stride: 3, start: 0, count: 3, firstTimestamp: nil, timestamps: [1, 2, 4])
        }
        try writer.close()
        let whole = try XDFFile.read(path: p), index = try XDFFile.index(path: p)
        #expect(index.streams.count == 2)
        let s = index.streams[0]
        #expect(s.sampleCount == 300 && s.firstTimestamp == 10 && s.lastTimestamp == whole.streams[0].timestamps.last)
        // Sample 100 is stamped 11 s, not 10 + 100 / 250 = 10.4 s: a break; the irregular stream keeps its timestamps.
        #expect(s.timeBreaks.map(\.sample) == [100] && s.timeBreaks.map(\.time) == [11])
        #expect(s.timestamps.isEmpty && index.streams[1].timestamps == [1, 2, 4])
        for (k, stream) in index.streams.enumerated() {
            let reader = try XDFFile.Values(path: p, stream: stream)
            var parts: [XDFData] = []
            while true {
                let w = try reader.next(64)
                let empty: Bool
                switch w {
                case .float64(let v): empty = v.isEmpty
                case .int16(let v): empty = v.isEmpty
                default: empty = true
                }
                if empty { break }
                parts.append(w)
            }
            let channels = stream.header.channelCount
            switch whole.streams[k].data {
            case .float64(let all):
                var got: [Double] = []
                for c in 0..<channels {
                    for part in parts {
                        guard case .float64(let w) = part else { continue }
                        let n = w.count / channels
                        got += w[(c * n)..<((c + 1) * n)]
                    }
                }
                #expect(got == all)
            case .int16(let all):
                var got: [Int16] = []
                for part in parts { if case .int16(let w) = part { got += w } }
                #expect(got == all)
            default: Issue.record("unexpected data")
            }
        }
    }

    @Test func tdmsIndexAndValuesEqualTheWholeRead() throws {
        let file = TDMSFile(groups: [
            TDMSGroup(
                name: "g",
                channels: [
                    TDMSChannel(name: "x", data: .float64((0..<5000).map { Double($0) / 3 })),
                    TDMSChannel(name: "y", data: .int16((0..<5000).map { Int16($0 % 3000) })),
                    TDMSChannel(name: "z", data: .float32((0..<5000).map { Float($0) * 0.5 })),
                    TDMSChannel(name: "s", data: .strings(["a", "b"])),
                ])
        ])
        let p = path("t.tdms")
        defer { unlink(p) }
        try file.write(to: p)
        let whole = try TDMSFile.read(path: p)
        guard let index = try TDMSFile.index(path: p) else { Issue.record("not indexed"); return }
        let numeric = index.groups[0].channels.filter { $0.valueIndex != nil }
        #expect(numeric.map(\.name) == ["x", "y", "z"] && numeric.allSatisfy { $0.valueCount == 5000 && $0.data.count == 0 })
        let values = try TDMSFile.Values(path: p, channels: numeric)
        var got = try values.next(2000).map(\.data)
        for _ in 0..<2 {
            for (k, w) in try values.next(2000).enumerated() { got[k] = got[k].appending(w.data) }
        }
        #expect(try values.next(2000).allSatisfy { $0.data.count == 0 && $0.valueIndex == nil })
        #expect(got == whole.groups[0].channels.prefix(3).map(\.data))
    }
}
