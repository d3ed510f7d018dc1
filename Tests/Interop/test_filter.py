"""Server-side filtering against an independent implementation of docs/PROTOCOL.md §6 in Python:
`tributary filter` must produce exactly the bytes the spec describes."""
import os
import pathlib
import random
import struct
import subprocess
import tempfile
import unittest

import numpy as np

import wire_spec as w
from tool_process import TRIBUTARY


def parse_frames(data: bytes):
    frames, at = [], 0
    while at < len(data):
        header = data[at:at + 40]
        payload_length = struct.unpack_from("<I", header, 12)[0]
        frames.append((header, data[at + 40:at + 40 + payload_length]))
        at += 40 + payload_length
    return frames


def with_filter_id(header: bytes, filter_id: int) -> bytes:
    return header[:36] + struct.pack("<I", filter_id)


def spec_analog_filter(header, payload, filter_id, mode, frm=0, to=0, channels=(), sources=()):
    """PROTOCOL.md §6 for one analog frame and one filter; None when nothing is sent."""
    source_id = struct.unpack_from("<I", header, 32)[0]
    if sources and source_id not in sources:
        return None
    c, n, first, fmt = struct.unpack_from("<IIQB", payload, 0)
    indexes = list(struct.unpack_from("<%dI" % c, payload, 24))
    a = (24 + 4 * c + 7) & ~7
    size = {1: 8, 2: 4, 3: 2}[fmt]
    s = a + (16 * c if fmt == 3 else 0)
    if mode == 0:
        rows = list(range(c))
    elif mode == 1:
        rows = [r for r in range(c) if frm <= indexes[r] <= to]
    else:
        rows = [indexes.index(i) for i in channels if i in indexes]
    if not rows:
        return None
    out = struct.pack("<IIQB7x", len(rows), n, first, fmt)
    out = w.pad8(out + struct.pack("<%dI" % len(rows), *[indexes[r] for r in rows]))
    if fmt == 3:
        scale = struct.unpack_from("<%dd" % c, payload, a)
        offset = struct.unpack_from("<%dd" % c, payload, a + 8 * c)
        out += struct.pack("<%dd" % len(rows), *[scale[r] for r in rows])
        out += struct.pack("<%dd" % len(rows), *[offset[r] for r in rows])
    for r in rows:
        out += payload[s + r * n * size:s + (r + 1) * n * size]
    out = w.pad8(out)
    return with_filter_id(header[:12] + struct.pack("<I", len(out)) + header[16:], filter_id) + out


def run_filter(data: bytes, *specs):
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.frames"), os.path.join(d, "out.frames")
        pathlib.Path(src).write_bytes(data)
        args = [TRIBUTARY, "filter", src, "--out", dst]
        for spec in specs:
            args += ["--filter", spec]
        result = subprocess.run(args, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise AssertionError(result.stderr)
        return pathlib.Path(dst).read_bytes()


class AnalogFilterInterop(unittest.TestCase):
    def frames(self):
        rng = random.Random(5)
        out = []
        for seq in range(6):
            c, n = rng.randint(1, 6), rng.randint(0, 9)
            indexes = rng.sample(range(10), c)
            rows = [[rng.uniform(-5, 5) for _ in range(n)] for _ in range(c)]
            if seq % 2:
                payload = w.analog_i16(indexes, [[rng.randint(-32768, 32767) for _ in range(n)] for _ in range(c)],
                                       [rng.random() for _ in range(c)], [rng.random() for _ in range(c)], seq * 100)
            else:
                payload = w.analog_f64(indexes, rows, seq * 100)
            out.append(w.frame("analog", payload, sequence=seq, timestamp_ns=seq * 1000, source_id=1 + seq % 3))
        return out

    def test_range_list_and_sources_match_the_spec(self):
        frames = self.frames()
        data = b"".join(frames) + w.frame("message", w.message(1, "passes"))
        got = run_filter(data, "analog:2-6;1,2", "analog:7,0,3;", "analog:;3")
        expected = b""
        for header, payload in parse_frames(b"".join(frames)):
            for fid, args in ((1, dict(mode=1, frm=2, to=6, sources=(1, 2))), (2, dict(mode=2, channels=(7, 0, 3))),
                              (3, dict(mode=0, sources=(3,)))):
                out = spec_analog_filter(header, payload, fid, **args)
                if out is not None:
                    expected += out
        expected += w.frame("message", w.message(1, "passes"))
        self.assertEqual(got, expected)

    def test_array_filter_clips_and_moves_the_origin(self):
        rows = [[r * 10 + c for c in range(6)] for r in range(5)]
        data = w.frame("array", w.numeric_array(3, "i", rows, 100, 200), sequence=3)
        got = run_filter(data, "int32:1-2;4-")
        expected_payload = w.numeric_array(3, "i", [[14, 15], [24, 25]], 101, 204)
        expected = w.frame("array", expected_payload, sequence=3, filter_id=1)
        self.assertEqual(got, expected)
        # A filter for another element type leaves int32 arrays alone.
        self.assertEqual(run_filter(data, "double:0-1;0-1"), data)

    def test_bad_filter_specs(self):
        for spec, message in (("analog:1-x", "at character 3"), ("vector:1", "unknown kind 'vector'"), ("nocolon", "expected KIND:QUERY")):
            result = subprocess.run([TRIBUTARY, "filter", "/dev/null", "--out", "/dev/null", "--filter", spec],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 2, spec)
            self.assertIn(message, result.stderr)


def run_cli(*args, timeout=60):
    return subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def chunk_records(data: bytes):
    """(offset, length) of every chunk record, walking the envelopes from the header."""
    out, offset = [], struct.unpack_from("<I", data, 12)[0]
    while offset + 88 <= len(data) and data[offset:offset + 8] == b"\x9eTREC\r\n\x1a":
        length = 88 + (struct.unpack_from("<I", data, offset + 64)[0] + 7) // 8 * 8
        if data[offset + 8] == 1:
            out.append((offset, length))
        offset += length
    return out


class FilterDataSafety(unittest.TestCase):
    """Issue 38 item 10: `filter` refuses a damaged capture as `export` does (exit 3, nothing replaced)
    unless --allow-damage, calls a selection that keeps nothing an error naming what exists, and says
    what it kept."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = lambda name: os.path.join(self.dir.name, name)
        a = np.round(np.random.default_rng(3).normal(size=(3, 300_000)) * 1000) / 1024
        np.save(self.path("in.npy"), a)
        result = run_cli("import", self.path("in.npy"), "--rate", 1000, "--out", self.path("x.tcap"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.samples = a

    def tearDown(self):
        self.dir.cleanup()

    def leftovers(self):
        return [n for n in os.listdir(self.dir.name) if "partial" in n]

    def test_a_damaged_capture_is_refused_unless_allowed(self):
        for out in ("good.tcap", "good.frames"):
            result = run_cli("filter", self.path("x.tcap"), "--out", self.path(out), "--filter", "analog:0-1")
            self.assertEqual(result.returncode, 0, result.stderr)
        data = bytearray(pathlib.Path(self.path("x.tcap")).read_bytes())
        chunks = chunk_records(data)
        self.assertGreater(len(chunks), 2)
        offset, length = chunks[1]
        data[offset + 88 + (length - 88) // 2] ^= 0x10
        pathlib.Path(self.path("x.tcap")).write_bytes(bytes(data))
        for out in ("good.tcap", "good.frames"):
            good = pathlib.Path(self.path(out)).read_bytes()
            result = run_cli("filter", self.path("x.tcap"), "--out", self.path(out), "--force", "--filter", "analog:0-1")
            self.assertEqual(result.returncode, 3, result.stderr)
            self.assertIn(f"byte {offset}", result.stderr)
            self.assertIn("--allow-damage", result.stderr)
            self.assertEqual(pathlib.Path(self.path(out)).read_bytes(), good, out)
            result = run_cli("filter", self.path("x.tcap"), "--out", self.path("new-" + out), "--filter", "analog:0-1")
            self.assertEqual(result.returncode, 3, result.stderr)
            self.assertFalse(os.path.exists(self.path("new-" + out)))
            self.assertEqual(self.leftovers(), [])
        result = run_cli("filter", self.path("x.tcap"), "--out", self.path("good.tcap"), "--force", "--allow-damage",
                         "--filter", "analog:0-1")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"byte {offset}", result.stderr)
        result = run_cli("export", self.path("good.tcap"), "--format", "npy", "--out", self.path("part.npy"))
        self.assertEqual(result.returncode, 0, result.stderr)
        part = np.load(self.path("part.npy"))
        self.assertEqual(part.shape[0], 2)
        self.assertGreater(part.shape[1], 0)
        self.assertLess(part.shape[1], self.samples.shape[1])

    def test_a_selection_that_keeps_nothing_is_an_error_naming_what_exists(self):
        pathlib.Path(self.path("keep.tcap")).write_bytes(b"precious")
        for out, force in (("new.tcap", []), ("new.frames", []), ("keep.tcap", ["--force"])):
            for spec in ("analog:7", "analog:0;9"):
                result = run_cli("filter", self.path("x.tcap"), "--out", self.path(out), *force, "--filter", spec)
                self.assertEqual(result.returncode, 1, (spec, result.stderr))
                self.assertIn("source 1", result.stderr)
                self.assertIn("channels 0-2", result.stderr)
        self.assertFalse(os.path.exists(self.path("new.tcap")))
        self.assertFalse(os.path.exists(self.path("new.frames")))
        self.assertEqual(pathlib.Path(self.path("keep.tcap")).read_bytes(), b"precious")
        self.assertEqual(self.leftovers(), [])
        # A frame file too.
        frames = w.frame("analog", w.analog_f64([4, 5], [[1.0, 2.0], [3.0, 4.0]]), sequence=1, source_id=2)
        pathlib.Path(self.path("in.frames")).write_bytes(frames)
        result = run_cli("filter", self.path("in.frames"), "--out", self.path("o.frames"), "--filter", "analog:0-3")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("source 2", result.stderr)
        self.assertIn("channels 4-5", result.stderr)
        self.assertFalse(os.path.exists(self.path("o.frames")))

    def test_success_says_what_was_kept(self):
        result = run_cli("filter", self.path("x.tcap"), "--out", self.path("o.tcap"), "--filter", "analog:0,2")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stdout)
        self.assertIn("source 1", lines[0])
        self.assertIn("channels 0,2", lines[0])
        self.assertIn("300000 samples", lines[0])
        # With OUT on standard output, the line goes to stderr.
        result = subprocess.run([TRIBUTARY, "filter", self.path("x.tcap"), "--out", "-", "--filter", "analog:1"],
                                capture_output=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(b"channels 1", result.stderr)
        self.assertGreater(len(result.stdout), 300_000 * 8)


if __name__ == "__main__":
    unittest.main()
