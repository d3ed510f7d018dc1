"""Messages as XDF marker streams, both ways (issue 41, item 3).

- `import` of the LSL project's example files (data/xdf-example-files, MIT): every string stream's
  samples become messages whose texts and times are pyxdf's `load_xdf()` (synchronize_clocks=True,
  handle_clock_resets=True: its defaults) within 1e-6 s; the numeric stream of clock_resets.xdf gets
  the same correction.
- `export --format xdf` of a capture with messages (one written from docs/CAPTURE.md by
  capture_spec.py, and one recorded from `serve --message … --every`): pyxdf reads one marker stream
  per message source with the texts and times; importing the XDF gives the messages back.
"""
import json
import os
import shutil
import tempfile
import unittest

import numpy as np
import pyxdf

from tool_process import TIMEOUT, Serve, sample_times, tool

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "data", "xdf-example-files")
T0 = 1_800_000_000_000_000_000


def messages_of(capture, directory):
    """The messages of a capture as `extract` writes them: (source, timestamp_ns, text) in file order."""
    out = os.path.join(directory, os.path.basename(capture) + ".extracted")
    shutil.rmtree(out, ignore_errors=True)
    tool("extract", capture, "--out", out, "--kinds", "message")
    path = os.path.join(out, "messages.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    return [(r["source_id"], r["timestamp_ns"], r["content"]["text"]) for r in rows]


def marker_streams(streams):
    return [s for s in streams if s["info"]["channel_format"][0] == "string"]


class ExampleFileImportTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.mkdtemp(prefix="tributary-markers-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory, ignore_errors=True)

    def imported(self, name):
        capture = os.path.join(self.directory, name + ".tcap")
        result = tool("import", os.path.join(EXAMPLES, name + ".xdf"), "--out", capture, "--force")
        return capture, result.stdout

    def assert_markers_as_pyxdf(self, name, count):
        capture, printed = self.imported(name)
        streams, _ = pyxdf.load_xdf(os.path.join(EXAMPLES, name + ".xdf"))
        markers = marker_streams(streams)
        texts = [sample[0] for s in markers for sample in s["time_series"]]
        times = np.concatenate([s["time_stamps"] for s in markers])
        self.assertEqual(len(texts), count)
        self.assertIn(f"{count} messages", printed)
        got = messages_of(capture, self.directory)
        self.assertEqual(len(got), count)
        self.assertEqual({source for source, _, _ in got}, {0})
        order = np.argsort(times, kind="stable")   # the capture holds them in time order
        self.assertEqual([text for _, _, text in got], [texts[i] for i in order])
        error = np.abs(np.array([ns for _, ns, _ in got]) / 1e9 - times[order])
        self.assertLess(error.max(), 1e-6, name)
        return capture, streams

    def test_minimal_xdf_gives_its_9_markers(self):
        capture, streams = self.assert_markers_as_pyxdf("minimal", 9)
        got = messages_of(capture, self.directory)
        self.assertEqual([text for _, _, text in got][1:5], ["Hello", "World", "from", "LSL"])

    def test_clock_resets_xdf_gives_its_175_markers_across_the_reset(self):
        capture, streams = self.assert_markers_as_pyxdf("clock_resets", 175)
        times = np.array([ns for _, ns, _ in messages_of(capture, self.directory)]) / 1e9
        # Before the reset the raw times are ~653 000 s, after it ~0-260 s; corrected they are one timeline.
        self.assertLess(times.max() - times.min(), 2000)

    def test_the_numeric_stream_starts_where_pyxdf_puts_it(self):
        capture, _ = self.imported("clock_resets")
        streams, _ = pyxdf.load_xdf(os.path.join(EXAMPLES, "clock_resets.xdf"), dejitter_timestamps=False)
        eeg = [s for s in streams if s["info"]["channel_format"][0] == "float32"][0]
        xdf = os.path.join(self.directory, "clock_resets-back.xdf")
        tool("export", capture, "--format", "xdf", "--out", xdf, "--force")
        back = pyxdf.load_xdf(xdf, synchronize_clocks=False, dejitter_timestamps=False)[0]
        numeric = [s for s in back if s["info"]["channel_format"][0] != "string"][0]
        # Frame times are the corrected times of the samples that start a block (the same correction
        # as the markers'); every sample's time: test_every_numeric_sample_is_where_pyxdf_puts_it.
        self.assertEqual(len(numeric["time_stamps"]), len(eeg["time_stamps"]))
        self.assertLess(abs(numeric["time_stamps"][0] - eeg["time_stamps"][0]), 1e-6)
        markers = marker_streams(back)
        self.assertEqual(len(markers), 1)
        self.assertEqual(len(markers[0]["time_series"]), 175)
        # The markers sit inside the numeric stream's (corrected) span, as in pyxdf.
        self.assertGreaterEqual(markers[0]["time_stamps"].min(), eeg["time_stamps"].min() - 10)
        self.assertLessEqual(markers[0]["time_stamps"].max(), eeg["time_stamps"].max() + 10)

    def test_every_numeric_sample_is_where_pyxdf_puts_it(self):
        """The EEG-like stream of clock_resets.xdf is stamped at about 93 Hz against a nominal 100 Hz:
        import starts a new block wherever a block's times (its first corrected timestamp + k / 100)
        leave the corrected timestamps by more than max(1 ms, a quarter period) = 2.5 ms, so every
        sample's time is that close to pyxdf's (synchronize_clocks=True; not dejittered: pyxdf's
        dejittering replaces the file's timestamps by fitted lines). Before, up to 8.7 s off."""
        capture, _ = self.imported("clock_resets")
        streams, _ = pyxdf.load_xdf(os.path.join(EXAMPLES, "clock_resets.xdf"), dejitter_timestamps=False)
        eeg = [s for s in streams if s["info"]["channel_format"][0] == "float32"][0]
        times = sample_times(capture, 1, os.path.join(self.directory, "clock_resets-times.csv"))
        self.assertEqual(len(times), len(eeg["time_stamps"]))
        self.assertLess(np.abs(times - eeg["time_stamps"]).max(), 0.0025 + 2e-6)

    def test_select_takes_a_marker_stream_alone(self):
        capture = os.path.join(self.directory, "only-markers.tcap")
        printed = tool("import", os.path.join(EXAMPLES, "clock_resets.xdf"), "--out", capture, "--select", "MyMarkerStream").stdout
        self.assertNotIn("source 1", printed)
        self.assertEqual(len(messages_of(capture, self.directory)), 175)
        inspected = json.loads(tool("inspect", capture, "--json").stdout)
        self.assertEqual([(s["id"], s["frames"]) for s in inspected["sources"]], [(0, 175)])

    def test_a_multichannel_string_stream_is_joined_as_a_json_array(self):
        # A file written here from the XDF specification: a 2-channel string stream, 2 samples.
        import struct

        def chunk(tag, content):
            body = struct.pack("<H", tag) + content
            return bytes([4]) + struct.pack("<I", len(body)) + body

        header = ("<?xml version=\"1.0\"?><info><name>Pairs</name><type>Markers</type><channel_count>2</channel_count>"
                  "<nominal_srate>0</nominal_srate><channel_format>string</channel_format></info>").encode()
        samples = struct.pack("<I", 7) + bytes([1, 2])
        for t, strings in ((10.5, ["a", 'b"\\']), (11.25, ["", "ü\n"])):
            samples += bytes([8]) + struct.pack("<d", t)
            for s in strings:
                samples += bytes([1, len(s.encode())]) + s.encode()
        data = b"XDF:" + chunk(1, b"<?xml version=\"1.0\"?><info><version>1.0</version></info>")
        data += chunk(2, struct.pack("<I", 7) + header) + chunk(3, samples)
        data += chunk(4, struct.pack("<Idd", 7, 10.0, 0.5))
        path = os.path.join(self.directory, "pairs.xdf")
        with open(path, "wb") as f:
            f.write(data)
        capture = os.path.join(self.directory, "pairs.tcap")
        tool("import", path, "--out", capture)
        got = messages_of(capture, self.directory)
        self.assertEqual([json.loads(text) for _, _, text in got], [["a", 'b"\\'], ["", "ü\n"]])
        # One clock offset: a constant +0.5 s, as pyxdf applies it.
        self.assertEqual([ns for _, ns, _ in got], [11_000_000_000, 11_750_000_000])
        streams, _ = pyxdf.load_xdf(path)
        np.testing.assert_allclose(streams[0]["time_stamps"], [11.0, 11.75], atol=1e-9)


class CaptureExportTests(unittest.TestCase):
    """A capture from docs/CAPTURE.md (capture_spec.py): source 1 at 1 kHz with messages of its own,
    messages of no source (0), and clock-offset records of the publisher (sources [1]: 1.5 s ahead,
    drifting 100 ppm)."""

    RATE, BLOCK, BLOCKS = 1000, 100, 100

    @classmethod
    def setUpClass(cls):
        import capture_spec as cs
        import wire_spec as ws
        cls.directory = tempfile.mkdtemp(prefix="tributary-markers-export-")
        config = ws.frame("configuration", ws.configuration("AMP", "sim", [(0, 0, cls.RATE, -1, 1, "ch0", "V")], []),
                          sequence=0, timestamp_ns=T0, source_id=1)
        frames = [config]
        cls.own = []
        sequence = 1
        for k in range(cls.BLOCKS):
            t = T0 + k * cls.BLOCK * 1_000_000
            frames.append(ws.frame("analog", ws.analog_f64([0], [[float(k)] * cls.BLOCK], first_sample=k * cls.BLOCK),
                                   sequence=sequence, timestamp_ns=t, source_id=1))
            sequence += 1
            if k % 10 == 5:
                text = f"block {k} <&> ü"
                frames.append(ws.frame("message", ws.message(k, text), sequence=sequence, timestamp_ns=t + 1234, source_id=1))
                cls.own.append((t + 1234, text))
                sequence += 1
        cls.publisher = [(T0 + 250_000_000 * k + 17, f"event {k}") for k in range(30)]
        loose = [ws.frame("message", ws.message(0, text), sequence=k + 1, timestamp_ns=t, source_id=0)
                 for k, (t, text) in enumerate(cls.publisher)]
        cls.offsets = [dict(offset_ns=1_500_000_000 + k * 500_000, rtt_ns=200_000, measured_at_ns=T0 + k * 5_000_000_000,
                            sources=(1,)) for k in range(4)]
        cls.capture = os.path.join(cls.directory, "messages.tcap")
        with open(cls.capture, "wb") as f:
            f.write(cs.capture([frames[i:i + 40] for i in range(0, len(frames), 40)] + [loose], clock_offsets=cls.offsets))
        cls.xdf = os.path.join(cls.directory, "messages.xdf")
        tool("export", cls.capture, "--format", "xdf", "--out", cls.xdf)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory, ignore_errors=True)

    def test_pyxdf_reads_one_marker_stream_per_message_source(self):
        streams, _ = pyxdf.load_xdf(self.xdf, synchronize_clocks=False, dejitter_timestamps=False)
        markers = {s["info"]["name"][0]: s for s in marker_streams(streams)}
        self.assertEqual(sorted(markers), ["AMP messages", "messages"])
        for name, expected in (("messages", self.publisher), ("AMP messages", self.own)):
            s = markers[name]
            self.assertEqual(s["info"]["type"], ["Markers"])
            self.assertEqual(s["info"]["channel_count"], ["1"])
            self.assertEqual(float(s["info"]["nominal_srate"][0]), 0.0)
            self.assertEqual([x[0] for x in s["time_series"]], [text for _, text in expected])
            np.testing.assert_allclose(s["time_stamps"], [t / 1e9 for t, _ in expected], rtol=0, atol=1e-6)

    def test_synchronize_clocks_moves_markers_with_the_analog_stream(self):
        raw = pyxdf.load_xdf(self.xdf, synchronize_clocks=False, dejitter_timestamps=False)[0]
        synced = pyxdf.load_xdf(self.xdf, synchronize_clocks=True, dejitter_timestamps=False)[0]
        shift = {s["info"]["name"][0]: s["time_stamps"][0] - r["time_stamps"][0] for s, r in zip(synced, raw)}
        # The publisher's messages (source 0) get the publisher's offsets: all move by about -1.5 s.
        for name in ("AMP", "AMP messages", "messages"):
            self.assertAlmostEqual(shift[name], -1.5, delta=2e-3, msg=name)

    def test_align_maps_message_times_as_frame_times(self):
        aligned = os.path.join(self.directory, "aligned.xdf")
        tool("export", self.capture, "--format", "xdf", "--out", aligned, "--align")
        mine = pyxdf.load_xdf(aligned, synchronize_clocks=False, dejitter_timestamps=False)[0]
        theirs = pyxdf.load_xdf(self.xdf, synchronize_clocks=True, dejitter_timestamps=False)[0]
        # --align fits a least-squares line to the offsets, pyxdf a robust one: they differ by microseconds.
        for a, b in zip(mine, theirs):
            self.assertEqual(a["info"]["name"], b["info"]["name"])
            np.testing.assert_allclose(a["time_stamps"], b["time_stamps"], rtol=0, atol=1e-4)

    def test_import_gives_the_messages_back_with_pyxdf_times(self):
        back = os.path.join(self.directory, "back.tcap")
        tool("import", self.xdf, "--out", back)
        got = messages_of(back, self.directory)
        synced = marker_streams(pyxdf.load_xdf(self.xdf)[0])
        expected = sorted((t, x[0]) for s in synced for t, x in zip(s["time_stamps"], s["time_series"]))
        self.assertEqual([text for _, _, text in got], [text for _, text in expected])
        error = np.abs(np.array([ns for _, ns, _ in got]) / 1e9 - np.array([t for t, _ in expected]))
        self.assertLess(error.max(), 1e-6)

    def test_a_source_and_a_window_take_their_messages_only(self):
        out = os.path.join(self.directory, "window.xdf")
        tool("export", self.capture, "--format", "xdf", "--out", out, "--source", "1", "--start", "2", "--duration", "3")
        markers = marker_streams(pyxdf.load_xdf(out, synchronize_clocks=False)[0])
        self.assertEqual([s["info"]["name"][0] for s in markers], ["AMP messages"])
        self.assertEqual([x[0] for x in markers[0]["time_series"]], [text for t, text in self.own if 2e9 <= t - T0 < 5e9])

    def test_a_damaged_message_chunk_needs_allow_damage(self):
        data = bytearray(open(self.capture, "rb").read())
        at = data.find("event 3".encode())
        self.assertGreater(at, 0)
        data[at] ^= 0xFF   # the chunk's payload CRC no longer matches
        damaged = os.path.join(self.directory, "damaged.tcap")
        with open(damaged, "wb") as f:
            f.write(data)
        out = os.path.join(self.directory, "damaged.xdf")
        refused = tool("export", damaged, "--format", "xdf", "--out", out, expect=3)   # exit 3: damaged
        self.assertIn("--allow-damage", refused.stderr)
        self.assertFalse(os.path.exists(out))
        tool("export", damaged, "--format", "xdf", "--out", out, "--allow-damage")
        markers = marker_streams(pyxdf.load_xdf(out, synchronize_clocks=False)[0])
        self.assertEqual([s["info"]["name"][0] for s in markers], ["AMP messages"])

    def test_other_formats_are_unaffected(self):
        for fmt in ("npy", "csv", "hdf5", "tdms"):
            out = os.path.join(self.directory, "plain." + fmt)
            tool("export", self.capture, "--format", fmt, "--out", out)
            self.assertGreater(os.path.getsize(out), 0)


class RecordedMessagesTests(unittest.TestCase):
    def test_recorded_messages_round_trip_through_xdf(self):
        directory = tempfile.mkdtemp(prefix="tributary-markers-live-")
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        server = Serve("--simulate", "id=1,name=SIM,rate=1000,channels=2,block=50", "--message", "tick ✓", "--every", "0.2")
        try:
            capture = os.path.join(directory, "live.tcap")
            tool("record", server.address, "--api-key", "k", "--out", capture, "--duration", "2.5", timeout=TIMEOUT + 10)
        finally:
            server.stop()
        recorded = messages_of(capture, directory)
        self.assertGreaterEqual(len(recorded), 5)
        xdf = os.path.join(directory, "live.xdf")
        tool("export", capture, "--format", "xdf", "--out", xdf)
        raw = pyxdf.load_xdf(xdf, synchronize_clocks=False, dejitter_timestamps=False)[0]
        markers = marker_streams(raw)
        self.assertEqual(len(markers), 1)
        self.assertEqual([x[0] for x in markers[0]["time_series"]], [text for _, _, text in recorded])
        np.testing.assert_allclose(markers[0]["time_stamps"], [ns / 1e9 for _, ns, _ in recorded], rtol=0, atol=1e-6)
        # Back in: the same texts, at pyxdf's synchronised times (the loopback offsets are microseconds).
        back = os.path.join(directory, "back.tcap")
        tool("import", xdf, "--out", back)
        again = messages_of(back, directory)
        self.assertEqual([text for _, _, text in again], [text for _, _, text in recorded])
        synced = marker_streams(pyxdf.load_xdf(xdf)[0])[0]["time_stamps"]
        self.assertLess(np.abs(np.array([ns for _, ns, _ in again]) / 1e9 - synced).max(), 1e-6)
        self.assertLess(np.abs(np.array([ns for _, ns, _ in again]) - np.array([ns for _, ns, _ in recorded])).max(), 5e6)


if __name__ == "__main__":
    unittest.main()
