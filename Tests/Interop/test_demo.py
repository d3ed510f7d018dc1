"""`tributary demo` end to end: it streams over 127.0.0.1, records, analyses and plots, and what it
reports is right (the simulated device's THD is 1 % second + 0.5 % third harmonic = 0.01118).

The plot is also looked at as a person sees it: rendered by headless Chromium into a canvas, the
upper edge of the drawn curves must show the tones and their harmonics (50, 100, 150, 200 and 300 Hz)
as separate peaks at those frequencies on the axis, with the curves falling between them.
"""
import base64
import os
import re
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

import numpy as np

from browser import chromium
from tool_process import TRIBUTARY


def rendered_upper_edge(svg_text, plot_left, plot_right):
    """Renders the SVG in headless Chromium and returns, for each pixel column from plot_left to
    plot_right, the y of the topmost pixel of a curve (any strongly coloured pixel: not white, grey or
    black), or None where the column has none."""
    driver = chromium()
    try:
        driver.set_script_timeout(30)
        return driver.execute_async_script("""
            const [url, left, right, done] = arguments;
            const image = new Image();
            image.onload = () => {
                const canvas = document.createElement("canvas");
                canvas.width = image.width; canvas.height = image.height;
                const context = canvas.getContext("2d");
                context.drawImage(image, 0, 0);
                const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
                const edge = [];
                for (let x = left; x <= right; x++) {
                    let top = null;
                    for (let y = 0; y < canvas.height; y++) {
                        const i = (y * canvas.width + x) * 4, r = pixels[i], g = pixels[i + 1], b = pixels[i + 2];
                        if (Math.max(r, g, b) - Math.min(r, g, b) > 60) { top = y; break; }
                    }
                    edge.push(top);
                }
                done(edge);
            };
            image.onerror = () => done("the SVG did not load");
            image.src = url;
        """, "data:image/svg+xml;base64," + base64.b64encode(svg_text.encode()).decode(), plot_left, plot_right)
    finally:
        driver.quit()


class Demo(unittest.TestCase):
    def test_the_plot_shows_the_tones_and_harmonics_as_separate_peaks(self):
        with tempfile.TemporaryDirectory() as out:
            result = subprocess.run([TRIBUTARY, "demo", "--out", out, "--seconds", "2"], capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(re.search(r"Spectrum plot: (.+\.svg)", result.stdout).group(1)) as f:
                svg = f.read()
        # The frequency axis from its tick labels (x of "10", "100", "1000"): pixel = a + b log10(f).
        ticks = {float(t): float(x) for x, t in re.findall(r'<text x="([0-9.]+)" y="[0-9.]+" text-anchor="middle">([0-9.]+)</text>', svg)}
        decades = [f for f in (10.0, 100.0, 1000.0) if f in ticks]
        self.assertEqual(len(decades), 3, f"a log frequency axis labelled at 10, 100 and 1000 Hz: {ticks}")
        b, a = np.polyfit(np.log10(decades), [ticks[f] for f in decades], 1)
        frame = re.search(r'<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)" height="[0-9.]+" fill="none"', svg)
        left, width = float(frame.group(1)), float(frame.group(2))
        edge = rendered_upper_edge(svg, int(left) + 2, int(left + width) - 2)
        self.assertIsInstance(edge, list, edge)
        height = np.array([np.nan if y is None else -y for y in edge])  # higher on screen: larger
        def column(f):
            return int(round(a + b * np.log10(f) - (int(left) + 2)))
        peaks = [50, 100, 150, 200, 300]
        found = []
        for f in peaks:
            x = column(f)
            window = height[max(0, x - 4):x + 5]
            self.assertFalse(np.all(np.isnan(window)), f"no curve drawn near {f} Hz")
            found.append((np.nanargmax(window) + max(0, x - 4), np.nanmax(window)))
        for (x1, h1), (x2, h2), f1, f2 in zip(found, found[1:], peaks, peaks[1:]):
            between = height[x1 + 1:x2]
            self.assertTrue(len(between) > 0 and np.nanmin(between) < min(h1, h2) - 40,
                            f"{f1} and {f2} Hz are not separate peaks in the plotted image (columns {x1} and {x2})")

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
