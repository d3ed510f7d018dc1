import Foundation
import TributaryTransport

/// `tributary keygen`: makes a CURVE key pair for a publisher or a subscriber.
enum KeygenCommand: Command {
    static let name = "keygen"
    static let summary = "generate a CURVE key pair (Z85) for encrypted, authenticated connections"
    static let usage = """
    usage: tributary keygen [--out PREFIX] [--force]

    Generates a CURVE key pair. With --out, writes PREFIX.key (the secret key, mode 0600) and
    PREFIX.pub (the public key); otherwise prints both. A publisher is started with its .key file and
    its subscribers get its .pub; a subscriber's .pub goes into the publisher's allow-list.

    Options:
      --out PREFIX   write PREFIX.key and PREFIX.pub instead of printing
      --force        overwrite existing files
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let prefix = try arguments.option("--out")
        let force = arguments.flag("--force")
        let rest = try arguments.finish()
        guard rest.isEmpty else { throw UsageError("unexpected argument '\(rest[0])'") }
        if prefix == nil && force { throw UsageError("--force needs --out") }
        let pair: ZMQCurveKeyPair
        do { pair = try ZMQCurveKeyPair.generate() } catch { throw CommandError("\(error)") }

        guard let prefix else {
            print("public-key \(pair.publicKey.z85)")
            print("secret-key \(pair.secretKey.z85)")
            return 0
        }
        guard !prefix.isEmpty else { throw UsageError("option --out: the prefix is empty") }
        let secretPath = prefix + ".key", publicPath = prefix + ".pub"
        if !force {
            for path in [secretPath, publicPath] where FileManager.default.fileExists(atPath: path) {
                throw CommandError("\(path) exists (use --force to overwrite)")
            }
        }
        try writeKeyFile(secretPath, comment: "CURVE secret key: keep private", key: pair.secretKey, mode: 0o600)
        try writeKeyFile(publicPath, comment: "CURVE public key", key: pair.publicKey, mode: 0o644)
        print("wrote \(secretPath) (secret, mode 0600) and \(publicPath)")
        print("public-key \(pair.publicKey.z85)")
        return 0
    }

    /// Writes a key file created with `mode` from the start, so that a secret key is never readable by
    /// others, not even for a moment; an existing file is truncated and its mode reset.
    private static func writeKeyFile(_ path: String, comment: String, key: ZMQCurveKey, mode: mode_t) throws {
        let text = "# \(comment)\n\(key.z85)\n"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw CommandError("\(path): cannot create: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fchmod(fd, mode) == 0 else { throw CommandError("\(path): cannot set mode: \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw CommandError("\(path): write failed: \(String(cString: strerror(errno)))") }
        guard fsync(fd) == 0 else { throw CommandError("\(path): fsync failed: \(String(cString: strerror(errno)))") }
    }
}
