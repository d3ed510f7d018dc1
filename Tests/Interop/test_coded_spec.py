"""The coded transform read by an independent decoder written from docs/CAPTURE.md (coded_spec.py):
captures written now by `tributary import`, and the version-1, -2 and -3 fixtures written by the earlier writers,
decode bit for bit to the imported data and to what `tributary export` gives.

TRIBUTARY=path/to/tributary python -m unittest test_coded_spec -v
"""
import os
import subprocess
import tempfile
import unittest

import numpy as np

import coded_spec
import make_coded_fixtures
from tool_process import TRIBUTARY  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "TributaryCaptureTests", "Fixtures")


def run(*args):
    result = subprocess.run([TRIBUTARY, *args], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise AssertionError(f"tributary {' '.join(args)}: {result.stderr}")


def spec_samples(path, channels):
    """(channels, samples) from every numeric stream of the capture, by the spec decoder alone: a
    source whose frames hold every channel has, per chunk, one group per channel (§4.3)."""
    pieces, transforms = [], set()
    for fmt, samples, flag in coded_spec.chunk_streams(path):
        transforms.add(flag)
        pieces.append(np.asarray(samples).reshape(channels, -1))
    return np.concatenate(pieces, axis=1), transforms


class CodedSpecTests(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)

    def exported(self, capture, counts=False):
        """What `export` writes: the stored values (int16 sources: their counts, with --counts)."""
        out = os.path.join(self.directory.name, "export.npy")
        run("export", capture, "--format", "npy", "--out", out, "--force", *(["--counts"] if counts else []))
        return np.load(out)

    def check(self, capture, expected, name):
        decoded, transforms = spec_samples(capture, expected.shape[0])
        self.assertEqual(transforms, {coded_spec.CODED}, f"{name}: every stream is coded")
        self.assertEqual(decoded.dtype, expected.dtype, name)
        self.assertEqual(decoded.tobytes(), expected.tobytes(), f"{name}: the spec decoder differs from the data")
        exported = self.exported(capture, counts=expected.dtype in (np.int16, np.int32))
        self.assertEqual(exported.tobytes(), expected.tobytes(), f"{name}: tributary export differs")

    def test_captures_written_now_decode_by_the_spec(self):
        arities = set()
        for name, data in make_coded_fixtures.classes().items():
            with self.subTest(name):
                source = os.path.join(self.directory.name, name + ".npy")
                capture = os.path.join(self.directory.name, name + ".tcap")
                np.save(source, data)
                run("import", source, "--rate", "1000", "--out", capture)
                with open(capture, "rb") as f:
                    head = f.read(10)
                self.assertEqual(head[8], 4, "capture version 4")
                # The coded streams written now are version 4 (zstd-coded symbols, one to three bins a byte).
                streams = list(self.coded_streams(capture))
                self.assertEqual({stored[0] for stored in streams}, {4}, name)
                for stored in streams:
                    arities |= coded_spec.block_arities(stored)
                self.check(capture, data, name)
        # The fixtures' data is noisy enough that the writer packs bins two or three to a byte somewhere.
        self.assertTrue(arities & {2, 3}, f"arities written: {arities}")

    def test_version_1_2_and_3_fixtures_decode_by_the_spec_and_by_tributary(self):
        names = sorted(f[len("coded-v1-"):-len(".npy")] for f in os.listdir(FIXTURES) if f.endswith(".npy"))
        self.assertGreaterEqual(len(names), 5)
        for version in (1, 2, 3):
            for name in names:
                with self.subTest(f"v{version} {name}"):
                    capture = os.path.join(FIXTURES, f"coded-v{version}-{name}.tcap")
                    self.assertEqual({stored[0] for stored in self.coded_streams(capture)}, {version}, name)
                    self.check(capture, np.load(os.path.join(FIXTURES, f"coded-v1-{name}.npy")), name)

    def test_a_damaged_latent_block_is_refused(self):
        capture = os.path.join(FIXTURES, "coded-v1-int16-counts.tcap")
        stored = next(self.coded_streams(capture))
        bad = bytearray(stored)
        bad[len(bad) // 2] ^= 0x40
        with self.assertRaises((coded_spec.Damage, IndexError, ValueError, OverflowError)):
            samples = coded_spec.decode_coded(bytes(bad), 3)
            # A flip that still decodes must not give the data back unchanged.
            self.assertNotEqual(samples.tobytes(), coded_spec.decode_coded(stored, 3).tobytes())
            raise coded_spec.Damage("decoded to different samples")

    @staticmethod
    def coded_streams(path):
        """The stored bytes of every coded stream (the container walk of coded_spec, without decoding)."""
        original = coded_spec.decode_coded
        found = []
        coded_spec.decode_coded = lambda stored, fmt: found.append(bytes(stored)) or original(stored, fmt)
        try:
            for _ in coded_spec.chunk_streams(path):
                pass
        finally:
            coded_spec.decode_coded = original
        return iter(found)


def latent_block(values, zstd_symbols=None):
    """A version-4 latent block (§5.1) holding `values` (signed 64-bit) exactly: no bins (B = 0), every
    symbol the escape, shift 0 and 64 high bits per escape, so each value is its own high bits. With
    `zstd_symbols` (a zstandard.ZstdCompressor), the symbol bytes are stored as one zstd frame."""
    import struct
    m = len(values)
    symbols = bytes(m)
    if zstd_symbols is not None:
        symbols = zstd_symbols.compress(symbols)
        assert len(symbols) < m
    return (struct.pack("<QBBBBQII", 0, 0, 64, 0, 1, 0, len(symbols), m) + symbols
            + b"".join(struct.pack("<Q", v & coded_spec.MASK64) for v in values))


def coded_stream(element_type, segments, version=4):
    """A coded stream: its header, then `segments` as (count, mode, predictor, flags, body bytes)."""
    import struct
    n = sum(count for count, *_ in segments)
    out = struct.pack("<BBHIQ", version, element_type, 0, len(segments), n)
    for count, mode, predictor, flags, body in segments:
        out += struct.pack("<IBBBB", count, mode, predictor, flags, 0) + body
    return out


def one_frame_capture(path, fmt, raw, stored, capture_version=4, sample_bytes=None):
    """A capture (§2–§4, codec 0, no footer) of source 1: a configuration frame and one analog frame
    of one channel whose samples are `raw` (format `fmt`), its numeric stream stored as `stored`
    with the coded transform (`sample_bytes`: the descriptor's, by default len(raw))."""
    import struct

    import capture_spec as cs
    import wire_spec as ws
    size = cs.SIZES[fmt]
    n = len(raw) // size
    config = ws.frame("configuration", ws.configuration("edge", "test", [(0, 0, 1000.0, -1.0, 1.0, "a", "V")], []),
                      sequence=0, timestamp_ns=1_764_489_600_000_000_000, source_id=1)
    payload = {1: ws.analog_f64([0], [[0.0] * n]), 2: ws.analog_f32([0], [[0.0] * n]),
               3: ws.analog_i16([0], [[0] * n], [1.0], [0.0])}[fmt]
    frame = bytearray(ws.frame("analog", payload, sequence=1, timestamp_ns=1_764_489_600_001_000_000, source_id=1))
    start, _keys, _n, _fmt = cs.split(bytes(frame))
    frame[start:start + len(raw)] = raw
    frames = [config, bytes(frame)]
    structure = config + bytes(frame[:start]) + bytes(frame[start + len(raw):])
    sample_bytes = len(raw) if sample_bytes is None else sample_bytes
    body = struct.pack("<IHHQ", 2, 1, 0, len(structure)) + struct.pack("<BBHIQQ", fmt, 8, 0, 0, sample_bytes, len(stored))
    body += structure
    body += b"\0" * (-len(body) % 8) + stored
    record = cs.record(cs.envelope(1, 0, body, source_id=1, first_sequence=0, last_sequence=1,
                                   first_time_ns=1_764_489_600_000_000_000, last_time_ns=1_764_489_600_001_000_000,
                                   sample_count=n, frame_count=2, kind_mask=(1 << 1) | (1 << 3),
                                   frames_length=sum(map(len, frames))), body)
    with open(path, "wb") as f:
        f.write(cs.header(version=capture_version) + record)


class CodedStreamEdges(unittest.TestCase):
    """What CAPTURE.md §2 and §5.1 settle that an outside implementation had to guess, pinned against
    tributary's reader with hand-made coded streams."""

    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)
        self.count = 0

    def read(self, fmt, raw, stored, **options):
        """(damage reasons, exported samples or None) of a one-frame capture."""
        import json
        self.count += 1
        capture = os.path.join(self.directory.name, f"edge{self.count}.tcap")
        one_frame_capture(capture, fmt, raw, stored, **options)
        info = subprocess.run([TRIBUTARY, "inspect", capture, "--json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(info.returncode, 0, info.stderr)
        damage = [d["reason"] for d in json.loads(info.stdout)["damage"]]
        out = os.path.join(self.directory.name, f"edge{self.count}.npy")
        result = subprocess.run([TRIBUTARY, "export", capture, "--format", "npy", "--out", out, "--force",
                                 *(["--counts"] if fmt == 3 else [])], capture_output=True, text=True, timeout=60)
        exported = np.load(out).tobytes() if result.returncode == 0 else None
        # The independent decoder written from the text agrees: it refuses what tributary reports as
        # damage, and decodes the rest to the same samples.
        try:
            spec = coded_spec.decode_coded(stored, fmt).tobytes()
        except coded_spec.Damage:
            spec = None
        if damage:
            self.assertIsNone(spec, "tributary reports damage where the spec decoder reads the stream")
        else:
            self.assertIsNotNone(spec, "the spec decoder refuses a stream tributary reads")
            if exported is not None:
                self.assertEqual(spec, exported, "the spec decoder and tributary differ")
        return damage, exported

    def test_an_integer_stream_is_mode_0_only(self):
        raw = np.array([3, -7, 100, 0], dtype="<i2").tobytes()
        values = [3, -7, 100, 0]
        self.assertEqual(self.read(3, raw, coded_stream(1, [(4, 0, 0, 0, latent_block(values))])), ([], raw))
        grid = struct_pack_dd(0.0, 1.0)
        for mode, body in ((1, grid + latent_block(values)), (2, latent_block(values))):
            damage, exported = self.read(3, raw, coded_stream(1, [(4, mode, 0, 0, body)]))
            self.assertIsNone(exported, f"mode {mode} on an int16 stream was read")
            self.assertEqual(len(damage), 1, damage)

    def test_a_float32_latent_is_sign_extended(self):
        samples = np.array([-1.5, 2.0, -0.0, 0.0, -3.4028235e38], dtype="<f4")
        bits = samples.view("<u4").astype(np.int64)
        signed = np.where(bits >= 1 << 31, bits - (1 << 32), bits)  # as i32, sign-extended
        latents = [int(x) if x >= 0 else int(x) ^ 0x7FFFFFFF for x in signed]
        self.assertTrue(all(-(1 << 31) <= v < 1 << 31 for v in latents))
        raw = samples.tobytes()
        self.assertEqual(self.read(2, raw, coded_stream(3, [(5, 2, 0, 0, latent_block(latents))])), ([], raw))
        # The same map done in 32 bits and zero-extended: another latent, which decodes to other bits.
        zero_extended = [v & 0xFFFFFFFF for v in latents]
        damage, exported = self.read(2, raw, coded_stream(3, [(5, 2, 0, 0, latent_block(zero_extended))]))
        self.assertEqual(damage, [])
        self.assertNotEqual(exported, raw)

    def test_the_symbols_zstd_frame_may_carry_a_checksum_which_is_verified(self):
        import zstandard
        values = list(range(-500, 500))
        raw = np.array(values, dtype="<i2").tobytes()
        for checksum in (False, True):
            block = latent_block(values, zstandard.ZstdCompressor(level=3, write_checksum=checksum, write_content_size=True))
            self.assertEqual(self.read(3, raw, coded_stream(1, [(1000, 0, 0, 0, block)])), ([], raw), f"checksum {checksum}")
        # A wrong checksum (the frame's last four bytes, right before the high bits) is damage.
        block = bytearray(block)
        block[28 + int.from_bytes(block[20:24], "little") - 1] ^= 0xFF
        damage, exported = self.read(3, raw, coded_stream(1, [(1000, 0, 0, 0, bytes(block))]))
        self.assertIsNone(exported)
        self.assertEqual(len(damage), 1, damage)

    def test_an_empty_coded_stream_is_a_header_with_no_segment(self):
        damage, _ = self.read(1, b"", coded_stream(4, []))
        self.assertEqual(damage, [])
        damage, _ = self.read(1, b"", b"")
        self.assertEqual(len(damage), 1, "an empty coded stream without its header was read")

    def test_every_stream_version_is_read_in_every_capture_version(self):
        values = [5, 6, 7, -8]
        raw = np.array(values, dtype="<i2").tobytes()
        for capture_version in (1, 2, 3, 4):
            damage, exported = self.read(3, raw, coded_stream(1, [(4, 0, 0, 0, latent_block(values))]),
                                         capture_version=capture_version)
            self.assertEqual((damage, exported), ([], raw), f"stream version 4 in a version-{capture_version} capture")
        # A stream version outside 1 ... 4 is damage.
        damage, exported = self.read(3, raw, coded_stream(1, [(4, 0, 0, 0, latent_block(values))], version=5))
        self.assertIsNone(exported)
        self.assertEqual(len(damage), 1, damage)


def struct_pack_dd(a, b):
    import struct
    return struct.pack("<dd", a, b)


if __name__ == "__main__":
    unittest.main()
