import Foundation
import Synchronization
import TributaryAnalysis
import TributaryTransport
import TributaryWire

/// What subscribers send to `serve`: one line each on standard output ("from session 3 'name':
/// message ..."), and with `--inbox DIR` a record of it: files and images written into DIR under
/// their sanitised names (never overwriting: a name taken gets "-1", "-2", … before its extension),
/// and every package, files included, as one JSON object per line in DIR/packages.jsonl (the
/// objects of `subscribe --json`, plus "session", "subscriber" and, for files, "stored_as").
final class PublisherInbox: Sendable {
    private let directory: String?
    private let log: Mutex<FileHandle?>

    /// - Throws: `CommandError` when DIR cannot be created or its log opened.
    init(directory: String?) throws {
        self.directory = directory
        guard let directory else {
            log = Mutex(nil)
            return
        }
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw CommandError("--inbox \(directory): \(error.localizedDescription)")
        }
        let path = (directory as NSString).appendingPathComponent("packages.jsonl")
        // A file that cannot be created fails the open below, which names it.
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        guard let handle = FileHandle(forWritingAtPath: path) else { throw CommandError("--inbox: cannot write \(path)") }
        handle.seekToEndOfFile()
        log = Mutex(handle)
    }

    /// Called on the publisher's package queue, one package at a time.
    func receive(_ received: SubscriberPackage) {
        let package = received.package
        let from = "from session \(received.sessionID) '\(received.subscriberDescription.terminalSafe)'"
        var stored: String?
        var problem: String?
        if let directory {
            switch package.content {
            case .file(let file), .image(let file):
                do { stored = try Self.store(file, in: directory) } catch { problem = "\(error)" }
            default: break
            }
        }
        StandardOutput.line("\(from): \(SubscribeCommand.describeLine(package))" + (stored.map { " -> \($0.terminalSafe)" } ?? ""))
        if let problem { printError("tributary serve: \(from): \(problem.terminalSafe)") }
        guard directory != nil else { return }
        var fields: [(String, JSON)] = [("session", .uint(received.sessionID)), ("subscriber", .string(received.subscriberDescription))]
        if case .object(let object) = SubscribeCommand.describeJSON(package) { fields += object }
        if let stored { fields.append(("stored_as", .string(stored))) }
        let line = JSON.object(fields).render() + "\n"
        let failure: String? = log.withLock { handle in
            do { try handle?.write(contentsOf: Data(line.utf8)) } catch {
                handle = nil  // said once; the packages are still printed
                return "\(error.localizedDescription)"
            }
            return nil
        }
        if let failure { printError("tributary serve: --inbox: cannot write packages.jsonl, no longer recording packages there: \(failure)") }
    }

    /// Writes a received file under its sanitised name, adding "-1", "-2", … when the name is taken.
    static func store(_ file: ReceivedFile, in directory: String) throws -> String {
        guard let safe = file.safeName else { throw ReceivedFile.WriteError.unsafeName(file.originalName) }
        let base = (safe as NSString).deletingPathExtension, ext = (safe as NSString).pathExtension
        var candidate = file
        for attempt in 0..<1_000 {
            if attempt > 0 { candidate.safeName = base + "-\(attempt)" + (ext.isEmpty ? "" : "." + ext) }
            do { return try candidate.write(into: directory) } catch {
                if case .exists = error { continue }
                throw error
            }
        }
        throw ReceivedFile.WriteError.exists(path: (directory as NSString).appendingPathComponent(safe))
    }

    func close() { log.withLock { try? $0?.close(); $0 = nil } }
}
