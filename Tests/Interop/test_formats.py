"""Issue 10: captures exported as TDMS and XDF are read by the real readers (npTDMS, pyxdf) with the
capture's values and metadata; TDMS files written by npTDMS and XDF files written by an independent
minimal writer (below, from the XDF specification) import and analyse correctly."""
import json
import os
import re
import struct
import subprocess
import tempfile
import time
import unittest

import numpy as np

import capture_spec as cs
import wire_spec as ws
from tool_process import TRIBUTARY, ScratchTest, sample_times

T0 = 1_764_489_600_123_456_789  # ns since 1970: the first sample of the test capture


def tdms_ns(timestamp):
    """A raw npTDMS timestamp as integer ns since 1970, rounded exactly (npTDMS's own conversion goes
    through float64 and may lose the last nanosecond)."""
    return (timestamp.seconds - 2_082_844_800) * 10**9 + (timestamp.second_fractions * 10**9 + 2**63) // 2**64


def run(*args):
    result = subprocess.run([TRIBUTARY, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"tributary {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result.stdout


def test_capture():
    """Two sources: 1 'USB-6009' float64, 3 channels at 1000 Hz in blocks of 100 samples with block 5
    lost (its time and first_sample skipped); 2 'PCI-6024' int16 counts, 2 channels at 2000 Hz with
    scales and offsets. Returns (capture bytes, expected dict)."""
    rng = np.random.default_rng(10)
    f64_blocks, chunk1, times1 = [], [], []
    config1 = ws.frame("configuration", ws.configuration("USB-6009", "USB", [
        (0, 0, 1000.0, -10, 10, "ai0", "V"), (1, 0, 1000.0, -10, 10, "ai1", "V"), (2, 0, 1000.0, -10, 10, "temp", "degC")], []),
        sequence=0, timestamp_ns=T0, source_id=1)
    chunk1.append(config1)
    seq = 1
    for b in range(10):
        if b == 5:
            seq += 1
            continue
        m = rng.normal(size=(3, 100))
        f64_blocks.append(m)
        ts = T0 + b * 100_000_000
        times1.append(ts)
        chunk1.append(ws.frame("analog", ws.analog_f64([0, 1, 2], m.tolist(), first_sample=b * 100), sequence=seq, timestamp_ns=ts, source_id=1))
        seq += 1
    config2 = ws.frame("configuration", ws.configuration("PCI-6024", "PCI", [
        (4, 0, 2000.0, -5, 5, "current", "A"), (7, 0, 2000.0, -5, 5, "voltage", "mV")], []),
        sequence=0, timestamp_ns=T0 + 5_000_000, source_id=2)
    chunk2 = [config2]
    i16_blocks = []
    scale, offset = [0.001, 0.0005], [0.5, -0.25]
    for b in range(4):
        m = rng.integers(-32768, 32767, size=(2, 250), dtype=np.int16)
        i16_blocks.append(m)
        chunk2.append(ws.frame("analog", ws.analog_i16([4, 7], m.tolist(), scale, offset, first_sample=b * 250), sequence=b + 1,
                               timestamp_ns=T0 + 5_000_000 + b * 125_000_000, source_id=2))
    counts = np.concatenate(i16_blocks, axis=1)
    expected = {
        "f64": np.concatenate(f64_blocks, axis=1), "times1": times1,
        "counts": counts, "scale": scale, "offset": offset,
        "physical2": counts.astype(np.float64) * np.array(scale)[:, None] + np.array(offset)[:, None],
    }
    return cs.capture([chunk1, chunk2]), expected


class FormatExportTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.path = staticmethod(lambda name: os.path.join(cls.dir.name, name))
        data, cls.expected = test_capture()
        with open(cls.path("c.tcap"), "wb") as f:
            f.write(data)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_tdms_physical_values_and_daqmx_properties(self):
        from nptdms import TdmsFile
        run("export", self.path("c.tcap"), "--format", "tdms", "--out", self.path("p.tdms"))
        f = TdmsFile.read(self.path("p.tdms"), raw_timestamps=True)
        self.assertEqual([g.name for g in f.groups()], ["USB-6009", "PCI-6024"])
        usb, pci = f["USB-6009"], f["PCI-6024"]
        self.assertEqual([c.name for c in usb.channels()], ["ai0", "ai1", "temp"])
        got = np.stack([c[:] for c in usb.channels()])
        self.assertEqual(got.dtype, np.float64)
        np.testing.assert_array_equal(got, self.expected["f64"])
        np.testing.assert_array_equal(np.stack([c[:] for c in pci.channels()]), self.expected["physical2"])
        for group, rate, start, units in ((usb, 1000.0, T0, ["V", "V", "degC"]), (pci, 2000.0, T0 + 5_000_000, ["A", "mV"])):
            for c, unit in zip(group.channels(), units):
                self.assertEqual(c.properties["wf_increment"], 1 / rate)
                self.assertEqual(tdms_ns(c.properties["wf_start_time"]), start)
                self.assertEqual(c.properties["unit_string"], unit)
                self.assertEqual(c.properties["NI_ChannelName"], c.name)
        self.assertEqual(usb.properties["device_name"], "USB-6009")
        self.assertEqual(usb.properties["source_id"], 1)
        self.assertEqual(json.loads(usb.properties["discontinuities"]), [500])  # block 5 was lost
        self.assertEqual(json.loads(pci.properties["discontinuities"]), [])
        # npTDMS's own time track follows wf_start_time and wf_increment.
        track = TdmsFile.read(self.path("p.tdms"))["USB-6009"]["ai0"].time_track(absolute_time=True, accuracy="us")
        self.assertEqual(track[0], np.datetime64(T0 // 1000, "us"))
        self.assertEqual(track[1] - track[0], np.timedelta64(1000, "us"))

    def test_tdms_counts_carry_the_linear_scale(self):
        from nptdms import TdmsFile
        run("export", self.path("c.tcap"), "--format", "tdms", "--counts", "--source", "2", "--out", self.path("n.tdms"))
        f = TdmsFile.read(self.path("n.tdms"))
        self.assertEqual([g.name for g in f.groups()], ["PCI-6024"])
        channels = f["PCI-6024"].channels()
        raw = np.stack([c.read_data(scaled=False) for c in channels])
        self.assertEqual(raw.dtype, np.int16)
        np.testing.assert_array_equal(raw, self.expected["counts"])
        scaled = np.stack([c[:] for c in channels])
        np.testing.assert_allclose(scaled, self.expected["physical2"], rtol=0, atol=max(self.expected["scale"]) / 2)

    def test_tdms_start_and_duration_select_samples_and_shift_the_start_time(self):
        from nptdms import TdmsFile
        run("export", self.path("c.tcap"), "--format", "tdms", "--source", "1", "--start", "0.25", "--duration", "0.1",
            "--out", self.path("s.tdms"))
        g = TdmsFile.read(self.path("s.tdms"), raw_timestamps=True)["USB-6009"]
        np.testing.assert_array_equal(np.stack([c[:] for c in g.channels()]), self.expected["f64"][:, 250:350])
        self.assertEqual(tdms_ns(g["ai0"].properties["wf_start_time"]), T0 + 250_000_000)

    def test_a_selection_reads_only_the_chunks_it_needs_and_equals_the_whole_cut(self):
        from nptdms import TdmsFile
        rng = np.random.default_rng(11)
        npy, tcap = self.path("long.npy"), self.path("long.tcap")
        data = np.cumsum(rng.normal(size=(4, 200_003)), axis=1)  # ~50 chunks of one frame
        np.save(npy, data)
        run("import", npy, "--rate", "1000", "--out", tcap)
        for start, duration in ((0, None), (0.5, 1.0), (12.3, 0.0001), (45.0, 10.0), (4.096, 4.096), (8.1915, None),
                                (100, 100.0005), (199.9, None), (1000, None), (3, 0)):
            def half_up(x):  # the tool rounds halves away from zero
                return int(np.floor(x + 0.5))
            first = min(data.shape[1], half_up(start * 1000))
            end = data.shape[1] if duration is None else min(data.shape[1], first + half_up(duration * 1000))
            args = ["--start", str(start)] + ([] if duration is None else ["--duration", str(duration)])
            out = self.path("part.npy")
            run("export", tcap, "--format", "npy", "--out", out, "--force", *args)
            np.testing.assert_array_equal(np.load(out), data[:, first:end], err_msg=f"{args}")
            if end > first:
                run("export", tcap, "--format", "tdms", "--out", self.path("part.tdms"), "--force", *args)
                g = TdmsFile.read(self.path("part.tdms"))["long.npy"]
                np.testing.assert_array_equal(np.stack([c[:] for c in g.channels()]), data[:, first:end], err_msg=f"{args}")
                self.assertEqual(g.channels()[0].properties["wf_samples"], end - first)
        # A chunk damaged near the end: the whole export refuses it (exit 3); a selection at the start
        # does not read it and is exported whole and exact.
        damaged = self.path("long-damaged.tcap")
        with open(tcap, "rb") as f:
            raw = bytearray(f.read())
        raw[len(raw) * 9 // 10] ^= 0xFF
        with open(damaged, "wb") as f:
            f.write(bytes(raw))
        result = subprocess.run([TRIBUTARY, "export", damaged, "--format", "npy", "--out", self.path("d.npy")],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 3, result.stderr)
        run("export", damaged, "--format", "npy", "--out", self.path("d.npy"), "--start", "1", "--duration", "20")
        np.testing.assert_array_equal(np.load(self.path("d.npy")), data[:, 1000:21000])

    def test_xdf_streams_values_timestamps_and_headers(self):
        import pyxdf
        run("export", self.path("c.tcap"), "--format", "xdf", "--out", self.path("p.xdf"))
        streams, header = pyxdf.load_xdf(self.path("p.xdf"), dejitter_timestamps=False, synchronize_clocks=False)
        by_name = {s["info"]["name"][0]: s for s in streams}
        self.assertEqual(sorted(by_name), ["PCI-6024", "USB-6009"])
        usb, pci = by_name["USB-6009"], by_name["PCI-6024"]
        np.testing.assert_array_equal(usb["time_series"].T, self.expected["f64"])
        np.testing.assert_array_equal(pci["time_series"].T, self.expected["physical2"])
        self.assertEqual(usb["info"]["channel_format"][0], "double64")
        self.assertEqual(float(usb["info"]["nominal_srate"][0]), 1000.0)
        self.assertEqual(float(pci["info"]["nominal_srate"][0]), 2000.0)
        self.assertEqual(int(usb["info"]["channel_count"][0]), 3)
        chans = usb["info"]["desc"][0]["channels"][0]["channel"]
        self.assertEqual([c["label"][0] for c in chans], ["ai0", "ai1", "temp"])
        self.assertEqual([c["unit"][0] for c in chans], ["V", "V", "degC"])
        # Each frame's first sample carries its recorded time; the rest follow the nominal rate, and
        # the lost block shows as a 0.1 s jump.
        expected_t = np.concatenate([ts / 1e9 + np.arange(100) / 1000.0 for ts in self.expected["times1"]])
        np.testing.assert_allclose(usb["time_stamps"], expected_t, rtol=0, atol=1e-6)
        self.assertAlmostEqual(usb["time_stamps"][500] - usb["time_stamps"][499], 0.101, places=6)
        self.assertEqual(int(usb["footer"]["info"]["sample_count"][0]), 900)

    def test_xdf_counts_are_int16_with_scales(self):
        import pyxdf
        run("export", self.path("c.tcap"), "--format", "xdf", "--counts", "--source", "2", "--out", self.path("n.xdf"))
        streams, _ = pyxdf.load_xdf(self.path("n.xdf"), dejitter_timestamps=False)
        self.assertEqual(len(streams), 1)
        s = streams[0]
        self.assertEqual(s["info"]["channel_format"][0], "int16")
        self.assertEqual(s["time_series"].dtype, np.int16)
        np.testing.assert_array_equal(s["time_series"].T, self.expected["counts"])
        scaling = s["info"]["desc"][0]["scaling"][0]["channel"]
        self.assertEqual([float(c["scale"][0]) for c in scaling], self.expected["scale"])
        self.assertEqual([float(c["offset"][0]) for c in scaling], self.expected["offset"])

    def test_exports_import_back_exactly(self):
        for fmt in ("tdms", "xdf", "hdf5"):
            for counts in ((), ("--counts",)):
                with self.subTest(fmt=fmt, counts=counts):
                    out = self.path(f"r.{fmt}")
                    run("export", self.path("c.tcap"), "--format", fmt, *counts, "--out", out, "--force")
                    run("import", out, "--out", self.path("r.tcap"), "--force")
                    run("export", self.path("r.tcap"), "--format", "npy", "--source", "1", "--out", self.path("r1.npy"), "--force")
                    np.testing.assert_array_equal(np.load(self.path("r1.npy")), self.expected["f64"])
                    run("export", self.path("r.tcap"), "--format", "npy", "--source", "2", *counts, "--out", self.path("r2.npy"), "--force")
                    back = np.load(self.path("r2.npy"))
                    if counts:
                        self.assertEqual(back.dtype, np.int16)
                        np.testing.assert_array_equal(back, self.expected["counts"])
                    else:
                        np.testing.assert_array_equal(back, self.expected["physical2"])
                    info = run("inspect", self.path("r.tcap"), "--json")
                    self.assertIn("USB-6009", info)
                    self.assertIn("degC", info)

    def test_exports_are_reproducible_byte_for_byte(self):
        # HDF5 records object times unless told not to; every format must give the same bytes twice.
        formats = ("hdf5", "tdms", "xdf", "npy", "csv")
        outputs = {fmt: [] for fmt in formats}
        for k in range(2):
            if k:
                time.sleep(1.1)  # HDF5's object times have a resolution of a second
            for fmt in formats:
                out = self.path(f"again-{k}.{fmt}")
                run("export", self.path("c.tcap"), "--format", fmt, "--out", out, "--force")
                with open(out, "rb") as f:
                    outputs[fmt].append(f.read())
        for fmt in formats:
            self.assertEqual(outputs[fmt][0], outputs[fmt][1], fmt)

    def test_hdf5_groups_datasets_and_attributes(self):
        import h5py
        run("export", self.path("c.tcap"), "--format", "hdf5", "--out", self.path("p.h5"))
        with h5py.File(self.path("p.h5"), "r") as f:
            self.assertEqual(sorted(f.keys()), ["PCI-6024", "USB-6009"])
            usb, pci = f["USB-6009"], f["PCI-6024"]
            d = usb["data"]
            self.assertEqual(d.dtype, np.float64)
            self.assertIsNotNone(d.chunks)
            self.assertEqual(d.compression, "gzip")
            np.testing.assert_array_equal(d[()], self.expected["f64"])
            np.testing.assert_array_equal(pci["data"][()], self.expected["physical2"])
            self.assertEqual(list(d.attrs["channel_names"]), ["ai0", "ai1", "temp"])
            self.assertEqual(list(d.attrs["units"]), ["V", "V", "degC"])
            self.assertEqual(list(pci["data"].attrs["channel_indexes"]), [4, 7])
            self.assertEqual(d.attrs["sample_rate"], 1000.0)
            self.assertEqual(int(usb.attrs["start_time_ns"]), T0)
            self.assertEqual(int(pci.attrs["start_time_ns"]), T0 + 5_000_000)
            self.assertEqual(usb.attrs["device_name"], "USB-6009")
            self.assertEqual(int(usb.attrs["source_id"]), 1)
            self.assertEqual(list(usb.attrs["discontinuities"]), [500])
            self.assertEqual(list(usb["block_time_ns"][()]), self.expected["times1"])
        run("export", self.path("c.tcap"), "--format", "hdf5", "--counts", "--source", "2", "--out", self.path("n.h5"))
        with h5py.File(self.path("n.h5"), "r") as f:
            d = f["PCI-6024"]["data"]
            self.assertEqual(d.dtype, np.int16)
            np.testing.assert_array_equal(d[()], self.expected["counts"])
            self.assertEqual(list(d.attrs["scale"]), self.expected["scale"])
            self.assertEqual(list(d.attrs["offset"]), self.expected["offset"])
            scaled = d[()] * d.attrs["scale"][:, None] + d.attrs["offset"][:, None]
            np.testing.assert_allclose(scaled, self.expected["physical2"], rtol=0, atol=max(self.expected["scale"]) / 2)
        # The frame times come back: a TDMS export of the re-imported source shows the lost block.
        run("import", self.path("p.h5"), "--select", "USB-6009", "--out", self.path("h.tcap"))
        run("export", self.path("h.tcap"), "--format", "xdf", "--out", self.path("h.xdf"))
        import pyxdf
        streams, _ = pyxdf.load_xdf(self.path("h.xdf"), dejitter_timestamps=False, synchronize_clocks=False)
        self.assertEqual(len(streams), 1)
        expected_t = np.concatenate([ts / 1e9 + np.arange(100) / 1000.0 for ts in self.expected["times1"]])
        np.testing.assert_allclose(streams[0]["time_stamps"], expected_t, rtol=0, atol=1e-6)

    def test_npy_counts_sidecar_and_csv_time_column(self):
        run("export", self.path("c.tcap"), "--format", "npy", "--counts", "--source", "2", "--out", self.path("n.npy"))
        np.testing.assert_array_equal(np.load(self.path("n.npy")), self.expected["counts"])
        with open(self.path("n.npy.json")) as f:
            side = json.load(f)
        self.assertEqual(side["scale"], self.expected["scale"])
        self.assertEqual(side["offset"], self.expected["offset"])
        self.assertEqual(side["sample_rate"], 2000.0)
        self.assertEqual(side["start_time_ns"], T0 + 5_000_000)
        self.assertEqual(side["units"], ["A", "mV"])
        run("export", self.path("c.tcap"), "--format", "csv", "--time-column", "--source", "1", "--out", self.path("t.csv"))
        table = np.loadtxt(self.path("t.csv"), delimiter=",", skiprows=1)
        with open(self.path("t.csv")) as f:
            self.assertEqual(f.readline().strip(), "time_s,ai0,ai1,temp")
        np.testing.assert_array_equal(table[:, 1:].T, self.expected["f64"])
        self.assertAlmostEqual(table[500, 0], 0.6, places=9)  # after the lost block

    def test_csv_time_column_of_a_part_gives_the_recorded_times(self):
        """Issue 43 item 9: `--start 0.5 --time-column` gives the selected samples' times since the
        source's first sample (0.6 s: sample 500 follows the lost block), not a column restarted at 0."""
        run("export", self.path("c.tcap"), "--format", "csv", "--time-column", "--source", "1", "--out", self.path("whole.csv"))
        run("export", self.path("c.tcap"), "--format", "csv", "--time-column", "--source", "1", "--start", "0.5", "--duration", "0.2",
            "--out", self.path("part.csv"))
        whole = np.loadtxt(self.path("whole.csv"), delimiter=",", skiprows=1)
        part = np.loadtxt(self.path("part.csv"), delimiter=",", skiprows=1)
        self.assertEqual(part[0, 0], 0.6)
        np.testing.assert_array_equal(part, whole[500:700])

    def test_counts_of_float_sources_are_refused_or_warned(self):
        """Issue 43 item 9: --counts is refused when no exported source stores int16 counts (it would
        change nothing); beside int16 sources a float source is written as values, with a warning."""
        for fmt in ("tdms", "xdf", "hdf5", "npy"):
            with self.subTest(fmt):
                out = self.path(f"float-counts.{fmt}")
                result = subprocess.run([TRIBUTARY, "export", self.path("c.tcap"), "--format", fmt, "--counts", "--source", "1",
                                         "--out", out], capture_output=True, text=True)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn("--counts: source 1 is stored as float64, not int16 counts", result.stderr)
                self.assertFalse(os.path.exists(out))
        result = subprocess.run([TRIBUTARY, "export", self.path("c.tcap"), "--format", "hdf5", "--counts", "--out", self.path("mixed.h5")],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("warning: --counts: source 1 is stored as float64, not int16 counts; exported as float64 values", result.stderr)
        self.assertNotIn("source 2 is stored", result.stderr)


def xdf_chunk(tag, content):
    """An XDF chunk: 4 length bytes (a valid choice the specification allows), the tag, the content."""
    return bytes([4]) + struct.pack("<IH", len(content) + 2, tag) + content


def minimal_xdf(path, streams):
    """An independent minimal XDF writer (XDF specification 1.0): streams are dicts with id, name,
    fmt ('float32' or 'int16'), rate, labels, units, data (samples x channels), timestamps and an
    optional clock offset. Every sample carries its timestamp; samples go in chunks of 64."""
    codes = {"float32": "f", "int16": "h"}
    out = b"XDF:" + xdf_chunk(1, b'<?xml version="1.0"?><info><version>1.0</version></info>')
    for s in streams:
        channels = "".join(f"<channel><label>{label}</label><unit>{u}</unit></channel>" for label, u in zip(s["labels"], s["units"]))
        xml = (f'<?xml version="1.0"?><info><name>{s["name"]}</name><type>EEG</type><channel_count>{len(s["labels"])}</channel_count>'
               f'<nominal_srate>{s["rate"]}</nominal_srate><channel_format>{s["fmt"]}</channel_format>'
               f'<desc><channels>{channels}</channels></desc></info>')
        out += xdf_chunk(2, struct.pack("<I", s["id"]) + xml.encode())
    for s in streams:
        data, ts = s["data"], s["timestamps"]
        for start in range(0, len(data), 64):
            block = data[start:start + 64]
            body = struct.pack("<I", s["id"]) + bytes([1, len(block)])
            for k, row in enumerate(block):
                body += bytes([8]) + struct.pack("<d", ts[start + k]) + struct.pack("<" + codes[s["fmt"]] * len(row), *row.tolist())
            out += xdf_chunk(3, body)
        out += xdf_chunk(5, bytes([0x43, 0xA5, 0x46, 0xDC, 0xCB, 0xF5, 0x41, 0x0F, 0xB3, 0x0E, 0xD5, 0x46, 0x73, 0x83, 0xCB, 0xE4]))
    for s in streams:
        if "clock_offset" in s:
            out += xdf_chunk(4, struct.pack("<Idd", s["id"], s["timestamps"][0], s["clock_offset"]))
        footer = f'<?xml version="1.0"?><info><first_timestamp>{s["timestamps"][0]}</first_timestamp><sample_count>{len(s["data"])}</sample_count></info>'
        out += xdf_chunk(6, struct.pack("<I", s["id"]) + footer.encode())
    with open(path, "wb") as f:
        f.write(out)


class FormatImportTests(ScratchTest, unittest.TestCase):
    def test_nptdms_written_file_imports_and_analyses(self):
        from nptdms import ChannelObject, GroupObject, RootObject, TdmsWriter
        rng = np.random.default_rng(3)
        t = np.arange(20000) / 10000.0
        signal = np.stack([np.sin(2 * np.pi * 50 * t), 0.5 * np.cos(2 * np.pi * 120 * t) + rng.normal(scale=0.01, size=t.size)])
        counts = rng.integers(-2000, 2000, size=20000, dtype=np.int16)
        start = np.datetime64("2025-11-30T12:00:00.250", "ns")
        with TdmsWriter(self.path("w.tdms")) as w:
            # Three segments: the metadata of the first, then raw data that reuses it, as loggers write.
            for part in range(3):
                sl = slice(part * 8000, min(20000, (part + 1) * 8000))
                props = {"wf_increment": 1e-4, "wf_start_time": start, "unit_string": "V"} if part == 0 else {}
                objs = [ChannelObject("Logger", name, signal[k, sl], properties=props) for k, name in enumerate(["sine", "cosine"])]
                objs.append(ChannelObject("Counter", "count", counts[sl],
                                          properties={"wf_increment": 1e-4, "NI_Number_Of_Scales": 1, "NI_Scale[0]_Scale_Type": "Linear",
                                                      "NI_Scale[0]_Linear_Slope": 0.25, "NI_Scale[0]_Linear_Y_Intercept": 1.0} if part == 0 else {}))
                if part == 0:
                    objs = [RootObject({"title": "bench"}), GroupObject("Logger", {"device_name": "cDAQ"})] + objs
                w.write_segment(objs)
        out = run("import", self.path("w.tdms"), "--out", self.path("w.tcap"))
        self.assertIn("10000.0 Hz", out)
        run("export", self.path("w.tcap"), "--format", "npy", "--source", "1", "--out", self.path("w1.npy"))
        np.testing.assert_array_equal(np.load(self.path("w1.npy")), signal)
        run("export", self.path("w.tcap"), "--format", "npy", "--source", "2", "--counts", "--out", self.path("w2.npy"))
        np.testing.assert_array_equal(np.load(self.path("w2.npy"))[0], counts)
        with open(self.path("w2.npy.json")) as f:
            side = json.load(f)
        self.assertEqual((side["scale"], side["offset"]), ([0.25], [1.0]))
        info = json.loads(run("inspect", self.path("w.tcap"), "--json"))
        text = json.dumps(info)
        self.assertIn("cDAQ", text)
        run("export", self.path("w.tcap"), "--format", "tdms", "--source", "1", "--out", self.path("again.tdms"))
        from nptdms import TdmsFile
        ch = TdmsFile.read(self.path("again.tdms"))["cDAQ"]["sine"]
        self.assertEqual(ch.properties["wf_start_time"], start)
        # analyze reads the TDMS file itself: statistics and the tone equal numpy's.
        result = json.loads(run("analyze", self.path("w.tdms"), "--stats", "--measure", "tone", "--json").splitlines()[0])
        sources = {s["id"]: s for s in result["sources"]}
        self.assertEqual(sources[1]["sample_rate"], 10000.0)
        for k in range(2):
            stats = sources[1]["channels"][k]["stats"]
            self.assertAlmostEqual(stats["mean"], float(np.mean(signal[k])), places=12)
        self.assertAlmostEqual(sources[1]["channels"][0]["tone"]["frequency"], 50.0, places=3)
        self.assertAlmostEqual(sources[2]["channels"][0]["stats"]["mean"], float(np.mean(counts * 0.25 + 1.0)), places=9)

    def test_tdms_of_many_segments_imports_exactly(self):
        # DAQmx and loggers append a segment per buffer: 60 segments of uneven sizes, a property changed
        # midway, one channel's type float32, metadata written only when it changes (npTDMS writes
        # "reuse the previous index" for unchanged raw data indexes).
        from nptdms import ChannelObject, GroupObject, TdmsWriter
        rng = np.random.default_rng(6)
        sizes = rng.integers(1, 700, size=60)
        n = int(sizes.sum())
        a = rng.normal(size=n)
        b = rng.normal(size=n).astype(np.float32)
        with TdmsWriter(self.path("m.tdms")) as w:
            at = 0
            for k, size in enumerate(sizes):
                sl = slice(at, at + int(size))
                props = {"wf_increment": 1 / 2500, "unit_string": "V"} if k == 0 else ({"unit_string": "mV"} if k == 30 else {})
                objs = [ChannelObject("Dev1", "ai0", a[sl], properties=props), ChannelObject("Dev1", "ai1", b[sl], properties=props)]
                if k == 0:
                    objs.insert(0, GroupObject("Dev1", {"device_name": "Dev1"}))
                w.write_segment(objs)
                at += int(size)
        from nptdms import TdmsFile
        self.assertEqual(len(TdmsFile.read(self.path("m.tdms"))["Dev1"]["ai0"][:]), n)  # npTDMS agrees on the content
        out = run("import", self.path("m.tdms"), "--out", self.path("m.tcap"))
        self.assertIn(f"2 channels × {n} samples", out)
        run("export", self.path("m.tcap"), "--format", "npy", "--out", self.path("m.npy"))
        np.testing.assert_array_equal(np.load(self.path("m.npy")), np.stack([a, b.astype(np.float64)]))
        info = json.loads(run("inspect", self.path("m.tcap"), "--json"))
        self.assertEqual({c["unit"] for c in info["sources"][0]["channels"]}, {"mV"})  # the latest property value wins

    def test_h5py_written_file_imports_and_analyses(self):
        import h5py
        rng = np.random.default_rng(5)
        t = np.arange(4096) / 2048.0
        sig = np.stack([np.sin(2 * np.pi * 64 * t), rng.normal(size=t.size)])
        counts = rng.integers(-1000, 1000, size=(3, 1000), dtype=np.int16)
        with h5py.File(self.path("w.h5"), "w") as f:
            g = f.create_group("rig")
            d = g.create_dataset("signals", data=sig, chunks=(1, 1024), compression="gzip")
            d.attrs["channel_names"] = ["sine", "noise"]
            d.attrs["units"] = ["V", "Pa"]
            g.attrs["sample_rate"] = 2048.0
            g.attrs["start_time_ns"] = np.int64(T0)
            g.attrs["device_name"] = "rig-1"
            c = f.create_dataset("adc", data=counts)
            c.attrs["fs"] = 500
            c.attrs["scale"] = [0.5, 0.25, 0.125]
            c.attrs["offset"] = [0.0, 1.0, -1.0]
        with h5py.File(self.path("mono.h5"), "w") as f:
            f.create_dataset("mono", data=np.arange(10, dtype=np.float32))  # no rate: needs --rate
        out = run("import", self.path("w.h5"), "--out", self.path("w.tcap"))
        self.assertIn("'rig-1'", out)
        run("export", self.path("w.tcap"), "--format", "npy", "--source", "1", "--out", self.path("a.npy"))
        run("export", self.path("w.tcap"), "--format", "npy", "--source", "2", "--out", self.path("s.npy"))
        run("export", self.path("w.tcap"), "--format", "npy", "--source", "1", "--counts", "--out", self.path("c.npy"))
        # datasets in name order: /adc, then /rig/signals; int16 counts come out in physical units unless --counts
        np.testing.assert_array_equal(np.load(self.path("a.npy")), counts * np.array([[0.5], [0.25], [0.125]]) + np.array([[0.0], [1.0], [-1.0]]))
        np.testing.assert_array_equal(np.load(self.path("c.npy")), counts)
        np.testing.assert_array_equal(np.load(self.path("s.npy")), sig)
        with open(self.path("c.npy.json")) as f:
            side = json.load(f)
        self.assertEqual((side["scale"], side["offset"], side["sample_rate"]), ([0.5, 0.25, 0.125], [0.0, 1.0, -1.0], 500.0))
        info = json.loads(run("inspect", self.path("w.tcap"), "--json"))
        self.assertIn("Pa", json.dumps(info))
        result = subprocess.run([TRIBUTARY, "import", self.path("mono.h5"), "--out", self.path("x.tcap")], capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("sample_rate", result.stderr)
        run("import", self.path("mono.h5"), "--rate", "10", "--out", self.path("x.tcap"))
        result = json.loads(run("analyze", self.path("w.h5"), "--stats", "--measure", "tone", "--json").splitlines()[0])
        sources = {s["device_name"] if "device_name" in s else s["name"]: s for s in result["sources"]}
        rig = sources["rig-1"]
        self.assertEqual(rig["sample_rate"], 2048.0)
        self.assertAlmostEqual(rig["channels"][0]["tone"]["frequency"], 64.0, places=3)
        self.assertAlmostEqual(rig["channels"][1]["stats"]["mean"], float(np.mean(sig[1])), places=12)

    def test_independent_xdf_imports_and_analyses(self):
        rng = np.random.default_rng(4)
        n1, n2 = 1000, 300
        eeg = rng.normal(size=(n1, 4)).astype(np.float32)
        marker = rng.integers(-100, 100, size=(n2, 2), dtype=np.int16)
        t1 = 5000.0 + np.arange(n1) / 500.0
        t1[600:] += 0.5  # a half-second hole
        t2 = 5000.2 + np.arange(n2) / 100.0
        minimal_xdf(self.path("m.xdf"), [
            {"id": 7, "name": "EEG amp", "fmt": "float32", "rate": 500, "labels": ["Fz", "Cz", "Pz", "Oz"], "units": ["uV"] * 4,
             "data": eeg, "timestamps": t1, "clock_offset": 0.25},
            {"id": 9, "name": "Aux", "fmt": "int16", "rate": 100, "labels": ["a", "b"], "units": ["", ""], "data": marker, "timestamps": t2},
        ])
        out = run("import", self.path("m.xdf"), "--out", self.path("m.tcap"))
        self.assertIn("'EEG amp'", out)
        run("export", self.path("m.tcap"), "--format", "npy", "--source", "1", "--out", self.path("e.npy"))
        back = np.load(self.path("e.npy"))
        self.assertEqual(back.dtype, np.float32)
        np.testing.assert_array_equal(back, eeg.T)
        run("export", self.path("m.tcap"), "--format", "npy", "--source", "2", "--out", self.path("a.npy"))
        np.testing.assert_array_equal(np.load(self.path("a.npy")), marker.T)
        # The hole and the clock offset survive: a TDMS export of source 1 reports a discontinuity
        # at sample 600 and starts at t1[0] + 0.25 s.
        run("export", self.path("m.tcap"), "--format", "tdms", "--source", "1", "--out", self.path("m.tdms"))
        from nptdms import TdmsFile
        g = TdmsFile.read(self.path("m.tdms"))["EEG amp"]
        self.assertEqual(json.loads(g.properties["discontinuities"]), [600])
        self.assertEqual(g["Fz"].properties["unit_string"], "uV")
        start_ns = int(g["Fz"].properties["wf_start_time"].astype("datetime64[ns]").astype(np.int64))
        self.assertLess(abs(start_ns - round((5000.0 + 0.25) * 1e9)), 1000)
        result = json.loads(run("analyze", self.path("m.xdf"), "--stats", "--json").splitlines()[0])
        s1 = {s["id"]: s for s in result["sources"]}[1]
        self.assertEqual(s1["sample_rate"], 500.0)
        self.assertAlmostEqual(s1["channels"][2]["stats"]["mean"], float(np.mean(eeg[:, 2].astype(np.float64))), places=6)
        # --select imports one stream only.
        out = run("import", self.path("m.xdf"), "--select", "Aux", "--out", self.path("aux.tcap"))
        self.assertNotIn("EEG", out)

    def test_xdf_import_times_follow_timestamps_that_drift_from_the_nominal_rate(self):
        """A stream whose clock runs 100 ppm slow against its nominal 250 Hz, each stamp jittered by up
        to ±0.3 ms, with a 3 s hole and a clock offset of +0.25 s: every imported sample time is within
        max(1 ms, a quarter period) = 1 ms of pyxdf's time for it (synchronize_clocks=True, not
        dejittered: the file's own timestamps), and within that plus the jitter of pyxdf's defaults
        (dejittered). Before, times stepped by 1 / 250 s from each run's start and were up to 5 ms off."""
        import pyxdf
        rng = np.random.default_rng(12)
        n, rate = 20_000, 250.0
        stamps = 7000.0 + np.arange(n) / (rate * (1 - 1e-4)) + rng.uniform(-3e-4, 3e-4, size=n)
        stamps[12_000:] += 3.0
        data = rng.normal(size=(n, 2)).astype(np.float32)
        minimal_xdf(self.path("d.xdf"), [
            {"id": 3, "name": "Drift", "fmt": "float32", "rate": 250, "labels": ["a", "b"], "units": ["V", "V"],
             "data": data, "timestamps": stamps, "clock_offset": 0.25}])
        run("import", self.path("d.xdf"), "--out", self.path("d.tcap"))
        times = sample_times(self.path("d.tcap"), 1, self.path("d.csv"))
        raw = pyxdf.load_xdf(self.path("d.xdf"), dejitter_timestamps=False)[0][0]["time_stamps"]
        dejittered = pyxdf.load_xdf(self.path("d.xdf"))[0][0]["time_stamps"]
        self.assertEqual(len(times), n)
        np.testing.assert_allclose(raw, stamps + 0.25, rtol=0, atol=1e-9)
        self.assertLess(np.abs(times - raw).max(), 1e-3 + 2e-6)
        self.assertLess(np.abs(times - dejittered).max(), 1e-3 + 4e-4)
        # A few re-timed blocks, not one per sample; the values are the file's.
        frames = int(re.search(r"(\d+) frames in", run("inspect", self.path("d.tcap"))).group(1))
        self.assertLess(frames, 200)
        run("export", self.path("d.tcap"), "--format", "npy", "--out", self.path("d.npy"))
        np.testing.assert_array_equal(np.load(self.path("d.npy")), data.T)


class ExtractTests(ScratchTest, unittest.TestCase):
    """`extract` writes every package kind a capture holds; `inspect --packages` lists them."""

    def test_every_package_kind_round_trips(self):
        import hashlib
        content = bytes(range(256)) * 40
        half = len(content) // 2
        md5 = hashlib.md5(content).digest()
        png = b"\x89PNG\r\n\x1a\n" + bytes(100)
        t = T0
        source0 = [
            ws.frame("message", ws.message(7, "Grüße"), sequence=1, timestamp_ns=t, source_id=0),
            ws.frame("xml", ws.xml("<a x='1'>ü</a>"), sequence=2, timestamp_ns=t + 1, source_id=0),
            ws.frame("error", ws.error(13, "too slow"), sequence=3, timestamp_ns=t + 2, source_id=0),
            ws.frame("file", ws.blob(5, len(content), 0, 0, 2, md5, 0, content[:half], "../../etc/passwd", ["a=b", "c"]),
                     sequence=4, timestamp_ns=t + 3, source_id=0),
            ws.frame("file", ws.blob(5, len(content), half, 1, 2, md5, 0, content[half:], "../../etc/passwd", ["a=b", "c"]),
                     sequence=5, timestamp_ns=t + 4, source_id=0),
            ws.frame("file", ws.blob(6, 3, 0, 0, 1, hashlib.md5(b"abc").digest(), 0, b"abc", "passwd", []),
                     sequence=6, timestamp_ns=t + 5, source_id=0),
            ws.frame("image", ws.blob(8, len(png), 0, 0, 1, hashlib.md5(png).digest(), 1, png, "shot.png", ["w=10"]),
                     sequence=7, timestamp_ns=t + 6, source_id=0),
            ws.frame("array", ws.numeric_array(1, "d", [[1.5, -2.0], [3.0, 4.25]], 2, 3), sequence=8, timestamp_ns=t + 7, source_id=0),
            ws.frame("array", ws.numeric_array(2, "f", [[1.0], [2.0]]), sequence=9, timestamp_ns=t + 8, source_id=0),
            ws.frame("array", ws.numeric_array(3, "i", [[1, -2, 3]]), sequence=10, timestamp_ns=t + 9, source_id=0),
            ws.frame("array", ws.numeric_array(4, "h", [[1], [2], [-3]]), sequence=11, timestamp_ns=t + 10, source_id=0),
            ws.frame("array", ws.numeric_array(5, "q", [[2**40, -5]]), sequence=12, timestamp_ns=t + 11, source_id=0),
            ws.frame("array", ws.numeric_array(6, "B", [[1, 0, 1]]), sequence=13, timestamp_ns=t + 12, source_id=0),
            ws.frame("array", ws.string_array([["a", "bc"], ["", "温"]]), sequence=14, timestamp_ns=t + 13, source_id=0),
        ]
        lines_a = [[1, 0, 1, 1, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 1, 0, 0, 1]]
        lines_b = [[1, 1, 1], [0, 0, 0]]
        source1 = [
            ws.frame("digital", ws.digital([2, 5], lines_a, first_sample=0), sequence=1, timestamp_ns=t, source_id=1),
            ws.frame("digital", ws.digital([2, 5], lines_b, first_sample=9), sequence=2, timestamp_ns=t + 9000, source_id=1),
            ws.frame("message", ws.message(1, "from source 1"), sequence=3, timestamp_ns=t + 10000, source_id=1),
        ]
        with open(self.path("p.tcap"), "wb") as f:
            f.write(cs.capture([source0, source1]))
        listing = run("inspect", self.path("p.tcap"), "--packages")
        self.assertEqual(listing.splitlines()[-1], "1 error frame, 2 digital frames, 2 message frames, 1 xml frame, 3 file frames, 1 image frame, 7 array frames")
        self.assertEqual(len(listing.splitlines()), 18)
        out = self.path("x")
        run("extract", self.path("p.tcap"), "--out", out)

        def jsonl(name):
            with open(os.path.join(out, name)) as f:
                return [json.loads(line) for line in f]
        messages = jsonl("messages.jsonl")
        self.assertEqual([(m["source_id"], m["sequence"], m["timestamp_ns"], m["content"]["code"], m["content"]["text"]) for m in messages],
                         [(0, 1, T0, 7, "Grüße"), (1, 3, T0 + 10000, 1, "from source 1")])
        self.assertEqual(jsonl("xml.jsonl")[0]["content"]["xml"], "<a x='1'>ü</a>")
        self.assertEqual(jsonl("errors.jsonl")[0]["content"]["code"], 13)
        files = jsonl("files.jsonl")
        self.assertEqual([f["name"] for f in files], ["passwd", "passwd-2"])  # sanitised, never ../../etc
        self.assertEqual(files[0]["sent_name"], "../../etc/passwd")
        self.assertEqual(files[0]["attributes"], ["a=b", "c"])
        self.assertTrue(files[0]["md5_checked"])
        self.assertEqual(files[0]["md5"], hashlib.md5(content).hexdigest())
        with open(os.path.join(out, "files", "passwd"), "rb") as f:
            self.assertEqual(f.read(), content)
        with open(os.path.join(out, "files", "passwd-2"), "rb") as f:
            self.assertEqual(f.read(), b"abc")
        images = jsonl("images.jsonl")
        self.assertEqual((images[0]["name"], images[0]["format"], images[0]["attributes"]), ("shot.png", "png", ["w=10"]))
        with open(os.path.join(out, "images", "shot.png"), "rb") as f:
            self.assertEqual(f.read(), png)
        arrays = jsonl("arrays.jsonl")
        self.assertEqual(len(arrays), 7)
        expected = [np.array([[1.5, -2.0], [3.0, 4.25]]), np.array([[1.0], [2.0]], dtype=np.float32), np.array([[1, -2, 3]], dtype=np.int32),
                    np.array([[1], [2], [-3]], dtype=np.int16), np.array([[2**40, -5]], dtype=np.int64), np.array([[True, False, True]])]
        for entry, want in zip(arrays, expected):
            got = np.load(os.path.join(out, entry["path"]))
            self.assertEqual(got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want)
        self.assertEqual((arrays[0]["row_origin"], arrays[0]["column_origin"]), (2, 3))
        with open(os.path.join(out, arrays[6]["path"])) as f:
            self.assertEqual(json.load(f), [["a", "bc"], ["", "温"]])
        lines = np.load(os.path.join(out, "digital", "source-1.npy"))
        self.assertEqual(lines.dtype, np.uint8)
        np.testing.assert_array_equal(lines, np.concatenate([np.array(lines_a), np.array(lines_b)], axis=1))
        digital = jsonl("digital.jsonl")
        self.assertEqual([(d["line_indexes"], d["first_sample"], d["start"], d["count"]) for d in digital],
                         [([2, 5], 0, 0, 9), ([2, 5], 9, 9, 3)])
        # --kinds selects; an existing extraction, or any directory that is not empty, is not written into without --force.
        result = subprocess.run([TRIBUTARY, "extract", self.path("p.tcap"), "--out", out], capture_output=True, text=True)
        self.assertEqual(result.returncode, 1)
        self.assertIn("--force", result.stderr)
        os.makedirs(self.path("busy"))
        with open(os.path.join(self.path("busy"), "notes.txt"), "w") as f:
            f.write("mine")
        result = subprocess.run([TRIBUTARY, "extract", self.path("p.tcap"), "--out", self.path("busy")], capture_output=True, text=True)
        self.assertEqual(result.returncode, 1)
        self.assertIn("not empty", result.stderr)
        self.assertEqual(os.listdir(self.path("busy")), ["notes.txt"])
        run("extract", self.path("p.tcap"), "--out", self.path("busy"), "--kinds", "message", "--force")
        self.assertEqual(sorted(os.listdir(self.path("busy"))), ["messages.jsonl", "notes.txt"])
        os.makedirs(self.path("empty"))
        run("extract", self.path("p.tcap"), "--out", self.path("empty"), "--kinds", "message")
        run("extract", self.path("p.tcap"), "--out", self.path("only"), "--kinds", "message,image")
        self.assertEqual(sorted(os.listdir(self.path("only"))), ["images", "images.jsonl", "messages.jsonl"])


class FilterCaptureTests(ScratchTest, unittest.TestCase):
    """`filter` on a capture gives what the same filters give on the same frames as a frame file, and
    a filtered capture keeps the gap records and configurations."""

    def test_capture_filter_equals_the_frame_file_filter_and_keeps_gaps(self):
        rng = np.random.default_rng(12)
        config1 = ws.frame("configuration", ws.configuration("A", "sim", [(i, 0, 100.0, -1, 1, f"a{i}", "V") for i in range(4)], []),
                           timestamp_ns=T0, source_id=1)
        config2 = ws.frame("configuration", ws.configuration("B", "sim", [(i, 0, 50.0, -1, 1, f"b{i}", "V") for i in range(3)], []),
                           timestamp_ns=T0, source_id=2)
        first1 = [config1] + [ws.frame("analog", ws.analog_f64([0, 1, 2, 3], rng.normal(size=(4, 8)).tolist(), first_sample=8 * k),
                                       sequence=k + 1, timestamp_ns=T0 + k * 80_000_000, source_id=1) for k in range(3)]
        # sequences 4-5 of source 1 were lost (a gap record), then it goes on
        later1 = [ws.frame("analog", ws.analog_f64([0, 1, 2, 3], rng.normal(size=(4, 8)).tolist(), first_sample=8 * k),
                           sequence=k + 1, timestamp_ns=T0 + k * 80_000_000, source_id=1) for k in range(5, 7)]
        chunk2 = [config2] + [ws.frame("analog", ws.analog_i16([0, 1, 2], rng.integers(-99, 99, size=(3, 5)).tolist(), [0.1] * 3, [0.0] * 3,
                                                         first_sample=5 * k), sequence=k + 1, timestamp_ns=T0 + k * 100_000_000, source_id=2)
                              for k in range(3)]
        zero = [ws.frame("message", ws.message(1, "note"), sequence=1, timestamp_ns=T0 + 1),
                ws.frame("array", ws.numeric_array(1, "d", [[float(r * 10 + c) for c in range(6)] for r in range(6)]), sequence=2,
                         timestamp_ns=T0 + 2)]
        gap_payload = struct.pack("<QQII", 4, 2, 1, 0)
        gap = cs.record(cs.envelope(2, 0, gap_payload, source_id=1, first_sequence=4, last_sequence=5, first_time_ns=T0 + 240_000_000,
                                    last_time_ns=T0 + 240_000_000), gap_payload)
        data = cs.header() + cs.chunk_record(first1) + cs.chunk_record(chunk2) + gap + cs.chunk_record(later1) + cs.chunk_record(zero)
        with open(self.path("in.tcap"), "wb") as f:
            f.write(data)
        frames = b"".join(first1 + chunk2 + later1 + zero)
        with open(self.path("in.frames"), "wb") as f:
            f.write(frames)
        specs = ["--filter", "analog:1-2;1", "--filter", "analog:0,2;2", "--filter", "double:1-3;2-4"]
        run("filter", self.path("in.frames"), "--out", self.path("expected.frames"), *specs)
        run("filter", self.path("in.tcap"), "--out", self.path("got.frames"), *specs)
        with open(self.path("expected.frames"), "rb") as f:
            expected = f.read()
        with open(self.path("got.frames"), "rb") as f:
            got = f.read()
        self.assertGreater(len(expected), 0)
        self.assertEqual(got, expected)
        # capture → capture: the same frames, the gap record and the configurations kept.
        run("filter", self.path("in.tcap"), "--out", self.path("out.tcap"), *specs)
        info = json.loads(run("inspect", self.path("out.tcap"), "--json"))
        text = json.dumps(info)
        self.assertIn('"first_missing_sequence": 4', text)
        run("filter", self.path("out.tcap"), "--out", self.path("again.frames"), "--filter", "string:0-0;0-0")  # governs nothing here
        with open(self.path("again.frames"), "rb") as f:
            again = f.read()

        def by_source(data):
            """Frames per source, in order (a capture's chunks group frames by source)."""
            out, at = {}, 0
            while at < len(data):
                length = 40 + struct.unpack_from("<I", data, at + 12)[0]
                out.setdefault(struct.unpack_from("<I", data, at + 32)[0], []).append(data[at:at + length])
                at += length
            return out
        self.assertEqual(by_source(again), by_source(expected))
        run("export", self.path("out.tcap"), "--format", "npy", "--source", "1", "--out", self.path("o1.npy"))
        self.assertEqual(np.load(self.path("o1.npy")).shape, (2, 40))
        # an existing capture is not replaced without --force
        result = subprocess.run([TRIBUTARY, "filter", self.path("in.tcap"), "--out", self.path("out.tcap"), *specs], capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        run("filter", self.path("in.tcap"), "--out", self.path("out.tcap"), "--force", *specs)
        # nor an existing frame file (from a frame file or a capture); with --force it is replaced, once complete
        for source in ("in.frames", "in.tcap"):
            with open(self.path("keep.frames"), "wb") as f:
                f.write(b"precious")
            result = subprocess.run([TRIBUTARY, "filter", self.path(source), "--out", self.path("keep.frames"), *specs], capture_output=True, text=True)
            self.assertEqual(result.returncode, 1, source)
            self.assertIn("--force", result.stderr)
            with open(self.path("keep.frames"), "rb") as f:
                self.assertEqual(f.read(), b"precious")
            run("filter", self.path(source), "--out", self.path("keep.frames"), "--force", *specs)
            with open(self.path("keep.frames"), "rb") as f:
                self.assertEqual(f.read(), expected if source == "in.frames" else got)
        self.assertEqual([n for n in os.listdir(self.directory) if "partial" in n], [])


class ReplaySourceZeroTests(unittest.TestCase):
    def test_replay_publishes_source_zero_packages(self):
        import hashlib

        from test_transport_cli import Server, run as run_cli
        with tempfile.TemporaryDirectory() as directory:
            capture = os.path.join(directory, "r.tcap")
            config = ws.frame("configuration", ws.configuration("dev", "sim", [(0, 0, 1000.0, -1, 1, "ai0", "V")], []),
                              timestamp_ns=T0, source_id=1)
            analog = [ws.frame("analog", ws.analog_f64([0], [[float(k)] * 10], first_sample=10 * k), sequence=k + 1,
                               timestamp_ns=T0 + k * 10_000_000, source_id=1) for k in range(5)]
            zero = [ws.frame("message", ws.message(4, "operator note"), sequence=1, timestamp_ns=T0 + 15_000_000),
                    ws.frame("xml", ws.xml("<run id='3'/>"), sequence=2, timestamp_ns=T0 + 16_000_000),
                    ws.frame("file", ws.blob(9, 3, 0, 0, 1, hashlib.md5(b"xyz").digest(), 0, b"xyz", "notes.txt", []),
                             sequence=3, timestamp_ns=T0 + 17_000_000),
                    ws.frame("error", ws.error(13, "session error, not replayed"), sequence=4, timestamp_ns=T0 + 18_000_000)]
            with open(capture, "wb") as f:
                f.write(cs.capture([[config] + analog, zero]))
            server = Server("--replay", capture, "--speed", "max", "--linger", "0.5")
            try:
                result = run_cli("subscribe", server.address, "--api-key", "k", "--json", "--duration", "10")
                packages = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
                replayed = 256  # the header's 'replayed' flag
                zero_kinds = [p["kind"] for p in packages if p["source_id"] == 0 and p["flags"] & replayed]
                self.assertEqual(zero_kinds, ["message", "xml", "file"], result.stdout[-2000:] + result.stderr)
                message = next(p for p in packages if p["kind"] == "message" and p["source_id"] == 0)
                self.assertEqual(message["content"]["text"], "operator note")
                self.assertEqual(message["timestamp_ns"], T0 + 15_000_000)
                self.assertEqual(sum(1 for p in packages if p["kind"] == "analog"), 5)
            finally:
                server.stop()


if __name__ == "__main__":
    unittest.main()
