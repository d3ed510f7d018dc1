"""Issue 43, readings and messages: what a new user reads says what it is.

- item 7: a replay's normal end prints as the end it is (a close with code 0), not as error 5;
- item 8: `filter` says what it kept, and why a filter kept nothing when IN has nothing of its kind;
- item 9: a Welch segment longer than the input is shortened with scipy's warning (the CLI here,
  Python in python/tests/test_package.py);
- item 10: source 0 stands for the publisher's own packages wherever source ids are listed;
- item 13: counts in the right number, no empty `sources` header, a truthful pace for a live
  recording, and `bench` progress per point.
"""
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import numpy as np

import wire_spec as w
from tool_process import TIMEOUT, TRIBUTARY, Serve

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEVICE = "id=1,name=Sim,rate=2000,channels=2,freq=50,block=100"


def run(*args, timeout=TIMEOUT):
    return subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=timeout)


class Directory(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="tributary-first-hour-")
        self.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.directory, name)

    def capture(self, name="x.tcap", channels=2, samples=5000, rate=1000):
        np.save(self.path("in.npy"), np.sin(2 * np.pi * 50 * np.arange(samples) / rate) * np.ones((channels, 1)))
        result = run("import", self.path("in.npy"), "--rate", rate, "--out", self.path(name))
        self.assertEqual(result.returncode, 0, result.stderr)
        return self.path(name)


class ReplayEndsAsTheEndItIs(Directory):
    """Item 7."""

    def replay(self, capture):
        return Serve("--replay", capture, "--speed", "max", "--linger", "0.1")

    def test_subscribe_prints_the_close_not_error_5(self):
        capture = self.capture()
        for json_lines in (False, True):
            server = self.replay(capture)
            try:
                result = run("subscribe", server.address, "--api-key", "k", *(["--json"] if json_lines else []))
            finally:
                server.stop()
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertNotIn("lost connection", result.stdout + result.stderr)
            self.assertNotIn("error 5", result.stdout + result.stderr)
            last = result.stdout.splitlines()[-1]
            if json_lines:
                package = json.loads(last)
                self.assertEqual(package["kind"], "close")
                self.assertEqual(package["content"], {"code": 0, "reason": "the replay has ended"})
            else:
                self.assertTrue(last.startswith("close"), last)
                self.assertIn("code 0 (a normal end): the replay has ended", last)
            self.assertIn("the publisher closed the session: the replay has ended", result.stderr)

    def test_record_with_reconnect_says_the_publisher_closed(self):
        capture = self.capture()
        server = self.replay(capture)
        try:
            result = run("record", server.address, "--api-key", "k", "--out", self.path("again.tcap"), "--reconnect",
                         "--duration", "3")
        finally:
            server.stop()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("the publisher closed the session: the replay has ended", result.stderr)
        self.assertNotIn("error 5", result.stderr)

    def test_monitor_reports_the_close_as_such(self):
        import malicious_publisher as mp
        script = [mp.Step("analog", mp.analog([[0.5 * np.sin(i / 3) for i in range(1000)]] * 2, first_sample=1000 * i))
                  for i in range(20)]
        with mp.MaliciousPublisher(script) as publisher:
            result = run("monitor", publisher.address, "--api-key", mp.KEY, "--every", "0.3", "--duration", "2.5")
        self.assertEqual(result.returncode, 0, result.stderr)
        errors = [json.loads(line)["health"]["error"] for line in result.stdout.splitlines()]
        said = [e for e in errors if e]
        self.assertTrue(said, result.stdout)
        self.assertIn("the publisher closed the session: the script ended", said)
        self.assertFalse([e for e in said if "error 5" in e], said)


class FilterSaysWhatItKept(Directory):
    """Item 8: a filter that governs nothing of IN says that IN has nothing of its kind."""

    def test_a_filter_of_a_kind_the_input_lacks(self):
        capture = self.capture()
        result = run("filter", capture, "--out", self.path("o.tcap"), "--filter", "double:0-1;0-1")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("filter 1 'double:0-1;0-1' kept nothing (the input has no double arrays)", result.stdout)
        self.assertRegex(result.stdout, r"\d+ frames no filter governs copied unchanged")
        frames = w.frame("array", w.numeric_array(1, "d", [[1.0, 2.0], [3.0, 4.0]]), sequence=1, source_id=1)
        with open(self.path("arrays.frames"), "wb") as f:
            f.write(frames)
        result = run("filter", self.path("arrays.frames"), "--out", self.path("o.frames"), "--filter", "analog:0")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("filter 1 'analog:0' kept nothing (the input has no analog frames)", result.stdout)
        self.assertIn("1 frame no filter governs copied unchanged", result.stdout)


class WelchShortensLikeScipy(Directory):
    """Item 9 (Welch): scipy warns when nperseg is longer than the input; so do we."""

    def test_the_cli_warns_on_stderr_and_in_the_json(self):
        capture = self.capture(samples=500)
        result = run("analyze", capture, "--welch", 1024)
        self.assertEqual(result.returncode, 0, result.stderr)
        for channel in (0, 1):
            self.assertIn(f"warning: {capture}: source 1 channel {channel}: "
                          "nperseg = 1024 is greater than input length = 500, using nperseg = 500", result.stderr)
        result = run("analyze", capture, "--welch", 1024, "--json")
        document = json.loads(result.stdout)
        for channel in document["sources"][0]["channels"]:
            self.assertEqual(channel["welch"]["nperseg"], 500)
            self.assertIn("nperseg = 1024 is greater than input length = 500, using nperseg = 500", channel["warnings"])
        # A segment that fits: no warning.
        result = run("analyze", capture, "--welch", 256)
        self.assertNotIn("nperseg", result.stderr)


class SourceZeroIsThePublishersOwnPackages(Directory):
    """Item 10: one rule for source 0 (PROTOCOL.md §4.1)."""

    def test_sources_0_receives_the_publishers_own_packages(self):
        server = Serve("--simulate", DEVICE, "--message", "only this", "--every", "0.2")
        try:
            result = run("subscribe", server.address, "--api-key", "k", "--sources", "0", "--json", "--duration", "1.5")
            self.assertEqual(result.returncode, 0, result.stderr)
            kinds = {json.loads(line)["kind"] for line in result.stdout.splitlines()}
            self.assertIn("message", kinds)
            self.assertNotIn("analog", kinds)  # source 1 is not selected
            for command in ("view", "monitor"):
                refused = run(command, server.address, "--api-key", "k", "--sources", "0", "--duration", "1",
                              *(["--http", "127.0.0.1:0"] if command == "view" else []))
                self.assertEqual(refused.returncode, 1, refused.stderr)
                self.assertIn("source 0 stands for the publisher's own packages", refused.stderr)
        finally:
            server.stop()
        bad = run("subscribe", "127.0.0.1:1", "--api-key", "k", "--sources", "1,x")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("0: the publisher's own packages", bad.stderr)


class PluralsAndSmallText(Directory):
    """Item 13."""

    def test_one_record_channel_and_sample(self):
        capture = self.capture(channels=1)
        result = run("import", self.path("in.npy"), "--rate", 1000, "--out", self.path("again.tcap"))
        self.assertIn(": 1 channel × 5000 samples", result.stdout)
        # A capture cut after its first record: repair keeps one record.
        with open(capture, "rb") as f:
            data = f.read()
        first = struct.unpack_from("<I", data, 12)[0]
        length = 88 + (struct.unpack_from("<I", data, first + 64)[0] + 7) // 8 * 8
        with open(self.path("cut.tcap"), "wb") as f:
            f.write(data[:first + length])
        result = run("repair", self.path("cut.tcap"), "--out", self.path("fixed.tcap"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("1 record kept", result.stdout)
        # A configuration of one channel, listed frame by frame.
        with open(self.path("one.frames"), "wb") as f:
            f.write(w.frame("configuration", w.configuration("dev", "t", [(0, 0, 1000.0, -1.0, 1.0, "ai0", "V")], []),
                            source_id=1))
        result = run("inspect", self.path("one.frames"))
        self.assertIn("1 channel, 0 lines", result.stdout)
        self.assertNotRegex(result.stdout, r"\b1 (channels|records|samples|lines)\b")
        # One Welch segment, one averaged spectrum.
        result = run("analyze", capture, "--welch", 5000)
        self.assertIn("hann, 1 segment, density", result.stdout)
        result = run("analyze", capture, "--spectrum", 5000)
        self.assertIn("hann, 1 average)", result.stdout)

    def test_an_application_only_publisher_has_no_empty_sources_header(self):
        server = Serve("--message", "only this")
        try:
            result = run("subscribe", server.address, "--api-key", "k", "--duration", "0.5")
        finally:
            server.stop()
        self.assertEqual(result.returncode, 0, result.stderr)
        header = result.stderr.splitlines()[0]
        self.assertTrue(header.endswith("no sources (only the publisher's own packages, source 0)"), header)

    def test_a_live_recording_states_the_streams_pace(self):
        server = Serve("--simulate", DEVICE)
        try:
            result = run("record", server.address, "--api-key", "k", "--out", self.path("live.tcap"), "--duration", "1.5")
        finally:
            server.stop()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("data recorded at", result.stderr)
        self.assertRegex(result.stderr, r"the stream's data came at [0-9.]+ MB/s \(the publisher's pace")

    def test_bench_reports_each_point(self):
        result = run("bench", "--rates", "200,400", "--sizes", "16", "--seconds", "0.2", timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("1 subscriber", result.stderr)
        self.assertNotIn("(s)", result.stderr)
        self.assertIn("2 points of", result.stderr)
        self.assertRegex(result.stderr, r"point 1/2: 16 samples per channel at 200 frames/s offered: [0-9]+ frames/s delivered")
        self.assertRegex(result.stderr, r"point 2/2: 16 samples per channel at 400 frames/s offered")


if __name__ == "__main__":
    unittest.main()
