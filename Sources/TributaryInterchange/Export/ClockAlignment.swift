import Foundation
import TributaryCapture

/// `--align` and `--dejitter` (docs/CLI.md, export): a source's frame times mapped onto the
/// recorder's clock with the capture's clock-offset records (docs/CAPTURE.md §6), and smoothed by a
/// line through block times against sample index, as pyxdf's `synchronize_clocks` and
/// `dejitter_timestamps` do for XDF.
public enum ClockAlignment {
    /// The largest offset, in either direction, accepted from a file: 100 years.
    static let maxOffsetNs = 3.2e18

    /// The least-squares line of the offsets against the publisher's time (a constant for one
    /// offset): `offset(t) = intercept + slope · (t − origin)`, in ns; nil without offsets.
    /// - Throws: `ExportError` `.data` when a value is out of range or the line is not finite.
    static func offsetLine(_ offsets: [CaptureClockOffset]) throws(ExportError) -> (origin: Double, intercept: Double, slope: Double)? {
        guard !offsets.isEmpty else { return nil }
        // The publisher's time of each measurement (recorder time + offset), relative to the first.
        let points = offsets.map { (x: Double($0.measuredAtNs) + Double($0.offsetNs), y: Double($0.offsetNs)) }
        for p in points where !(abs(p.y) <= maxOffsetNs) {
            throw ExportError(.data, "a clock offset of \(p.y) ns is out of range (at most 100 years)")
        }
        let origin = points[0].x
        let n = Double(points.count)
        let xs = points.map { ($0.x - origin) / 1e9 }, ys = points.map(\.y)
        let meanX = xs.reduce(0, +) / n, meanY = ys.reduce(0, +) / n
        var sxx = 0.0, sxy = 0.0
        for (x, y) in zip(xs, ys) {
            sxx += (x - meanX) * (x - meanX)
            sxy += (x - meanX) * (y - meanY)
        }
        let slope = sxx > 0 ? sxy / sxx : 0
        let intercept = meanY - slope * meanX
        guard slope.isFinite, intercept.isFinite else { throw ExportError(.data, "the clock offsets give no finite line") }
        return (origin, intercept, slope)
    }

    /// Maps every frame time of `series` onto the recorder's clock: t − offset(t), with the line of
    /// the offsets that apply to its source. A source without offsets is left as it is.
    /// - Returns: whether offsets applied.
    /// - Throws: `ExportError` `.data` when the offsets are unusable or a mapped time leaves Int64.
    @discardableResult
    public static func align(_ series: inout SourceSeries, offsets: [CaptureClockOffset]) throws(ExportError) -> Bool {
        let own = offsets.filter { $0.applies(to: series.sourceID) }.sorted { $0.measuredAtNs < $1.measuredAtNs }
        guard let line = try offsetLine(own) else { return false }
        for k in series.blocks.indices {
            series.blocks[k].timestampNs = try mapped(series.blocks[k].timestampNs, line, source: series.sourceID)
        }
        return true
    }

    /// Maps the message times of `series` onto the recorder's clock as `align` maps frame times, with
    /// the records `MessageSeries.offsets(for:in:)` picks for its source.
    /// - Returns: whether offsets applied.
    @discardableResult
    static func align(_ series: inout MessageSeries, offsets: [CaptureClockOffset]) throws(ExportError) -> Bool {
        let own = MessageSeries.offsets(for: series.sourceID, in: offsets).sorted { $0.measuredAtNs < $1.measuredAtNs }
        guard let line = try offsetLine(own) else { return false }
        for k in series.times.indices { series.times[k] = try mapped(series.times[k], line, source: series.sourceID) }
        return true
    }

    /// `t` − offset(`t`) on the line of the offsets.
    static func mapped(_ t: Int64, _ line: (origin: Double, intercept: Double, slope: Double), source: UInt32) throws(ExportError) -> Int64
    {
        let offset = line.intercept + line.slope * ((Double(t) - line.origin) / 1e9)
        guard abs(offset) <= maxOffsetNs, let shift = Int64(exactly: offset.rounded()),
            case (let mapped, false) = t.subtractingReportingOverflow(shift)
        else {
            throw ExportError(.data, "source \(source): the clock offset at \(t) ns (\(offset) ns) cannot be applied")
        }
        return mapped
    }

    /// Replaces the frame times of each run of contiguous frames (no `first_sample` jump) by a line of
    /// time against sample counter, fitted by least squares and fitted again without the frames more
    /// than 3 median absolute residuals off it (a robust fit: a frame delayed in its publisher moves
    /// it no more). Runs of fewer than 3 frames are left as they are.
    /// - Throws: `ExportError` `.data` when a fitted time leaves Int64.
    public static func dejitter(_ series: inout SourceSeries) throws(ExportError) {
        var runStart = 0
        for k in series.blocks.indices {
            let last = k == series.blocks.count - 1
            let breaks =
                !last && series.blocks[k + 1].firstSample != series.blocks[k].firstSample &+ UInt64(series.blocks[k].count)
            if last || breaks {
                try dejitterRun(&series.blocks, runStart...k, source: series.sourceID)
                runStart = k + 1
            }
        }
    }

    private static func dejitterRun(_ blocks: inout [SeriesBlock], _ run: ClosedRange<Int>, source: UInt32) throws(ExportError) {
        guard run.count >= 3 else { return }
        let x0 = blocks[run.lowerBound].firstSample, t0 = blocks[run.lowerBound].timestampNs
        let xs = run.map { Double(blocks[$0].firstSample &- x0) }
        let ys = run.map { Double(blocks[$0].timestampNs &- t0) }
        func fit(_ keep: [Bool]) -> (a: Double, b: Double) {
            var n = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0
            for i in xs.indices where keep[i] {
                n += 1
                sx += xs[i]
                sy += ys[i]
                sxx += xs[i] * xs[i]
                sxy += xs[i] * ys[i]
            }
            let d = n * sxx - sx * sx
            guard n >= 2, d > 0 else { return (sy / max(n, 1), 0) }
            let b = (n * sxy - sx * sy) / d
            return ((sy - b * sx) / n, b)
        }
        var line = fit(Array(repeating: true, count: xs.count))
        let residuals = xs.indices.map { abs(ys[$0] - (line.a + line.b * xs[$0])) }
        let mad = residuals.sorted()[residuals.count / 2]
        if mad > 0 { line = fit(residuals.map { $0 <= 3 * mad }) }
        for (i, k) in run.enumerated() {
            let fitted = (line.a + line.b * xs[i]).rounded()
            guard let delta = Int64(exactly: fitted), case (let t, false) = t0.addingReportingOverflow(delta) else {
                throw ExportError(.data, "source \(source): a dejittered time (\(fitted) ns after \(t0) ns) is out of range")
            }
            blocks[k].timestampNs = t
        }
    }
}
