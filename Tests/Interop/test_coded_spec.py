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

TRIBUTARY = os.environ.get("TRIBUTARY", "tributary")
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
        exported = self.exported(capture, counts=expected.dtype == np.int16)
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


if __name__ == "__main__":
    unittest.main()
