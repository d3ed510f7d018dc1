"""TDMS files written by others, read by `tributary import` as npTDMS reads them.

A big-endian TDMS file (ToC bit 6) carries its lead-in's version and offsets big-endian too, as the
rest of the segment: written here byte by byte from NI's description, checked first with npTDMS,
then imported and exported; the samples must equal npTDMS's, bit for bit.
"""
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import numpy as np
from nptdms import TdmsFile

from tool_process import TRIBUTARY

TOC_META, TOC_RAW, TOC_NEW_LIST, TOC_BIG_ENDIAN = 1 << 1, 1 << 3, 1 << 2, 1 << 6
TDS_DOUBLE, TDS_I16 = 10, 2


def tdms_string(text, order):
    data = text.encode()
    return struct.pack(order + "I", len(data)) + data


def segment(channels, order, rate, extra_toc=0):
    """One segment holding the group 'g' and `channels` {name: (type code, numpy values)}, each with
    wf_increment = 1/rate, in the byte order `order` ('<' or '>')."""
    objects = [tdms_string("/", order) + struct.pack(order + "II", 0xFFFFFFFF, 0),
               tdms_string("/'g'", order) + struct.pack(order + "II", 0xFFFFFFFF, 0)]
    raw = b""
    for name, (code, values) in channels.items():
        prop = tdms_string("wf_increment", order) + struct.pack(order + "I", TDS_DOUBLE) + struct.pack(order + "d", 1 / rate)
        objects.append(tdms_string(f"/'g'/'{name}'", order) + struct.pack(order + "IIIQ", 20, code, 1, len(values))
                       + struct.pack(order + "I", 1) + prop)
        raw += values.astype(values.dtype.newbyteorder(order)).tobytes()
    meta = struct.pack(order + "I", len(objects)) + b"".join(objects)
    toc = TOC_META | TOC_RAW | TOC_NEW_LIST | extra_toc
    lead = b"TDSm" + struct.pack("<I", toc) + struct.pack(order + "IQQ", 4713, len(meta) + len(raw), len(meta))
    return lead + meta + raw


class ForeignTDMS(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tributary-tdms-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def import_and_export(self, path):
        capture, out = path + ".tcap", path + ".npy"
        result = subprocess.run([TRIBUTARY, "import", path, "--out", capture], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        result = subprocess.run([TRIBUTARY, "export", capture, "--format", "npy", "--out", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        return np.load(out)

    def test_big_endian_file_reads_as_nptdms_reads_it(self):
        rng = np.random.default_rng(5)
        channels = {"a": (TDS_DOUBLE, rng.standard_normal(300)), "b": (TDS_DOUBLE, rng.standard_normal(300) * 1e6)}
        for order, extra in (("<", 0), (">", TOC_BIG_ENDIAN)):
            with self.subTest(order=order):
                path = os.path.join(self.dir, f"file{'-be' if extra else ''}.tdms")
                with open(path, "wb") as f:
                    f.write(segment(channels, order, 1000, extra) + segment(channels, order, 1000, extra))
                reference = TdmsFile.read(path)["g"]
                expected = np.vstack([reference["a"][:], reference["b"][:]])
                np.testing.assert_array_equal(expected, np.vstack([np.tile(channels[k][1], 2) for k in "ab"]))
                got = self.import_and_export(path)
                self.assertEqual(got.tobytes(), expected.tobytes())

    def test_a_bad_file_is_named_once_with_the_offset(self):
        path = os.path.join(self.dir, "bad.tdms")
        with open(path, "wb") as f:
            f.write(b"TDSm" + struct.pack("<IIQQ", TOC_META | TOC_RAW, 4713, 0, 1000))
        result = subprocess.run([TRIBUTARY, "import", path, "--out", path + ".tcap"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(f"{path}: byte offset 20: raw data offset 1000 lies beyond the segment (0 bytes)", result.stderr)
        self.assertEqual(result.stderr.count(path), 1, result.stderr)


if __name__ == "__main__":
    unittest.main()
