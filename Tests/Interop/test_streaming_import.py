"""Issue 42 item 3: `process` and `import` of files that are not captures read them in bounded pieces.

Before, NPY / WAV / CSV / TDMS / XDF / HDF5 inputs were read whole into memory (and CSV values twice,
row-major then transposed) before a frame was written: a 256 MB NPY took more than that in resident
memory. Each test makes a large input in a temporary directory, runs the tool alone under a small
wrapper that reports its peak resident size (`measured`, as test_data_safety does), and checks the
bound and the result against numpy / scipy on the same data.
"""
import os
import struct
import sys
import unittest

import numpy as np
from scipy import signal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_tdms_daqmx as daqmx  # noqa: E402
from test_data_safety import measured  # noqa: E402
from test_tdms_reading import TDS_DOUBLE, segment  # noqa: E402
from tool_process import ScratchTest, tool  # noqa: E402

TIMEOUT = float(os.environ.get("STREAMING_TIMEOUT", 120))  # seconds for one command on a 256 MB input (a debug build needs more)
RATE = 1000.0
MiB = 1 << 20


def smooth(channels, samples, seed=0):
    """Whole-number float64 signals (quick to compress, so the test spends its time reading)."""
    t = np.arange(samples)
    rng = np.random.default_rng(seed)
    return np.round(1000 * np.sin(t[None, :] * (0.001 + 0.0003 * np.arange(channels)[:, None]))) + rng.integers(-3, 4, (channels, 1))


class StreamingImportTests(ScratchTest, unittest.TestCase):
    def bounded(self, bound, *args):
        status, stderr, seconds, peak = measured(*args, timeout=TIMEOUT)
        self.assertEqual(status, 0, stderr)
        self.assertLess(peak, bound, f"tributary {' '.join(map(str, args[:2]))}: peak resident {peak / MiB:.0f} MiB")
        return peak

    def window(self, capture, start_s, duration_s, source=1):
        """Samples `start_s` × RATE on of the capture's source, for `duration_s` seconds (export counts
        samples, not the time of a gap)."""
        out = self.path("window.npy")
        tool("export", capture, "--format", "npy", "--source", source, "--start", start_s, "--duration", duration_s, "--out", out,
             "--force", timeout=TIMEOUT)
        return np.load(out)

    def test_process_of_a_256_mb_npy_stays_under_200_mb_and_equals_scipy_decimate(self):
        x = smooth(8, 4 << 20)
        np.save(self.path("big.npy"), x)
        self.assertGreaterEqual(os.path.getsize(self.path("big.npy")), 256 * MiB)
        self.bounded(200 * MiB, "process", self.path("big.npy"), "--rate", RATE, "--start-time", "1764489600",
                     "--decimate", "10", "--out", self.path("dec.tcap"))
        tool("export", self.path("dec.tcap"), "--format", "npy", "--out", self.path("dec.npy"))
        want = signal.decimate(x, 10, ftype="iir", zero_phase=False, axis=1)
        got = np.load(self.path("dec.npy"))
        self.assertEqual(got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.max(np.abs(want)))

    def test_import_of_a_large_csv_is_bounded_and_exact(self):
        x = smooth(8, 1_400_000, seed=1).astype(np.int64)
        # Fixed-width fields ("+0123", "-0042"), made as bytes by numpy: a 67 MB file in a second.
        digits = np.abs(x.T)[:, :, None] // np.array([1000, 100, 10, 1]) % 10 + ord("0")
        fields = np.concatenate([np.where(x.T < 0, ord("-"), ord("+"))[:, :, None], digits,
                                 np.full(x.T.shape + (1,), ord(","))], axis=2).astype(np.uint8)
        fields[:, -1, -1] = ord("\n")
        with open(self.path("big.csv"), "wb") as f:
            f.write((",".join(f"ch{k}" for k in range(8)) + "\n").encode())
            f.write(fields.tobytes())
        self.assertGreaterEqual(os.path.getsize(self.path("big.csv")), 64 * MiB)
        self.bounded(120 * MiB, "import", self.path("big.csv"), "--rate", RATE, "--start-time", "1764489600", "--out", self.path("csv.tcap"))
        info = tool("inspect", self.path("csv.tcap")).stdout
        self.assertIn("8 channels (ch0 [V], ch1 [V]", info)
        self.assertIn("1400000 samples per channel", info)
        np.testing.assert_array_equal(self.window(self.path("csv.tcap"), 1300, 50), x[:, 1_300_000:1_350_000].astype(np.float64))

    def xdf(self, path, x, chunk=10_000, t0=100.0, gap_at=None, reset_at=None, offsets=()):
        """One double64 stream (id 1) at RATE, each chunk's first sample stamped; the samples from
        `gap_at` on are 5 s late (a gap); from `reset_at` on stamped from 200 s (the recorder's clock
        reset); `offsets` (collection time, value) written as ClockOffset chunks after the samples."""
        channels, n = x.shape
        header = (f'<?xml version="1.0"?><info><name>S</name><type>EEG</type><channel_count>{channels}</channel_count>'
                  f"<nominal_srate>{RATE}</nominal_srate><channel_format>double64</channel_format><source_id></source_id></info>").encode()

        def chunk_bytes(tag, content):
            return bytes([8]) + struct.pack("<QH", len(content) + 2, tag) + content

        with open(path, "wb") as f:
            f.write(b"XDF:" + chunk_bytes(1, b'<?xml version="1.0"?><info><version>1.0</version></info>'))
            f.write(chunk_bytes(2, struct.pack("<I", 1) + header))
            rows = np.zeros(n, dtype=[("tb", "u1"), ("v", "<f8", (channels,))])
            rows["v"] = x.T
            for start in range(0, n, chunk):
                count = min(chunk, n - start)
                t = t0 + start / RATE + (5.0 if gap_at is not None and start >= gap_at else 0.0)
                if reset_at is not None and start >= reset_at:
                    t = 200.0 + (start - reset_at) / RATE
                first = bytes([8]) + struct.pack("<d", t) + x[:, start].astype("<f8").tobytes()
                body = struct.pack("<I", 1) + bytes([4]) + struct.pack("<I", count) + first + rows[start + 1:start + count].tobytes()
                f.write(chunk_bytes(3, body))
            for time, value in offsets:
                f.write(chunk_bytes(4, struct.pack("<Idd", 1, time, value)))

    def test_import_of_a_large_xdf_is_bounded_and_keeps_its_gap(self):
        x = smooth(8, 1 << 20, seed=2)
        self.xdf(self.path("big.xdf"), x, gap_at=500_000)
        self.assertGreaterEqual(os.path.getsize(self.path("big.xdf")), 64 * MiB)
        self.bounded(120 * MiB, "import", self.path("big.xdf"), "--out", self.path("xdf.tcap"))
        np.testing.assert_array_equal(self.window(self.path("xdf.tcap"), 0, 0.5), x[:, :500])
        np.testing.assert_array_equal(self.window(self.path("xdf.tcap"), 1000, 0.5), x[:, 1_000_000:1_000_500])
        # The samples after the gap are 5 s later: the last frame (sample 500 000 + 133 × 4096) starts
        # at 100 + 500 + 5 + 133 × 4.096 s.
        info = tool("inspect", self.path("xdf.tcap")).stdout
        self.assertIn("1149768000000 ns", info)

    def test_import_of_a_large_xdf_with_a_clock_reset_is_bounded_and_timed_as_pyxdf(self):
        """The recorder's clock reset after 520 000 samples stamped from 1500 s (stamps from 200 s again,
        clock offsets from collection time 200 s with another value): the stream is imported a window
        at a time, every sample within max(1 ms, a quarter period) of pyxdf's synchronized time.
        Stamps after 1110 s are nearer the first clock segment's last collection time (2020 s) than
        the second's first (200 s): only a correction in the stream's order, as pyxdf's, keeps the
        second segment's last 660 s of samples in it."""
        import h5py
        import pyxdf

        x = smooth(4, 1 << 21, seed=5)
        n, reset = x.shape[1], 520_000
        offsets = [(1500.0 + 5 * k, 0.5) for k in range(105)] + [(200.0 + 5 * k, 1821.0) for k in range(316)]
        self.xdf(self.path("reset.xdf"), x, t0=1500.0, reset_at=reset, offsets=offsets)
        self.assertGreaterEqual(os.path.getsize(self.path("reset.xdf")), 64 * MiB)
        self.bounded(120 * MiB, "import", self.path("reset.xdf"), "--out", self.path("reset.tcap"))
        streams, _ = pyxdf.load_xdf(self.path("reset.xdf"), synchronize_clocks=True, dejitter_timestamps=False)
        want = streams[0]["time_stamps"]
        raw = np.concatenate([1500.0 + np.arange(reset) / RATE, 200.0 + np.arange(n - reset) / RATE])
        np.testing.assert_allclose(want[:reset], raw[:reset] + 0.5, rtol=0, atol=1e-6)
        np.testing.assert_allclose(want[reset:], raw[reset:] + 1821.0, rtol=0, atol=1e-6)
        tool("export", self.path("reset.tcap"), "--format", "hdf5", "--out", self.path("reset.h5"), timeout=TIMEOUT)
        with h5py.File(self.path("reset.h5")) as f:
            starts, frame_ns = f["S/block_start"][:], f["S/block_time_ns"][:]
            np.testing.assert_array_equal(f["S/data"][:], x)
        lengths = np.diff(np.append(starts, n))
        times = np.repeat(frame_ns / 1e9, lengths) + (np.arange(n) - np.repeat(starts, lengths)) / RATE
        self.assertLess(np.abs(times - want).max(), 1e-3 + 2e-6)

    def test_import_of_a_large_daqmx_tdms_is_bounded_and_equals_nptdms(self):
        """256 MB of DAQmx raw data as DAQmx logging writes it (test_tdms_daqmx.py): four i16 scalers in
        raw buffer 0 and two i32 scalers in raw buffer 1 of every chunk, each channel with its linear
        scale, over 16 segments (the first with metadata): two sources of int16 and int32 counts, read a
        window at a time, their values equal to npTDMS's scaled values."""
        from nptdms import TdmsFile

        n, segments = 1 << 20, 16
        slopes = [3.0517578125e-4 * (k + 1) for k in range(6)]

        def counts(start):
            t = np.arange(start, start + n)
            short = [np.round(12_000 * np.sin(t * (0.0007 + 0.0002 * k))).astype(np.int16) for k in range(4)]
            wide = [np.round((1 << 22) * np.sin(t * (0.0003 + 0.0001 * k))).astype(np.int32) for k in range(2)]
            return short, wide

        objects = [("/'fast'", None, {}), ("/'dsa'", None, {})]
        for k in range(4):
            objects.append((f"/'fast'/'ai{k}'", daqmx.daqmx_index("<", n, [(daqmx.DAQMX_I16, 0, 2 * k, 0)], [8, 8]),
                            {**daqmx.linear_scale(slopes[k], 0.125 * k), "wf_increment": 1 / RATE}))
        for k in range(2):
            objects.append((f"/'dsa'/'ai{k}'", daqmx.daqmx_index("<", n, [(daqmx.DAQMX_I32, 1, 4 * k, 0)], [8, 8]),
                            {**daqmx.linear_scale(slopes[4 + k], -0.5 * k), "wf_increment": 1 / RATE}))
        with open(self.path("daqmx.tdms"), "wb") as f:
            for s in range(segments):
                short, wide = counts(s * n)
                raw = daqmx.rows(8, {2 * k: c for k, c in enumerate(short)}, "<") + daqmx.rows(8, {4 * k: c for k, c in enumerate(wide)}, "<")
                f.write(daqmx.segment(objects, raw) if s == 0 else daqmx.segment(None, raw, toc=daqmx.TOC_RAW | daqmx.TOC_DAQMX))
        self.assertGreaterEqual(os.path.getsize(self.path("daqmx.tdms")), 256 * MiB)
        self.bounded(120 * MiB, "import", self.path("daqmx.tdms"), "--out", self.path("daqmx.tcap"))
        info = tool("inspect", self.path("daqmx.tcap")).stdout
        self.assertIn(f"{segments * n} samples per channel", info)
        # A second across the boundary of segments 1 and 2, and the last second, as npTDMS scales them.
        with TdmsFile.open(self.path("daqmx.tdms")) as tdms:
            for source, group, channels in [(1, "fast", 4), (2, "dsa", 2)]:
                for start in [n - 500, segments * n - 1000]:
                    want = np.vstack([tdms[group][f"ai{k}"][start:start + 1000] for k in range(channels)])
                    got = self.window(self.path("daqmx.tcap"), start / RATE, 1, source=source)
                    self.assertEqual(got.dtype, np.float64)
                    self.assertEqual(got.tobytes(), want.tobytes(), f"{group} from sample {start}")

    def test_import_of_a_large_tdms_is_bounded_and_exact(self):
        x = smooth(8, 1 << 20, seed=4)
        with open(self.path("big.tdms"), "wb") as f:
            for start in range(0, x.shape[1], 65_536):
                f.write(segment({f"c{k}": (TDS_DOUBLE, x[k, start:start + 65_536]) for k in range(8)}, "<", RATE))
            # One interleaved segment at the end (ToC bit 5): the rows of every channel side by side.
            f.write(segment({f"c{k}": (TDS_DOUBLE, x[k, :1000]) for k in range(8)}, "<", RATE, 1 << 5))
        self.assertGreaterEqual(os.path.getsize(self.path("big.tdms")), 64 * MiB)
        self.bounded(120 * MiB, "import", self.path("big.tdms"), "--out", self.path("tdms.tcap"))
        np.testing.assert_array_equal(self.window(self.path("tdms.tcap"), 1000, 1), x[:, 1_000_000:1_001_000])
        # The interleaved segment holds the bytes segment() wrote channel after channel, read as rows
        # (sample after sample, one value of each channel in turn).
        interleaved = x[:, :1000].reshape(-1).reshape(1000, 8).T
        np.testing.assert_array_equal(self.window(self.path("tdms.tcap"), 1048.576, 1), interleaved)

    def test_import_of_a_large_hdf5_dataset_is_bounded_and_exact(self):
        import h5py

        x = smooth(8, 3 << 19, seed=3)
        with h5py.File(self.path("big.h5"), "w") as f:
            d = f.create_dataset("run/signal", data=x)
            d.attrs["sample_rate"] = RATE
            c = f.create_dataset("run/chunked", data=x[:2, :1 << 20], chunks=(2, 50_000), compression="gzip", compression_opts=1)
            c.attrs["sample_rate"] = RATE
        self.assertGreaterEqual(os.path.getsize(self.path("big.h5")), 96 * MiB)
        self.bounded(100 * MiB, "import", self.path("big.h5"), "--out", self.path("h5.tcap"))
        # Datasets in name order: run/chunked is source 1, run/signal source 2.
        np.testing.assert_array_equal(self.window(self.path("h5.tcap"), 1000, 48.576), x[:2, 1_000_000:1 << 20])
        np.testing.assert_array_equal(self.window(self.path("h5.tcap"), 1500, 1, source=2), x[:, 1_500_000:1_501_000])


if __name__ == "__main__":
    unittest.main()
