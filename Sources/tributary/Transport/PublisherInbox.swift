import Dispatch
import Foundation
import Synchronization
import TributaryAnalysis
import TributaryInterchange
import TributaryText
import TributaryTransport
import TributaryWire

/// What `serve --inbox` may store: bytes and files for each session and for the whole inbox
/// directory (what it held at start included), and the bytes waiting to be written.
struct InboxQuota: Sendable, Equatable {
    /// Bytes DIR may hold: files, images and packages.jsonl together (`--inbox-quota`).
    var bytes: Int = 1 << 30
    /// Files and images DIR may hold (`--inbox-max-files`).
    var files: Int = 10_000
    /// Bytes one session may add (`--inbox-session-quota`).
    var sessionBytes: Int = 256 << 20
    /// Files and images one session may add (`--inbox-session-max-files`).
    var sessionFiles: Int = 1_000
    /// Bytes received and not yet written (the disk is slower than the network): a package that
    /// would take it past this is refused, so a fast sender cannot make `serve` hold its files in
    /// memory. Twice the largest transfer a subscriber may send (64 MiB).
    var backlogBytes: Int = 128 << 20

    /// The four quota options (only with `--inbox`); `given` says whether any was.
    static var options: OptionTable<ServeOptions.Given> {
        let size = "a size (bytes, or a number with k, m, g or t)"
        func set(_ path: WritableKeyPath<InboxQuota, Int>, _ value: Int, _ given: inout ServeOptions.Given) {
            given.inboxQuota[keyPath: path] = value
            given.inboxQuotaGiven = true
        }
        func count(_ name: String, _ text: String) throws -> Int {
            guard let n = Int(text), (0...100_000_000).contains(n) else {
                throw UsageError("option \(name): '\(text)' is not a count of files in 0...100000000")
            }
            return n
        }
        func bytes(_ name: String, _ text: String) throws -> Int {
            guard let n = MemoryBudget.parse(text) else { throw UsageError("option \(name): '\(text)' is not \(size)") }
            return n
        }
        return OptionTable([
            .custom(
                "--inbox-quota", "BYTES",
                """
                what DIR may hold, files and packages.jsonl together, what it held at
                start included (default 1g; k, m, g, t: powers of 1024)
                """, level: 1
            ) { given, text in set(\.bytes, try bytes("--inbox-quota", text), &given) },
            .custom("--inbox-max-files", "N", "files and images DIR may hold (default 10000)", level: 1) { given, text in
                set(\.files, try count("--inbox-max-files", text), &given)
            },
            .custom("--inbox-session-quota", "BYTES", "what one subscriber session may add (default 256m)", level: 1) { given, text in
                set(\.sessionBytes, try bytes("--inbox-session-quota", text), &given)
            },
            .custom(
                "--inbox-session-max-files", "N",
                """
                files and images one session may add (default 1000)
                Past a quota a package is not stored: its subscriber gets error 11 (too
                large; at most one report a second per session), stderr says so, the
                other sessions go on. A package that arrives while 128 MiB of earlier ones
                wait to be written is refused the same way (send it again later).
                """, level: 1
            ) { given, text in set(\.sessionFiles, try count("--inbox-session-max-files", text), &given) },
        ])
    }
}

/// What subscribers send to `serve`: one line each on standard output ("from session 3 'name':
/// message ..."), and with `--inbox DIR` a record of it: files and images written into DIR under
/// their sanitised names (never overwriting: a name taken gets "-1", "-2", … before its extension),
/// and every package, files included, as one JSON object per line in DIR/packages.jsonl (the
/// objects of `subscribe --json`, plus "session", "subscriber" and, for files, "stored_as").
///
/// Within `InboxQuota`: a package past a quota is refused — not stored, reported to its session as
/// error 11 through `setReply` and on stderr (at most once a second per session) — and the others
/// go on. The publisher hands packages over on its inbox queue, which `receive` leaves at once:
/// the writing happens on a queue of its own, whose backlog is bounded in bytes, so a sender faster
/// than the disk cannot pile its files up in memory. A second after a burst of packages (1 MiB or
/// more) or a change of sessions, with nothing left to write, the heap's free pages go back to
/// the kernel: the publisher frees what it reassembled or queued for a session, but glibc keeps
/// freed memory (`AllocatorTuning.keepFreedMemoryForStreaming`), so `serve` stayed at its peak.
final class PublisherInbox: Sendable {
    private struct Usage {
        var bytes = 0
        var files = 0
    }

    private struct SessionState {
        var usage = Usage()
        var refusedSinceReport = 0
        var lastReport: ContinuousClock.Instant?
        var lastSeen = ContinuousClock.now
    }

    private struct State {
        var inbox = Usage()
        var sessions: [UInt64: SessionState] = [:]
        var backlog = 0
        /// Bytes of packages handled (stored or refused) since the heap was last trimmed.
        var handledSinceTrim = 0
        var trimGeneration = 0
    }

    private let directory: String?
    private let quota: InboxQuota
    private let log: Mutex<FileHandle?>
    private let state = Mutex(State())
    private let writer = DispatchQueue(label: "tributary-inbox-writer")
    private let reply = Mutex<(@Sendable (UInt64, ErrorReport) -> Void)?>(nil)
    /// Sessions remembered for their quotas; beyond it the longest silent are forgotten.
    private static let maxSessionsRemembered = 10_000
    /// Bytes handled after which an idle second trims the heap.
    private static let trimAfterBytes = 1 << 20

    /// - Throws: `CommandError` when DIR cannot be created, read or its log opened.
    init(directory: String?, quota: InboxQuota = InboxQuota()) throws {
        self.directory = directory
        self.quota = quota
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
        // What DIR holds already counts against its quota.
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw CommandError("--inbox \(directory): \(error.localizedDescription)")
        }
        var held = Usage()
        for name in names {
            let attributes = try? FileManager.default.attributesOfItem(atPath: (directory as NSString).appendingPathComponent(name))
            guard attributes?[.type] as? FileAttributeType == .typeRegular else { continue }
            held.bytes = held.bytes.addingSaturating((attributes?[.size] as? NSNumber)?.intValue ?? 0)
            if name != "packages.jsonl" { held.files += 1 }
        }
        state.withLock { $0.inbox = held }
        if held.bytes >= quota.bytes || held.files >= quota.files {
            printError(
                "tributary serve: --inbox \(directory.terminalSafe) holds \(MemoryBudget.describe(held.bytes)) in \(counted(held.files, "file")) already, "
                    + "its quota is \(MemoryBudget.describe(quota.bytes)) and \(counted(quota.files, "file")) (--inbox-quota, --inbox-max-files): "
                    + "what subscribers send will not be stored")
        }
    }

    /// Where refusals are reported to their session (the publisher, once it exists).
    func setReply(_ send: @escaping @Sendable (UInt64, ErrorReport) -> Void) {
        reply.withLock { $0 = send }
    }

    /// Called on the publisher's package queue, one package at a time; returns at once.
    func receive(_ received: SubscriberPackage) {
        let package = received.package
        let from = "from session \(received.sessionID) '\(received.subscriberDescription.terminalSafe)'"
        guard let directory else {
            StandardOutput.line("\(from): \(SubscribeCommand.describeLine(package))")
            if case .file(let f) = package.content {
                state.withLock { $0.handledSinceTrim = $0.handledSinceTrim.addingSaturating(f.content.count) }
            }
            if case .image(let f) = package.content {
                state.withLock { $0.handledSinceTrim = $0.handledSinceTrim.addingSaturating(f.content.count) }
            }
            scheduleTrim()
            return
        }
        let file: ReceivedFile? =
            switch package.content {
            case .file(let f), .image(let f): f
            default: nil
            }
        var object: [(String, JSON)] = [("session", .uint(received.sessionID)), ("subscriber", .string(received.subscriberDescription))]
        if case .object(let described) = SubscribeCommand.describeJSON(package) { object += described }
        let fields = object
        // A file's line gets "stored_as" once written; its length is reserved (a path, at most 4 KiB).
        let line = file == nil ? JSON.object(fields).render() + "\n" : nil
        let cost = (file?.content.count ?? 0).addingSaturating(line?.utf8.count ?? (JSON.object(fields).render().utf8.count + 4_096))
        let isFile = file != nil
        let refusal: String? = state.withLock { s in
            let session = s.sessions[received.sessionID]?.usage ?? Usage()
            s.handledSinceTrim = s.handledSinceTrim.addingSaturating(cost)
            if session.bytes.addingSaturating(cost) > quota.sessionBytes {
                return
                    "this session's inbox quota is \(MemoryBudget.describe(quota.sessionBytes)) (--inbox-session-quota) and it has stored "
                    + "\(MemoryBudget.describe(session.bytes)): not stored"
            }
            if isFile && session.files >= quota.sessionFiles {
                return "this session has stored \(session.files) of the \(counted(quota.sessionFiles, "file")) it may store in the inbox "
                    + "(--inbox-session-max-files): not stored"
            }
            if s.inbox.bytes.addingSaturating(cost) > quota.bytes {
                return
                    "the inbox holds \(MemoryBudget.describe(s.inbox.bytes)) of its \(MemoryBudget.describe(quota.bytes)) quota (--inbox-quota): not stored"
            }
            if isFile && s.inbox.files >= quota.files {
                return "the inbox holds \(counted(s.inbox.files, "file")), its quota (--inbox-max-files): not stored"
            }
            if s.backlog.addingSaturating(cost) > quota.backlogBytes {
                return "the inbox is still writing \(MemoryBudget.describe(s.backlog)) of earlier packages (at most "
                    + "\(MemoryBudget.describe(quota.backlogBytes)) may wait): not stored, send it again later"
            }
            var entry = s.sessions[received.sessionID] ?? SessionState()
            entry.usage.bytes += cost
            entry.usage.files += isFile ? 1 : 0
            entry.lastSeen = .now
            s.sessions[received.sessionID] = entry
            s.inbox.bytes += cost
            s.inbox.files += isFile ? 1 : 0
            s.backlog += cost
            Self.forgetOldSessions(&s)
            return nil
        }
        if let refusal {
            refuse(received, what: SubscribeCommand.describeLine(package), from: from, because: refusal)
            scheduleTrim()
            return
        }
        writer.async { [self] in
            var stored: String?
            var problem: String?
            var text = line ?? ""
            if let file {
                do { stored = try Self.store(file, in: directory) } catch { problem = "\(error)" }
                text = JSON.object(fields + (stored.map { [("stored_as", JSON.string($0))] } ?? [])).render() + "\n"
            }
            let written = append(text) ? text.utf8.count : 0
            StandardOutput.line("\(from): \(SubscribeCommand.describeLine(package))" + (stored.map { " -> \($0.terminalSafe)" } ?? ""))
            if let problem { printError("tributary serve: \(from): \(problem.terminalSafe)") }
            // What was reserved becomes what was written.
            let actual = (stored != nil ? file?.content.count ?? 0 : 0) + written
            let unstoredFile = isFile && stored == nil ? 1 : 0
            state.withLock { s in
                s.backlog -= cost
                s.inbox.bytes = max(0, s.inbox.bytes - cost + actual)
                s.inbox.files = max(0, s.inbox.files - unstoredFile)
                if var entry = s.sessions[received.sessionID] {
                    entry.usage.bytes = max(0, entry.usage.bytes - cost + actual)
                    entry.usage.files = max(0, entry.usage.files - unstoredFile)
                    s.sessions[received.sessionID] = entry
                }
            }
            scheduleTrim()
        }
    }

    /// Reports a refused package to its session and on stderr, at most once a second per session
    /// (with the number refused meanwhile), so a flood of refused packages is not answered in kind.
    private func refuse(_ received: SubscriberPackage, what: String, from: String, because reason: String) {
        let now = ContinuousClock.now
        let refused: Int? = state.withLock { s in
            var entry = s.sessions[received.sessionID] ?? SessionState()
            entry.refusedSinceReport += 1
            entry.lastSeen = now
            var report: Int?
            if entry.lastReport.map({ now - $0 >= .seconds(1) }) ?? true {
                report = entry.refusedSinceReport
                entry.refusedSinceReport = 0
                entry.lastReport = now
            }
            s.sessions[received.sessionID] = entry
            Self.forgetOldSessions(&s)
            return report
        }
        guard let refused else { return }
        let summary = String(what.prefix(200))
        printError(
            "tributary serve: --inbox: \(from): \(summary.terminalSafe): \(reason)"
                + (refused > 1 ? " (\(refused) packages refused since the last report)" : ""))
        let send = reply.withLock { $0 }
        send?(
            received.sessionID,
            ErrorReport(
                .tooLarge,
                "the publisher's inbox refused your \(received.package.header.kind): \(reason)"
                    + (refused > 1 ? " (\(refused) packages refused since the last report)" : "")))
    }

    /// Appends a line to packages.jsonl; false once it cannot be written (said once).
    private func append(_ text: String) -> Bool {
        let failure: String?? = log.withLock { handle in
            guard let h = handle else { return .some(nil) }
            do { try h.write(contentsOf: Data(text.utf8)) } catch {
                handle = nil  // said once; the packages are still printed
                return "\(error.localizedDescription)"
            }
            return nil
        }
        switch failure {
        case .none: return true
        case .some(.none): return false
        case .some(.some(let reason)):
            printError("tributary serve: --inbox: cannot write packages.jsonl, no longer recording packages there: \(reason)")
            return false
        }
    }

    /// Sessions came or went (serve's subscriber list): what the publisher held for one that went is freed.
    func sessionsChanged() {
        scheduleTrim(always: true)
    }

    /// After a burst (1 MiB handled) or a departure, once nothing happened for a second and nothing
    /// waits to be written, and again 5 s later (the publisher lets go of a closed connection's
    /// queued messages some time after the last package came through): the heap's free pages go
    /// back to the kernel.
    private func scheduleTrim(always: Bool = false) {
        let generation: Int? = state.withLock { s in
            guard always || s.handledSinceTrim >= Self.trimAfterBytes else { return nil }
            s.handledSinceTrim = 0
            s.trimGeneration &+= 1
            return s.trimGeneration
        }
        guard let generation else { return }
        for delay in [1.0, 6.0] {
            writer.asyncAfter(deadline: .now() + delay) { [self] in
                let due = state.withLock { s in s.trimGeneration == generation && s.backlog == 0 }
                if due { AllocatorTuning.releaseFreeMemory() }
            }
        }
    }

    private static func forgetOldSessions(_ s: inout State) {
        guard s.sessions.count > maxSessionsRemembered else { return }
        let oldest = s.sessions.min { $0.value.lastSeen < $1.value.lastSeen }
        if let oldest { s.sessions[oldest.key] = nil }
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

    /// Waits for what is being written, then closes packages.jsonl.
    func close() {
        writer.sync {}
        log.withLock {
            try? $0?.close(); $0 = nil
        }
    }
}

extension Int {
    fileprivate func addingSaturating(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
