import Foundation
import TributaryText
import TributaryTransport
import TributaryWire

/// The sound card a publisher captures from, as given to `tributary serve --alsa`: an ALSA PCM
/// device name and the stream asked of it.
///
/// Text form: the device, then comma-separated `key=value` pairs, e.g.
/// `hw:1,0,channels=2,rate=48000,format=S32_LE`. ALSA device names may hold commas themselves
/// (`hw:1,0`, `plughw:CARD=USB,DEV=0`): the device runs up to the first `key=value` item whose key
/// is lower case (this spec's keys are; ALSA's own arguments are upper case).
public struct AlsaSpec: Sendable, Hashable {
    /// Sample formats a sound card may deliver (ALSA's names).
    public enum Format: String, Sendable, CaseIterable {
        /// 16-bit counts, sent as int16 counts with the scale and offset.
        case s16 = "S16_LE"
        /// 24-bit counts in the low three bytes of 32 bits, sent as int32 counts (sign-extended) with the scale and offset.
        case s24 = "S24_LE"
        /// 32-bit counts, sent as int32 counts with the scale and offset.
        case s32 = "S32_LE"
        /// 32-bit floats, sent as float32 values.
        case float = "FLOAT_LE"

        var encoding: InterleavedEncoding {
            switch self {
            case .s16: .int16
            case .s24: .int24In32
            case .s32: .int32
            case .float: .float32
            }
        }

        /// Significant bits of a count (nil for floats).
        var countBits: Int? {
            switch self {
            case .s16: 16
            case .s24: 24
            case .s32: 32
            case .float: nil
            }
        }

        /// The wire's sample format: int16 counts, int32 counts for 24- and 32-bit counts, or float32.
        public var wireFormat: SampleFormat { encoding.wireFormat }
    }

    /// Keys of the text form, in the order the help lists them.
    public static let keys = ["id", "name", "channels", "rate", "format", "scale", "offset", "unit", "range", "block", "mode", "samples"]

    /// The ALSA PCM device (`default`, `hw:1,0`, `plughw:CARD=USB,DEV=0`, a PCM defined in an ALSA configuration).
    public var device: String
    /// Source id (default 1).
    public var id: UInt32 = 1
    /// Device name in the configuration (default: the ALSA device).
    public var name: String
    /// Interleaved channels (default 2).
    public var channels = 2
    /// Samples per second per channel (default 48000): the device must give exactly this rate.
    public var rate = 48_000
    /// Sample format (default S16_LE).
    public var format = Format.s16
    /// For counts: value = count × scale + offset. Default: 1 / 2^(bits − 1) and 0, so that values
    /// are fractions of full scale in [−1, 1).
    public var scale: Double?
    public var offset: Double = 0
    /// Unit of the channels (default FS: fraction of full scale).
    public var unit = "FS"
    /// The configured range of the channels (default: the counts' through scale and offset; ±1 for floats).
    public var range: ClosedRange<Double>?
    /// Samples per channel per frame, and the device's period (default rate / 10).
    public var block: Int?
    /// Lossless (default: reading waits for the slowest subscriber; a card that is not read in time
    /// overruns, declared as a gap) or live (a slow subscriber loses frames).
    public var mode = PipeSpec.Mode.lossless
    /// Samples per channel to capture before the source ends (default: until the publisher stops).
    public var samples: UInt64?

    public init(device: String) {
        self.device = device
        name = device
    }

    /// Samples per frame.
    public var samplesPerFrame: Int { block ?? max(1, rate / 10) }

    /// The scale counts are multiplied by (1 for floats).
    public var effectiveScale: Double {
        if let scale { return scale }
        guard let bits = format.countBits else { return 1 }
        return 1 / Double(sign: .plus, exponent: bits - 1, significand: 1)
    }

    /// Parses the text form.
    /// - Throws: `AlsaSpecError` naming the key or value that is wrong.
    public init(parsing text: String) throws(AlsaSpecError) {
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
        let ours =
            items.firstIndex { item in
                guard let equals = item.firstIndex(of: "=") else { return false }
                let key = item[..<equals].trimmingCharacters(in: .whitespaces)
                return key.first?.isLowercase == true && key.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" }
            } ?? items.endIndex
        let device = items[..<ours].joined(separator: ",")
        guard !device.isEmpty else {
            throw AlsaSpecError(
                spec: text,
                message: "the spec starts with the ALSA device (default, hw:1,0, plughw:CARD=USB,DEV=0, ...), then key=value pairs")
        }
        self.init(device: device)
        do throws(KeyValueSpecError) {
            var fields = try KeyValueSpec(parsing: items[ours...].joined(separator: ","))
            if let v = try fields.integer("id", 1...Int(UInt32.max)) { id = UInt32(v) }
            if let v = fields.take("name") { name = v }
            if let v = try fields.integer("channels", 1...WireLimits.maxChannels) { channels = v }
            if let v = try fields.integer("rate", 1...10_000_000) { rate = v }
            if let v = try fields.choice("format", Format.self) { format = v }
            scale = try fields.number("scale", { $0 != 0 }, "a non-zero scale")
            if let v = try fields.number("offset", { _ in true }, "a number") { offset = v }
            if let v = fields.take("unit") { unit = v }
            range = try fields.range("range", example: "-1:1")
            block = try fields.integer("block", 1...(1 << 24))
            if let v = try fields.choice("mode", PipeSpec.Mode.self) { mode = v }
            if let v = try fields.integer("samples", 1...Int.max) { samples = UInt64(v) }
            try fields.finish(known: Self.keys)
            if format == .float && (scale != nil || offset != 0) {
                throw KeyValueSpecError("scale and offset apply to counts (S16_LE, S24_LE, S32_LE); FLOAT_LE samples are values already")
            }
            try InterleavedBlocks.checkFrameSize(channels: channels, samplesPerFrame: samplesPerFrame, format: format.wireFormat)
        } catch {
            throw AlsaSpecError(spec: text, message: error.message)
        }
    }

    /// The configuration package of the source.
    public var configuration: Configuration {
        let limits: ClosedRange<Double>
        if let range {
            limits = range
        } else if let bits = format.countBits {
            let full = Double(sign: .plus, exponent: bits - 1, significand: 1)
            let a = -full * effectiveScale + offset, b = (full - 1) * effectiveScale + offset
            limits = min(a, b)...max(a, b)
        } else {
            limits = -1...1
        }
        return Configuration(
            deviceName: name, deviceType: "ALSA \(device) \(format.rawValue)",
            channels: (0..<channels).map {
                ChannelConfiguration(
                    index: UInt32($0), description: "ch\($0)", unit: unit, samplingRate: Double(rate),
                    minValue: limits.lowerBound, maxValue: limits.upperBound)
            })
    }
}

/// An `--alsa` spec that does not parse, or a device that cannot give what it asks.
public struct AlsaSpecError: Error, Hashable, Sendable, CustomStringConvertible {
    public var spec: String
    public var message: String
    public var description: String { "'\(spec)': \(message)" }
}
