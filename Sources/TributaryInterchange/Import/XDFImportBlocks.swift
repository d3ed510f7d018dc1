import Foundation
import TributaryCapture
import TributaryFormats
import TributaryWire

extension FormatImport {
    /// How far an imported sample's time may be from its XDF timestamp (clock-corrected) before a
    /// new block re-times the samples: the larger of 1 ms and a quarter of the nominal sample period
    /// (docs/FORMATS.md, XDF import).
    public static func xdfTimeTolerance(rate: Double) -> Double { max(0.001, 0.25 / rate) }

    /// The blocks of a numeric stream with a nominal rate (docs/FORMATS.md, XDF import): one at the
    /// first sample; one at every stamped sample that breaks the nominal pace by more than half a
    /// sample (`XDFStream.timeBreaks`, a gap: `first_sample` jumps); and one (`continues`: no gap)
    /// at every sample whose corrected timestamp is more than `xdfTimeTolerance` from the time its
    /// block gives it (the block's first time + k / `nominal_srate`), so that every sample's
    /// imported time is within the tolerance of its timestamp. Each block's time is its first
    /// sample's corrected timestamp.
    /// - Parameters:
    ///   - corrected: every sample's corrected timestamp when the stream's timestamps are in memory
    ///     (`XDFStream.timestamps`); else empty, and they are read from `file` a window at a time
    ///     (`XDFFile.Timestamps`, `window` at a time) and corrected by `sync` in the stream's order,
    ///     as the in-memory path corrects them (clock resets included) — unless the stream has one
    ///     clock segment at most and the index's `paceDrift` and `runSpan` show that none is re-timed.
    ///   - what: the stream as messages name it.
    ///   - window: how many timestamps each window of the file holds (the tests split a stream anywhere with it).
    /// - Throws: `CaptureError.usage` when a block's corrected time is beyond the range of
    ///   `timestamp_ns`, or the file changed since it was indexed.
    static func xdfPacedBlocks(
        _ stream: XDFStream, file: String, corrected: [Double], sync: inout XDFClockSync, what: String, window size: Int = 1 << 16
    ) throws(CaptureError) -> [ImportedBlock] {
        let n = stream.sampleCount, rate = stream.header.nominalRate, tolerance = xdfTimeTolerance(rate: rate)
        let inMemory = !stream.timestamps.isEmpty
        /// A block at sample `s` (timestamp `raw`, corrected `time`).
        func block(_ s: Int, _ raw: Double, _ time: Double, continues: Bool) throws(CaptureError) -> ImportedBlock {
            guard let ns = SampleTime.nanoseconds(seconds: time) else {
                throw CaptureError(
                    .usage, file: file,
                    "\(what): sample \(s) at \(raw) s (\(time) s with the clock offsets) "
                        + "is beyond the range of timestamp_ns (1677-09-21 to 2262-04-11)")
            }
            return ImportedBlock(start: s, timestampNs: ns, continues: continues)
        }
        // Indexed, one clock line t + a + b·t at most: a sample's corrected time is off its run's by
        // its raw distance + b × the time since the run's start. When that stays well within the
        // tolerance nothing is re-timed, and the blocks are the runs (no pass over the timestamps).
        let bound = stream.paceDrift + sync.maxSlope * stream.runSpan
        if !inMemory, sync.segmentCount <= 1, bound.isFinite, bound <= tolerance / 2, let first = stream.firstTimestamp {
            var blocks = [try block(0, first, sync.isEmpty ? first : sync.correct(first), continues: false)]
            for b in stream.timeBreaks {
                blocks.append(try block(b.sample, b.time, sync.isEmpty ? b.time : sync.correct(b.time), continues: false))
            }
            return blocks
        }
        var reader: XDFFile.Timestamps?
        if !inMemory {
            do { reader = try XDFFile.Timestamps(path: file, stream: stream) } catch { throw CaptureError.importing(error, file: file) }
        }
        var window: [Double] = [], at = 0
        /// Sample `s`'s timestamp and its corrected time.
        func timestamp(_ s: Int) throws(CaptureError) -> (Double, Double) {
            if inMemory { return (stream.timestamps[s], s < corrected.count ? corrected[s] : stream.timestamps[s]) }
            if at == window.count {
                do { window = try reader?.next(max(1, size)) ?? [] } catch { throw CaptureError.importing(error, file: file) }
                at = 0
                guard !window.isEmpty else {
                    throw CaptureError(.usage, file: file, "\(what): \(s) samples read where the index found \(n); the file changed")
                }
            }
            let raw = window[at]
            at += 1
            return (raw, sync.isEmpty ? raw : sync.correct(raw))
        }
        let breaks = stream.timeBreaks
        var blocks: [ImportedBlock] = [], next = 0
        var start = 0, startTime = 0.0
        for s in 0..<n {
            let (raw, time) = try timestamp(s)
            let gap = next < breaks.count && breaks[next].sample == s
            if gap { next += 1 }
            guard s == 0 || gap || abs(time - (startTime + Double(s - start) / rate)) > tolerance else { continue }
            blocks.append(try block(s, raw, time, continues: s > 0 && !gap))
            start = s
            startTime = time
        }
        return blocks
    }
}
