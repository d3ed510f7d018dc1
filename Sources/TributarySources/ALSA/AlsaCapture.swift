import CAlsa
import Foundation
import TributaryTransport

/// An ALSA PCM opened for capture, configured for one interleaved stream: the only type that
/// touches libasound. Opened non-blocking, so that a read never holds its thread past a wait of
/// 100 ms and a stopping publisher is noticed.
///
/// Timestamps: the PCM's timestamps are asked for in the wall clock (`SND_PCM_TSTAMP_TYPE_GETTIMEOFDAY`),
/// so a driver's trigger timestamp — when the capture started — is the time of the first sample.
final class AlsaCapture: @unchecked Sendable {
    // @unchecked: the PCM handle is configured in `init` on the caller's thread and then used only
    // by the one thread that runs the source (`AlsaSource.run`); `deinit` runs after both.
    private let pcm: OpaquePointer
    let device: String

    /// What a read did.
    enum Read {
        /// `Int` samples per channel were read.
        case samples(Int)
        /// The capture overran (its buffer filled before it was read), or the machine suspended it,
        /// and it was prepared again: the samples in between are lost.
        case lost(String)
        /// Nothing to read within the wait.
        case nothing
        /// An error the capture cannot go on after.
        case failed(String)
    }

    /// Opens `device` for capture and sets its hardware and software parameters.
    /// - Throws: `AlsaCaptureError`: what the device refused and what it offers.
    init(spec: AlsaSpec) throws(AlsaCaptureError) {
        device = spec.device
        var handle: OpaquePointer?
        let opened = snd_pcm_open(&handle, spec.device, SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
        guard opened >= 0, let handle else {
            throw AlsaCaptureError("cannot open ALSA capture device '\(spec.device)': \(Self.describe(opened))")
        }
        pcm = handle
        // Every stored property is set: if this throws, deinit closes the handle.
        try configure(spec)
    }

    deinit { snd_pcm_close(pcm) }

    private func configure(_ spec: AlsaSpec) throws(AlsaCaptureError) {
        let name = "ALSA device '\(spec.device)'"
        var hw: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) >= 0, let hw else { throw AlsaCaptureError("\(name): out of memory") }
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(pcm, hw), "\(name): cannot read its hardware parameters")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "\(name) does not offer interleaved reads")

        let format = Self.alsaFormat(spec.format)
        if snd_pcm_hw_params_test_format(pcm, hw, format) < 0 {
            let offered = (0...Int(SND_PCM_FORMAT_LAST.rawValue)).compactMap { raw -> String? in
                let f = snd_pcm_format_t(rawValue: numericCast(raw))
                guard snd_pcm_hw_params_test_format(pcm, hw, f) >= 0, let text = snd_pcm_format_name(f) else { return nil }
                return String(cString: text)
            }
            throw AlsaCaptureError(
                "\(name) does not deliver format \(spec.format.rawValue); it offers "
                    + (offered.isEmpty ? "none" : offered.joined(separator: ", "))
                    + " (this source reads \(AlsaSpec.Format.allCases.map(\.rawValue).joined(separator: ", ")); a plughw: device converts)")
        }
        try check(snd_pcm_hw_params_set_format(pcm, hw, format), "\(name): cannot set format \(spec.format.rawValue)")

        if snd_pcm_hw_params_test_channels(pcm, hw, UInt32(spec.channels)) < 0 {
            var low: UInt32 = 0, high: UInt32 = 0
            let range =
                snd_pcm_hw_params_get_channels_min(hw, &low) >= 0 && snd_pcm_hw_params_get_channels_max(hw, &high) >= 0
                ? "; it takes \(low)...\(high)" : ""
            throw AlsaCaptureError("\(name) does not capture \(spec.channels) channel\(spec.channels == 1 ? "" : "s")\(range)")
        }
        try check(snd_pcm_hw_params_set_channels(pcm, hw, UInt32(spec.channels)), "\(name): cannot set \(spec.channels) channels")

        // The rates it takes, read before a rate is set (which narrows them to that one).
        var low: UInt32 = 0, high: UInt32 = 0, dir: Int32 = 0
        let range =
            snd_pcm_hw_params_get_rate_min(hw, &low, &dir) >= 0 && snd_pcm_hw_params_get_rate_max(hw, &high, &dir) >= 0
            ? " (it takes \(low)...\(high) Hz)" : ""
        var rate = UInt32(spec.rate)
        var direction: Int32 = 0
        let rateSet = snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &direction)
        guard rateSet >= 0, rate == UInt32(spec.rate), direction == 0 else {
            throw AlsaCaptureError(
                "\(name) does not capture at \(spec.rate) Hz: "
                    + (rateSet < 0 ? Self.describe(rateSet) : "the nearest rate it gives is \(rate) Hz")
                    + "\(range); give rate=\(rateSet < 0 ? "a rate it takes" : String(rate)) or a plughw: device, which resamples")
        }

        // The period is the block; four of them in the buffer give the reading thread room.
        var period = snd_pcm_uframes_t(spec.samplesPerFrame)
        try check(
            snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &direction),
            "\(name): cannot set a period of \(spec.samplesPerFrame) samples")
        var buffer = snd_pcm_uframes_t(spec.samplesPerFrame).multipliedReportingOverflow(by: 4).partialValue
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer), "\(name): cannot set a buffer of \(buffer) samples")
        try check(snd_pcm_hw_params(pcm, hw), "\(name): cannot apply the hardware parameters")

        var sw: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&sw) >= 0, let sw else { throw AlsaCaptureError("\(name): out of memory") }
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(pcm, sw), "\(name): cannot read its software parameters")
        try check(snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE), "\(name): cannot enable timestamps")
        try check(snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_GETTIMEOFDAY), "\(name): cannot use wall-clock timestamps")
        try check(snd_pcm_sw_params(pcm, sw), "\(name): cannot apply the software parameters")
    }

    private func check(_ result: Int32, _ what: @autoclosure () -> String) throws(AlsaCaptureError) {
        guard result >= 0 else { throw AlsaCaptureError("\(what()): \(Self.describe(result))") }
    }

    static func alsaFormat(_ format: AlsaSpec.Format) -> snd_pcm_format_t {
        switch format {
        case .s16: SND_PCM_FORMAT_S16_LE
        case .s24: SND_PCM_FORMAT_S24_LE
        case .s32: SND_PCM_FORMAT_S32_LE
        case .float: SND_PCM_FORMAT_FLOAT_LE
        }
    }

    /// libasound's text for an error code.
    static func describe(_ code: Int32) -> String { String(cString: snd_strerror(code)) }

    /// Starts the capture.
    /// - Returns: The time of its first sample (ns since 1970): the driver's trigger timestamp, or the
    ///   wall clock just before the start when the PCM gives none (plugins without a clock).
    func start() throws(AlsaCaptureError) -> Int64 {
        let before = wallClockNanoseconds()
        let started = snd_pcm_start(pcm)
        guard started >= 0 else { throw AlsaCaptureError("cannot start the capture: \(Self.describe(started))") }
        return triggerTimeNs() ?? before
    }

    /// The trigger timestamp of the running capture, when the PCM keeps one.
    private func triggerTimeNs() -> Int64? {
        var status: OpaquePointer?
        guard snd_pcm_status_malloc(&status) >= 0, let status else { return nil }
        defer { snd_pcm_status_free(status) }
        guard snd_pcm_status(pcm, status) >= 0 else { return nil }
        var trigger = snd_htimestamp_t()
        snd_pcm_status_get_trigger_htstamp(status, &trigger)
        guard trigger.tv_sec > 0 else { return nil }
        return Int64(trigger.tv_sec).multipliedSaturated(by: 1_000_000_000).addingSaturated(Int64(trigger.tv_nsec))
    }

    /// Reads up to `frames` samples per channel into `buffer`, waiting at most 100 ms for them.
    func read(into buffer: UnsafeMutableRawPointer, frames: Int) -> Read {
        let count = snd_pcm_readi(pcm, buffer, snd_pcm_uframes_t(frames))
        if count > 0 { return .samples(count) }
        let code = Int32(truncatingIfNeeded: count)
        switch -code {
        case 0, EAGAIN:
            let waited = snd_pcm_wait(pcm, 100)
            if waited >= 0 || -waited == EPIPE || -waited == ESTRPIPE { return .nothing }
            return .failed("waiting for samples: \(Self.describe(waited))")
        case EPIPE, ESTRPIPE:
            let what = -code == EPIPE ? "overrun" : "suspended"
            let recovered = snd_pcm_recover(pcm, code, 1)
            guard recovered >= 0 else {
                return .failed("\(what), and the capture could not be prepared again: \(Self.describe(recovered))")
            }
            return .lost(what)
        default:
            return .failed("reading: \(Self.describe(code))")
        }
    }

    /// Stops the capture, dropping what it holds.
    func stop() { snd_pcm_drop(pcm) }
}

/// A sound card that cannot be opened, or cannot give the stream asked of it.
struct AlsaCaptureError: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
