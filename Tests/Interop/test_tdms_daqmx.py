"""DAQmx raw data TDMS files (as DAQmx logging writes them), read by `tributary import` as npTDMS reads them.

The files are written here byte by byte from NI's description "TDMS File Format Internal Structure":
a DAQmx channel's raw data index starts with 0x00001269 (format changing scaler) or 0x0000126A
(digital line scaler) and lists its scalers (DAQmx type, raw buffer, byte or bit offset, scale id)
and the raw buffer widths; each chunk holds every raw buffer as rows of `width` bytes. The physical
values come from the NI_Scale properties. npTDMS reads each file first; the import must give the
same scaled values bit for bit, and int16 counts must come back as the raw counts with their scale.
"""
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import h5py
import numpy as np
from nptdms import TdmsFile

from tool_process import TRIBUTARY

TOC_META, TOC_NEW_LIST, TOC_RAW, TOC_BIG_ENDIAN, TOC_DAQMX = 1 << 1, 1 << 2, 1 << 3, 1 << 6, 1 << 7
FORMAT_CHANGING, DIGITAL_LINE = 0x1269, 0x126A
DAQMX_RAW = 0xFFFFFFFF
# DAQmx scaler type codes (not the TDMS ones) and numpy types of them.
DAQMX_I16, DAQMX_I32, DAQMX_U8 = 3, 5, 0
NUMPY = {DAQMX_I16: "i2", DAQMX_I32: "i4", DAQMX_U8: "u1"}
TDS_I32, TDS_U32, TDS_DOUBLE, TDS_STRING, TDS_U8, TDS_TIMESTAMP = 3, 7, 10, 0x20, 5, 0x44
# 2026-12-07T12:00:00.25 UTC as a TDMS timestamp, and in ns since 1970.
START = (2_082_844_800 + 1_796_644_800, 1 << 62)
START_NS = 1_796_644_800_250_000_000


def string(text, order):
    data = text.encode()
    return struct.pack(order + "I", len(data)) + data


def properties(props, order):
    out = struct.pack(order + "I", len(props))
    for name, value in props.items():
        out += string(name, order)
        if isinstance(value, str):
            out += struct.pack(order + "I", TDS_STRING) + string(value, order)
        elif isinstance(value, tuple):  # a timestamp (seconds since 1904, 2^-64 fractions)
            seconds, fraction = value
            stamp = struct.pack(order + "qQ", seconds, fraction) if order == ">" else struct.pack(order + "Qq", fraction, seconds)
            out += struct.pack(order + "I", TDS_TIMESTAMP) + stamp
        elif isinstance(value, float):
            out += struct.pack(order + "Id", TDS_DOUBLE, value)
        else:
            out += struct.pack(order + "II", TDS_U32, value)
    return out


def daqmx_index(order, count, scalers, widths, header=FORMAT_CHANGING, data_type=DAQMX_RAW):
    """The raw data index of a DAQmx channel: `scalers` as (DAQmx type, buffer, byte or bit offset, scale id)."""
    out = struct.pack(order + "IIIQI", header, data_type, 1, count, len(scalers))
    for kind, buffer, offset, scale_id in scalers:
        fmt = "IIIII" if header == FORMAT_CHANGING else "IIIBI"
        out += struct.pack(order + fmt, kind, buffer, offset, 0, scale_id)
    return out + struct.pack(order + "I", len(widths)) + b"".join(struct.pack(order + "I", w) for w in widths)


def linear_scale(slope, intercept, index=1):
    return {"NI_Scaling_Status": "unscaled", "NI_Number_Of_Scales": index + 1,
            f"NI_Scale[{index}]_Scale_Type": "Linear", f"NI_Scale[{index}]_Linear_Slope": slope,
            f"NI_Scale[{index}]_Linear_Y_Intercept": intercept, f"NI_Scale[{index}]_Linear_Input_Source": 0}


def segment(objects, raw, order="<", toc=TOC_META | TOC_NEW_LIST | TOC_RAW | TOC_DAQMX):
    """A segment: `objects` as (path, raw data index bytes or None, properties)."""
    meta = b""
    if objects is not None:
        meta = struct.pack(order + "I", len(objects))
        for path, index, props in objects:
            meta += string(path, order) + (index if index is not None else struct.pack(order + "I", 0xFFFFFFFF))
            meta += properties(props, order)
    if order == ">":
        toc |= TOC_BIG_ENDIAN
    lead = b"TDSm" + struct.pack("<I", toc) + struct.pack(order + "IQQ", 4713, len(meta) + len(raw), len(meta))
    return lead + meta + raw


def rows(width, columns, order):
    """A raw buffer: one row of `width` bytes per sample, `columns` as {byte offset: numpy values}."""
    n = len(next(iter(columns.values())))
    table = np.zeros((n, width), dtype=np.uint8)
    for offset, values in columns.items():
        data = values.astype(values.dtype.newbyteorder(order)).view(np.uint8).reshape(n, -1)
        table[:, offset:offset + data.shape[1]] = data
    return table.tobytes()


class DAQmxTDMS(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tributary-daqmx-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_tool(self, *args):
        return subprocess.run([TRIBUTARY, *args], capture_output=True, text=True, timeout=60)

    def import_file(self, data, name="daqmx.tdms"):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        result = self.run_tool("import", path, "--out", path + ".tcap")
        return path, result

    def export(self, capture, *extra):
        out = capture + ("-counts" if extra else "") + ".npy"
        result = self.run_tool("export", capture, "--format", "npy", "--out", out, *extra)
        self.assertEqual(result.returncode, 0, result.stderr)
        return np.load(out), out

    def test_int16_counts_import_as_counts_with_their_scale_and_as_volts(self):
        rng = np.random.default_rng(11)
        n, names = 400, ["ai0", "ai1", "ai2"]
        counts = [rng.integers(-32768, 32767, 2 * n, dtype=np.int16) for _ in names]
        slopes = [0.0003051850947599719, 1 / 3276.8, 2.5e-4]
        common = {"wf_increment": 1 / 1000.0, "unit_string": "V"}
        objects = [("/", None, {}), ("/'dev'", None, {})]
        for k, name in enumerate(names):
            index = daqmx_index("<", n, [(DAQMX_I16, 0, 2 * k, 0)], [6])
            objects.append((f"/'dev'/'{name}'", index, {**linear_scale(slopes[k], 0.25 * k), **common}))
        first = rows(6, {2 * k: c[:n] for k, c in enumerate(counts)}, "<")
        second = rows(6, {2 * k: c[n:] for k, c in enumerate(counts)}, "<")
        # The second segment repeats the first's object list (no metadata): its chunk is the same.
        data = segment(objects, first) + segment(None, second, toc=TOC_RAW | TOC_DAQMX)
        path, result = self.import_file(data)
        self.assertEqual(result.returncode, 0, result.stderr)

        reference = TdmsFile.read(path)["dev"]
        scaled = np.vstack([reference[name][:] for name in names])
        raw = np.vstack([reference[name].raw_scaler_data[0] for name in names])
        np.testing.assert_array_equal(raw, np.vstack(counts))
        values, _ = self.export(path + ".tcap")
        self.assertEqual(values.dtype, np.float64)
        self.assertEqual(values.tobytes(), scaled.tobytes())
        stored, out = self.export(path + ".tcap", "--counts")
        self.assertEqual(stored.dtype, np.int16)
        np.testing.assert_array_equal(stored, raw)
        with open(out + ".json") as f:
            sidecar = json.load(f)
        self.assertEqual(json.dumps(sidecar).count(repr(slopes[0])), 1, sidecar)

    def mixed_file(self, order):
        """int32 counts through a polynomial, int16 counts through a linear scale in a second raw
        buffer, and a digital line (bit 5 of a byte), over two segments."""
        rng = np.random.default_rng(3)
        n = 250
        a = rng.integers(-(1 << 23), 1 << 23, 2 * n, dtype=np.int32)
        b = rng.integers(-32768, 32767, 2 * n, dtype=np.int16)
        line = rng.integers(0, 256, 2 * n, dtype=np.uint8)
        polynomial = {"NI_Scaling_Status": "unscaled", "NI_Number_Of_Scales": 2, "NI_Scale[1]_Scale_Type": "Polynomial",
                      "NI_Scale[1]_Polynomial_Coefficients_Size": 3, "NI_Scale[1]_Polynomial_Coefficients[0]": -0.5,
                      "NI_Scale[1]_Polynomial_Coefficients[1]": 1.1920929e-7, "NI_Scale[1]_Polynomial_Coefficients[2]": 1e-15,
                      "NI_Scale[1]_Polynomial_Input_Source": 0, "wf_increment": 1 / 512.0, "wf_start_time": START}
        objects = [("/'card'", None, {}),
                   ("/'card'/'a'", daqmx_index(order, n, [(DAQMX_I32, 0, 0, 0)], [4, 3]), polynomial),
                   ("/'card'/'b'", daqmx_index(order, n, [(DAQMX_I16, 1, 0, 0)], [4, 3]), linear_scale(1e-3, -1.0)),
                   ("/'card'/'line'", daqmx_index(order, n, [(DAQMX_U8, 1, 2 * 8 + 5, 0)], [4, 3], DIGITAL_LINE, TDS_U8), {})]
        data = b""
        for part in (slice(0, n), slice(n, 2 * n)):
            raw = rows(4, {0: a[part]}, order) + rows(3, {0: b[part], 2: line[part]}, order)
            data += segment(objects, raw, order)
        return data, a, b, (line >> 5) & 1

    def test_int32_polynomial_digital_lines_and_two_raw_buffers_in_either_byte_order(self):
        for order in "<>":
            with self.subTest(order=order):
                data, a, b, bits = self.mixed_file(order)
                path, result = self.import_file(data, f"mixed{order == '>'}.tdms")
                self.assertEqual(result.returncode, 0, result.stderr)
                reference = TdmsFile.read(path)["card"]
                np.testing.assert_array_equal(reference["a"].raw_scaler_data[0], a)
                np.testing.assert_array_equal(reference["b"].raw_scaler_data[0], b)
                np.testing.assert_array_equal(reference["line"][:], bits)
                expected = np.vstack([reference["a"][:], reference["b"][:], reference["line"][:].astype(np.float64)])
                values, _ = self.export(path + ".tcap")
                self.assertEqual(values.shape, expected.shape)
                self.assertEqual(values.tobytes(), expected.tobytes())
                # The start time (big-endian: seconds before fractions) as npTDMS reads it.
                self.assertEqual(reference["a"].properties["wf_start_time"], np.datetime64(START_NS, "ns"))
                result = self.run_tool("export", path + ".tcap", "--format", "hdf5", "--out", path + ".h5")
                self.assertEqual(result.returncode, 0, result.stderr)
                with h5py.File(path + ".h5") as f:
                    self.assertEqual(int(f["card"].attrs["start_time_ns"]), START_NS)

    def test_int32_scalers_with_a_linear_scale_import_as_int32_counts(self):
        """24-bit DSA codes logged by DAQmx as i32 scalers: int32 counts with their scale (format 4)."""
        rng = np.random.default_rng(8)
        n = 300
        codes = [rng.integers(-(1 << 23), 1 << 23, n, dtype=np.int32) for _ in range(2)]
        objects = [("/'dsa'", None, {})]
        for k in range(2):
            objects.append((f"/'dsa'/'ai{k}'", daqmx_index("<", n, [(DAQMX_I32, 0, 4 * k, 0)], [8]),
                            {**linear_scale(2.0 ** -23 * (k + 1), 0.001 * k), "wf_increment": 1 / 51200.0}))
        path, result = self.import_file(segment(objects, rows(8, {0: codes[0], 4: codes[1]}, "<")), "dsa.tdms")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("(int32)", result.stdout)
        reference = TdmsFile.read(path)["dsa"]
        stored, out = self.export(path + ".tcap", "--counts")
        self.assertEqual(stored.dtype, np.int32)
        np.testing.assert_array_equal(stored, np.vstack([reference[f"ai{k}"].raw_scaler_data[0] for k in range(2)]))
        values, _ = self.export(path + ".tcap")
        self.assertEqual(values.tobytes(), np.vstack([reference[f"ai{k}"][:] for k in range(2)]).tobytes())

    def test_every_malformed_field_is_a_clear_error(self):
        n = 8
        good_props = linear_scale(0.5, 0.0)

        def one(index=None, props=None, raw=None, extra_objects=()):
            index = index if index is not None else daqmx_index("<", n, [(DAQMX_I16, 0, 0, 0)], [2])
            objects = [("/'g'/'c'", index, good_props if props is None else props), *extra_objects]
            return segment(objects, raw if raw is not None else bytes(2 * n))

        cases = {
            "offset beyond row": (one(daqmx_index("<", n, [(DAQMX_I16, 0, 1, 0)], [2])), "pass the row's 2 bytes"),
            "unknown type": (one(daqmx_index("<", n, [(0x44, 0, 0, 0)], [2])), "unsupported DAQmx data type 0x44"),
            "zero width": (one(daqmx_index("<", n, [(DAQMX_I16, 0, 0, 0)], [0])), "is 0 bytes wide"),
            "missing buffer": (one(daqmx_index("<", n, [(DAQMX_I16, 1, 0, 0)], [2])), "reads raw buffer 1 of 1"),
            "many scalers": (one(struct.pack("<IIIQI", FORMAT_CHANGING, DAQMX_RAW, 1, n, 10**6)), "1000000 DAQmx scalers"),
            "dimension": (one(struct.pack("<IIIQI", FORMAT_CHANGING, DAQMX_RAW, 2, n, 0)), "array dimension 2"),
            "scale input": (one(props={**good_props, "NI_Scale[1]_Linear_Input_Source": 7}), "reads scale 7 of 2"),
            "scale cycle": (one(props={**good_props, "NI_Scale[1]_Linear_Input_Source": 1}), "cycle of scales"),
            "scale type": (one(props={**good_props, "NI_Scale[1]_Scale_Type": "RTD"}), "'RTD' scale, which is not supported"),
            "scale count": (one(props={**good_props, "NI_Number_Of_Scales": 10**9}), "not a whole number"),
            "no scaler": (one(props={**linear_scale(0.5, 0.0, index=3), "NI_Scale[3]_Linear_Input_Source": 2}),
                          "no DAQmx scaler with scale id 2"),
            "mixed": (one(raw=bytes(4 * n), extra_objects=[("/'g'/'d'", struct.pack("<IIIQ", 20, 2, 1, n), {})]),
                      "mixes DAQmx raw data with other raw data"),
            "typed scaler": (one(daqmx_index("<", n, [(DAQMX_I16, 0, 0, 0)], [2], data_type=TDS_DOUBLE)),
                             "needs one DAQmx scaler of that type"),
        }
        for name, (data, message) in cases.items():
            with self.subTest(name):
                path, result = self.import_file(data, name.replace(" ", "-") + ".tdms")
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn(path, result.stderr)
                self.assertIn(message, result.stderr)


if __name__ == "__main__":
    unittest.main()
