import Foundation

/// Loads the key files `tributary keygen` writes, refusing the one mix-up that would be a disaster: a
/// public key file where a secret key is expected. libzmq accepts any 32 bytes as a secret key, so a
/// publisher started with a `.pub` file would run with a "secret" key that every client holds. The
/// one reader of key files for the command line (`serve --curve-secret`, `--curve-server-key`,
/// `--curve-key`) and the C interface (`curve_server_key`, `curve_key`).
public enum CurveKeyFile {
    /// The comment line of the secret key file (PREFIX.key).
    public static let secretComment = "CURVE secret key: keep private"
    /// The comment line of the public key file (PREFIX.pub).
    public static let publicComment = "CURVE public key"

    /// Why a key file was not loaded.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public enum Reason: Sendable, Equatable {
            /// The file cannot be read or holds no valid key.
            case unreadable(ZMQCurveKeyError)
            /// A public key file was given where a secret key is expected.
            case publicKeyAsSecret
            /// A secret key file was given where a public key is expected (a secret is never handed out).
            case secretKeyAsPublic
        }

        public let path: String
        public let reason: Reason

        /// Whether the file is the wrong one of a pair (a usage error), not an unreadable one.
        public var isMixUp: Bool {
            if case .unreadable = reason { return false }
            return true
        }

        /// The message, naming where the path was given (`option`: "--curve-key", "option 'curve_key'").
        public func message(option: String) -> String {
            switch reason {
            case .unreadable(let error): "\(option): \(error)"
            case .publicKeyAsSecret:
                "\(option) \(path): this is a public key file, not a secret key: whoever has the public key "
                    + "(every peer) would hold this secret too. Give the PREFIX.key file 'tributary keygen --out PREFIX' wrote"
            case .secretKeyAsPublic: "\(option) \(path): this is a secret key file; give the public key (the PREFIX.pub file)"
            }
        }

        public var description: String { message(option: "key file") }
    }

    /// The key pair of a secret key file.
    /// - Throws: `Failure` `.publicKeyAsSecret` when the file is a public key file (its comment, its
    ///   `.pub` name, or its key equals the one in the matching .pub file); `.unreadable` when it
    ///   cannot be read or holds no valid key.
    public static func loadSecret(_ path: String) throws(Failure) -> ZMQCurveKeyPair {
        let key: ZMQCurveKey
        do { key = try ZMQCurveKey.load(from: path) } catch { throw Failure(path: path, reason: .unreadable(error)) }
        let comments = commentLines(path)
        let saysPublic = comments.contains { $0.contains(publicComment) } && !comments.contains { $0.contains(secretComment) }
        let namedPublic = path.hasSuffix(".pub") && !comments.contains { $0.contains(secretComment) }
        var matchesPublicFile = false
        if path.hasSuffix(".key") {
            let publicPath = String(path.dropLast(4)) + ".pub"
            matchesPublicFile = (try? ZMQCurveKey.load(from: publicPath)) == key
        }
        if saysPublic || namedPublic || matchesPublicFile { throw Failure(path: path, reason: .publicKeyAsSecret) }
        do { return try ZMQCurveKeyPair(secretKey: key) } catch { throw Failure(path: path, reason: .unreadable(error)) }
    }

    /// The public key in a public key file.
    /// - Throws: `Failure` `.secretKeyAsPublic` when the file is a secret key file; `.unreadable`
    ///   when it cannot be read or holds no valid key.
    public static func loadPublic(_ path: String) throws(Failure) -> ZMQCurveKey {
        if commentLines(path).contains(where: { $0.contains(secretComment) }) { throw Failure(path: path, reason: .secretKeyAsPublic) }
        do { return try ZMQCurveKey.load(from: path) } catch { throw Failure(path: path, reason: .unreadable(error)) }
    }

    /// A new key pair (for a subscriber without a key file of its own).
    /// - Throws: `Failure` `.unreadable` (no path) when libzmq cannot make one.
    static func freshPair() throws(Failure) -> ZMQCurveKeyPair {
        do { return try ZMQCurveKeyPair.generate() } catch { throw Failure(path: "", reason: .unreadable(error)) }
    }

    private static func commentLines(_ path: String) -> [String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("#") }
    }
}

extension SubjectCurve {
    /// CURVE with the publisher's public key file and this subscriber's secret key file (nil: a fresh
    /// key pair, for publishers that accept any client key).
    /// - Throws: the `CurveKeyFile.Failure` of either file, with which option gave it (`isServer`:
    ///   the publisher's), or `.unreadable` when no fresh key pair can be made.
    public init(serverKeyFile: String, clientKeyFile: String?) throws(SubjectCurveFailure) {
        let serverKey: ZMQCurveKey
        do { serverKey = try CurveKeyFile.loadPublic(serverKeyFile) } catch { throw SubjectCurveFailure(isServerKey: true, failure: error) }
        let keys: ZMQCurveKeyPair
        do throws(CurveKeyFile.Failure) {
            if let clientKeyFile { keys = try CurveKeyFile.loadSecret(clientKeyFile) } else { keys = try CurveKeyFile.freshPair() }
        } catch { throw SubjectCurveFailure(isServerKey: false, failure: error) }
        self.init(serverKey: serverKey, keys: keys)
    }
}

/// A key file `SubjectCurve(serverKeyFile:clientKeyFile:)` could not use: the publisher's public key
/// file (`isServerKey`) or this subscriber's secret key file, and why.
public struct SubjectCurveFailure: Error, Sendable, Equatable {
    public let isServerKey: Bool
    public let failure: CurveKeyFile.Failure
}
