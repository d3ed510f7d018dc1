"""`tributary demo` end to end: it streams over 127.0.0.1, records, analyses and plots, and what it
reports is right (the simulated device's THD is 1 % second + 0.5 % third harmonic = 0.01118)."""
import os
import pathlib
import re
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRIBUTARY = os.environ.get("TRIBUTARY", str(ROOT / ".build/release/tributary"))


class Demo(unittest.TestCase):
    def test_demo_streams_records_analyses_and_plots(self):
        with tempfile.TemporaryDirectory() as out:
            result = subprocess.run([TRIBUTARY, "demo", "--out", out, "--seconds", "2"],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stderr)
            text = result.stdout
            self.assertIn("0 unaccounted", text)
            plot = re.search(r"Spectrum plot: (.+\.svg)", text).group(1)
            self.assertTrue(os.path.exists(plot))
            root = ET.parse(plot).getroot()
            self.assertTrue(root.tag.endswith("svg"))
            self.assertGreaterEqual(sum(1 for e in root.iter() if e.tag.endswith("polyline") or e.tag.endswith("path")), 2)
            # The distortion table: channel 0 at 50 Hz, channel 1 at 100 Hz, THD 0.01118 within 1 %.
            rows = {int(m.group(1)): m for m in re.finditer(r"^\s*([01])\s+(\d+(?:\.\d+)?)\s+\S+\s+\S+\s+(\S+)\s", text, re.M)
                    if float(m.group(2)) in (50.0, 100.0)}
            self.assertEqual(sorted(rows), [0, 1], text)
            for channel, m in rows.items():
                self.assertAlmostEqual(float(m.group(2)), 50.0 * (channel + 1))
                self.assertLess(abs(float(m.group(3)) - 0.011180) / 0.011180, 0.01)
            # Only the filtered channels of source 1 were received and recorded.
            exported = os.path.join(out, "demo.npy")
            subprocess.run([TRIBUTARY, "export", os.path.join(out, "demo.tcap"), "--format", "npy", "--counts", "--out", exported],
                           check=True, capture_output=True, timeout=60)
            data = np.load(exported)
            self.assertEqual(data.shape[0], 2)
            self.assertEqual(data.dtype, np.int16)


if __name__ == "__main__":
    unittest.main()
