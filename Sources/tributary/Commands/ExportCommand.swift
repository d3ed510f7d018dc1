import Foundation
import TributaryCapture
import TributaryDSP
import TributaryFormats

/// `tributary export X.tcap --format npy|csv|wav --out PATH`: one source's analog data as a file.
enum ExportCommand: Command {
    static let name = "export"
    static let summary = "write a capture's analog data as NPY, CSV or WAV"
    static let usage = """
    usage: tributary export X.tcap --format npy|csv|wav --out PATH [--source N] [--channels SPEC] [--allow-damage]

    Gathers the analog frames of one source, in order, into a channels × samples matrix.
      npy  shaped (channels, samples) in the recorded dtype (float64, float32, or int16 counts),
           bit-exact to what was imported or received.
      csv  one column per channel with a header of channel names; values as float64 (int16 counts
           scaled: count × scale + offset), printed so that they read back exactly.
      wav  int16 data as 16-bit PCM counts, float32 / float64 as IEEE float WAV; needs an integer rate.

      --source N       the source (default: the lowest source id with analog data)
      --channels SPEC  channel indexes, e.g. 0-3 or 0,2,5 (default all recorded channels)
      --allow-damage   export what is intact when the capture is damaged (the damage is still listed)

    Damage found in the capture (a damaged chunk of the source or of its configuration, a torn tail,
    unreadable bytes, a duplicated record, a damaged header or footer) is listed on stderr with byte
    offsets, nothing is written and the exit status is 3, unless --allow-damage is given: then what
    is intact is exported, the damage is still listed, and the exit status is 0. A capture without a
    footer (a recording that did not close) is exported with a warning on stderr.
    Exit status: 0 written, 1 error, 2 usage, 3 damaged capture (nothing written).
    """

    /// The exit status of an export refused because the capture is damaged.
    static let damagedStatus: Int32 = 3

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        guard let format = try arguments.option("--format") else { throw UsageError("missing --format npy|csv|wav") }
        guard ["npy", "csv", "wav"].contains(format) else { throw UsageError("--format: '\(format)' is not npy, csv or wav") }
        guard let out = try arguments.option("--out") else { throw UsageError("missing --out PATH") }
        let source = try arguments.option("--source", "a source id") { UInt32($0) }
        let channelText = try arguments.option("--channels")
        let allowDamage = arguments.flag("--allow-damage")
        let files = try arguments.finish()
        guard files.count == 1 else { throw UsageError(files.isEmpty ? "missing X.tcap" : "expected one capture, got \(files.count)") }
        var channels: [UInt32]?
        if let channelText {
            do { channels = try ChannelSpec(parsing: channelText).channels.map { UInt32($0) } } catch { throw UsageError("--channels: \(error)") }
        }
        let reader = try CaptureReader(path: files[0])
        let analogMask = UInt32(1) << 3
        guard let sourceID = source ?? reader.index.filter({ $0.envelope.type == .chunk && $0.envelope.kindMask & analogMask != 0 })
            .map(\.envelope.sourceID).min() else { throw CommandError("\(files[0]): no analog data") }
        let extracted = Result { () throws(CaptureError) -> ExtractedAnalog in
            try ExtractedAnalog(reader: reader, source: sourceID, channels: channels, allowDamage: allowDamage)
        }
        let data: ExtractedAnalog
        switch extracted {
        case .success(let d): data = d
        case .failure(let error) where error.kind != .damagedRecord: throw error
        case .failure:
            for d in reader.damage { printError("tributary export: \(files[0]): damage at \(d)") }
            printError("tributary export: \(files[0]) is damaged (\(reader.damage.count) damaged regions); nothing written. "
                       + "Pass --allow-damage to export what is intact, or run 'tributary repair \(files[0]) --out REPAIRED.tcap'")
            return damagedStatus
        }
        for d in data.damage { printError("tributary export: warning: \(files[0]): damage at \(d); exported what is intact") }
        if !reader.hasFooter {
            printError("tributary export: warning: \(files[0]) has no footer (its recording did not close): "
                       + "what was being written when it stopped is missing")
        }
        let rows = data.channelIndexes.count
        do {
            switch format {
            case "npy":
                try NPY.write(NPYArray(channels: rows, samplesPerChannel: data.sampleCount, samples: data.samples), path: out)
            case "csv":
                let names = data.channelIndexes.map { i in data.configuration?.channels.first { $0.index == i }?.description ?? "ch\(i)" }
                try CSVTable(channelNames: names, channelCount: rows, values: data.physicalValues).write(to: out)
            default:
                guard let rate = data.rate, rate == rate.rounded(), rate >= 1, rate <= 4_294_967_295 else {
                    throw CommandError("WAV needs one integer sampling rate; the configuration gives \(data.rate.map { "\($0)" } ?? "none")")
                }
                let wav: WAVFile
                switch data.samples {
                case .int16(let v): wav = WAVFile(sampleRate: Int(rate), format: .int16, channelCount: rows, samples: v.map(Double.init))
                case .float32(let v): wav = WAVFile(sampleRate: Int(rate), format: .float32, channelCount: rows, samples: v.map(Double.init))
                case .float64(let v): wav = WAVFile(sampleRate: Int(rate), format: .float64, channelCount: rows, samples: v)
                }
                try wav.write(to: out)
            }
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError("\(error)")
        }
        print("\(out): source \(sourceID), \(rows) channels × \(data.sampleCount) samples")
        return 0
    }
}
