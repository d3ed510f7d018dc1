// The fuzz target (Fuzz/run.sh) compiles these files into one module together with TributaryWire.
#if canImport(TributaryWire)
    import TributaryWire
#endif

/// The split rule shared by writer and reader (docs/CAPTURE.md §4.2): an analog frame whose preamble
/// is consistent has its sample matrix moved to the numeric stream of its format.
///
/// - Parameters:
///   - frame: bytes starting at a frame header; at least `headerLength + 24` bytes when the frame is analog.
/// - Returns: (offset of the samples from the frame start, sample bytes, format), or nil when the frame
///   is stored whole.
@inline(__always)
func analogSplit(_ frame: UnsafeRawBufferPointer, headerLength: Int, payloadLength: Int) -> (start: Int, count: Int, format: SampleFormat)?
{
    let r = RecordReader(frame)
    guard frame.count >= 6, r.u8(at: 5) == FrameKind.analog.rawValue, payloadLength >= 24,
        frame.count >= headerLength + 24
    else { return nil }
    let channels = Int(r.u32(at: headerLength))
    let samples = Int(r.u32(at: headerLength + 4))
    guard channels <= WireLimits.maxChannels, let format = SampleFormat(rawValue: r.u8(at: headerLength + 16)) else { return nil }
    let layout = AnalogLayout(channelCount: channels, sampleCount: samples, format: format)
    guard pad8(layout.contentLength) == payloadLength else { return nil }
    return (headerLength + layout.samplesOffset, channels * samples * format.size, format)
}

/// `analogSplit` for an analog payload on its own: where its sample matrix starts in the payload.
func analogSplit(payload: UnsafeRawBufferPointer, kind: FrameKind, payloadLength: Int) -> (start: Int, count: Int, format: SampleFormat)? {
    guard kind == .analog, payloadLength >= 24, payload.count >= 24 else { return nil }
    let r = RecordReader(payload)
    let channels = Int(r.u32(at: 0))
    let samples = Int(r.u32(at: 4))
    guard channels <= WireLimits.maxChannels, let format = SampleFormat(rawValue: r.u8(at: 16)) else { return nil }
    let layout = AnalogLayout(channelCount: channels, sampleCount: samples, format: format)
    guard pad8(layout.contentLength) == payloadLength else { return nil }
    return (layout.samplesOffset, channels * samples * format.size, format)
}
