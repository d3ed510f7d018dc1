import Foundation
import TributaryCapture
import TributaryFormats

/// `tributary import FILE --rate HZ --out X.tcap`: records an NPY, WAV or CSV file as a capture.
enum ImportCommand: Command {
    static let name = "import"
    static let summary = "record an NPY, WAV or CSV file as a capture (.tcap)"
    static let usage = """
    usage: tributary import FILE.npy|.wav|.csv --rate HZ --out X.tcap [--source-id N] [--source-name S] [--unit U]

    Records FILE as one source of a capture (docs/CAPTURE.md): a configuration frame, then analog
    frames of 4096 samples.
      NPY  shaped (channels, samples) or (samples,), float64, float32 or int16, stored bit for bit
           (int16 as counts with scale 1, offset 0).
      WAV  16-bit PCM as int16 counts with scale 1/32768 (full scale = 1.0); float WAVs as they are;
           24/32-bit PCM as float64 integer codes. --rate defaults to the WAV's rate.
      CSV  one column per channel, optional header row of channel names; float64.

      --rate HZ          samples per second (required except for WAV)
      --out X.tcap       the capture to write (required)
      --source-id N      source id, default 1
      --source-name S    device name in the configuration, default the file name
      --unit U           unit of every channel, default V
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let rate = try arguments.option("--rate", "a positive rate in Hz") { Double($0).flatMap { $0 > 0 && $0.isFinite ? $0 : nil } }
        guard let out = try arguments.option("--out") else { throw UsageError("missing --out X.tcap") }
        let sourceID = try arguments.option("--source-id", "a source id 1...4294967295") { UInt32($0).flatMap { $0 > 0 ? $0 : nil } } ?? 1
        let sourceName = try arguments.option("--source-name")
        let unit = try arguments.option("--unit") ?? "V"
        let files = try arguments.finish()
        guard files.count == 1 else { throw UsageError(files.isEmpty ? "missing FILE" : "expected one FILE, got \(files.count)") }
        let path = files[0]
        let signal: ImportedSignal
        var effectiveRate = rate
        do {
            switch (path as NSString).pathExtension.lowercased() {
            case "npy": signal = ImportedSignal(npy: try NPY.read(path: path))
            case "wav":
                let wav = try WAVFile.read(path: path)
                signal = ImportedSignal(wav: wav)
                effectiveRate = rate ?? Double(wav.sampleRate)
            case "csv": signal = ImportedSignal(csv: try CSVTable.read(path: path))
            default: throw UsageError("'\(path)': expected a .npy, .wav or .csv file")
            }
        } catch let error as UsageError {
            throw error
        } catch {
            throw CommandError("\(error)")
        }
        guard let effectiveRate else { throw UsageError("missing --rate HZ") }
        let summary = try CaptureImport.write(signal, rate: effectiveRate, sourceID: sourceID,
                                              sourceName: sourceName ?? (path as NSString).lastPathComponent, unit: unit, to: out)
        print("\(out): \(signal.channelCount) channels × \(signal.sampleCount) samples (\(signal.samples.format)), "
              + "\(summary.records) records, \(summary.fileBytes) bytes")
        return 0
    }
}
