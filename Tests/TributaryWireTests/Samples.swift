import TributaryTestSupport

@testable import TributaryWire

/// Random packages of every kind, with the edge cases the issue names (0 channels, 0 samples,
/// empty and non-ASCII strings) drawn often.
struct PackageFactory {
    var rng: SplitMix64

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func bool() -> Bool { Bool.random(using: &rng) }
    mutating func double() -> Double { Double.random(in: -1e6...1e6, using: &rng) }
    /// A sampling rate the protocol allows (0, or 1e-6 to 1e12 samples a second, PROTOCOL.md §5.1).
    mutating func rate() -> Double { bool() ? 0 : Double.random(in: 1e-6...1e6, using: &rng) }

    mutating func string() -> String {
        let pieces = ["", "a", "Volt", "µV", "温度", "ch 1", "🙂", "\u{0}", "x\ny", "Ünïcødé"]
        return (0..<int(0...3)).map { _ in pieces[int(0...(pieces.count - 1))] }.joined()
    }

    mutating func ids(_ n: Int) -> [UInt32] { (0..<n).map { _ in UInt32(int(0...70_000)) } }

    mutating func configuration() -> Configuration {
        Configuration(
            deviceName: string(), deviceType: string(),
            channels: (0..<int(0...5)).map { i in
                ChannelConfiguration(
                    index: UInt32(i), description: string(), direction: bool() ? .input : .output,
                    unit: string(), samplingRate: rate(), minValue: double(), maxValue: double())
            },
            lines: (0..<int(0...4)).map { i in
                DigitalLineConfiguration(index: UInt32(i), description: string(), direction: bool() ? .input : .output)
            })
    }

    mutating func analog() -> AnalogData {
        let channels = int(0...4), samples = int(0...37)
        let n = channels * samples
        let format = SampleFormat.allCases[int(0...3)]
        let data: AnalogSamples
        switch format {
        case .float64: data = .float64((0..<n).map { _ in double() })
        case .float32: data = .float32((0..<n).map { _ in Float(double()) })
        case .int16:
            data = .int16(
                counts: (0..<n).map { _ in Int16.random(in: .min ... .max, using: &rng) },
                scale: (0..<channels).map { _ in double() }, offset: (0..<channels).map { _ in double() })
        case .int32:
            data = .int32(
                counts: (0..<n).map { _ in Int32.random(in: .min ... .max, using: &rng) },
                scale: (0..<channels).map { _ in double() }, offset: (0..<channels).map { _ in double() })
        }
        return AnalogData(
            channelIndexes: ids(channels), sampleCount: samples,
            firstSample: UInt64.random(in: 0 ... .max, using: &rng), samples: data)
    }

    mutating func digital() -> DigitalData {
        let lines = int(0...5), samples = int(0...29)
        return DigitalData(
            lines: (0..<lines).map { _ in (0..<samples).map { _ in bool() } },
            firstSample: UInt64(int(0...1_000_000)))
    }

    mutating func blob(image: Bool) -> BlobChunk {
        let content = (0..<int(0...100)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let chunks = BlobChunk.chunks(
            of: content, transferID: UInt64(int(0...9)), name: string(),
            attributes: (0..<int(0...3)).map { _ in string() },
            imageFormat: image ? ImageFormat.allCases[int(0...3)] : nil,
            computeMD5: bool(), chunkSize: int(1...64))
        return chunks[int(0...(chunks.count - 1))]
    }

    mutating func array() -> Array2D {
        let rows = int(0...5), columns = int(0...6)
        let n = rows * columns
        let elements: ArrayElements
        switch int(1...7) {
        case 1: elements = .double((0..<n).map { _ in double() })
        case 2: elements = .float((0..<n).map { _ in Float(double()) })
        case 3: elements = .int32((0..<n).map { _ in Int32.random(in: .min ... .max, using: &rng) })
        case 4: elements = .int16((0..<n).map { _ in Int16.random(in: .min ... .max, using: &rng) })
        case 5: elements = .int64((0..<n).map { _ in Int64.random(in: .min ... .max, using: &rng) })
        case 6: elements = .bool((0..<n).map { _ in bool() })
        default: elements = .string((0..<n).map { _ in string() })
        }
        return Array2D(
            rowCount: rows, columnCount: columns, rowOrigin: UInt32(int(0...100)),
            columnOrigin: UInt32(int(0...100)), elements: elements)
    }

    /// A random package of the given kind.
    mutating func package(_ kind: FrameKind) -> Package {
        switch kind {
        case .configuration: return .configuration(configuration())
        case .error: return .error(ErrorReport(ErrorCode(rawValue: UInt32(int(1...14))), string()))
        case .analog: return .analog(analog())
        case .digital: return .digital(digital())
        case .message: return .message(Message(string(), code: Int32(int(-5...5))))
        case .xml: return .xml("<a>" + string() + "</a>")
        case .file: return .file(blob(image: false))
        case .image: return .image(blob(image: true))
        case .array: return .array(array())
        case .analogFilter:
            let selection: ChannelSelection
            switch int(0...2) {
            case 0: selection = .all
            case 1: let a = UInt32(int(0...10)); selection = .range(from: a, to: a + UInt32(int(0...10)))
            default: selection = .list(ids(int(0...6)))
            }
            return .analogFilter(AnalogFilterRequest(channels: selection, sources: ids(int(0...3)), replaces: UInt32(int(0...3))))
        case .arrayFilter:
            return .arrayFilter(
                ArrayFilterRequest(
                    elementType: ArrayElementType.allCases[int(0...6)],
                    rows: IndexRange(from: 2, to: UInt32(int(2...20))),
                    columns: bool() ? .all : IndexRange(from: 0, to: 3),
                    replaces: UInt32(int(0...2))))
        case .removeFilter: return .removeFilter
        case .signalFilter:
            let q = bool() ? UInt32(int(2...1_000)) : 0
            let fir = q != 0 && bool()
            let order = q == 0 ? 0 : UInt16(int(0...(fir ? 400 : 16)))
            let lowpass = bool() ? UInt8(int(1...16)) : 0
            return .signalFilter(
                SignalFilterRequest(
                    sourceID: UInt32(int(1...100)), decimate: q, decimationKind: fir ? .fir : .iir, decimationOrder: order,
                    lowpassOrder: lowpass, lowpassCutoff: lowpass == 0 ? 0 : Double(int(1...10_000)) / 7))
        case .hello:
            return .hello(
                Hello(
                    apiKey: string(), clientDescription: string(), timeoutSeconds: double(),
                    sourceFilterEnabled: bool()))
        case .welcome:
            return .welcome(
                Welcome(
                    sessionID: UInt64(int(0...1000)), publisherDescription: string(),
                    sources: (0..<int(0...3)).map { SourceInfo(id: UInt32($0 + 1), description: string()) }))
        case .start: return .start
        case .stop: return .stop
        case .selectSources: return .selectSources(ids(int(0...5)))
        case .gap: return .gap(Gap(firstMissingSequence: UInt64(int(0...1000)), missingCount: UInt64(int(1...99))))
        case .close: return .close(Close(code: ErrorCode(rawValue: UInt32(int(0...14))), reason: string()))
        case .credit: return .credit(UInt32(int(0...10_000)))
        case .properties:
            let keys = (0..<int(0...3)).map { "k\($0)" + string() }
            return .properties(
                SourceProperties(
                    source: keys.map { Property($0, string()) },
                    channels: (0..<int(0...2)).map { ChannelProperties(index: UInt32($0 * 2), properties: [Property("unit", string())]) }))
        }
    }

    /// A random frame of the given kind with random header fields.
    mutating func frame(_ kind: FrameKind) -> Frame {
        Frame(
            encoding: package(kind), sequence: UInt64(int(0...1_000_000)), timestampNs: Int64(int(0...Int(Int32.max))) * 1_000_000_000,
            sourceID: UInt32(int(0...5)), filterID: UInt32(int(0...3)), flags: bool() ? [.replayed] : [])
    }
}
