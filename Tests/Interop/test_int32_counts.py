"""int32 counts (wire sample format 4, issue 40 item 5) through import, capture and every export,
each file checked by its own reader: numpy, npTDMS, h5py, pyxdf and scipy.io.wavfile.

24-bit delta-sigma codes (with the extremes of int32) are imported from NPY, recorded as int32
counts, exported as values (float64, count × scale + offset) and with --counts as int32 (NPY with
its sidecar, TDMS I32 with an NI linear scale, XDF int32, HDF5 int32), WAV as 32-bit PCM; each
counts export imports back to the same counts. 24-bit PCM WAV imports as int32 counts scaled to
full scale 1.0.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import h5py
import numpy as np
import pyxdf
import scipy.io.wavfile as wavfile
from nptdms import TdmsFile

from tool_process import TRIBUTARY


def run(*args):
    result = subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"tributary {' '.join(map(str, args))}: {result.stderr}")
    return result


class Int32Counts(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tributary-int32-")
        rng = np.random.default_rng(24)
        self.counts = rng.integers(-(1 << 23), 1 << 23, (3, 6000), dtype=np.int32)
        self.counts[0, :2] = [-(2 ** 31), 2 ** 31 - 1]
        self.capture = self.path("adc.tcap")
        np.save(self.path("in.npy"), self.counts)
        run("import", self.path("in.npy"), "--rate", 1000, "--out", self.capture, "--start-time", "1796644800")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def export(self, fmt, counts, name=None):
        out = self.path(name or f"{'counts' if counts else 'values'}.{fmt}")
        run("export", self.capture, "--format", fmt, "--out", out, *(["--counts"] if counts else []))
        return out

    def test_npy_values_and_counts_with_their_sidecar(self):
        values = np.load(self.export("npy", False))
        self.assertEqual(values.dtype, np.float64)
        np.testing.assert_array_equal(values, self.counts.astype(np.float64))
        out = self.export("npy", True)
        stored = np.load(out)
        self.assertEqual(stored.dtype, np.int32)
        np.testing.assert_array_equal(stored, self.counts)
        with open(out + ".json") as f:
            sidecar = json.load(f)
        self.assertEqual((sidecar["dtype"], sidecar["scale"], sidecar["offset"]), ("int32", [1.0] * 3, [0.0] * 3))

    def test_tdms_hdf5_xdf_counts_are_int32_for_their_readers(self):
        group = TdmsFile.read(self.export("tdms", True)).groups()[0]
        for row, channel in enumerate(group.channels()):
            self.assertEqual(channel.read_data(scaled=False).dtype, np.int32)
            np.testing.assert_array_equal(channel.read_data(scaled=False), self.counts[row])
            np.testing.assert_array_equal(channel[:], self.counts[row].astype(np.float64))
        values = TdmsFile.read(self.export("tdms", False)).groups()[0]
        np.testing.assert_array_equal(np.vstack([c[:] for c in values.channels()]), self.counts.astype(np.float64))
        with h5py.File(self.export("hdf5", True), "r") as f:
            data = f[list(f)[0]]["data"]
            self.assertEqual(data.dtype, np.int32)
            np.testing.assert_array_equal(data[()], self.counts)
        streams, _ = pyxdf.load_xdf(self.export("xdf", True))
        self.assertEqual(streams[0]["time_series"].dtype, np.int32)
        np.testing.assert_array_equal(streams[0]["time_series"].T, self.counts)

    def test_wav_is_32_bit_pcm_counts(self):
        rate, data = wavfile.read(self.export("wav", False))
        self.assertEqual((rate, data.dtype), (1000, np.int32))
        np.testing.assert_array_equal(data.T, self.counts)

    def test_every_counts_export_imports_back_to_the_counts(self):
        for fmt in ("npy", "tdms", "hdf5", "xdf"):
            with self.subTest(fmt):
                source = self.export(fmt, True, f"round.{fmt}")
                back = self.path(f"back-{fmt}.tcap")
                run("import", source, "--out", back, *(["--rate", 1000] if fmt == "npy" else []))
                out = self.path(f"back-{fmt}.npy")
                run("export", back, "--format", "npy", "--counts", "--out", out)
                got = np.load(out)
                self.assertEqual(got.dtype, np.int32)
                np.testing.assert_array_equal(got, self.counts)

    def test_24_bit_wav_imports_as_int32_counts_at_full_scale(self):
        codes = self.counts[1:3, :1000]  # 24-bit codes
        path = self.path("in24.wav")
        # A 24-bit PCM WAV written byte by byte: the low three bytes of each code, interleaved.
        pcm = np.ascontiguousarray(codes.T).astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
        fmt = b"fmt " + (16).to_bytes(4, "little") + (1).to_bytes(2, "little") + (2).to_bytes(2, "little") \
            + (48000).to_bytes(4, "little") + (48000 * 6).to_bytes(4, "little") + (6).to_bytes(2, "little") + (24).to_bytes(2, "little")
        body = b"WAVE" + fmt + b"data" + len(pcm).to_bytes(4, "little") + pcm
        with open(path, "wb") as f:
            f.write(b"RIFF" + len(body).to_bytes(4, "little") + body)
        run("import", path, "--out", self.path("w.tcap"))
        run("export", self.path("w.tcap"), "--format", "npy", "--counts", "--out", self.path("w.npy"))
        stored = np.load(self.path("w.npy"))
        self.assertEqual(stored.dtype, np.int32)
        np.testing.assert_array_equal(stored, codes)
        with open(self.path("w.npy") + ".json") as f:
            self.assertEqual(json.load(f)["scale"], [2.0 ** -23] * 2)
        run("export", self.path("w.tcap"), "--format", "npy", "--out", self.path("wv.npy"))
        np.testing.assert_array_equal(np.load(self.path("wv.npy")), codes / 2.0 ** 23)


if __name__ == "__main__":
    unittest.main()
