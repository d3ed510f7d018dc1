"""The live page as a person sees it: `tributary view` of `serve --simulate` in Debian's headless
chromium, the trace's plot area taken as a PNG screenshot and looked at pixel by pixel (issue 43,
items 15 and 17).

- A 1 kHz sine at 20 kS/s (columns of 4 samples, the default 100 ms window) and a 50 Hz sine at
  1 kS/s (one sample per column) are each one connected trace: every pixel column of the plot holds
  trace-coloured pixels and those of neighbouring columns touch (no isolated dots, no gaps), the trace
  reaches into the plot's leftmost 10 % (the data fill the window) and spans the sine's height.
- On a phone-sized viewport (390 × 844) the same holds for the min/max envelope (more columns than
  pixels), and THD, SINAD and ENOB are on screen with nothing to scroll sideways.
- The axes' ticks are round (1, 2 or 5 × 10^k apart) and carry units.

PNG screenshots are decoded here with zlib and numpy (no imaging package). They go to
$TRIBUTARY_VIEW_SCREENSHOTS when it is set.
"""
import base64
import os
import struct
import time
import unittest
import zlib

import numpy as np

from browser import chromium, wait_until
from tool_process import Serve, ToolProcess

TRACE_RGB = (0x1F, 0x77, 0xB4)  # the page's colour of the first shown channel
FRAME_RGB = (0xD0, 0xD5, 0xDD)  # the plot's frame


def decode_png(data):
    """An 8-bit RGB or RGBA, non-interlaced PNG as an (height, width, 3) uint8 array."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    at, idat, header = 8, [], None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        at += 12 + length
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {color}, interlace {interlace}")
    bpp = 3 if color == 2 else 4
    stride = width * bpp
    raw = zlib.decompress(b"".join(idat))
    out = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1)
        if kind == 0:
            line = row.copy()
        elif kind == 1:  # Sub: a running sum per channel, modulo 256
            line = np.cumsum(row.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif kind == 2:  # Up
            line = row + previous
        elif kind in (3, 4):  # Average, Paeth: byte by byte
            line = bytearray(stride)
            up, row = previous.tobytes(), row.tobytes()
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = up[i]
                if kind == 3:
                    line[i] = (row[i] + ((a + b) >> 1)) & 0xFF
                else:
                    c = up[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
            line = np.frombuffer(bytes(line), dtype=np.uint8)
        else:
            raise ValueError(f"PNG filter {kind} in row {y}")
        out[y] = line
        previous = line
    return out.reshape(height, width, bpp)[:, :, :3]


def trace_mask(image):
    """Pixels of the trace's colour over the white plot, antialiased edges at a third or more."""
    white = np.array([255.0, 255.0, 255.0])
    toward = white - np.array(TRACE_RGB, dtype=float)
    away = white - image.astype(float)
    alpha = away @ toward / (toward @ toward)
    off = np.linalg.norm(away - alpha[:, :, None] * toward, axis=2)
    return (alpha >= 1 / 3) & (off < 40)


def is_round_step(labels):
    """The labels are numbers evenly spaced by 1, 2 or 5 × 10^k."""
    values = [float(s.replace("\u2212", "-")) for s in labels]
    if len(values) < 2:
        return False
    steps = np.diff(values)
    step = steps[0]
    mantissa = step / 10 ** np.floor(np.log10(step))
    return bool(np.allclose(steps, step, rtol=1e-6) and min(abs(mantissa - m) for m in (1, 2, 5)) < 1e-6)


def setUpModule():
    global driver, shots
    shots = os.environ.get("TRIBUTARY_VIEW_SCREENSHOTS")
    if shots:
        os.makedirs(shots, exist_ok=True)
    driver = chromium()


def tearDownModule():
    driver.quit()


class LivePicture:
    """`serve --simulate SPEC` and `view` of it, the page loaded in the module's browser."""

    def __init__(self, spec):
        self.server = Serve("--simulate", spec, bind="tcp://127.0.0.1:0", api_key="k")
        self.view = ToolProcess("view", f"127.0.0.1:{self.server.port}", "--api-key", "k", "--http", "127.0.0.1:0")
        driver.get(self.view.value_after("view: "))

    def stop(self):
        self.view.stop()
        self.server.stop()

    @staticmethod
    def js(script):
        return driver.execute_script(script)

    def wait_for_full_window(self):
        """Waits until the trace's column count has stopped growing (the window is full) over three
        drawings; returns it."""
        seen = []

        def settled():
            drawn, channels = self.js("return [window.tributaryView.drawn || 0, window.tributaryView.channels]")
            if channels and (not seen or seen[-1][0] != drawn):
                seen.append((drawn, channels[0]["columns"]))
            last = [c for _, c in seen[-3:]]
            return len(last) == 3 and last[0] > 0 and len(set(last)) == 1 and last[0]
        return wait_until(settled, what="a full trace window")

    def plot_picture(self, name):
        """The trace's plot area, inside its frame, as it appears on the screen: an RGB array. The frame
        is found in the picture (the rows and columns mostly of its grey)."""
        self.js("document.getElementById('trace').scrollIntoView({block: 'center'})")
        time.sleep(0.3)
        r = self.js("const r = document.getElementById('trace').getBoundingClientRect(); return [r.left, r.top, r.width, r.height];")
        png = base64.b64decode(driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "clip": {
            "x": r[0], "y": r[1], "width": r[2], "height": r[3], "scale": 1}})["data"])
        if shots:
            with open(os.path.join(shots, name), "wb") as f:
                f.write(png)
        image = decode_png(png)
        grey = (np.abs(image.astype(int) - FRAME_RGB).max(axis=2) <= 8)
        rows = np.flatnonzero(grey.mean(axis=1) > 0.5)
        columns = np.flatnonzero(grey.mean(axis=0) > 0.5)
        if len(rows) < 2 or len(columns) < 2:
            raise AssertionError(f"no plot frame in {image.shape[1]}x{image.shape[0]} picture of the trace")
        return image[rows[0] + 2:rows[-1] - 1, columns[0] + 2:columns[-1] - 1]


class PictureAssertions(unittest.TestCase):
    def assert_one_connected_trace(self, image, height_fraction):
        mask = trace_mask(image)
        height, width = mask.shape
        present = mask.any(axis=0)
        missing = np.flatnonzero(~present)
        self.assertEqual(len(missing), 0, f"pixel columns without trace of {width}: {missing[:20].tolist()}…")
        # Neighbouring columns touch: a trace pixel of column x+1 is at most one row from one of column x.
        near = mask.copy()
        near[1:] |= mask[:-1]
        near[:-1] |= mask[1:]
        apart = np.flatnonzero(~(near[:, :-1] & mask[:, 1:]).any(axis=0))
        self.assertEqual(len(apart), 0, f"columns whose trace does not touch the next column's: {apart[:20].tolist()}…")
        # The data fill the window: the trace is drawn in the plot's leftmost 10 %.
        left = mask[:, :max(1, width // 10)]
        self.assertTrue(left.any(axis=0).all(), "the leftmost 10 % of the plot has columns without trace")
        # It is the sine: it spans (nearly) the autoscaled height, not a flat line.
        rows = np.flatnonzero(mask.any(axis=1))
        self.assertGreater((rows[-1] - rows[0] + 1) / height, height_fraction)


class SineAt20kSTests(PictureAssertions):
    """1 kHz at 20 kS/s, the default 100 ms window: 2000 samples in 500 columns of 4."""

    @classmethod
    def setUpClass(cls):
        cls.page = LivePicture("id=1,name=Sim,rate=20000,channels=1,freq=1000,amp=1,noise=0.01,block=1000")

    @classmethod
    def tearDownClass(cls):
        cls.page.stop()

    def test_1_desktop_trace_is_one_connected_line_filling_the_window(self):
        columns = self.page.wait_for_full_window()
        image = self.page.plot_picture("trace-20kS-desktop.png")
        self.assertGreater(image.shape[1], columns, "more pixel columns than trace columns on a desktop")
        self.assert_one_connected_trace(image, 0.8)
        self.assertEqual(columns, 500)  # ceil(2000 / 4) columns of ceil(2000 / 600) samples

    def test_2_axes_have_round_ticks_and_units(self):
        axes = self.page.js("return window.tributaryView.axes")
        trace, spectrum = axes["trace"], axes["spectrum"]
        self.assertEqual(trace["yUnit"], "V")
        self.assertEqual(trace["xUnit"], "time, ms")
        self.assertEqual(spectrum["yUnit"], "dB re 1 V\u00b2")
        self.assertEqual(spectrum["xUnit"], "frequency, Hz")
        for name, labels in [("trace y", trace["y"]), ("trace x", trace["x"]), ("spectrum y", spectrum["y"]), ("spectrum x", spectrum["x"])]:
            self.assertTrue(is_round_step(labels), f"{name}: {labels}")
            self.assertFalse(any("e" in s for s in labels), f"{name}: {labels}")
        self.assertIn("\u2212100", trace["x"])  # the window's start, -100 ms
        self.assertIn("0", trace["x"])
        self.assertGreaterEqual(max(float(s) for s in spectrum["x"]), 5000)  # kHz, in Hz without an exponent

    def test_3_phone_envelope_is_connected_and_readings_are_on_screen(self):
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
        try:
            columns = self.page.wait_for_full_window()
            image = self.page.plot_picture("trace-20kS-phone.png")
            self.assertLess(image.shape[1], columns, "fewer pixel columns than trace columns on a phone")
            self.assert_one_connected_trace(image, 0.8)
            wait_until(lambda: (c := self.page.js("return window.tributaryView.channels")) and c[0]["readings"]["sinadDB"] is not None,
                       what="readings")
            self.page.js("document.getElementById('readings').scrollIntoView({block: 'center'})")
            time.sleep(0.3)
            shown = self.page.js("""
                const row = document.querySelector('#readings tbody tr'), out = {};
                for (const [name, k] of [['THD', 7], ['SINAD', 8], ['ENOB', 9]]) {
                  const cell = row.querySelector('td:nth-child(' + k + ')'), r = cell.getBoundingClientRect();
                  const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
                  out[name] = {left: r.left, right: r.right, top: r.top, bottom: r.bottom, text: cell.textContent,
                               visible: hit === cell || cell.contains(hit)};
                }
                const box = document.querySelector('#readings').parentElement;
                return {cells: out, scrollWidth: document.scrollingElement.scrollWidth, innerWidth: innerWidth,
                        innerHeight: innerHeight, boxScroll: box.scrollWidth, boxWidth: box.clientWidth};""")
            if shots:
                driver.save_screenshot(os.path.join(shots, "view-phone-readings.png"))
            self.assertEqual(shown["innerWidth"], 390)
            self.assertLessEqual(shown["scrollWidth"], shown["innerWidth"], shown)
            self.assertLessEqual(shown["boxScroll"], shown["boxWidth"], "the readings scroll sideways")
            for name, cell in shown["cells"].items():
                self.assertGreaterEqual(cell["left"], 0, (name, cell))
                self.assertLessEqual(cell["right"], shown["innerWidth"], (name, cell))
                self.assertTrue(0 <= cell["top"] and cell["bottom"] <= shown["innerHeight"], (name, cell))
                self.assertTrue(cell["visible"], (name, cell))
                self.assertRegex(cell["text"], r"\d", (name, cell))
        finally:
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


class OneSamplePerColumnTests(PictureAssertions):
    """50 Hz at 1 kS/s: 100 samples in the 100 ms window, one per column, fewer than the pixels."""

    @classmethod
    def setUpClass(cls):
        cls.page = LivePicture("id=1,name=Slow,rate=1000,channels=1,freq=50,amp=1,noise=0,block=50")

    @classmethod
    def tearDownClass(cls):
        cls.page.stop()

    def test_trace_is_a_connected_line_not_dots(self):
        self.assertEqual(self.page.wait_for_full_window(), 100)
        image = self.page.plot_picture("trace-1kS-desktop.png")
        self.assert_one_connected_trace(image, 0.8)
        # A line, not a band: most pixel columns hold a short run of trace pixels.
        mask = trace_mask(image)
        heights = mask.sum(axis=0)
        self.assertLess(np.median(heights), 0.15 * mask.shape[0], "the trace is a line a few pixels thick")


if __name__ == "__main__":
    unittest.main()
