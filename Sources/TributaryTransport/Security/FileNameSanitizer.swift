/// Turns a file name received from a peer into a name that is safe to create in a directory.
///
/// A peer chooses the names of the files and images it sends (docs/PROTOCOL.md §5.7); used as a
/// path, `../../.ssh/authorized_keys` or `/etc/passwd` would write outside the receiving directory.
/// So only the last path component is kept, and names that are empty, `.`/`..`, longer than 255
/// bytes, or that contain control characters are refused.
public enum FileNameSanitizer {
    /// The safe name for `name`, or nil when no safe name can be derived.
    public static func safeName(_ name: String) -> String? {
        // Both separators: a Windows peer's "dir\file" must not become a literal name with a backslash
        // that another tool later interprets as a path.
        let last = name.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        let component = last.split(separator: "\\", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        guard !component.isEmpty, component != ".", component != "..", component.utf8.count <= 255 else { return nil }
        for scalar in component.unicodeScalars {
            // C0 and C1 controls and DEL: terminal escapes, NUL truncation in C APIs.
            if scalar.value < 0x20 || (scalar.value >= 0x7F && scalar.value < 0xA0) { return nil }
        }
        return component
    }
}
