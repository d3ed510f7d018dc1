import Foundation
import TributaryDSP
import TributaryInterchange
import TributaryText

/// The JSON options of `tributary_capture_export`, read straight into the library's `ExportOptions`:
/// the members are the keywords of Python's `Capture.export` and the options of `tributary export`
/// (docs/C_API.md). Only checked here; the export itself is `CaptureExport`'s.
private struct ExportMembers: Decodable {
    static let keys: Set<String> = [
        "source", "channels", "start", "duration", "counts", "time_column", "allow_damage", "replace", "align", "dejitter",
    ]

    /// What the members say (the format is the call's own argument: see `options(_:)`).
    private var read = ExportOptions(format: .npy)

    init(from decoder: any Decoder) throws {
        let members = try OptionMembers(decoder, known: Self.keys)
        read.source = try members.get("source", UInt32.self, "a source id (an integer from 0 to 4294967295)")
        let channels = try members.channels()
        read.start = try members.get("start", Double.self, "a time in seconds >= 0")
        read.duration = try members.get("duration", Double.self, "a duration in seconds >= 0")
        read.counts = try members.get("counts", Bool.self, "true or false") ?? false
        read.timeColumn = try members.get("time_column", Bool.self, "true or false") ?? false
        read.allowDamage = try members.get("allow_damage", Bool.self, "true or false") ?? false
        read.replace = try members.get("replace", Bool.self, "true or false") ?? false
        read.align = try members.get("align", Bool.self, "true or false") ?? false
        read.dejitter = try members.get("dejitter", Bool.self, "true or false") ?? false
        if let channels {
            do { read.channels = try ChannelSpec(parsing: channels).channels.map { UInt32($0) } } catch {
                throw APIError(.argument, "option 'channels': \(error)")
            }
        }
    }

    /// The library's options for `format`.
    func options(_ format: InterchangeFormat) -> ExportOptions {
        var options = read
        options.format = format
        return options
    }
}

extension Status {
    /// The status of a refused export.
    init(_ kind: ExportError.Kind) {
        switch kind {
        case .usage, .destination: self = .argument
        case .range, .memory: self = .range
        case .type: self = .type
        case .damaged, .data: self = .format
        case .io: self = .io
        }
    }
}

/// Writes the analog data of an open capture to `path` as `tributary export` does with the same
/// options (the same library call on the capture's path, so the same bytes and the same refusals);
/// `*report` (when not NULL) receives what was written and the warnings as JSON.
@_cdecl("tributary_capture_export")
public func tributary_capture_export(
    _ capture: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ format: UnsafePointer<CChar>?,
    _ options: UnsafePointer<CChar>?, _ report: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    report?.pointee = nil
    return guarded("tributary_capture_export") {
        let handle = try Handles.lookup(capture, as: CaptureHandle.self, "capture")
        let destination = try string(path, "path")
        guard !destination.isEmpty else { throw APIError(.argument, "path is empty") }
        let formatName = try string(format, "format")
        let names = InterchangeFormat.allCases.map(\.rawValue)
        guard let format = InterchangeFormat(rawValue: formatName) else {
            throw APIError(.argument, "format '\(formatName)' is not one of \(names.joined(separator: ", "))")
        }
        let exportOptions = try OptionMembers.decode(ExportMembers.self, from: options.map { String(cString: $0) }).options(format)
        var warnings: [String] = []
        let written: [ExportedSource]
        // A reader of its own, as the tool opens one: the handle's has met the damage of earlier
        // calls (its info JSON reads every source's first chunk), which `export` of another source
        // does not meet, and the same options must give the same result. By the path the handle
        // was opened with, made absolute then: the working directory may have changed since.
        do throws(ExportError) {
            written = try CaptureExport.export(
                capture: handle.absolutePath, to: destination, options: exportOptions,
                spelling: .keywords
            ) { warnings.append($0) }
        } catch {
            var message = error.message
            if error.kind == .damaged { message += "; damage: " + error.damage.map(\.description).joined(separator: "; ") }
            throw APIError(Status(error.kind), message)
        }
        guard let report else { return }
        let json = JSON.object([
            ("path", .string(destination)), ("format", .string(format.rawValue)),
            (
                "sources",
                .array(
                    written.map { s in
                        .object([
                            ("source", .uint(UInt64(s.sourceID))), ("channels", .int(s.channelCount)), ("samples", .int(s.sampleCount)),
                        ])
                    })
            ),
            ("warnings", .strings(warnings)),
        ])
        report.pointee = try ownedCString(json.text)
    }
}
