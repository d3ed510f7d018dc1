import Foundation
import TributaryTransport

/// `tributary keygen`: makes a CURVE key pair for a publisher or a subscriber.
enum KeygenCommand: TableCommand {
    static let name = "keygen"
    static let summary = "generate a CURVE key pair (Z85) for encrypted, authenticated connections"
    static let usage = """
        usage: tributary keygen [--out PREFIX] [--force]

        Generates a CURVE key pair. With --out, writes PREFIX.key (the secret key, mode 0600) and
        PREFIX.pub (the public key); otherwise prints both. A publisher is started with its .key file and
        its subscribers get its .pub; a subscriber's .pub goes into the publisher's allow-list.

        Options:
        \(options.help())
        """

    /// Where the key pair goes (nil: printed).
    struct Configuration {
        var prefix: String?
        var force = false
    }

    static var options: OptionTable<Configuration> {
        OptionTable([
            .text("--out", "PREFIX", "write PREFIX.key and PREFIX.pub instead of printing", \.prefix),
            .flag("--force", "overwrite existing files", \.force),
        ])
    }

    static func parse(_ arguments: [String]) throws -> Configuration {
        var c = Configuration()
        let rest = try options.parse(arguments, into: &c)
        try Positionals.none(rest)
        if c.prefix == nil && c.force { throw UsageError("--force needs --out") }
        if c.prefix == "" { throw UsageError("option --out: the prefix is empty") }
        return c
    }

    static func run(_ c: Configuration) throws -> Int32 {
        let pair = try ZMQCurveKeyPair.generate()
        let force = c.force
        guard let prefix = c.prefix else {
            print("public-key \(pair.publicKey.z85)")
            print("secret-key \(pair.secretKey.z85)")
            return 0
        }
        let secretPath = prefix + ".key", publicPath = prefix + ".pub"
        if !force {
            for path in [secretPath, publicPath] where FileManager.default.fileExists(atPath: path) {
                throw CommandError("\(path) exists (use --force to overwrite)")
            }
        }
        try writeKeyFile(secretPath, comment: CurveKeyFile.secretComment, key: pair.secretKey, mode: 0o600)
        try writeKeyFile(publicPath, comment: CurveKeyFile.publicComment, key: pair.publicKey, mode: 0o644)
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

extension CurveKeyFile {
    /// The key pair of a secret key file given with `option`.
    /// - Throws: `UsageError` when the file is a public key file (it says so), `CommandError` when it
    ///   cannot be read or holds no valid key.
    static func loadSecret(_ path: String, option: String) throws -> ZMQCurveKeyPair {
        do { return try loadSecret(path) } catch { throw error.commandLineError(option: option) }
    }

    /// The public key in a public key file given with `option`.
    /// - Throws: `UsageError` when the file is a secret key file, `CommandError` when it cannot be
    ///   read or holds no valid key.
    static func loadPublic(_ path: String, option: String) throws -> ZMQCurveKey {
        do { return try loadPublic(path) } catch { throw error.commandLineError(option: option) }
    }
}

extension CurveKeyFile.Failure {
    /// The usage error of a mix-up (the wrong file of a pair), else the command's failure.
    func commandLineError(option: String) -> any Error {
        isMixUp ? UsageError(message(option: option)) : CommandError(message(option: option))
    }
}
