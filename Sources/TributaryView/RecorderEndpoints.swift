import Foundation
import Glibc
import Synchronization
import TributaryText
import TributaryTransport

/// A refusal of the recorder: the HTTP status to answer and why (docs/VIEW.md §6).
package struct RecorderRefusal: Error, Sendable, CustomStringConvertible {
    package var status: Int
    package var message: String
    package init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
    package var description: String { message }
}

/// What the operator asked to record: publishers that discovery found, each with the ticked source
/// ids, and the capture's path (in the record directory).
package struct RecorderPlan: Sendable {
    package struct Publisher: Sendable {
        /// As discovery described it (its `address` is `tcp://HOST:PORT`).
        package var found: DiscoveredPublisher
        package var host: String
        package var port: Int
        /// The ticked sources, in the order first ticked.
        package var sources: [UInt32]
    }
    package var publishers: [Publisher]
    /// The file name the browser sent (with `.tcap` added when it had none).
    package var name: String
    /// `directory/name`.
    package var path: String
}

/// What records: the `tributary` command's multi-publisher recording, behind the view's endpoints.
package protocol RecorderBackend: Sendable {
    /// Starts the one recording; the status object of `GET /recorder`'s `recording`.
    /// - Throws: `RecorderRefusal` (409 while one runs or when the file exists, 502 when a publisher
    ///   cannot be connected, 500 when the capture cannot be written).
    func start(_ plan: RecorderPlan) throws(RecorderRefusal) -> JSON
    /// Stops it and closes the capture; the summary (`last` in `GET /recorder`).
    /// - Throws: `RecorderRefusal` (409 when nothing records, 500 when the capture cannot be closed).
    func stop() throws(RecorderRefusal) -> JSON
    /// `{"recording": status | null, "last": summary | null}`.
    func status() -> JSON
}

/// The recorder's HTTP endpoints (docs/VIEW.md §6): the requests checked and bounded here, the work
/// done by discovery (`DiscoveryResolver`, as `tributary resolve`) and by the backend.
package final class RecorderEndpoints: Sendable {
    /// Largest request body.
    package static let maxBodyBytes = 16_384
    /// Longest capture name, in UTF-8 bytes (with `.tcap`).
    package static let maxNameBytes = 100
    /// Most streams in one recording.
    package static let maxStreams = 64
    /// Longest discovery timeout a request may ask, s.
    package static let maxResolveSeconds = 5.0
    /// Longest discovery query, in UTF-8 bytes.
    package static let maxQueryBytes = 256

    /// The record directory: captures are written here and nowhere else.
    package let directory: String
    private let backend: any RecorderBackend
    private let discovery: DiscoverySettings
    /// The publishers the last discovery found: the only ones a recording may name.
    private let found = Mutex<[DiscoveredPublisher]>([])
    private let resolving = Atomic<Bool>(false)

    package init(directory: String, backend: any RecorderBackend, discovery: DiscoverySettings = .standard) {
        self.directory = directory
        self.backend = backend
        self.discovery = discovery
    }

    /// Answers a request the HTTP server has screened (Host, Origin, token, access, Content-Type and
    /// body size): the status and a JSON body.
    package func handle(method: String, path: String, body: [UInt8]) -> (status: Int, body: String) {
        do throws(RecorderRefusal) {
            switch (method, path) {
            case ("GET", "/recorder"): return (200, backend.status().render())
            case ("POST", "/recorder/resolve"): return (200, try resolve(try Self.object(body)).render())
            case ("POST", "/recorder/start"): return (201, try backend.start(try plan(try Self.object(body))).render())
            case ("POST", "/recorder/stop"): return (200, try backend.stop().render())
            case (_, "/recorder"), (_, "/recorder/resolve"), (_, "/recorder/start"), (_, "/recorder/stop"):
                throw RecorderRefusal(405, "\(path) takes \(path == "/recorder" ? "GET" : "POST") only")
            default:
                throw RecorderRefusal(
                    404, "no such recorder endpoint; they are /recorder, /recorder/resolve, /recorder/start, /recorder/stop")
            }
        } catch {
            return (error.status, Self.errorBody(error.message))
        }
    }

    package static func errorBody(_ message: String) -> String {
        JSON.object([("error", .string(message))]).render()
    }

    // MARK: Requests

    private static func object(_ body: [UInt8]) throws(RecorderRefusal) -> [String: Any] {
        if body.isEmpty { return [:] }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw RecorderRefusal(400, "the body is not a JSON object")
        }
        return object
    }

    /// `{"query": "…" | null, "timeout": S}` → `{"publishers": [...]}` as `tributary resolve --json`.
    private func resolve(_ request: [String: Any]) throws(RecorderRefusal) -> JSON {
        var match: DiscoveryMatch?
        if let query = request["query"], !(query is NSNull) {
            guard let text = query as? String, text.utf8.count <= Self.maxQueryBytes else {
                throw RecorderRefusal(400, "\"query\" must be a string of at most \(Self.maxQueryBytes) bytes, or null")
            }
            if !text.isEmpty {
                do { match = try DiscoveryMatch(text) } catch { throw RecorderRefusal(400, "\"query\": \(error)") }
            }
        }
        var timeout = 1.0
        if let value = request["timeout"] {
            guard let seconds = Self.number(value), seconds >= 0.05, seconds <= Self.maxResolveSeconds else {
                throw RecorderRefusal(400, "\"timeout\" must be a number of seconds in [0.05, \(Self.maxResolveSeconds)]")
            }
            timeout = seconds
        }
        guard !resolving.exchange(true, ordering: .acquiring) else {
            throw RecorderRefusal(429, "a discovery query is under way; ask again when it has answered")
        }
        defer { resolving.store(false, ordering: .releasing) }
        let result: DiscoveryResult
        do { result = try DiscoveryResolver.resolve(match, settings: discovery, timeout: timeout) } catch {
            throw RecorderRefusal(503, "discovery failed on \(discovery.group):\(discovery.port): \(error)")
        }
        let publishers = result.publishers.filter { $0.hostAndPort != nil }
        found.withLock { $0 = publishers }
        return .object([("publishers", .array(publishers.map(\.json)))])
    }

    /// `{"name": "…", "streams": [{"address": "tcp://…", "source": N}, …]}`, each stream a source of
    /// a publisher the last discovery found.
    private func plan(_ request: [String: Any]) throws(RecorderRefusal) -> RecorderPlan {
        guard let name = request["name"] as? String else { throw RecorderRefusal(400, "\"name\" (the capture's file name) is missing") }
        let (fileName, path) = try Self.checkName(name, in: directory)
        guard let streams = request["streams"] as? [Any], !streams.isEmpty else {
            throw RecorderRefusal(400, "\"streams\" must be a non-empty array of {\"address\": …, \"source\": …}: tick a stream")
        }
        guard streams.count <= Self.maxStreams else {
            throw RecorderRefusal(400, "\"streams\": at most \(Self.maxStreams) streams in one recording, got \(streams.count)")
        }
        let known = found.withLock { $0 }
        var publishers: [RecorderPlan.Publisher] = []
        for (i, item) in streams.enumerated() {
            guard let stream = item as? [String: Any], let address = stream["address"] as? String,
                let value = stream["source"], let number = Self.number(value), number >= 0, number <= Double(UInt32.max),
                number == number.rounded()
            else {
                throw RecorderRefusal(400, "stream \(i + 1): not {\"address\": \"tcp://HOST:PORT\", \"source\": an id in 0...4294967295}")
            }
            let source = UInt32(number)
            guard let publisher = known.first(where: { $0.description.address == address }), let (host, port) = publisher.hostAndPort
            else {
                throw RecorderRefusal(
                    400, "stream \(i + 1): \(Self.shown(address)) is not a publisher the last discovery found; resolve again")
            }
            guard publisher.description.sources.contains(where: { $0.id == source }) else {
                throw RecorderRefusal(400, "stream \(i + 1): the publisher at \(Self.shown(address)) announced no source \(source)")
            }
            if let j = publishers.firstIndex(where: { $0.found.description.address == address }) {
                guard !publishers[j].sources.contains(source) else {
                    throw RecorderRefusal(400, "stream \(i + 1): source \(source) of \(Self.shown(address)) is named twice")
                }
                publishers[j].sources.append(source)
            } else {
                publishers.append(RecorderPlan.Publisher(found: publisher, host: host, port: port, sources: [source]))
            }
        }
        return RecorderPlan(publishers: publishers, name: fileName, path: path)
    }

    /// A number of a JSON body (not a boolean), finite.
    private static func number(_ value: Any) -> Double? {
        // JSONSerialization gives true and false as NSNumber of type "c" (char).
        guard let n = value as? NSNumber, String(cString: n.objCType) != "c" else { return nil }
        let d = n.doubleValue
        return d.isFinite ? d : nil
    }

    /// What a client sent, shown back: at most 80 printable ASCII characters.
    private static func shown(_ text: String) -> String {
        "'" + String(text.unicodeScalars.prefix(80).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }) + "'"
    }

    /// Checks a capture name the browser sent and gives the file name (`.tcap` added when it has no
    /// such ending) and its path in `directory`. Refused (400): empty, longer than `maxNameBytes`, a
    /// path (`/`, `\`), starting with `.` (`.`, `..`, hidden files) or holding `..`, NUL or another
    /// control character; (409) a file of that name, or its `.partial`, exists in the directory.
    package static func checkName(_ name: String, in directory: String) throws(RecorderRefusal) -> (name: String, path: String) {
        guard !name.isEmpty else { throw RecorderRefusal(400, "the capture's name is empty: type a file name such as lab.tcap") }
        let fileName = name.hasSuffix(".tcap") ? name : name + ".tcap"
        guard fileName.utf8.count <= maxNameBytes else {
            throw RecorderRefusal(400, "the capture's name is longer than \(maxNameBytes) bytes (with .tcap)")
        }
        if name.hasPrefix("/") {
            throw RecorderRefusal(
                400, "\(shown(name)) is an absolute path; give a file name: captures are written in the record directory only")
        }
        guard !name.contains("/") && !name.contains("\\") else {
            throw RecorderRefusal(
                400, "\(shown(name)) holds a path separator; give a file name: captures are written in the record directory only")
        }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw RecorderRefusal(400, "\(shown(name)) holds NUL or another control character")
        }
        guard !name.hasPrefix("."), !name.contains("..") else {
            throw RecorderRefusal(400, "\(shown(name)) starts with '.' or holds '..'; give a plain file name such as lab.tcap")
        }
        let path = (directory.hasSuffix("/") ? directory : directory + "/") + fileName
        var st = stat()
        for candidate in [path, path + ".partial"] where lstat(candidate, &st) == 0 {
            throw RecorderRefusal(
                409,
                "\(shown(String(candidate.dropFirst(path.count - fileName.count)))) exists already in the record directory; "
                    + "captures are never replaced: choose another name")
        }
        return (fileName, path)
    }
}
