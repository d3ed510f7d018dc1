"""What the tool prints, as a new user reads it: `inspect` gives times in ISO 8601 (UTC and local)
besides nanoseconds, counts in the right number, no empty channel list for a capture of application
packages, and frame listings whose columns line up; `analyze --plot` labels its axes with the
channels' unit, names devices and channels in the legend, and draws a log frequency axis on request.
"""
import datetime
import json
import os
import re
import subprocess
import unittest

import numpy as np

from test_transport_cli import TIMEOUT, TRIBUTARY
from tool_process import ScratchDirectory


def run(*args, env=None):
    result = subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT, env=env)
    if result.returncode != 0:
        raise AssertionError(f"tributary {' '.join(map(str, args))} failed ({result.returncode}): {result.stderr}")
    return result


def iso_utc(ns):
    seconds, fraction = divmod(ns, 1_000_000_000)
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{fraction:09d}Z"


class ToolOutput(ScratchDirectory, unittest.TestCase):
    directory_prefix = "tributary-output-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        t = np.arange(4000) / 1000
        np.save(cls.path("two.npy"), np.vstack([np.sin(2 * np.pi * 50 * t), 0.1 * np.sin(2 * np.pi * 120 * t)]))
        np.save(cls.path("one.npy"), np.sin(2 * np.pi * 5 * np.arange(500) / 1000))
        run("import", cls.path("two.npy"), "--rate", 1000, "--out", cls.path("two.tcap"), "--unit", "mV", "--source-name", "Bench DAQ")
        run("import", cls.path("one.npy"), "--rate", 1000, "--out", cls.path("one.tcap"))

    def test_inspect_gives_iso_times_in_utc_and_local_time(self):
        info = json.loads(run("inspect", self.path("two.tcap"), "--json").stdout)
        source = info["sources"][0]
        self.assertEqual(source["first_time"], iso_utc(source["first_time_ns"]))
        self.assertEqual(source["last_time"], iso_utc(source["last_time_ns"]))
        # Local time in a zone with a known offset (no daylight saving): UTC+05:30.
        env = dict(os.environ, TZ="Asia/Kolkata")
        local = json.loads(run("inspect", self.path("two.tcap"), "--json", env=env).stdout)["sources"][0]["first_time_local"]
        seconds, fraction = divmod(source["first_time_ns"], 1_000_000_000)
        expected = datetime.datetime.fromtimestamp(seconds, datetime.timezone(datetime.timedelta(hours=5, minutes=30)))
        self.assertEqual(local, expected.strftime("%Y-%m-%dT%H:%M:%S") + f".{fraction:09d}+05:30")
        text = run("inspect", self.path("two.tcap"), env=env).stdout
        self.assertIn(f"start: {source['first_time']} (local {local}, {source['first_time_ns']} ns)", text)
        self.assertIn(f"end:   {source['last_time']}", text)
        self.assertIn("created: ", text)

    def test_inspect_counts_in_the_right_number(self):
        text = run("inspect", self.path("one.tcap")).stdout
        self.assertIn(": 1 channel (", text)
        self.assertRegex(text, r"\b\d+ frames? in 1 chunk,")
        self.assertIn("1 configuration record", text)
        self.assertIn("0 gap records", text)
        self.assertNotRegex(text, r"\b1 (frames|chunks|channels|records)\b")
        text = run("inspect", self.path("two.tcap")).stdout
        self.assertIn(": 2 channels (", text)
        self.assertIn("[mV]", text)

    def test_a_capture_of_application_packages_only(self):
        server = subprocess.Popen([TRIBUTARY, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--message", "only this"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            address = server.stdout.readline().split("listening on ", 1)[1].strip()
            run("record", address, "--api-key", "k", "--duration", "1", "--out", self.path("app.tcap"))
        finally:
            server.terminate()
            server.communicate(timeout=TIMEOUT)
        text = run("inspect", self.path("app.tcap")).stdout
        self.assertNotIn("0 channels", text)
        self.assertNotIn("()", text)
        self.assertIn("source 0: application packages", text)
        self.assertIn("1 message frame", run("inspect", self.path("app.tcap"), "--packages").stdout)

    def test_frame_listing_columns_line_up(self):
        run("filter", self.path("two.tcap"), "--out", self.path("frames.bin"), "--filter", "analog:0-1")
        lines = run("inspect", self.path("frames.bin")).stdout.splitlines()[:-1]
        self.assertGreater(len(lines), 1)
        for field in ("source=", "seq=", " t=", "filter=", "size="):
            self.assertEqual(len({line.index(field) for line in lines}), 1, (field, lines))

    def test_plot_labels_units_devices_channels_and_log_frequency(self):
        svg_path = self.path("psd.svg")
        run("analyze", self.path("two.tcap"), "--welch", 256, "--plot", svg_path, "--log-frequency")
        with open(svg_path) as f:
            svg = f.read()
        self.assertIn("PSD (mV²/Hz)", svg)
        self.assertIn("Frequency (Hz), log scale", svg)
        legends = re.findall(r"<text x=\"[0-9.]+\" y=\"[0-9.]+\">([^<]*)</text>", svg)
        # Each curve named once: the device and the channel (one file, one source: no file name or source id).
        self.assertEqual(legends, ["Bench DAQ ch 0", "Bench DAQ ch 1"])
        ticks = re.findall(r'text-anchor="middle">([0-9.e+]+)</text>', svg)
        self.assertIn("10", ticks)
        self.assertIn("100", ticks)
        # The axis ends at Nyquist (500 Hz at 1 kS/s), not at the next decade.
        self.assertNotIn("1000", ticks)
        self.assertIn("500", ticks)
        # An NPY file's source is named after the file: named once. Several files: each curve says its file.
        run("analyze", self.path("one.npy"), "--rate", 1000, "--welch", 128, "--plot", self.path("npy.svg"))
        with open(self.path("npy.svg")) as f:
            self.assertEqual(re.findall(r"<text x=\"[0-9.]+\" y=\"[0-9.]+\">([^<]*)</text>", f.read()), ["one.npy ch 0"])
        run("analyze", self.path("one.tcap"), self.path("two.tcap"), "--welch", 128, "--plot", self.path("two-files.svg"))
        with open(self.path("two-files.svg")) as f:
            self.assertEqual(re.findall(r"<text x=\"[0-9.]+\" y=\"[0-9.]+\">([^<]*)</text>", f.read()),
                             ["one.tcap one.npy ch 0 [V]", "two.tcap Bench DAQ ch 0 [mV]", "two.tcap Bench DAQ ch 1 [mV]"])
        # A linear axis by default.
        run("analyze", self.path("two.tcap"), "--welch", 256, "--plot", self.path("lin.svg"))
        with open(self.path("lin.svg")) as f:
            self.assertNotIn("log scale", f.read())
        result = subprocess.run([TRIBUTARY, "analyze", self.path("two.tcap"), "--log-frequency"], capture_output=True, text=True,
                                timeout=TIMEOUT)
        self.assertEqual(result.returncode, 2)
        self.assertIn("--log-frequency needs --plot", result.stderr)


if __name__ == "__main__":
    unittest.main()
