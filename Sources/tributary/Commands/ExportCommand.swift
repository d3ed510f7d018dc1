import Foundation
import TributaryCapture
import TributaryDSP
import TributaryInterchange

/// `tributary export X.tcap --format npy|csv|wav|tdms|xdf|hdf5 --out PATH`: a capture's analog data as a file
/// the measurement world reads (docs/FORMATS.md).
enum ExportCommand: TableCommand {
    static let name = "export"
    static let summary = "write a capture's analog data as NPY, CSV, WAV, TDMS, XDF or HDF5"
    static let usage = """
        usage: tributary export X.tcap --format npy|csv|wav|tdms|xdf|hdf5 --out PATH [--source N] [--channels SPEC]
                                [--start T] [--duration S] [--counts] [--time-column] [--align] [--dejitter]
                                [--allow-damage] [--force]

        Gathers the analog frames of a source, in order, into a channels × samples matrix.
          npy   one source shaped (channels, samples): float64 / float32 sources in their recorded dtype,
                bit-exact to what was imported or received; int16 / int32 sources as float64 physical
                values (count × scale + offset), or with --counts as the stored counts plus a sidecar
                PATH.json carrying scale, offset, rate, start time, channel names and units.
          csv   one source, one column per channel with a header of channel names; physical values
                (counts × scale + offset), printed so that they read back exactly. --time-column
                adds a first column time_s: each sample's recorded time, in seconds since the source's
                first sample (with --start 1 it begins at about 1.0).
          wav   one source; int16 data as 16-bit PCM counts, int32 as 32-bit PCM counts, float32 / float64
                as IEEE float WAV; needs an integer rate.
          tdms  every source (or --source N) as a group of channels with DAQmx's waveform properties
                (wf_start_time, wf_increment, unit_string, NI_ChannelName), float64 physical values; with
                --counts int16 / int32 sources as I16 / I32 counts with an NI linear scale.
          xdf   every source (or --source N) as a stream: header with labels and units, a samples chunk per
                recorded frame stamped with its time, boundary chunks, clock offsets and a footer; double64
                physical values, with --counts int16 / int32 counts (scales in the header's description).
                The capture's messages become LSL marker streams (string, 1 channel, rate 0, type Markers,
                named 'DEVICE messages', or 'messages' for those of no source), one stamped sample per
                message, with the same clock offsets; --source, --start/--duration and --align apply.
          hdf5  every source (or --source N) as a group with attributes (source_id, device_name, sample_rate,
                start_time_ns, gaps) and a chunked, compressed dataset 'data' (channels, samples) with
                channel_names, units and channel_indexes; float64 physical values, with --counts int16 /
                int32 counts with scale and offset attributes; block_start / block_time_ns give the frame times.

        \(options.help())

        Export holds a source's samples in memory (int16 counts exported as physical values also as
        float64): a source that would not fit in the memory available (MemAvailable, or the cgroup's
        limit) is refused before anything is decoded; TRIBUTARY_MEMORY_LIMIT=SIZE (bytes, or 512m, 4g,
        ...) sets the budget instead. With --start/--duration only the chunks holding the selected
        samples are read (and checked for damage).

        Damage found in the capture (a damaged chunk of the source or of its configuration, a torn tail,
        unreadable bytes, a duplicated record, a damaged header or footer) is listed on stderr with byte
        offsets, nothing is written and the exit status is 3, unless --allow-damage is given: then what
        is intact is exported, the damage is still listed, and the exit status is 0. A capture without a
        footer (a recording that did not close) is exported with a warning on stderr.
        The same export is tributary_capture_export in C and Capture.export in Python.
        Exit status: 0 written, 1 error, 2 usage, 3 damaged capture (nothing written).
        """

    /// The exit status of an export refused because the capture is damaged.
    static let damagedStatus: Int32 = 3

    /// The capture, where it goes, and how (the library's export options).
    struct Configuration {
        var capture = ""
        var destination: String?
        var format: InterchangeFormat?
        var options = ExportOptions(format: .npy)
    }

    static var options: OptionTable<Configuration> {
        let names = InterchangeFormat.allCases.map(\.rawValue)
        return OptionTable([
            .custom("--format", names.joined(separator: "|"), "the file format (above)") { c, text in
                guard let format = InterchangeFormat(rawValue: text) else {
                    throw UsageError("--format: '\(text)' is not one of \(names.joined(separator: ", "))")
                }
                c.format = format
            },
            .text("--out", "PATH", "the file to write", \.destination),
            .flag(
                "--force",
                """
                replace PATH (and with --counts PATH.json) if it exists (only once the new file is
                complete; never the capture itself, by any path or link to it)
                """, \.options.replace),
            .parsed(
                "--source", "N", "a source id", "the source (npy/csv/wav default: the lowest source id with analog data)",
                \.options.source
            ) { UInt32($0) },
            .custom("--channels", "SPEC", "channel indexes, e.g. 0-3 or 0,2,5 (default all recorded channels)") { c, text in
                do { c.options.channels = try ChannelSpec(parsing: text).channels.map { UInt32($0) } } catch {
                    throw UsageError("--channels: \(error)")
                }
            },
            .parsed("--start", "T", "a time in seconds >= 0", "begin T seconds after the first sample (default 0)", \.options.start) {
                Double($0).flatMap { $0 >= 0 && $0.isFinite ? $0 : nil }
            },
            .parsed("--duration", "S", "a duration in seconds >= 0", "export S seconds (default: to the end)", \.options.duration) {
                Double($0).flatMap { $0 >= 0 && $0.isFinite ? $0 : nil }
            },
            .flag(
                "--counts",
                """
                store int16 / int32 sources as counts (npy: with the sidecar PATH.json; tdms/xdf/hdf5:
                with their scales); refused when no exported source stores counts; a float source
                beside counts ones is written as values, with a warning
                """, \.options.counts),
            .flag("--time-column", "csv: a first column of sample times", \.options.timeColumn),
            .flag(
                "--allow-damage", "export what is intact when the capture is damaged (the damage is still listed)", \.options.allowDamage),
            .flag(
                "--align",
                """
                map each source's times onto the recorder's clock with the capture's clock-offset
                records (docs/CAPTURE.md §6): t - offset(t), offset(t) the least-squares line of the
                offsets against the publisher's time (a constant for one); xdf then writes offsets
                of 0. A source without such records keeps its times (a warning says so)
                """, \.options.align),
            .flag(
                "--dejitter",
                """
                replace the frame times of each run of contiguous frames by a robust line of time
                against sample counter (least squares, refitted without frames 3 median absolute
                residuals off), as pyxdf's dejitter_timestamps; after --align
                """, \.options.dejitter),
        ])
    }

    /// The capture, the destination and the options of the command line.
    static func parse(_ arguments: [String]) throws -> Configuration {
        var c = Configuration()
        let files = try options.parse(arguments, into: &c)
        guard let format = c.format else {
            throw UsageError("missing --format \(InterchangeFormat.allCases.map(\.rawValue).joined(separator: "|"))")
        }
        c.options.format = format
        guard c.destination != nil else { throw UsageError("missing --out PATH") }
        guard files.count == 1 else { throw UsageError(files.isEmpty ? "missing X.tcap" : "expected one capture, got \(files.count)") }
        c.capture = files[0]
        return c
    }

    /// The configuration → `CaptureExport` (the library's export, which the C interface and Python
    /// call too) → print.
    static func run(_ c: Configuration) throws -> Int32 {
        let capture = c.capture, destination = c.destination ?? ""
        do {
            let written = try CaptureExport.export(capture: capture, to: destination, options: c.options, spelling: .commandLine) {
                printError("tributary export: \($0)")
            }
            for s in written {
                print("\(destination): source \(s.sourceID), \(s.channelCount) channels × \(s.sampleCount) samples")
            }
            return 0
        } catch  where error.kind == .damaged {
            for d in error.damage { printError("tributary export: \(capture): damage at \(d)") }
            printError("tributary export: \(error.message)")
            return damagedStatus
        } catch {
            throw error  // ErrorExit.table: a usage error is status 2 with the usage, any other 1
        }
    }
}
