import CZMQ
import Foundation

/// Why a CURVE key could not be made, parsed or loaded.
public enum ZMQCurveKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// libzmq was built without CURVE (libsodium); `zmq_has("curve")` is false.
    case curveUnavailable
    /// The text is not 40 characters long (after trimming whitespace); `source` names the file or "text".
    case wrongLength(source: String, length: Int)
    /// The text has 40 characters but is not valid Z85.
    case invalidZ85(source: String)
    /// A key file could not be read or written.
    case fileError(path: String, reason: String)
    /// A key file holds no key line, or more than one where one was expected.
    case keyCount(path: String, count: Int)
    /// An allow-list line is malformed (1-based line number).
    case badAllowListLine(path: String, line: Int, reason: String)

    public var description: String {
        switch self {
        case .curveUnavailable: "libzmq has no CURVE support (built without libsodium)"
        case .wrongLength(let source, let length): "\(source): a CURVE key is 40 Z85 characters, found \(length)"
        case .invalidZ85(let source): "\(source): not a valid Z85 CURVE key"
        case .fileError(let path, let reason): "\(path): \(reason)"
        case .keyCount(let path, let count): "\(path): expected exactly one key line, found \(count)"
        case .badAllowListLine(let path, let line, let reason): "\(path):\(line): \(reason)"
        }
    }
}

/// A CURVE key (public or secret) as its 40-character Z85 text, which is what libzmq options, key
/// files and allow-lists use.
public struct ZMQCurveKey: Hashable, Sendable, CustomStringConvertible {
    /// The 40 Z85 characters.
    public let z85: String

    /// Validates Z85 key text (surrounding whitespace is ignored).
    /// - Parameters:
    ///   - text: 40 Z85 characters.
    ///   - source: What the text came from, for errors (a file path).
    /// - Throws: `ZMQCurveKeyError.wrongLength` or `.invalidZ85`.
    public init(z85 text: String, source: String = "text") throws(ZMQCurveKeyError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count == 40 else { throw .wrongLength(source: source, length: trimmed.utf8.count) }
        var binary = [UInt8](repeating: 0, count: 32)
        guard binary.withUnsafeMutableBufferPointer({ zmq_z85_decode($0.baseAddress, trimmed) }) != nil else {
            throw .invalidZ85(source: source)
        }
        z85 = trimmed
    }

    /// A key from its 32 raw bytes (as a ZAP request carries a client's public key).
    /// - Returns: nil unless `bytes` has 32 elements.
    public init?(binary bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        var text = [CChar](repeating: 0, count: 41)
        guard text.withUnsafeMutableBufferPointer({ zmq_z85_encode($0.baseAddress, bytes, 32) }) != nil else { return nil }
        z85 = z85Text(text)
    }

    /// The 32 raw bytes.
    public var binary: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 32)
        _ = bytes.withUnsafeMutableBufferPointer { zmq_z85_decode($0.baseAddress, z85) }
        return bytes
    }

    /// The text, so that a key can be printed or written; beware of printing secret keys.
    public var description: String { z85 }

    /// Reads the one key in a file: blank lines and `#` comments are ignored.
    /// - Throws: `ZMQCurveKeyError.fileError`, `.keyCount`, `.wrongLength`, `.invalidZ85` naming the file.
    public static func load(from path: String) throws(ZMQCurveKeyError) -> ZMQCurveKey {
        let lines = try keyLines(path)
        guard lines.count == 1 else { throw .keyCount(path: path, count: lines.count) }
        return try ZMQCurveKey(z85: lines[0].text, source: "\(path):\(lines[0].number)")
    }

    /// Reads an allow-list file: one client public key per line, optionally followed by whitespace and
    /// the User-Id to report for it (default: the key itself); blank lines and `#` comments ignored.
    /// - Returns: User-Id per client key.
    /// - Throws: `ZMQCurveKeyError` naming the file and line.
    public static func loadAllowList(from path: String) throws(ZMQCurveKeyError) -> [ZMQCurveKey: String] {
        var clients: [ZMQCurveKey: String] = [:]
        for line in try keyLines(path) {
            let fields = line.text.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
            let key: ZMQCurveKey
            do throws(ZMQCurveKeyError) {
                key = try ZMQCurveKey(z85: String(fields[0]), source: "\(path):\(line.number)")
            } catch {
                throw .badAllowListLine(path: path, line: line.number, reason: error.description)
            }
            let user = fields.count > 1 ? fields[1].trimmingCharacters(in: .whitespaces) : key.z85
            guard clients.updateValue(user, forKey: key) == nil else {
                throw .badAllowListLine(path: path, line: line.number, reason: "key listed twice")
            }
        }
        return clients
    }

    private static func keyLines(_ path: String) throws(ZMQCurveKeyError) -> [(number: Int, text: String)] {
        let contents: String
        do { contents = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw .fileError(path: path, reason: "cannot read: \(error.localizedDescription)")
        }
        return contents.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, raw in
            let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            return text.isEmpty || text.hasPrefix("#") ? nil : (index + 1, text)
        }
    }
}

/// A CURVE key pair: the public key to give peers, the secret key to keep.
public struct ZMQCurveKeyPair: Hashable, Sendable {
    /// The key to hand out (the server's goes to subscribers, a client's into the allow-list).
    public let publicKey: ZMQCurveKey
    /// The key to keep private (mode 0600 on disk).
    public let secretKey: ZMQCurveKey

    /// Generates a fresh key pair (`zmq_curve_keypair`).
    /// - Throws: `ZMQCurveKeyError.curveUnavailable` when libzmq has no CURVE.
    public static func generate() throws(ZMQCurveKeyError) -> ZMQCurveKeyPair {
        var publicText = [CChar](repeating: 0, count: 41)
        var secretText = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicText, &secretText) == 0 else { throw .curveUnavailable }
        return ZMQCurveKeyPair(
            publicKey: try ZMQCurveKey(z85: z85Text(publicText)),
            secretKey: try ZMQCurveKey(z85: z85Text(secretText)))
    }

    /// The pair belonging to a secret key (the public key is derived, `zmq_curve_public`).
    /// - Throws: `ZMQCurveKeyError.curveUnavailable`.
    public init(secretKey: ZMQCurveKey) throws(ZMQCurveKeyError) {
        var publicText = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicText, secretKey.z85) == 0 else { throw .curveUnavailable }
        self.publicKey = try ZMQCurveKey(z85: z85Text(publicText))
        self.secretKey = secretKey
    }

    /// Loads a pair from a secret key file (`tributary keygen` writes PREFIX.key); the public key is derived.
    /// - Throws: `ZMQCurveKeyError` naming the file.
    public static func load(secretKeyFile path: String) throws(ZMQCurveKeyError) -> ZMQCurveKeyPair {
        try ZMQCurveKeyPair(secretKey: try ZMQCurveKey.load(from: path))
    }

    private init(publicKey: ZMQCurveKey, secretKey: ZMQCurveKey) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// Whether this libzmq can do CURVE.
    public static var isAvailable: Bool { zmq_has("curve") != 0 }
}

extension ZMQSocket {
    /// Makes this socket a CURVE server with `keys`, authenticating clients through the ZAP handler of
    /// its context under `zapDomain`. `bind` will then refuse to run while no ZAP handler runs.
    /// - Throws: `ZMQError` naming the option libzmq rejected.
    public func enableCurveServer(keys: ZMQCurveKeyPair, zapDomain: String) throws(ZMQError) {
        try setOption(.zapDomain, zapDomain)
        try setOption(.curveSecretKey, keys.secretKey.z85)
        try setOption(.curveServer, 1)
    }

    /// Makes this socket a CURVE client of the server whose public key is `serverKey`.
    /// - Throws: `ZMQError` naming the option libzmq rejected.
    public func enableCurveClient(serverKey: ZMQCurveKey, keys: ZMQCurveKeyPair) throws(ZMQError) {
        try setOption(.curveServerKey, serverKey.z85)
        try setOption(.curvePublicKey, keys.publicKey.z85)
        try setOption(.curveSecretKey, keys.secretKey.z85)
    }
}

/// The text in a zero-terminated C buffer filled by libzmq's Z85 functions.
private func z85Text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
