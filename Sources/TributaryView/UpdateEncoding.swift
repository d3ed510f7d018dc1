import Foundation
import TributaryBytes
import TributaryDSP

/// The binary update the WebSocket sends (docs/VIEW.md §"Binary update"): little-endian, a fixed
/// header with the link's health, then one block per channel with its readings, its trace (min/max
/// per column, 16-bit), its spectrum and its spectrogram column (centi-dB, 16-bit). Its size depends on the channels shown,
/// never on the sampling rate.
public enum UpdateEncoding {
    public static let magic: UInt32 = 0x3155_5654  // "TVU1"
    public static let headerSize = 120
    public static let channelHeaderSize = 144
    /// Spectrum points per channel at most (bins are merged by their maximum beyond this).
    public static let maxSpectrumPoints = 512
    /// Byte offset of the per-client dropped-update count in the header.
    public static let droppedOffset = 96
    /// Header flags (offset 116), bit 0: each channel's spectrum is followed by its spectrogram column.
    public static let spectrogramFlag: UInt32 = 1
    /// Header flags (offset 116), bit 1: a clock block (`clockBlockSize` bytes: the publisher's clock
    /// offset and round trip, docs/VIEW.md §3) follows the last channel block. Set once the
    /// subscriber has an estimate of the publisher's clock.
    public static let clockFlag: UInt32 = 2
    public static let clockBlockSize = 32
    /// A spectrogram column point that has no value (no segment completed since the previous update).
    public static let noValue = Int16.min

    /// `psd` in centi-dB (10·log10(power)·100, clamped to ±32767), merged by `group` bins by their maximum.
    public static func centiDecibels(_ psd: PowerSpectralDensity, group: Int) -> [Int16] {
        var points: [Int16] = []
        points.reserveCapacity((psd.values.count + group - 1) / group)
        var i = 0
        while i < psd.values.count {
            let top = psd.values[i..<min(i + group, psd.values.count)].max()!
            let db = 10 * log10(max(top, 1e-30))
            points.append(Int16(max(-32_767, min(32_767, (db * 100).rounded()))))
            i += group
        }
        return points
    }

    /// Encodes an update.
    public static func encode(
        sequence: UInt32, serverTime: Double, dataTime: Double, health: LinkHealth,
        channels: [ChannelSnapshot]
    ) -> [UInt8] {
        var w = ByteWriter()
        w.u32(magic)
        w.u32(sequence)
        w.f64(serverTime)
        w.f64(dataTime)
        w.f64(health.framesPerSecond)
        w.f64(health.megabytesPerSecond)
        w.f64(Double(health.framesReceived))
        w.f64(Double(health.gapNotices))
        w.f64(Double(health.framesLost))
        w.f64(Double(health.unaccountedLoss))
        w.f64(Double(health.reconnections))
        w.f64(health.callbackLatencyP50Ms)
        w.f64(health.callbackLatencyP99Ms)
        w.f64(0)  // updates dropped for this client: filled in per client at droppedOffset
        w.f64(health.connected ? 1 : health.publisherEnded ? 2 : 0)
        w.u32(UInt32(channels.count))
        w.u32(spectrogramFlag | (health.clock == nil ? 0 : clockFlag))
        for c in channels { channel(c, into: &w) }
        if let clock = health.clock {
            // Int64 and UInt64 to Double round (to 53 bits) and never trap.
            w.f64(Double(clock.offsetNs) / 1e9)
            w.f64(Double(clock.rttNs) / 1e9)
            w.f64(Double(clock.measuredAtNs) / 1e9)
            w.f64(Double(clock.serial))
        }
        return w.bytes
    }

    private static func channel(_ c: ChannelSnapshot, into w: inout ByteWriter<[UInt8]>) {
        let lo = c.traceMin.min().map(Double.init) ?? 0
        let hi = c.traceMax.max().map(Double.init) ?? 0
        // The spectrum in dB, merged to at most maxSpectrumPoints points, and its interpolated peak.
        var points: [Int16] = [], column: [Int16] = []
        var pointWidth = 0.0, peakFrequency = Double.nan, peakDB = Double.nan
        if let psd = c.spectrum, psd.values.count >= 2 {
            let df = psd.frequencies[1] - psd.frequencies[0]
            let db = psd.values.map { 10 * log10(max($0, 1e-30)) }
            let group = (db.count + maxSpectrumPoints - 1) / maxSpectrumPoints
            pointWidth = df * Double(group)
            // max of the powers then dB equals max of the dBs (log10 is increasing).
            points = centiDecibels(psd, group: group)
            if let next = c.spectrogramColumn, next.values.count == psd.values.count {
                column = centiDecibels(next, group: group)
            } else {
                column = [Int16](repeating: noValue, count: points.count)
            }
            var k = 1
            for j in 1..<db.count where db[j] > db[k] { k = j }
            peakDB = db[k]
            peakFrequency = Double(k) * df
            if k + 1 < db.count {
                let a = db[k - 1], b = db[k], cc = db[k + 1]
                let denominator = a - 2 * b + cc
                if denominator < 0 {
                    let p = 0.5 * (a - cc) / denominator
                    peakFrequency = (Double(k) + p) * df
                    peakDB = b - 0.25 * (a - cc) * p
                }
            }
        }
        w.u32(c.key.source)
        w.u32(c.key.channel)
        w.f64(c.sampleRate)
        w.f64(c.windowSeconds)
        w.f64(lo)
        w.f64(hi)
        w.u32(UInt32(c.traceMin.count))
        w.u32(UInt32(points.count))
        w.f64(pointWidth)
        w.f64(peakFrequency)
        w.f64(peakDB)
        w.f64(Double(c.spectrum?.segments ?? 0))
        for v in c.readings.values { w.f64(v) }
        let range = hi - lo
        func quantize(_ v: Float) -> Int16 {
            guard range > 0 else { return -32_768 }
            return Int16(max(-32_768, min(32_767, ((Double(v) - lo) / range * 65_535).rounded() - 32_768)))
        }
        for i in 0..<c.traceMin.count {
            w.i16(quantize(c.traceMin[i]))
            w.i16(quantize(c.traceMax[i]))
        }
        for p in points { w.i16(p) }
        for p in column { w.i16(p) }
        w.align(to: 8)
    }
}
