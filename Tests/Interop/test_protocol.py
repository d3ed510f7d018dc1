"""docs/PROTOCOL.md against the implementation: frames written by hand from the spec decode with
`tributary inspect`, and the spec's own hex examples decode to the JSON the spec shows."""
import json
import os
import pathlib
import re
import subprocess
import tempfile
import unittest

import wire_spec as w

ROOT = pathlib.Path(__file__).resolve().parents[2]
from tool_process import TRIBUTARY  # noqa: E402


def inspect(data: bytes, *args):
    with tempfile.NamedTemporaryFile(suffix=".frames", delete=False) as f:
        f.write(data)
        path = f.name
    try:
        return subprocess.run([TRIBUTARY, "inspect", path, *args], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)


def inspect_json(data: bytes):
    result = inspect(data, "--json")
    if result.returncode != 0:
        raise AssertionError(f"inspect failed ({result.returncode}): {result.stderr}")
    return [json.loads(line) for line in result.stdout.splitlines()]


class SpecExamples(unittest.TestCase):
    def test_hex_examples_decode_to_the_documented_json(self):
        text = (ROOT / "docs/PROTOCOL.md").read_text()
        pairs = re.findall(r"```hex\n(.*?)```\n```json\n(.*?)\n```", text, re.S)
        self.assertGreaterEqual(len(pairs), 3)
        for dump, expected in pairs:
            data = bytes.fromhex("".join(line[6:] for line in dump.strip().splitlines()))
            result = inspect(data, "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout.strip(), expected.strip())


class HandWrittenFrames(unittest.TestCase):
    def test_every_hand_written_kind(self):
        frames = [
            w.frame("configuration", w.configuration("USB-6009", "DAQ", [
                (0, 0, 10000.0, -10.0, 10.0, "ai0", "V"), (1, 1, 10000.0, -5.0, 5.0, "ao1 µ", "mA")],
                [(0, 0, "P0.0")]), source_id=1),
            w.frame("analog", w.analog_f64([3, 1], [[0.1, 1e-300, -2.5], [1.7976931348623157e308, 5e-324, 3.0]], 77),
                    sequence=5, timestamp_ns=-1, source_id=2, filter_id=4, flags=0x0100),
            w.frame("analog", w.analog_i16([0, 1], [[-32768, 32767], [1, 2]], [0.000305, 1.0], [0.0, -1.0])),
            w.frame("digital", w.digital([4, 9], [[1, 0, 1, 1, 0, 0, 0, 0, 1], [0, 1, 0, 0, 0, 0, 0, 0, 0]], 10)),
            w.frame("message", w.message(-3, "line1\nline2 \"q\" 温度")),
            w.frame("array", w.string_array([["a", ""], ["温度", "🙂"]])),
            w.frame("array", w.numeric_array(3, "i", [[1, -2, 3], [2**31 - 1, -2**31, 0]], 5, 6)),
            w.frame("array", w.numeric_array(6, "B", [[1, 0], [0, 1]])),
            w.frame("analog-filter", w.analog_filter(1, 1, 3, sources=(0, 2)), filter_id=1),
            w.frame("analog-filter", w.analog_filter(2, channels=(5, 2)), filter_id=2),
            w.frame("hello", w.hello("secret", "bench client", 2.5, True), timestamp_ns=123),
            w.frame("gap", w.gap(10, 4), sequence=14),
            w.frame("start", b""),
        ]
        objects = inspect_json(b"".join(frames))
        self.assertEqual([o["kind"] for o in objects],
                         ["configuration", "analog", "analog", "digital", "message", "array", "array", "array",
                          "analog-filter", "analog-filter", "hello", "gap", "start"])
        config = objects[0]["content"]
        self.assertEqual(config["device_name"], "USB-6009")
        self.assertEqual(config["channels"][1], {"index": 1, "description": "ao1 µ", "direction": "output", "unit": "mA",
                                                 "sampling_rate": 10000.0, "min": -5.0, "max": 5.0})
        self.assertEqual(config["lines"], [{"index": 0, "description": "P0.0", "direction": "input"}])
        a = objects[1]
        self.assertEqual((a["sequence"], a["timestamp_ns"], a["source_id"], a["filter_id"], a["flags"]), (5, -1, 2, 4, 256))
        self.assertEqual(a["content"]["channel_indexes"], [3, 1])
        self.assertEqual(a["content"]["first_sample"], 77)
        # Doubles read back bit for bit.
        self.assertEqual(a["content"]["samples"], [[0.1, 1e-300, -2.5], [1.7976931348623157e308, 5e-324, 3.0]])
        i16 = objects[2]["content"]
        self.assertEqual((i16["samples"], i16["scale"], i16["offset"]), ([[-32768, 32767], [1, 2]], [0.000305, 1.0], [0.0, -1.0]))
        self.assertEqual(objects[3]["content"]["states"], [[1, 0, 1, 1, 0, 0, 0, 0, 1], [0, 1, 0, 0, 0, 0, 0, 0, 0]])
        self.assertEqual(objects[3]["content"]["line_indexes"], [4, 9])
        self.assertEqual(objects[4]["content"], {"code": -3, "text": "line1\nline2 \"q\" 温度"})
        self.assertEqual(objects[5]["content"]["elements"], [["a", ""], ["温度", "🙂"]])
        ints = objects[6]["content"]
        self.assertEqual((ints["elements"], ints["row_origin"], ints["column_origin"]), ([[1, -2, 3], [2**31 - 1, -2**31, 0]], 5, 6))
        self.assertEqual(objects[7]["content"]["elements"], [[True, False], [False, True]])
        self.assertEqual(objects[8]["content"]["query"], "1-3;0,2")
        self.assertEqual(objects[9]["content"]["channels"], [5, 2])
        hello = objects[10]
        self.assertEqual(hello["timestamp_ns"], 123)
        self.assertEqual(hello["content"], {"timeout": 2.5, "source_filter_enabled": True, "api_key_length": 6,
                                            "description": "bench client"})
        self.assertEqual(objects[11]["content"], {"first_missing_sequence": 10, "missing_count": 4})

    def test_summary_lines(self):
        result = inspect(w.frame("analog", w.analog_f64(list(range(8)), [[0.0] * 1000] * 8)) + w.frame("stop", b""))
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertIn("8 x 1000 float64", lines[0])
        self.assertIn("channels 0-7", lines[0])
        self.assertEqual(lines[-1], "2 frames")


class BadInput(unittest.TestCase):
    def test_truncated_file_names_offset_and_keeps_earlier_frames(self):
        good = w.frame("message", w.message(1, "kept"))
        cut = w.frame("message", w.message(2, "cut short"))[:50]
        result = inspect(good + cut)
        self.assertEqual(result.returncode, 1)
        self.assertIn("kept", result.stdout)
        self.assertIn("truncated", result.stderr)
        self.assertIn(f"at byte {len(good) + 50}", result.stderr)

    def test_bad_magic_and_bad_payload(self):
        result = inspect(b"XXXX" + w.frame("start", b"")[4:])
        self.assertEqual(result.returncode, 1)
        self.assertIn("badMagic in field header.magic at byte 0", result.stderr)
        bad = bytearray(w.frame("message", w.message(1, "abc")))
        bad[48] = 0xFF
        result = inspect(bytes(bad))
        self.assertEqual(result.returncode, 1)
        self.assertIn("invalidUTF8 in field message.text at byte 48", result.stderr)

    def test_usage_errors(self):
        result = subprocess.run([TRIBUTARY, "inspect", "--bogus", "x"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 2)
        self.assertIn("unknown option '--bogus'", result.stderr)
        result = subprocess.run([TRIBUTARY, "inspect", "/nonexistent/file"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertIn("cannot open '/nonexistent/file'", result.stderr)
        result = subprocess.run([TRIBUTARY, "inspect", "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0)
        self.assertIn("usage: tributary inspect", result.stdout)



class Int32Counts(unittest.TestCase):
    def test_a_format_4_frame_decodes_as_int32_counts_with_scale_and_offset(self):
        """§5.3: sample_format 4 is int32 counts laid out as format 3 (scale and offset tables first)."""
        frame = w.frame("analog", w.analog_i32([7, 2], [[-2**31, 0, 2**31 - 1], [1, -1, 8_388_607]], [2.0**-23, 1e-6], [0.0, 0.5]),
                        source_id=3)
        (a,) = inspect_json(frame)
        self.assertEqual(a["content"]["format"], "int32")
        self.assertEqual(a["content"]["channel_indexes"], [7, 2])
        self.assertEqual(a["content"]["scale"], [2.0**-23, 1e-6])
        self.assertEqual(a["content"]["offset"], [0.0, 0.5])
        self.assertEqual(a["content"]["samples"], [[-2**31, 0, 2**31 - 1], [1, -1, 8_388_607]])

    def test_an_unknown_sample_format_is_still_refused(self):
        frame = bytearray(w.frame("analog", w.analog_i32([0], [[1, 2]], [1.0], [0.0])))
        frame[40 + 16] = 5  # sample_format 5 does not exist
        result = inspect(bytes(frame), "--json")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("expected 1 (float64), 2 (float32), 3 (int16) or 4 (int32)", result.stdout + result.stderr)


if __name__ == "__main__":
    unittest.main()
