"""`tributary import --start-time` (issue 43 item 4): NPY, WAV and CSV files carry no time, so an
import's first sample is stamped with the time given (ISO 8601 or Unix seconds, to the nanosecond) or,
by default, the file's modification time, which the output says; every export carries it."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

from tool_process import TIMEOUT, TRIBUTARY


def tool(*args):
    return subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT)


class ImportStartTime(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tributary-import-time-")
        self.npy = os.path.join(self.dir, "run.npy")
        np.save(self.npy, np.arange(2000, dtype=np.float64).reshape(1, -1))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def first_time_ns(self, *options, source=None):
        capture = os.path.join(self.dir, "out.tcap")
        result = tool("import", source or self.npy, "--rate", 1000, "--out", capture, "--force", *options)
        self.assertEqual(result.returncode, 0, result.stderr)
        description = json.loads(tool("inspect", capture, "--json").stdout)
        return description["sources"][0]["first_time_ns"], result.stdout

    def test_the_given_time_to_the_nanosecond(self):
        cases = {
            "2026-11-30T15:04:05.123456789Z": 1_796_051_045_123_456_789,
            "2026-11-30T16:04:05.123456789+01:00": 1_796_051_045_123_456_789,
            "2026-11-30 10:04:05.5-0500": 1_796_051_045_500_000_000,
            "2026-11-30T15:04:05Z": 1_796_051_045_000_000_000,
            "1796051045.123456789": 1_796_051_045_123_456_789,
            "1796051045": 1_796_051_045_000_000_000,
            "-1.5": -1_500_000_000,
        }
        for text, expected in cases.items():
            with self.subTest(text=text):
                ns, out = self.first_time_ns("--start-time", text)
                self.assertEqual(ns, expected)
                self.assertIn("(--start-time)", out)

    def test_a_time_without_zone_is_local(self):
        env = dict(os.environ, TZ="Asia/Kolkata")  # UTC+05:30, no daylight saving
        capture = os.path.join(self.dir, "local.tcap")
        result = subprocess.run([TRIBUTARY, "import", self.npy, "--rate", "1000", "--out", capture, "--start-time", "2026-11-30T20:34:05"],
                                capture_output=True, text=True, timeout=TIMEOUT, env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("read as local time", result.stdout)
        self.assertEqual(json.loads(tool("inspect", capture, "--json").stdout)["sources"][0]["first_time_ns"], 1_796_051_045_000_000_000)

    def test_default_is_the_files_modification_time_and_exports_carry_it(self):
        os.utime(self.npy, ns=(1_700_000_000_250_000_000, 1_700_000_000_250_000_000))
        for name, write in (("run.npy", None), ("run.csv", lambda p: np.savetxt(p, np.arange(10.0)[:, None], delimiter=","))):
            with self.subTest(file=name):
                path = os.path.join(self.dir, name)
                if write:
                    write(path)
                    os.utime(path, ns=(1_700_000_000_250_000_000, 1_700_000_000_250_000_000))
                ns, out = self.first_time_ns(source=path)
                self.assertEqual(ns, 1_700_000_000_250_000_000)
                self.assertIn("first sample at 2023-11-14T22:13:20.250000000Z (the file's modification time", out)
        # The export's sidecar says when the samples were taken.
        capture = os.path.join(self.dir, "out.tcap")
        tool("import", self.npy, "--rate", 1000, "--out", capture, "--force", "--start-time", "1796051045.5")
        np.save(os.path.join(self.dir, "i16.npy"), np.zeros((1, 10), dtype=np.int16))
        tool("import", os.path.join(self.dir, "i16.npy"), "--rate", 1000, "--out", capture, "--force", "--start-time", "1796051045.5")
        result = tool("export", capture, "--format", "npy", "--counts", "--out", os.path.join(self.dir, "e.npy"))
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(self.dir, "e.npy.json")) as f:
            self.assertEqual(json.load(f)["start_time_ns"], 1_796_051_045_500_000_000)

    def test_bad_times_are_usage_errors(self):
        for text in ("yesterday", "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-30T25:00:00Z", "2026-11-30",
                     "1e9", "99999999999999", "2026-11-30T15:04:05.1234567891Z", "3000-01-01T00:00:00Z", ""):
            with self.subTest(text=text):
                result = tool("import", self.npy, "--rate", 1000, "--out", os.path.join(self.dir, "x.tcap"), "--start-time", text)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn("option --start-time", result.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.dir, "x.tcap")))

    def test_measurement_files_carry_their_own_times(self):
        capture = os.path.join(self.dir, "x.tcap")
        tool("import", self.npy, "--rate", 1000, "--out", capture)
        tdms = os.path.join(self.dir, "x.tdms")
        self.assertEqual(tool("export", capture, "--format", "tdms", "--out", tdms).returncode, 0)
        result = tool("import", tdms, "--out", os.path.join(self.dir, "y.tcap"), "--start-time", "0")
        self.assertEqual(result.returncode, 2)
        self.assertIn("TDMS files carry their own times", result.stderr)


if __name__ == "__main__":
    unittest.main()
