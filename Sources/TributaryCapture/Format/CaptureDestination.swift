import Foundation

/// Where a command writes a capture (`record`, `import`, `repair`), and the one rule that keeps data
/// that was safe before the command from being destroyed by it:
///
/// - everything is checked before any work is done (a recording must not run for its whole duration
///   and then fail at the rename): the path must not be a directory, its directory must exist and be
///   writable, an existing file is refused unless `replace` (the CLI's `--force`) is given;
/// - the capture is written to a temporary file that is created exclusively: an existing one (for
///   `NAME.partial`, possibly a crashed recording) is refused with the command that repairs it,
///   never truncated; an existing `path` that is not a regular file (a device, a FIFO) or whose name
///   ends in `.partial` is never replaced, not even with `replace`;
/// - the temporary file replaces `path` only when it is complete (`publish`), atomically; without
///   `replace`, a file that appeared at `path` meanwhile is not replaced either.
public struct CaptureDestination: Sendable, Equatable {
    /// The capture's final path.
    public let path: String
    /// The file written until the capture is complete.
    public let temporaryPath: String
    /// Whether an existing `path` may be replaced by a complete capture.
    public let replace: Bool
    /// True when `path` existed when it was checked (so publishing replaces it).
    public let existed: Bool

    /// Checks `path` before anything is written.
    /// - Parameters:
    ///   - path: the capture to write.
    ///   - replace: allow replacing an existing file (`--force`).
    ///   - temporaryPath: the file written until the capture is complete (default `path + ".partial"`,
    ///     the name a crashed writer leaves, docs/CAPTURE.md §8).
    ///   - inputs: the files the command reads: `path` must not be one of them, whatever its spelling
    ///     (compared by device and inode, so another path to the same file or a symbolic link to it is
    ///     refused too), not even with `replace`: the capture would replace the data it is made from.
    /// - Throws: `CaptureError.usage` naming the path and what to do.
    public init(path: String, replace: Bool, temporaryPath: String? = nil, inputs: [String] = []) throws(CaptureError) {
        self.path = path
        self.temporaryPath = temporaryPath ?? path + ".partial"
        self.replace = replace
        var st = stat()
        if stat(path, &st) == 0 {
            for input in inputs {
                var other = stat()
                if stat(input, &other) == 0, other.st_dev == st.st_dev, other.st_ino == st.st_ino {
                    throw CaptureError(
                        .usage, file: path, "is the input '\(input)': writing the capture there would destroy it; choose another output")
                }
            }
            guard st.st_mode & S_IFMT != S_IFDIR else {
                throw CaptureError(.usage, file: path, "is a directory; give the path of a capture file inside it")
            }
            guard st.st_mode & S_IFMT == S_IFREG else {
                throw CaptureError(.usage, file: path, "exists and is not a regular file; it is never replaced")
            }
            guard !path.hasSuffix(".partial") else {
                throw CaptureError(
                    .usage, file: path,
                    "exists and may hold a crashed recording; it is never replaced: "
                        + "run 'tributary repair \(path) --out NAME.tcap' to recover it")
            }
            guard replace else {
                throw CaptureError(.usage, file: path, "exists (use --force to replace it once the new capture is complete)")
            }
            existed = true
        } else {
            existed = false
        }
        if lstat(self.temporaryPath, &st) == 0 {
            throw CaptureError(
                .usage, file: self.temporaryPath,
                self.temporaryPath.hasSuffix(".partial")
                    ? "exists and may hold a crashed recording: run 'tributary repair \(self.temporaryPath)' to recover it (or move it away) first"
                    : "exists; move it away first")
        }
        let directory = (path as NSString).deletingLastPathComponent
        let dir = directory.isEmpty ? "." : directory
        guard stat(dir, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw CaptureError(.usage, file: path, "the directory '\(dir)' does not exist")
        }
        guard access(dir, W_OK) == 0 else { throw CaptureError(.usage, file: path, "the directory '\(dir)' is not writable") }
    }

    /// Creates the temporary file exclusively (`O_EXCL`: an existing file, such as a crashed recording,
    /// is never truncated).
    /// - Returns: the file descriptor, open for writing.
    func createTemporary() throws(CaptureError) -> Int32 {
        let fd = Foundation.open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw CaptureError(
                    .usage, file: temporaryPath,
                    temporaryPath.hasSuffix(".partial")
                        ? "exists and may hold a crashed recording: run 'tributary repair \(temporaryPath)' to recover it (or move it away) first"
                        : "exists; move it away first")
            }
            throw CaptureError(.io, file: temporaryPath, "cannot create: \(String(cString: strerror(errno)))")
        }
        return fd
    }

    /// Moves the complete, synced temporary file to `path` and syncs the directory. With `replace` an
    /// existing file is replaced atomically; without it, a file that appeared at `path` since the check
    /// is not replaced (hard link, then unlink), and the capture stays at `temporaryPath`.
    /// - Throws: `CaptureError.io` (the temporary file is then left where it is, complete).
    func publish() throws(CaptureError) {
        if replace {
            guard rename(temporaryPath, path) == 0 else {
                throw CaptureError(.io, file: temporaryPath, "cannot rename to \(path): \(String(cString: strerror(errno)))")
            }
        } else if link(temporaryPath, path) == 0 {
            unlink(temporaryPath)
        } else if errno == EEXIST {
            throw CaptureError(
                .io, file: temporaryPath, "\(path) appeared while writing; the complete capture was left in \(temporaryPath)")
        } else {
            // A file system without hard links: the existence check was made when the command started.
            guard access(path, F_OK) != 0, rename(temporaryPath, path) == 0 else {
                throw CaptureError(.io, file: temporaryPath, "cannot rename to \(path): \(String(cString: strerror(errno)))")
            }
        }
        syncDirectory(of: path)
    }

    /// Removes the temporary file (nothing worth keeping was written to it).
    func discardTemporary() { unlink(temporaryPath) }
}

/// Makes a rename durable by syncing the directory that holds `path`.
func syncDirectory(of path: String) {
    let directory = (path as NSString).deletingLastPathComponent
    let dfd = Foundation.open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if dfd >= 0 {
        _ = fsync(dfd)
        Foundation.close(dfd)
    }
}
