/// Whether a channel or line is an input or an output of the device.
public enum Direction: UInt8, Sendable, Hashable, CaseIterable {
    case input = 0
    case output = 1
}

/// One analog channel of a source (SCCT ChannelConfiguration).
public struct ChannelConfiguration: Sendable, Hashable {
    /// The channel's index in its source; filtered frames keep this index.
    public var index: UInt32
    public var description: String
    public var direction: Direction
    /// Measurement unit, e.g. "V".
    public var unit: String
    /// Samples per second.
    public var samplingRate: Double
    /// Smallest value the channel can take.
    public var minValue: Double
    /// Largest value the channel can take.
    public var maxValue: Double

    public init(
        index: UInt32, description: String, direction: Direction = .input, unit: String = "V",
        samplingRate: Double, minValue: Double = -10, maxValue: Double = 10
    ) {
        self.index = index
        self.description = description
        self.direction = direction
        self.unit = unit
        self.samplingRate = samplingRate
        self.minValue = minValue
        self.maxValue = maxValue
    }
}

/// One digital line of a source (SCCT DigitalLineConfiguration).
public struct DigitalLineConfiguration: Sendable, Hashable {
    public var index: UInt32
    public var description: String
    public var direction: Direction

    public init(index: UInt32, description: String, direction: Direction = .input) {
        self.index = index
        self.description = description
        self.direction = direction
    }
}

/// The description of one source: its device, analog channels and digital lines (SCCT ConfigurationPackage).
public struct Configuration: Sendable, Hashable {
    public var deviceName: String
    public var deviceType: String
    public var channels: [ChannelConfiguration]
    public var lines: [DigitalLineConfiguration]

    public init(
        deviceName: String, deviceType: String, channels: [ChannelConfiguration] = [],
        lines: [DigitalLineConfiguration] = []
    ) {
        self.deviceName = deviceName
        self.deviceType = deviceType
        self.channels = channels
        self.lines = lines
    }

    var contentLength: Int {
        encodedSize(deviceName) + encodedSize(deviceType) + 4
            + channels.reduce(0) { $0 + 4 + 1 + 24 + encodedSize($1.description) + encodedSize($1.unit) }
            + 4 + lines.reduce(0) { $0 + 4 + 1 + encodedSize($1.description) }
    }

    func write(_ w: inout PayloadWriter) {
        w.write(string: deviceName)
        w.write(string: deviceType)
        w.write(UInt32(channels.count))
        for c in channels {
            w.write(c.index)
            w.write(c.direction.rawValue)
            w.write(c.samplingRate)
            w.write(c.minValue)
            w.write(c.maxValue)
            w.write(string: c.description)
            w.write(string: c.unit)
        }
        w.write(UInt32(lines.count))
        for l in lines {
            w.write(l.index)
            w.write(l.direction.rawValue)
            w.write(string: l.description)
        }
    }

    static func read(_ r: inout PayloadReader) throws(WireError) -> Configuration {
        let name = try r.readString("configuration.device_name")
        let type = try r.readString("configuration.device_type")
        // Each channel takes at least 37 bytes, so the count is checked against what can follow.
        let channelCount = try r.readCount("configuration.channel_count", elementSize: 37, limit: WireLimits.maxChannels)
        var channels: [ChannelConfiguration] = []
        channels.reserveCapacity(channelCount)
        for _ in 0..<channelCount {
            let index = try r.read(UInt32.self, "channel.index")
            let direction = try readDirection(&r, "channel.direction")
            let rate = try r.f64("channel.sampling_rate")
            guard WireLimits.isValidSamplingRate(rate) else {
                throw WireError(
                    .invalidValue, field: "channel.sampling_rate", offset: r.absolutePosition - 8,
                    detail: "\(rate) is not 0 or in [\(WireLimits.minSamplingRate), \(WireLimits.maxSamplingRate)] samples a second")
            }
            let min = try r.f64("channel.min")
            let max = try r.f64("channel.max")
            let description = try r.readString("channel.description")
            let unit = try r.readString("channel.unit")
            channels.append(
                ChannelConfiguration(
                    index: index, description: description, direction: direction,
                    unit: unit, samplingRate: rate, minValue: min, maxValue: max))
        }
        let lineCount = try r.readCount("configuration.line_count", elementSize: 9, limit: WireLimits.maxChannels)
        var lines: [DigitalLineConfiguration] = []
        lines.reserveCapacity(lineCount)
        for _ in 0..<lineCount {
            let index = try r.read(UInt32.self, "line.index")
            let direction = try readDirection(&r, "line.direction")
            let description = try r.readString("line.description")
            lines.append(DigitalLineConfiguration(index: index, description: description, direction: direction))
        }
        return Configuration(deviceName: name, deviceType: type, channels: channels, lines: lines)
    }
}

private func readDirection(_ r: inout PayloadReader, _ field: String) throws(WireError) -> Direction {
    let at = r.absolutePosition
    let raw = try r.read(UInt8.self, field)
    guard let direction = Direction(rawValue: raw) else {
        throw WireError(.invalidValue, field: field, offset: at, detail: "\(raw); expected 0 (input) or 1 (output)")
    }
    return direction
}
