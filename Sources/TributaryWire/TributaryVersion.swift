/// The version of Tributary: the one number the `tributary` tool (`--version`), the C library
/// (`tributary_version()`) and the Python package (`tributary.__version__`, read from the library)
/// report. Semantic versioning; the wire and capture formats carry their own versions.
///
/// It lives here, in the lowest module that both the tool and the C library link, so that
/// `swift build` alone stamps every product with it; `python/tests/test_version.py` checks that the
/// three (and the Python package's metadata in python/pyproject.toml) agree.
public enum TributaryVersion {
    /// "MAJOR.MINOR.PATCH".
    public static let current = "1.0.0"
}
