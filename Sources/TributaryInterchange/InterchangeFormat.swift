import Foundation
import TributaryFormats

/// The file formats of the measurement world that captures are imported from and exported to, one
/// type for both directions (docs/FORMATS.md has each mapping).
public enum InterchangeFormat: String, CaseIterable, Sendable, CustomStringConvertible {
    case npy, csv, wav, tdms, xdf, hdf5

    public var description: String { rawValue }

    /// TDMS, XDF and HDF5 hold several sources (imported as sources of one capture; exported: every
    /// source of a capture, or the one asked for); NPY, CSV and WAV one.
    public var holdsEverySource: Bool { self == .tdms || self == .xdf || self == .hdf5 }

    /// The formats that can store int16 counts with what turns them into physical values.
    public var storesCounts: Bool { self != .csv && self != .wav }

    /// The format of a file to import: TDMS, XDF and HDF5 by their first bytes ("TDSm", "XDF:",
    /// "\u{89}HDF\r\n\u{1A}\n"), else NPY, WAV and CSV by the name's extension (any case); nil for
    /// anything else.
    public static func of(path: String) -> InterchangeFormat? {
        if let measurement = FormatImport.kind(path: path) { return measurement }
        switch (path as NSString).pathExtension.lowercased() {
        case "npy": return .npy
        case "wav": return .wav
        case "csv": return .csv
        default: return nil
        }
    }
}
