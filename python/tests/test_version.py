"""One version number: `tributary --version`, the C library's `tributary_version()`, the Python package's
`tributary.__version__` and its metadata (python/pyproject.toml) are the same string.

The Swift constant TributaryVersion.current (Sources/TributaryWire/TributaryVersion.swift) is the one
place it is written for the tool and the library; Python reads it from the library. The tool is named
by TRIBUTARY, the library by TRIBUTARY_LIBRARY (`make python-tests` sets both).
"""
import ctypes
import os
import re
import subprocess
import unittest

import tributary

BIN = os.environ.get("TRIBUTARY", ".build/release/tributary")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class OneVersion(unittest.TestCase):
    def test_tool_library_and_package_agree(self):
        out = subprocess.run([BIN, "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
        match = re.match(r"tributary (\d+\.\d+\.\d+) ", out)
        self.assertIsNotNone(match, out)
        tool = match.group(1)

        # The library as a C caller sees it, loaded on its own (not through the package).
        path = os.environ.get("TRIBUTARY_LIBRARY") or os.path.join(ROOT, "lib", "libtributary.so")
        library = ctypes.CDLL(path)
        library.tributary_version.restype = ctypes.c_char_p
        c_version = library.tributary_version().decode()

        with open(os.path.join(ROOT, "python", "pyproject.toml"), encoding="utf-8") as f:
            metadata = re.search(r'^version = "([^"]+)"', f.read(), flags=re.M).group(1)

        self.assertEqual(
            {"tributary --version": tool, "tributary_version()": c_version,
             "tributary.__version__": tributary.__version__, "pyproject.toml": metadata},
            dict.fromkeys(["tributary --version", "tributary_version()", "tributary.__version__", "pyproject.toml"],
                          tool))
        self.assertEqual(tool, "1.0.0")

    def test_unknown_attribute_is_still_an_attribute_error(self):
        with self.assertRaises(AttributeError):
            tributary.no_such_attribute  # noqa: B018
        self.assertFalse(hasattr(tributary, "no_such_attribute"))


if __name__ == "__main__":
    unittest.main()
